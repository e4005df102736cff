/**
 * The `x-ratelimit-*` headers, parsed into `RateLimitInfo` on every response: proprietary models send them,
 * the operator's open-source models do not.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Chat from "../../src/services/Chat.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import { ask } from "../helpers/emulator.js"

// a key of the seed's basic figures on every model, 20 requests and 18,750 tokens a window (a basic key itself has no
// proprietary model: it gets 404 for one)
const basic = () =>
  Testing.layerEmulator({
    tier: "seed",
    tiers: { seed: Emulator.fallbackQuotas.basic },
    window: "10 seconds",
    client: { maxRetries: 0 },
    rateLimiter: false
  })

describe("rate-limit headers", () => {
  it.effect("a proprietary model reports the basic quota, and what remains goes down request by request", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      let tokensSpent = 0
      for (const expected of [19, 18, 17]) {
        const { response, value } = yield* chat.createWithResponse(ask("gpt-4.1", `Question number ${expected}`))
        const info = response.rateLimit
        assert.isTrue(info.hasLimitHeaders)
        assert.strictEqual(info.limitRequests, 20)
        assert.strictEqual(info.limitTokens, 18_750)
        assert.strictEqual(info.remainingRequests, expected)
        tokensSpent += value.usage?.total_tokens ?? 0
        // input and output tokens both count, exactly as the usage reports them
        assert.strictEqual(info.remainingTokens, 18_750 - tokensSpent)
        // nothing has left the 10 s window yet (the TestClock has not moved)
        assert.strictEqual(Duration.toMillis(info.resetRequests!), 10_000)
        assert.strictEqual(Duration.toMillis(info.resetTokens!), 10_000)
        assert.isUndefined(info.retryAfter)
      }
    }).pipe(Effect.provide(basic())))

  it.effect("the reset shrinks as time passes and the window refills once it has slid past", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      yield* chat.create(ask("gpt-4o", "first"))
      yield* TestClock.adjust("4 seconds")
      const later = yield* chat.createWithResponse(ask("gpt-4o", "second"))
      assert.strictEqual(later.response.rateLimit.remainingRequests, 18)
      assert.strictEqual(Duration.toMillis(later.response.rateLimit.resetRequests!), 6_000)
      assert.strictEqual(later.response.rateLimit.observedAt, 4_000)
      yield* TestClock.adjust("6 seconds")
      // the first request has left the window, the second has not
      const after = yield* chat.createWithResponse(ask("gpt-4o", "third"))
      assert.strictEqual(after.response.rateLimit.remainingRequests, 18)
      assert.strictEqual(Duration.toMillis(after.response.rateLimit.resetRequests!), 4_000)
    }).pipe(Effect.provide(basic())))

  it.effect("limits are per model: another model of the same key starts full", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      yield* chat.create(ask("gpt-4.1", "one"))
      yield* chat.create(ask("gpt-4.1", "two"))
      const other = yield* chat.createWithResponse(ask("claude-sonnet-4.5", "three"))
      assert.strictEqual(other.response.rateLimit.remainingRequests, 19)
    }).pipe(Effect.provide(basic())))

  it.effect("an open-source model sends no limit headers", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const { response } = yield* chat.createWithResponse(ask("Llama-3.3-70B-Instruct", "Hello"))
      assert.strictEqual(response.status, 200)
      assert.isFalse(response.rateLimit.hasLimitHeaders)
      assert.isUndefined(response.rateLimit.limitRequests)
      assert.isUndefined(response.rateLimit.remainingTokens)
      assert.isUndefined(response.headers["x-ratelimit-limit-requests"])
    }).pipe(Effect.provide(basic())))

  it.effect("embeddings follow the same rule: ada-002 sends headers, bge-m3 does not", () =>
    Effect.gen(function*() {
      const embeddings = yield* Embeddings.Embeddings
      const ada = yield* embeddings.createWithResponse({ model: "text-embedding-ada-002", input: "a b c" })
      assert.strictEqual(ada.response.rateLimit.limitRequests, 20)
      assert.strictEqual(ada.response.rateLimit.remainingTokens, 18_750 - (ada.value.usage?.total_tokens ?? 0))
      const bge = yield* embeddings.createWithResponse({ model: "text-embedding-bge-m3", input: "a b c" })
      assert.isFalse(bge.response.rateLimit.hasLimitHeaders)
    }).pipe(Effect.provide(basic())))

  it.effect("a standard4000 key reports its plan's row for the model; a model outside its plan is not found", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const { response, value } = yield* chat.createWithResponse(ask("o4-mini", "Hello"))
      // o4-mini on standard4000: 10,000 requests, 10M input and 10M output tokens; the tokens headers sum the two
      assert.strictEqual(response.rateLimit.limitRequests, 10_000)
      assert.strictEqual(response.rateLimit.limitTokens, 20_000_000)
      assert.strictEqual(response.rateLimit.remainingRequests, 9_999)
      assert.strictEqual(response.rateLimit.remainingTokens, 20_000_000 - (value.usage?.total_tokens ?? 0))
      // standard4000's table has no ada-002: the key may not use it
      const embeddings = yield* Embeddings.Embeddings
      const ada = yield* Effect.flip(embeddings.create({ model: "text-embedding-ada-002", input: "a b c" }))
      assert.strictEqual(ada._tag, "NotFound")
      assert.include(ada.message, "Model 'text-embedding-ada-002' not found")
    }).pipe(Effect.provide(Testing.layerEmulator({ tier: "standard4000" }))))
})
