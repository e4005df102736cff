/**
 * The time limit of an attempt (src/internal/request/deadline.ts): on the live clock, one child fiber and one timer;
 * on any other clock, `Effect.timeoutFail`. The live clock's branch runs only on real time: its waits here are a few
 * milliseconds, and an effect that must time out never ends on its own.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as TestClock from "effect/TestClock"
import { deadline } from "../../src/internal/request/deadline.js"

const timedOut = () => "timed out" as const
const ms = Duration.millis
/** A fiber ref an effect sets, to see whether its value comes back to the caller. */
const ref = FiberRef.unsafeMake(0)
/** The longest delay a JS timer takes. */
const maxTimer = 2 ** 31 - 1

describe("deadline on the live clock", () => {
  it.live("an effect that ends in time keeps its value; one that fails keeps its error", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* deadline(Effect.succeed(1), ms(1000), timedOut), 1)
      assert.strictEqual(yield* Effect.flip(deadline(Effect.fail("boom"), ms(1000), timedOut)), "boom")
    }))

  it.live("one that runs past the limit is interrupted, its finalizers run first, and fails with the limit's error", () =>
    Effect.gen(function*() {
      const finalized: Array<string> = []
      const never = Effect.onInterrupt(Effect.never, () => Effect.sync(() => finalized.push("finalizer")))
      const error = yield* Effect.flip(deadline(never, ms(10), timedOut))
      assert.strictEqual(error, "timed out")
      assert.deepStrictEqual(finalized, ["finalizer"])
    }))

  it.live("an interruption that is not the limit's stays an interruption", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(deadline(Effect.interrupt, ms(1000), timedOut))
      assert.isTrue(Exit.isInterrupted(exit))
    }))

  it.live("the caller interrupted: the effect is interrupted too, and awaited to its end", () =>
    Effect.gen(function*() {
      const finalized: Array<string> = []
      const slowFinalizer = Effect.onInterrupt(
        Effect.never,
        () => Effect.zipRight(Effect.sleep(ms(5)), Effect.sync(() => finalized.push("finalizer")))
      )
      const fiber = yield* Effect.fork(deadline(slowFinalizer, ms(60_000), timedOut))
      yield* Effect.sleep(ms(5))
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(finalized, ["finalizer"])
    }))

  it.live("the effect runs in a child fiber, whose fiber refs are not merged back; past a timer's range it runs alone", () =>
    Effect.gen(function*() {
      const caller = yield* Effect.fiberId
      const inside = Effect.zipRight(FiberRef.set(ref, 1), Effect.fiberId)
      assert.notDeepEqual(yield* deadline(inside, ms(1000), timedOut), caller)
      assert.notDeepEqual(yield* deadline(inside, ms(maxTimer), timedOut), caller)
      assert.strictEqual(yield* FiberRef.get(ref), 0)
      // a limit no timer can wait for never fires: nothing to fork
      assert.deepStrictEqual(yield* deadline(inside, ms(maxTimer + 1), timedOut), caller)
      assert.strictEqual(yield* FiberRef.get(ref), 1)
    }))
})

describe("deadline on another clock", () => {
  it.effect("a TestClock moves the limit: Effect.timeoutFail, whose fiber refs are merged back", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(deadline(Effect.never, ms(1000), timedOut))
      yield* TestClock.adjust(ms(999))
      assert.isNull(fiber.unsafePoll())
      yield* TestClock.adjust(ms(1))
      assert.strictEqual(yield* Effect.flip(Fiber.join(fiber)), "timed out")
      yield* deadline(FiberRef.set(ref, 1), ms(1000), timedOut)
      assert.strictEqual(yield* FiberRef.get(ref), 1)
    }))
})
