/**
 * The queue root (interface 1.1.0): over the limit, a request waits for capacity instead of meeting a 429.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as Emulator from "../../src/emulator/Emulator.js"
import { ClientConfig } from "../../src/layers/ClientConfig.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Chat from "../../src/services/Chat.js"
import { ask, clientCounters, queuedChat, sleepsBetween, waitUntil } from "../helpers/emulator.js"

const window = "10 seconds"

// retries disabled: a 429 on the queue would surface as a failure instead of being waited out by the client; a key of
// the seed's basic figures on every model (20 requests a window: a basic key has no proprietary model)
const seeded = (options: Testing.LayerEmulatorOptions = {}) =>
  Testing.layerEmulator({
    tier: "seed",
    tiers: { seed: Emulator.fallbackQuotas.basic },
    window,
    client: { maxRetries: 0 },
    rateLimiter: false,
    ...options
  })

const fill = (model: string) =>
  Effect.forEach(
    Array.from({ length: 20 }, (_, i) => i),
    (i) => queuedChat(ask(model, `queued request ${i}`)),
    { concurrency: "unbounded" }
  )

describe("queue endpoints", () => {
  it.effect("the client's queue base is the emulator's queue root", () =>
    Effect.gen(function*() {
      const config = yield* ClientConfig
      const emulator = yield* Emulator.Emulator
      assert.strictEqual(config.queueUrl, emulator.queueUrl)
      const { response, value } = yield* queuedChat(ask("Llama-3.3-70B-Instruct", "Hello queue"))
      assert.strictEqual(response.status, 200)
      assert.strictEqual(value.object, "chat.completion")
      // the queue answers the same deterministic completion as /v2
      const chat = yield* Chat.Chat
      const standard = yield* chat.create(ask("Llama-3.3-70B-Instruct", "Hello queue"))
      assert.strictEqual(value.text, standard.text)
    }).pipe(Effect.provide(seeded())))

  it.effect("request 21 on a key of 20 a window waits for the window instead of a 429, then completes", () =>
    Effect.gen(function*() {
      const before = yield* clientCounters
      const first = yield* fill("gpt-4o")
      assert.strictEqual(first.length, 20)
      const fiber = yield* Effect.fork(queuedChat(ask("gpt-4o", "the twenty-first")))
      // the emulator holds it: a sleep of the whole window on the TestClock
      yield* waitUntil("the queue holds the request", Effect.map(sleepsBetween(9_000, 10_000), (n) => n === 1))
      yield* TestClock.adjust("5 seconds")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)), "still waiting halfway through the window")
      yield* TestClock.adjust("5 seconds")
      const { response, value } = yield* Fiber.join(fiber)
      assert.strictEqual(response.status, 200)
      assert.isAbove(value.text.length, 0)
      // answered once the first twenty had left the window: it is the only one counted now
      assert.strictEqual(response.rateLimit.remainingRequests, 19)
      assert.strictEqual(response.rateLimit.observedAt, 10_000)
      const after = yield* clientCounters
      assert.strictEqual(after.rateLimited - before.rateLimited, 0, "no 429 was met")
    }).pipe(Effect.provide(seeded())))

  it.effect("the same key meets a 429 on /v2 while the queue waits", () =>
    Effect.gen(function*() {
      yield* fill("Llama-3.3-70B-Instruct")
      const chat = yield* Chat.Chat
      const standard = yield* Effect.flip(chat.create(ask("Llama-3.3-70B-Instruct", "on v2")))
      assert.strictEqual(standard._tag, "RateLimited")
      const queued = yield* Effect.fork(queuedChat(ask("Llama-3.3-70B-Instruct", "on the queue")))
      yield* waitUntil("the queue holds the request", Effect.map(sleepsBetween(9_000, 10_000), (n) => n === 1))
      yield* TestClock.adjust(window)
      const result = yield* Fiber.join(queued)
      assert.strictEqual(result.response.status, 200)
    }).pipe(Effect.provide(seeded())))

  it.effect("a wait longer than the queue's limit is a 429 after all", () =>
    Effect.gen(function*() {
      yield* fill("gpt-4o")
      const error = yield* Effect.flip(queuedChat(ask("gpt-4o", "too long a wait")))
      assert.strictEqual(error._tag, "RateLimited")
      if (error._tag === "RateLimited") assert.strictEqual(Duration.toMillis(error.retryAfter!), 10_000)
    }).pipe(Effect.provide(seeded({ queueMaxWait: "5 seconds" }))))
})
