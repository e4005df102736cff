import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import { pollUntil } from "../../src/internal/poll.js"

describe("pollUntil", () => {
  it.effect("checks once per interval and returns the first value that is done", () =>
    Effect.gen(function*() {
      const checks = yield* Ref.make(0)
      const fiber = yield* pollUntil(Ref.updateAndGet(checks, (n) => n + 1), (n) => n === 3, {
        interval: "2 seconds",
        timeout: "1 minute"
      }).pipe(Effect.fork)
      yield* TestClock.adjust("3 seconds")
      assert.strictEqual(yield* Ref.get(checks), 2, "one check at once, one after the first interval")
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* Fiber.join(fiber), Option.some(3))
      assert.strictEqual(yield* Ref.get(checks), 3, "no check after the value that is done")
    }))

  it.effect("gives None once the timeout has passed, and stops checking", () =>
    Effect.gen(function*() {
      const checks = yield* Ref.make(0)
      const fiber = yield* pollUntil(Ref.updateAndGet(checks, (n) => n + 1), () => false, {
        interval: "2 seconds",
        timeout: "5 seconds"
      }).pipe(Effect.fork)
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(yield* Fiber.join(fiber), Option.none())
      const after = yield* Ref.get(checks)
      assert.strictEqual(after, 3, "checks at 0, 2 and 4 seconds")
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(yield* Ref.get(checks), after)
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
