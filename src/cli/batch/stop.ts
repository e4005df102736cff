/**
 * The graceful stop of `aifs batch`, the one place where its run meets the process's signals. The first Ctrl-C or
 * SIGTERM (an interruption of the run, from the runtime) closes the rate limiter's line, cuts at once every request
 * still waiting for the quota (it was never sent) and gives the grace only to the requests on the wire; those not done
 * by then are cut too. A second signal quits at once.
 *
 * @since 0.4.0
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type * as Batch from "../../services/Batch.js"
import * as Signals from "../signals.js"

/**
 * How a run stops: its flights, the grace of the requests on the wire, the gate on the limiter's line (when the
 * transport was built with one), what to say when the stop begins, and what to do once the run has ended (with how
 * many requests the end of the grace cut).
 *
 * @since 0.4.0
 * @category models
 */
export interface Stop<A, E> {
  readonly flights: Batch.Flights
  readonly grace: Duration.Duration
  readonly gate: Option.Option<{ open: boolean }>
  readonly stopping: (count: Batch.FlightCount) => Effect.Effect<void>
  readonly stopped: (exit: Exit.Exit<A, E>, cut: number) => Effect.Effect<void>
}

/** After the first signal: nothing more leaves the limiter's line, the flights stop, those on the wire get the grace. */
const stopGracefully = <A, E>(fiber: Fiber.Fiber<A, E>, stop: Stop<A, E>): Effect.Effect<void> =>
  Effect.gen(function*() {
    // a request granted a place from here gives it back unsent
    if (Option.isSome(stop.gate)) stop.gate.value.open = false
    yield* stop.stopping(yield* stop.flights.stop)
    // this handler runs uninterruptibly: the race's sides are made interruptible, or the grace could not be cut short
    const cut = yield* Effect.race(
      Effect.interruptible(Effect.as(Fiber.await(fiber), 0)),
      Effect.interruptible(Effect.zipRight(Effect.sleep(stop.grace), stop.flights.cut))
    )
    yield* stop.stopped(yield* Fiber.await(fiber), cut)
  })

/**
 * Runs `work` to its end, or, when the caller is interrupted (Ctrl-C, SIGTERM), stops it gracefully and ends
 * interrupted once `work` has.
 *
 * @since 0.4.0
 * @category stopping
 */
export const graceful = <A, E, R>(work: Effect.Effect<A, E, R>, stop: Stop<A, E>): Effect.Effect<A, E, R> =>
  // from here a stop can only land in the join, where it is handled (never between the fork and the join, where it
  // would leave the work writing while the output is compacted)
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      Effect.forkDaemon(Effect.interruptible(work)),
      (fiber) =>
        Signals.quitOnRepeat(restore(Fiber.join(fiber)).pipe(Effect.onInterrupt(() => stopGracefully(fiber, stop))))
    )
  )
