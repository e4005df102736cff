/**
 * Shortcuts for the limiter's unit tests: a fresh limiter per test, a request ticket, and ways to move the
 * `TestClock` exactly to the next wake-up so that admission times can be compared to the millisecond.
 */
import { assert } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as RateLimiter from "../../src/layers/RateLimiter.js"

/** A fresh limiter on the memory store (margin 0 unless `options` says otherwise). */
export const limiterWith = (options: RateLimiter.Options) =>
  Effect.provide(RateLimiter.RateLimiter, RateLimiter.layer({ margin: 0, ...options }))

/**
 * A request of `tokens` input tokens on key `key#1` and `model` (no output reserved unless `output` is given): it costs
 * `tokens` of the input budget and of the combined `tokens` budget, as the old `{ tokens }` ticket did.
 */
export const ticket = (tokens = 10, model = "m", output?: number): RateLimiter.Ticket =>
  output === undefined ? { key: "key#1", model, input: tokens } : { key: "key#1", model, input: tokens, output }

/** Lets every fiber that can run do so (a bounded number of yields). */
export const runReady = Effect.gen(function*() {
  for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
})

/** The result of `fiber` once the fibers it waits on have run (a few yields), or a failed assertion: never a hang. */
export const settled = <A, E>(fiber: Fiber.Fiber<A, E>, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 50; i++) {
      const exit = yield* Fiber.poll(fiber)
      if (Option.isSome(exit)) return yield* exit.value
      yield* Effect.yieldNow()
    }
    return assert.fail(`${what}: still waiting`)
  })

/** Whether `fiber` is still running after every ready fiber has run. */
export const stillWaiting = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.zipRight(runReady, Effect.map(Fiber.poll(fiber), Option.isNone))

/**
 * Runs the clock from one wake-up to the next (never past one) until `fiber` is done: every sleeper wakes at its
 * exact time. Bounded in steps.
 */
export const runToEnd = <A, E>(fiber: Fiber.Fiber<A, E>, maxSteps = 500) =>
  Effect.gen(function*() {
    for (let step = 0; step < maxSteps; step++) {
      yield* runReady
      if (Option.isSome(yield* Fiber.poll(fiber))) return yield* Fiber.join(fiber)
      const now = yield* Clock.currentTimeMillis
      const next = Chunk.toReadonlyArray(yield* TestClock.sleeps()).filter((t) => t > now)
      if (next.length === 0) return assert.fail("nothing left to wake and the fiber is not done")
      yield* TestClock.adjust(Math.min(...next) - now)
    }
    return assert.fail(`not done after ${maxSteps} clock steps`)
  })

/** The time now, for recording when something happened. */
export const now = Clock.currentTimeMillis
