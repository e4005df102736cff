import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import { pollOrFail, pollUntil } from "../../src/internal/poll.js"

/** A check that counts its runs and reports the clock's time when it ran. */
const timedCheck = Effect.gen(function*() {
  const times = yield* Ref.make<ReadonlyArray<number>>([])
  const check = Effect.flatMap(Clock.currentTimeMillis, (now) => Ref.updateAndGet(times, (all) => [...all, now]))
  return { times, check }
})

describe("pollUntil", () => {
  it.effect("checks once per interval and returns the first value that is done", () =>
    Effect.gen(function*() {
      const { check, times } = yield* timedCheck
      const fiber = yield* pollUntil(check, (all) => all.length === 3, { interval: "2 seconds", timeout: "1 minute" })
        .pipe(Effect.fork)
      yield* TestClock.adjust("3 seconds")
      assert.deepStrictEqual(yield* Ref.get(times), [0, 2000])
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(Option.map(yield* Fiber.join(fiber), (all) => all.length), Option.some(3))
      yield* TestClock.adjust("10 seconds")
      assert.deepStrictEqual(yield* Ref.get(times), [0, 2000, 4000], "no check after the value that is done")
    }))

  it.effect("the last pause ends at the deadline, where one more check runs; then None and no more checks", () =>
    Effect.gen(function*() {
      const { check, times } = yield* timedCheck
      const fiber = yield* pollUntil(check, () => false, { interval: "2 seconds", timeout: "5 seconds" })
        .pipe(Effect.fork)
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(yield* Fiber.join(fiber), Option.none())
      assert.deepStrictEqual(yield* Ref.get(times), [0, 2000, 4000, 5000])
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual((yield* Ref.get(times)).length, 4)
    }))

  it.effect("a condition met between the last interval and the deadline is seen by the check at the deadline", () =>
    Effect.gen(function*() {
      const fiber = yield* pollUntil(Clock.currentTimeMillis, (now) => now >= 4500, {
        interval: "2 seconds",
        timeout: "5 seconds"
      }).pipe(Effect.fork)
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(yield* Fiber.join(fiber), Option.some(5000))
    }))

  it.effect("a check still running at the deadline finishes, and its value counts", () =>
    Effect.gen(function*() {
      const slow = Effect.as(Effect.sleep("3 seconds"), "ready")
      const fiber = yield* pollUntil(slow, (value) => value === "ready", { interval: "1 second", timeout: "2 seconds" })
        .pipe(Effect.fork)
      yield* TestClock.adjust("3 seconds")
      assert.deepStrictEqual(yield* Fiber.join(fiber), Option.some("ready"))
    }))

  it.effect("a zero timeout still checks once", () =>
    Effect.gen(function*() {
      const { check, times } = yield* timedCheck
      const result = yield* pollUntil(Effect.zipLeft(check, Effect.yieldNow()), () => false, {
        interval: "1 second",
        timeout: 0
      })
      assert.deepStrictEqual(result, Option.none())
      assert.strictEqual((yield* Ref.get(times)).length, 1)
    }))

  it.effect("a zero interval is held to the minimum pause, not a storm of checks", () =>
    Effect.gen(function*() {
      const { check, times } = yield* timedCheck
      const fiber = yield* pollUntil(check, () => false, { interval: 0, timeout: "100 millis" }).pipe(Effect.fork)
      yield* TestClock.adjust("100 millis")
      yield* Fiber.join(fiber)
      assert.strictEqual((yield* Ref.get(times)).length, 11, "every 10 ms from 0 to 100 ms")
    }))

  it.effect("a failed check ends the polling with its error", () =>
    Effect.gen(function*() {
      const error = yield* pollUntil(Effect.fail("boom" as const), () => true, {
        interval: "1 second",
        timeout: "1 minute"
      }).pipe(Effect.flip)
      assert.strictEqual(error, "boom")
    }))
})

describe("pollOrFail", () => {
  it.effect("the value that is done, or the caller's error once the deadline passes", () =>
    Effect.gen(function*() {
      const options = { interval: "1 second", timeout: "3 seconds", onTimeout: () => "late" as const } as const
      const ok = yield* pollOrFail(Effect.succeed(7), (n) => n === 7, options)
      assert.strictEqual(ok, 7)
      const fiber = yield* pollOrFail(Effect.succeed(1), (n) => n === 7, options).pipe(Effect.flip, Effect.fork)
      yield* TestClock.adjust("3 seconds")
      assert.strictEqual(yield* Fiber.join(fiber), "late")
    }))
})
