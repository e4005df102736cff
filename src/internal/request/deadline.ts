/**
 * A time limit for one attempt that costs one child fiber and one timer, where `Effect.timeoutFail` forks two
 * fibers (the effect and a sleeper) and merges their fiber refs back: on the path of every request, that was
 * about a sixth of the client's own cost against a server that answers at once.
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"

/** The longest delay a JS timer takes; longer limits never fire (as with Effect's own clock). */
const maxTimerMillis = 2 ** 31 - 1

/** The constructor of Effect's live clock: a `TestClock` or a clock of the user's own is not it. */
const liveClock = Clock.make().constructor

/**
 * `self`, failed with `onTimeout()` when it runs longer than `after`. On the live clock, `self` runs in one child
 * fiber and a JS timer interrupts it; on any other clock (a `TestClock`), `Effect.timeoutFail`, so that tests move
 * time by hand. Fiber refs the child sets are not merged back: an attempt sets none its caller reads.
 */
export const deadline = <A, E, E2, R>(
  self: Effect.Effect<A, E, R>,
  after: Duration.Duration,
  onTimeout: () => E2
): Effect.Effect<A, E | E2, R> =>
  Effect.clockWith((clock) => {
    const millis = Duration.toMillis(after)
    if (clock.constructor !== liveClock) return Effect.timeoutFail(self, { duration: after, onTimeout })
    if (millis > maxTimerMillis) return self
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Effect.fork(restore(self)), (child) => {
        let timedOut = false
        const timer = setTimeout(() => {
          timedOut = true
          child.unsafeInterruptAsFork(FiberId.none)
        }, millis)
        return Effect.flatMap(
          // the caller interrupted: the attempt is interrupted too, and awaited (its finalizers settle the permit)
          Effect.onInterrupt(restore(Fiber.await(child)), () => {
            clearTimeout(timer)
            return Fiber.interrupt(child)
          }),
          (exit): Effect.Effect<A, E | E2> => {
            clearTimeout(timer)
            return timedOut && Exit.isFailure(exit) && Exit.isInterrupted(exit) ? Effect.fail(onTimeout()) : exit
          }
        )
      })
    )
  })
