/**
 * Context windows before a request is spent: a request whose prompt estimate plus `max_tokens` cannot fit its model's
 * window fails with `ContextLengthExceeded` and is never sent, the window known from the limiter's options or the
 * plans' tables (from a `/models` listing: test/unit/windowsListing.test.ts); the server's own "context length
 * exceeded" maps to the same error, never retried, and the emulator says so; `contextCheck: false` turns the check
 * off. Against the emulator on loopback.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import * as TokenEstimator from "../../src/layers/TokenEstimator.js"
import * as Chat from "../../src/services/Chat.js"
import * as Completions from "../../src/services/Completions.js"
import * as Responses from "../../src/services/Responses.js"
import { words } from "../helpers/emulatorWire.js"

const model = "Llama-3.3-70B-Instruct"

const ask = (content: string, max_tokens?: number) =>
  Effect.flatMap(Chat.Chat, (chat) =>
    chat.create({
      model,
      messages: [{ role: "user", content }],
      ...(max_tokens === undefined ? {} : { max_tokens })
    }))

const askOf = (id: string, content: string, max_tokens: number) =>
  Effect.flatMap(Chat.Chat, (chat) => chat.create({ model: id, messages: [{ role: "user", content }], max_tokens }))

/** A model the plans' tables do not know. */
const unlisted = "private-model"

/** Requests the scripted server of the last test answered. */
let calls = 0

const limiterOn = (options: RateLimiter.Options) =>
  RateLimiter.layerWith(options).pipe(Layer.provide(Layer.merge(LimiterStore.layerMemory, TokenEstimator.layer)))

const received = Effect.map(Effect.flatMap(Emulator.Emulator, (emulator) => emulator.stats), (stats) => stats.received)

describe("context windows", () => {
  it.effect("a window told to the limiter: the prompt and max_tokens over it fail unsent; within it, sent", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(ask("Hi", 1_000))
      assert.strictEqual(refused._tag, "ContextLengthExceeded")
      if (refused._tag !== "ContextLengthExceeded") return
      assert.strictEqual(refused.model, model)
      assert.strictEqual(refused.window, 1_000)
      assert.isAbove(refused.requested!, 1_000)
      assert.isUndefined(refused.status)
      assert.isFalse(refused.isRetryable)
      assert.match(refused.message, /^Llama-3\.3-70B-Instruct: about \d+ tokens .* context window of 1000$/)
      assert.strictEqual(yield* received, 0, "never sent")
      // without max_tokens only the prompt must fit: a prompt of 900 words fits, one of 1,100 does not
      yield* ask(words(900))
      assert.strictEqual((yield* Effect.flip(ask(words(1_100))))._tag, "ContextLengthExceeded")
      yield* ask("Hi", 900)
      assert.strictEqual(yield* received, 2)
    }).pipe(Effect.provide(Testing.layerEmulator({ rateLimiter: { contextWindows: { [model]: 1_000 } } }))))

  it.effect("contextCheck: false sends it anyway", () =>
    Effect.gen(function*() {
      yield* ask("Hi", 1_000)
      assert.strictEqual(yield* received, 1)
    }).pipe(Effect.provide(Testing.layerEmulator({
      rateLimiter: { contextWindows: { [model]: 1_000 }, contextCheck: false }
    }))))

  it.effect("the emulator refuses what its model's window cannot hold: in vLLM's words, or with OpenAI's code", () =>
    Effect.gen(function*() {
      const open = yield* Effect.flip(askOf(model, "Hi", 128_000))
      assert.strictEqual(open._tag, "ContextLengthExceeded")
      assert.match(
        open.message,
        /^This model's maximum context length is 128000 tokens\. However, you requested 128\d{3}/
      )
      const proprietary = yield* Effect.flip(askOf("gpt-5", "Hi", 400_000))
      assert.strictEqual(proprietary._tag, "ContextLengthExceeded")
      if (proprietary._tag === "ContextLengthExceeded") assert.strictEqual(proprietary.status, 400)
      // each prompt of a completion is its own sequence; the Responses API's cap is `max_output_tokens`
      const completion = yield* Effect.flip(
        Effect.flatMap(
          Completions.Completions,
          (completions) => completions.create({ model, prompt: ["Hi", words(200)], max_tokens: 127_900 })
        )
      )
      assert.strictEqual(completion._tag, "ContextLengthExceeded")
      const response = yield* Effect.flip(
        Effect.flatMap(
          Responses.Responses,
          (responses) => responses.create({ model: "gpt-5", input: "Hi", max_output_tokens: 400_000 })
        )
      )
      assert.strictEqual(response._tag, "ContextLengthExceeded")
      // a prompt and cap that fit are answered; no refusal was retried
      yield* askOf(model, "Hi", 127_000)
      yield* Effect.flatMap(
        Completions.Completions,
        (completions) => completions.create({ model, prompt: ["Hi", "Hi"], max_tokens: 127_900 })
      )
      assert.strictEqual(yield* received, 6)
    }).pipe(Effect.provide(Testing.layerEmulator({ rateLimiter: false }))))

  it.effect("on tier auto, the window every plan's table agrees on: Llama's 128,000 tokens", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter.RateLimiter
      const ticket = { key: "k", model, input: 100_000 }
      assert.isFalse(limiter.needsWindow({ ...ticket, cap: 28_001 }))
      yield* limiter.acquire({ ...ticket, cap: 28_000 })
      const refused = yield* Effect.flip(limiter.acquire({ ...ticket, cap: 28_001 }))
      if (refused._tag !== "ContextLengthExceeded") return assert.fail(refused._tag)
      assert.deepInclude(refused, { window: 128_000, requested: 128_001 })
      // a model no table knows needs a listing once its request is larger than the smallest window they give
      assert.isTrue(limiter.needsWindow({ key: "k", model: unlisted, input: 4_001 }))
      assert.isFalse(limiter.needsWindow({ key: "k", model: unlisted, input: 3_000, cap: 1_000 }))
    }).pipe(Effect.provide(limiterOn({}))))

  it.effect("a window from the plan's table: Llama on essential, 128,000 tokens", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter.RateLimiter
      const ticket = { key: "k", model, input: 100_000 }
      yield* limiter.acquire({ ...ticket, cap: 28_000 })
      const refused = yield* Effect.flip(limiter.acquire({ ...ticket, cap: 28_001 }))
      assert.strictEqual(refused._tag, "ContextLengthExceeded")
      if (refused._tag === "ContextLengthExceeded") assert.deepInclude(refused, { window: 128_000, requested: 128_001 })
    }).pipe(Effect.provide(
      RateLimiter.layerWith({ tier: "essential" }).pipe(
        Layer.provide(Layer.merge(LimiterStore.layerMemory, TokenEstimator.layer))
      )
    )))

  it.effect("the server's \"Context length exceeded\": ContextLengthExceeded with its status, never retried", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(ask("Hi"))
      assert.strictEqual(refused._tag, "ContextLengthExceeded")
      assert.strictEqual(refused.message, "Context length exceeded: 140000 tokens, the model's maximum is 128000")
      if (refused._tag === "ContextLengthExceeded") assert.strictEqual(refused.status, 400)
      assert.strictEqual(calls, 1)
    }).pipe(Effect.provide(Testing.layerHttp(() => {
      calls++
      return {
        status: 400,
        body: { detail: "Context length exceeded: 140000 tokens, the model's maximum is 128000" }
      }
    }))))
})
