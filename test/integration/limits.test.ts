/**
 * The emulator's limits met by the client under the `TestClock`: 429s with the server's wait, retries that
 * wait exactly that long, and the token (TPM) dimension.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as Testing from "../../src/layers/Testing.js"
import type { ApiError } from "../../src/schemas/Errors.js"
import * as Chat from "../../src/services/Chat.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import { ask, clientCounters, sleepsBetween, waitUntil } from "../helpers/emulator.js"

const window = "10 seconds"

/**
 * A key of the seed's basic figures on every model, 20 requests and 18,750 tokens a window (a basic key has no
 * proprietary model: it gets 404 for one), so that the proprietary models' headers show small numbers.
 */
const seeded = (options: Testing.LayerEmulatorOptions) =>
  Testing.layerEmulator({ tier: "seed", tiers: { seed: Emulator.fallbackQuotas.basic }, ...options })

const sendMany = (model: string, n: number, label = "burst") =>
  Effect.flatMap(Chat.Chat, (chat) =>
    Effect.forEach(
      Array.from({ length: n }, (_, i) => i),
      (i) => chat.createWithResponse(ask(model, `${label} request ${i}`)),
      { concurrency: "unbounded" }
    ))

describe("requests per window", () => {
  it.effect("without retries, request 21 in the window fails with RateLimited and the server's wait", () =>
    Effect.gen(function*() {
      const before = yield* clientCounters
      const ok = yield* sendMany("gpt-4o", 20)
      assert.strictEqual(ok.length, 20)
      assert.deepStrictEqual(
        ok.map((r) => r.response.rateLimit.remainingRequests).sort((a, b) => a! - b!),
        Array.from({ length: 20 }, (_, i) => i)
      )
      const chat = yield* Chat.Chat
      const error = yield* Effect.flip(chat.create(ask("gpt-4o", "one too many")))
      assert.strictEqual(error._tag, "RateLimited")
      if (error._tag !== "RateLimited") return
      assert.strictEqual(error.status, 429)
      assert.strictEqual(error.code, "429")
      assert.include(error.message, "20 requests")
      assert.isDefined(error.retryAfter)
      assert.strictEqual(Duration.toMillis(error.retryAfter!), 10_000)
      assert.strictEqual(error.rateLimit?.remainingRequests, 0)
      assert.strictEqual(Duration.toMillis(error.rateLimit!.retryAfter!), 10_000)
      const after = yield* clientCounters
      assert.strictEqual(after.rateLimited - before.rateLimited, 1)
      assert.strictEqual(after.retryWaitMillis - before.retryWaitMillis, 0)
      // a rejected request is not counted: once the window has slid past, the key has its whole quota again
      yield* TestClock.adjust(window)
      const again = yield* chat.createWithResponse(ask("gpt-4o", "after the window"))
      assert.strictEqual(again.response.rateLimit.remainingRequests, 19)
    }).pipe(
      Effect.provide(seeded({ window, client: { maxRetries: 0 }, rateLimiter: false }))
    ))

  it.effect("a call that gives up without retrying adds nothing to the retries counter", () =>
    Effect.gen(function*() {
      yield* sendMany("gpt-4o", 20)
      const before = yield* clientCounters
      const chat = yield* Chat.Chat
      const error = yield* Effect.flip(chat.create(ask("gpt-4o", "one too many")))
      assert.strictEqual(error._tag, "RateLimited")
      const after = yield* clientCounters
      assert.strictEqual(after.rateLimited - before.rateLimited, 1)
      // maxRetries is 0: no retry was made, so `ClientMetrics.retries` must not move
      assert.strictEqual(after.retries - before.retries, 0)
    }).pipe(
      Effect.provide(seeded({ window, client: { maxRetries: 0 }, rateLimiter: false }))
    ))

  it.effect("the window slides: requests leave it one by one, not all at a minute boundary", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      yield* sendMany("gpt-4.1", 10, "early")
      yield* TestClock.adjust("6 seconds")
      yield* sendMany("gpt-4.1", 10, "late")
      yield* TestClock.adjust("4 seconds")
      // t = 10 s: the early ten have left, the late ten (sent at 6 s) stay until 16 s
      const admitted = yield* sendMany("gpt-4.1", 10, "third")
      assert.strictEqual(admitted.length, 10)
      const error = yield* Effect.flip(chat.create(ask("gpt-4.1", "over")))
      assert.strictEqual(error._tag, "RateLimited")
      if (error._tag === "RateLimited") assert.strictEqual(Duration.toMillis(error.retryAfter!), 6_000)
    }).pipe(
      Effect.provide(seeded({ window, client: { maxRetries: 0 }, rateLimiter: false }))
    ))

  it.effect("an open-source model answers 429 with a detail body and retry-after, without limit headers", () =>
    Effect.gen(function*() {
      yield* sendMany("Llama-3.3-70B-Instruct", 20)
      const chat = yield* Chat.Chat
      const error = yield* Effect.flip(chat.create(ask("Llama-3.3-70B-Instruct", "over")))
      assert.strictEqual(error._tag, "RateLimited")
      if (error._tag !== "RateLimited") return
      assert.include(error.message, "Rate limit exceeded")
      assert.strictEqual(Duration.toMillis(error.retryAfter!), 10_000)
      assert.isFalse(error.rateLimit!.hasLimitHeaders)
      assert.isUndefined(error.code)
    }).pipe(
      Effect.provide(seeded({ window, client: { maxRetries: 0 }, rateLimiter: false }))
    ))

  it.effect("with retries, 30 concurrent requests all succeed once the clock passes the window", () =>
    Effect.gen(function*() {
      const before = yield* clientCounters
      const fiber = yield* Effect.fork(sendMany("gpt-4o", 30))
      // 20 are admitted, 10 meet a 429 and sleep the server's 10 s (plus < 250 ms jitter) in the retry policy
      yield* waitUntil(
        "ten requests sleep in their retry",
        Effect.map(sleepsBetween(9_000, 11_000), (n) => n === 10)
      )
      const waiting = yield* clientCounters
      assert.strictEqual(waiting.rateLimited - before.rateLimited, 10)
      assert.strictEqual(waiting.retries - before.retries, 10)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)), "nothing completes the burst before the clock moves")
      yield* TestClock.adjust("9 seconds")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)), "the retries wait the whole server wait")
      yield* TestClock.adjust("2 seconds")
      const results = yield* Fiber.join(fiber)
      assert.strictEqual(results.length, 30)
      assert.isTrue(results.every((r) => r.response.status === 200))
      const after = yield* clientCounters
      assert.strictEqual(after.rateLimited - before.rateLimited, 10, "each 429 met is counted once")
      assert.strictEqual(after.retries - before.retries, 10)
      const waited = after.retryWaitMillis - before.retryWaitMillis
      assert.isAtLeast(waited, 10 * 10_000)
      assert.isBelow(waited, 10 * 10_250)
    }).pipe(Effect.provide(seeded({ window, rateLimiter: false }))))

  it.effect("a stream over the limit fails with RateLimited before any chunk", () =>
    Effect.gen(function*() {
      yield* sendMany("gpt-4o", 20)
      const chat = yield* Chat.Chat
      const error = yield* Effect.flip(Stream.runCollect(chat.createStream(ask("gpt-4o", "stream over the limit"))))
      assert.strictEqual(error._tag, "RateLimited")
      if (error._tag === "RateLimited") assert.strictEqual(Duration.toMillis(error.retryAfter!), 10_000)
    }).pipe(
      Effect.provide(seeded({ window, client: { maxRetries: 0 }, rateLimiter: false }))
    ))

  it.effect("with retries, a stream that meets a 429 waits the server's wait and then streams", () =>
    Effect.gen(function*() {
      yield* sendMany("gpt-4o", 20)
      const chat = yield* Chat.Chat
      const params = ask("gpt-4o", "stream after the wait")
      const fiber = yield* Effect.fork(Chat.collect(chat.createStream(params)))
      yield* waitUntil("the stream sleeps in its retry", Effect.map(sleepsBetween(9_000, 11_000), (n) => n === 1))
      yield* TestClock.adjust("11 seconds")
      const folded = yield* Fiber.join(fiber)
      const plain = yield* chat.create(params)
      assert.strictEqual(folded.text, plain.text)
      assert.deepStrictEqual(folded.usage, plain.usage)
    }).pipe(Effect.provide(seeded({ window, rateLimiter: false }))))

  it.effect("a wait longer than the retry budget fails at once instead of sleeping", () =>
    Effect.gen(function*() {
      yield* sendMany("gpt-4o", 20)
      const before = yield* clientCounters
      const chat = yield* Chat.Chat
      // the window is 5 minutes; the default budget allows 2 minutes of waiting
      const fiber = yield* Effect.fork(Effect.flip(chat.create(ask("gpt-4o", "over"))))
      yield* waitUntil(
        "the request gives up without the clock moving",
        Effect.map(Fiber.poll(fiber), Option.isSome)
      )
      const error = yield* Fiber.join(fiber)
      assert.strictEqual(error._tag, "RateLimited")
      if (error._tag === "RateLimited") assert.strictEqual(Duration.toMillis(error.retryAfter!), 300_000)
      const after = yield* clientCounters
      assert.strictEqual(after.rateLimited - before.rateLimited, 1)
      assert.strictEqual(after.retryWaitMillis - before.retryWaitMillis, 0)
    }).pipe(Effect.provide(seeded({ window: "5 minutes", rateLimiter: false }))))
})

describe("tokens per window", () => {
  const tiny = {
    tiers: { tiny: { rpm: 1000, tpm: 300 } },
    keys: [{ key: "gen-tinytierkeyforthetokenlimittest000000000000000", tier: "tiny" }],
    tier: "tiny",
    window
  } as const

  it.effect("rejects once the tokens of the window are spent, while requests remain", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      assert.strictEqual(emulator.keyFor("tiny"), tiny.keys[0].key)
      const chat = yield* Chat.Chat
      const params = ask("gpt-4o", "The same question each time")
      let spent = 0
      let admitted = 0
      let failure: ApiError | undefined
      for (let i = 0; i < 50 && failure === undefined; i++) {
        const result = yield* Effect.either(chat.createWithResponse(params))
        if (Either.isLeft(result)) {
          failure = result.left
        } else {
          admitted++
          spent += result.right.value.usage?.total_tokens ?? 0
          assert.strictEqual(result.right.response.rateLimit.limitTokens, 300)
          assert.strictEqual(result.right.response.rateLimit.remainingTokens, 300 - spent)
        }
      }
      assert.isDefined(failure, "the token limit was reached within 50 requests")
      const cost = spent / admitted
      assert.strictEqual(admitted, Math.floor(300 / cost), "exactly as many as the tokens allow")
      assert.strictEqual(failure!._tag, "RateLimited")
      if (failure!._tag !== "RateLimited") return
      assert.include(failure.message, "300 tokens")
      assert.strictEqual(failure.errorType, "tokens")
      // the requests dimension still has room: tokens alone rejected it
      assert.strictEqual(failure.rateLimit?.remainingRequests, 1000 - admitted)
      assert.strictEqual(failure.rateLimit?.remainingTokens, 300 - spent)
      assert.isDefined(failure.retryAfter)
      yield* TestClock.adjust(window)
      const refreshed = yield* chat.createWithResponse(params)
      assert.strictEqual(refreshed.response.rateLimit.remainingTokens, 300 - cost)
    }).pipe(Effect.provide(Testing.layerEmulator({ ...tiny, client: { maxRetries: 0 }, rateLimiter: false }))))

  it.effect("embeddings spend the same token budget", () =>
    Effect.gen(function*() {
      const embeddings = yield* Embeddings.Embeddings
      // 75 words of 4 letters: 75 tokens each time
      const input = Array.from({ length: 75 }, () => "word").join(" ")
      for (let i = 0; i < 4; i++) {
        const r = yield* embeddings.createWithResponse({ model: "text-embedding-bge-m3", input })
        assert.strictEqual(r.value.usage?.total_tokens, 75)
      }
      const error = yield* Effect.flip(embeddings.create({ model: "text-embedding-bge-m3", input: "one more" }))
      assert.strictEqual(error._tag, "RateLimited")
    }).pipe(Effect.provide(Testing.layerEmulator({ ...tiny, client: { maxRetries: 0 }, rateLimiter: false }))))

  it.effect("a request larger than the whole token budget is rejected even on a fresh window", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const huge = Array.from({ length: 400 }, () => "word").join(" ")
      const error = yield* Effect.flip(chat.create(ask("gpt-4o", huge)))
      // a 429 "Request too large" can never pass: RequestTooLarge, not retryable
      assert.strictEqual(error._tag, "RequestTooLarge")
      if (error._tag === "RequestTooLarge") {
        assert.strictEqual(error.status, 429)
        assert.isFalse(error.isRetryable)
        assert.include(error.message, "Request too large")
      }
    }).pipe(Effect.provide(Testing.layerEmulator({ ...tiny, client: { maxRetries: 0 }, rateLimiter: false }))))

  it.effect("with retries on, a request larger than the whole budget is not retried: waiting cannot help", () =>
    Effect.gen(function*() {
      const before = yield* clientCounters
      const chat = yield* Chat.Chat
      const huge = Array.from({ length: 400 }, () => "word").join(" ")
      const fiber = yield* Effect.fork(Effect.flip(chat.create(ask("gpt-4o", huge))))
      // a retry would sleep on the TestClock, which does not move here
      yield* waitUntil(
        "the request gives up without the clock moving",
        Effect.map(Fiber.poll(fiber), Option.isSome),
        { deadlineMillis: 2_000 }
      )
      const error = yield* Fiber.join(fiber)
      assert.strictEqual(error.isRetryable, false)
      const after = yield* clientCounters
      assert.strictEqual(after.rateLimited - before.rateLimited, 1, "one attempt only")
    }).pipe(Effect.provide(Testing.layerEmulator({ ...tiny, rateLimiter: false }))))
})
