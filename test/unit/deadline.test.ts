/**
 * The time limits of attempts on one timer (src/internal/request/deadline.ts), on the `TestClock`: an attempt is cut
 * exactly when a limit that still holds passes, its finalizers run before the caller sees the `Timeout`, its own
 * failures and values pass through, it runs with its caller's context, a caller's interruption ends it, and the one
 * timer stops when nothing is pending.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import * as Deadlines from "../../src/internal/request/deadline.js"

/** Lets forked fibers run (the timer, the attempts) without moving the `TestClock`. */
const settle = Effect.zipRight(TestServices.provideLive(Effect.sleep("5 millis")), Effect.yieldNow())

const limit = (millis: number, name: string, holds?: () => boolean): Deadlines.Limit<string> => ({
  after: Duration.millis(millis),
  error: () => `${name} passed`,
  holds
})

/** Moves the clock to `millis` from the start, letting everything due run. */
const at = (start: number, millis: number) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    yield* TestClock.adjust(start + millis - now)
    yield* settle
  })

const failureOf = <A, E>(exit: Option.Option<Exit.Exit<A, E>>) =>
  Option.isSome(exit) && Exit.isFailure(exit.value)
    ? Option.getOrUndefined(Cause.failureOption(exit.value.cause))
    : undefined

/** `fiber` still runs 1 ms before `millis` from `start`, and is cut by the limit `name` at it. */
const cutExactlyAt = <A>(fiber: Fiber.Fiber<A, string>, start: number, millis: number, name: string) =>
  Effect.gen(function*() {
    yield* at(start, millis - 1)
    assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)), `${name}: still running 1 ms before its limit`)
    yield* at(start, millis)
    assert.strictEqual(failureOf(yield* Fiber.poll(fiber)), `${name} passed`)
  })

describe("deadlines", () => {
  it.scoped("an attempt that outlasts its limit is cut exactly then, its finalizer run before the Timeout", () =>
    Effect.gen(function*() {
      const { within } = yield* Deadlines.make
      const start = yield* Clock.currentTimeMillis
      let finalized = false
      const fiber = yield* Effect.fork(
        within(Effect.ensuring(Effect.never, Effect.sync(() => (finalized = true))), [limit(1_000, "total")])
      )
      yield* settle
      yield* at(start, 999)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)), "still running 1 ms before its limit")
      yield* at(start, 1_000)
      const exit = yield* Fiber.await(fiber)
      assert.deepStrictEqual(exit, Exit.fail("total passed"))
      assert.isTrue(finalized)
    }))

  it.scoped("values and failures of the attempt pass through; its own interruption stays one", () =>
    Effect.gen(function*() {
      const { within } = yield* Deadlines.make
      assert.strictEqual(yield* within(Effect.succeed(7), [limit(1_000, "total")]), 7)
      assert.deepStrictEqual(
        yield* Effect.exit(within(Effect.fail("refused"), [limit(1_000, "total")])),
        Exit.fail("refused")
      )
      const interrupted = yield* Effect.exit(within(Effect.interrupt, [limit(1_000, "total")]))
      assert.isTrue(Exit.isInterrupted(interrupted))
      // an answer that came in time is not cut later
      const start = yield* Clock.currentTimeMillis
      const fiber = yield* Effect.fork(within(Effect.as(Effect.sleep("500 millis"), "answer"), [limit(1_000, "total")]))
      yield* settle
      yield* at(start, 2_000)
      assert.deepStrictEqual(yield* Fiber.await(fiber), Exit.succeed("answer"))
    }))

  it.scoped("an attempt's failure is its caller's: never logged as a fiber's unhandled error, even at debug level", () =>
    Effect.gen(function*() {
      const { within } = yield* Deadlines.make
      const logs: Array<string> = []
      const logged = <A, E>(effect: Effect.Effect<A, E>) =>
        effect.pipe(
          Effect.provide(
            Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => logs.push(String(message))))
          ),
          Logger.withMinimumLogLevel(LogLevel.Debug)
        )
      assert.deepStrictEqual(
        yield* logged(Effect.exit(within(Effect.fail("refused"), [limit(1_000, "total")]))),
        Exit.fail("refused")
      )
      assert.deepStrictEqual(logs, [])
      // what the runtime says of a forked fiber that fails, with the same logger: the attempt's does not say it
      yield* logged(Effect.flatMap(Effect.fork(Effect.fail("refused")), Fiber.await))
      assert.isTrue(logs.some((line) => line.includes("unhandled error")), logs.join("; "))
    }))

  it.scoped("the attempt runs with the caller's services, fiber references and span, not the timer's", () =>
    Effect.gen(function*() {
      const { within } = yield* Deadlines.make
      class Greeting extends Context.Tag("test/Greeting")<Greeting, string>() {}
      const ref = FiberRef.unsafeMake("the layer's")
      const seen = yield* within(
        Effect.all([
          Effect.serviceOption(Greeting),
          FiberRef.get(ref),
          Effect.map(Effect.currentSpan, (span) => span.name)
        ]),
        [limit(1_000, "total")]
      ).pipe(
        Effect.withSpan("the caller's span"),
        Effect.locally(ref, "the caller's"),
        Effect.provideService(Greeting, "hello")
      )
      assert.deepStrictEqual(seen, [Option.some("hello"), "the caller's", "the caller's span"])
    }))

  it.scoped("a limit that no longer holds when it passes is skipped; the next one cuts", () =>
    Effect.gen(function*() {
      const { within } = yield* Deadlines.make
      const start = yield* Clock.currentTimeMillis
      let responded = false
      const attempt = within(Effect.never, [limit(5_000, "total"), limit(1_000, "firstByte", () => !responded)])
      const fiber = yield* Effect.fork(attempt)
      yield* settle
      yield* at(start, 500)
      responded = true
      yield* at(start, 4_999)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)), "the first-byte limit did not cut an answered attempt")
      yield* at(start, 5_000)
      assert.strictEqual(failureOf(Option.some(yield* Fiber.await(fiber))), "total passed")
      // unanswered: the first-byte limit cuts first
      const second = yield* Effect.fork(within(Effect.never, [limit(5_000, "total"), limit(1_000, "firstByte")]))
      yield* settle
      const restart = yield* Clock.currentTimeMillis
      yield* at(restart, 1_000)
      assert.strictEqual(failureOf(Option.some(yield* Fiber.await(second))), "firstByte passed")
    }))

  it.scoped("attempts of different lengths each end at their own moment, a shorter one started later first", () =>
    Effect.gen(function*() {
      const { within } = yield* Deadlines.make
      const start = yield* Clock.currentTimeMillis
      const long = yield* Effect.fork(within(Effect.never, [limit(10_000, "long")]))
      yield* settle
      yield* at(start, 100)
      const short = yield* Effect.fork(within(Effect.never, [limit(200, "short")]))
      yield* settle
      yield* cutExactlyAt(short, start, 300, "short")
      yield* cutExactlyAt(long, start, 10_000, "long")
    }))

  it.scoped("after a limit passes, the timer sleeps until the earliest of every length still pending", () =>
    Effect.gen(function*() {
      const { within } = yield* Deadlines.make
      const start = yield* Clock.currentTimeMillis
      const first = yield* Effect.fork(within(Effect.never, [limit(1_000, "first")]))
      const long = yield* Effect.fork(within(Effect.never, [limit(5_000, "long")]))
      yield* settle
      yield* at(start, 100)
      const second = yield* Effect.fork(within(Effect.never, [limit(1_000, "second")]))
      yield* settle
      yield* cutExactlyAt(first, start, 1_000, "first")
      yield* cutExactlyAt(second, start, 1_100, "second")
      yield* cutExactlyAt(long, start, 5_000, "long")
    }))

  it.scoped("a caller interrupted ends its attempt, whose finalizer runs before the interruption completes", () =>
    Effect.gen(function*() {
      const { within } = yield* Deadlines.make
      let finalized = false
      const fiber = yield* Effect.fork(
        within(Effect.ensuring(Effect.never, Effect.sync(() => (finalized = true))), [limit(1_000, "total")])
      )
      yield* settle
      yield* Fiber.interrupt(fiber)
      assert.isTrue(finalized)
    }))

  it.effect("the one timer runs while a limit is pending, ends at its first look (every 2 s) with none, and with its scope", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { timing, within } = yield* Scope.extend(Deadlines.make, scope)
      // an unbounded limit needs no timer, and never passes
      const unbounded = yield* Effect.fork(within(Effect.never, [limit(Infinity, "never")]))
      yield* settle
      assert.isFalse(timing())
      yield* TestClock.adjust("1000 days")
      assert.isTrue(Option.isNone(yield* Fiber.poll(unbounded)))
      yield* Fiber.interrupt(unbounded)
      const start = yield* Clock.currentTimeMillis
      // two pending limits, one timer, which looks again at 2 s (their limits are a minute away)
      const first = yield* Effect.fork(within(Effect.sleep("1500 millis"), [limit(60_000, "total")]))
      const second = yield* Effect.fork(within(Effect.sleep("2500 millis"), [limit(60_000, "total")]))
      yield* settle
      assert.isTrue(timing())
      assert.deepStrictEqual([...(yield* TestClock.sleeps())].filter((end) => end > start + 2_500), [])
      yield* at(start, 1_500)
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(first)))
      assert.isTrue(timing(), "the second attempt's limit is still pending")
      yield* at(start, 2_500)
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(second)))
      // nothing pending: the timer ends at its next look, at 4 s
      yield* at(start, 3_999)
      assert.isTrue(timing())
      yield* at(start, 4_000)
      assert.isFalse(timing())
      // attempts one after another share the timer: none starts a timer (a sleep) of its own
      const sleepsBefore = (yield* TestClock.sleeps()).length
      yield* within(Effect.void, [limit(60_000, "total")])
      yield* settle
      assert.isTrue(timing())
      const sleepsAfterFirst = (yield* TestClock.sleeps()).length
      for (let i = 0; i < 5; i++) yield* within(Effect.void, [limit(60_000, "total")])
      yield* settle
      assert.strictEqual(sleepsAfterFirst, sleepsBefore + 1)
      assert.strictEqual((yield* TestClock.sleeps()).length, sleepsAfterFirst)
      yield* at(start, 6_000)
      assert.isFalse(timing())
      // a limit that passed leaves nothing pending either
      const cut = yield* Effect.fork(within(Effect.never, [limit(1_000, "total")]))
      yield* settle
      yield* at(start, 7_000)
      assert.strictEqual(failureOf(yield* Fiber.poll(cut)), "total passed")
      assert.isFalse(timing())
      // the scope closed: the timer is gone, nothing of it fires any more
      const orphan = yield* Effect.fork(within(Effect.never, [limit(60_000, "total")]))
      yield* settle
      assert.isTrue(timing())
      yield* Scope.close(scope, Exit.void)
      assert.isFalse(timing())
      yield* at(start, 120_000)
      assert.isTrue(Option.isNone(yield* Fiber.poll(orphan)))
      yield* Fiber.interrupt(orphan)
    }))
})
