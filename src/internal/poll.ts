/**
 * Polling on the Effect `Clock` (so that `TestClock` drives it): `Effect.repeat` on a schedule that stops when
 * a condition holds, bounded by `Effect.timeoutOption`.
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"

/** Runs `check` every `interval` until `done` holds (`Some`) or `timeout` has passed (`None`). */
export const pollUntil = <A, E, R>(
  check: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  options: { readonly interval: Duration.DurationInput; readonly timeout: Duration.DurationInput }
): Effect.Effect<Option.Option<A>, E, R> =>
  check.pipe(
    Effect.repeat(Schedule.addDelay(Schedule.recurUntil(done), () => options.interval)),
    Effect.timeoutOption(options.timeout)
  )
