import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Chat from "../../src/services/Chat.js"
import { ask } from "../helpers/emulator.js"

const windowMs = 6_000
const llama = "Llama-3.3-70B-Instruct"

/** The emulator with one key whose limits match no preset, and a client told nothing of them. */
const emulatorWithKey = (rpm: number, tpm = 10_000_000) =>
  Testing.layerEmulator({
    tier: "custom",
    tiers: { custom: { rpm, tpm } },
    keys: [{ key: Emulator.developmentKey("custom"), tier: "custom" }],
    window: `${windowMs} millis`,
    client: { tier: "auto" },
    rateLimiter: { margin: 0 }
  })

/** Live milliseconds, off the TestClock. */
const liveSleep = (ms: number) => TestServices.provideLive(Effect.sleep(`${ms} millis`))

/**
 * Waits (live, bounded) until the emulator has nothing on the wire and received nothing new over a few polls: every
 * request is answered, waiting in the limiter or asleep on the TestClock.
 */
const quiet = Effect.gen(function*() {
  const emulator = yield* Emulator.Emulator
  let last = -1
  let still = 0
  for (let i = 0; i < 400 && still < 3; i++) {
    const stats = yield* emulator.stats
    still = stats.inFlight === 0 && stats.received === last ? still + 1 : 0
    last = stats.received
    yield* liveSleep(5)
  }
})

/**
 * Runs `requests` with `concurrency` to completion under the TestClock, moving the clock to the next wake-up
 * whenever the system is quiet, for at most `maxSteps` moves. Returns the clock's time at each 429 the emulator
 * answered, counted at each step.
 */
const drive = (requests: number, concurrency: number, model = llama, maxSteps = 3_000) =>
  Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const emulator = yield* Emulator.Emulator
    const refusals: Array<number> = []
    const fiber = yield* Effect.fork(Effect.forEach(
      Array.from({ length: requests }, (_, i) => i),
      (i) => chat.create(ask(model, `question ${i}`, { max_tokens: 10 })),
      { concurrency, discard: true }
    ))
    let refused = (yield* emulator.stats).rateLimited
    for (let step = 0; step < maxSteps; step++) {
      yield* quiet
      const now = yield* Clock.currentTimeMillis
      const stats = yield* emulator.stats
      for (; refused < stats.rateLimited; refused++) refusals.push(now)
      if (Option.isSome(yield* Fiber.poll(fiber))) {
        yield* Fiber.join(fiber)
        return refusals
      }
      const wakeUps = Chunk.toReadonlyArray(yield* TestClock.sleeps()).filter((t) => t > now)
      yield* TestClock.adjust(Math.max(1, Math.min(...wakeUps) - now))
    }
    return yield* Effect.dieMessage(`not done after ${maxSteps} clock steps`)
  })

const bucketOf = (model: string) =>
  Effect.flatMap(
    RateLimiter.RateLimiter,
    (limiter) => Effect.map(limiter.snapshot, (states) => states.find((s) => s.model === model))
  )

describe("tier auto: limits learnt from the server", () => {
  it.effect("without headers, the estimate converges to the key's limit, its 429s in the first window and one raise", () =>
    Effect.gen(function*() {
      const start = yield* Clock.currentTimeMillis
      const refusals = yield* drive(60, 8)
      const bucket = yield* bucketOf(llama)
      assert.deepStrictEqual(bucket?.requests, { value: 9, source: "learnt", confidence: "measured" })
      // the wall: the requests in flight when the first 429 came; later, only the careful raise after 3 calm
      // windows meets one (the limit has not changed)
      const first = refusals.filter((t) => t - start < windowMs)
      const later = refusals.filter((t) => t - start >= windowMs)
      assert.isAtMost(first.length, 8)
      assert.isAtMost(later.length, 1)
      assert.isTrue(later.every((t) => t - start >= 3 * windowMs), `429s at ${refusals.map((t) => t - start)}`)
      // 60 requests at 9 a window: 6 windows and a bit, nothing lost to the learning
      assert.isAtMost((yield* Clock.currentTimeMillis) - start, 7 * windowMs)
    }).pipe(Effect.provide(emulatorWithKey(9))))
})
