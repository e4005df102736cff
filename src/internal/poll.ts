/**
 * Polling on the Effect `Clock` (so that `TestClock` drives it): `Effect.repeat` on a schedule that stops when a
 * condition holds or a deadline has passed. A check in flight at the deadline finishes, and the last pause is cut
 * to end at the deadline, where one more check runs: a condition met by then is seen.
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"

/** Options of a poll: the pause between checks (at least `minInterval`) and the time limit. */
export interface PollOptions {
  readonly interval: Duration.DurationInput
  readonly timeout: Duration.DurationInput
}

/** The shortest pause between two checks, whatever was asked: a zero interval must not become a request storm. */
export const minInterval = Duration.millis(10)

/** Runs `check` every `interval` until `done` holds (`Some`) or `timeout` has passed (`None`). */
export const pollUntil = <A, E, R>(
  check: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  options: PollOptions
): Effect.Effect<Option.Option<A>, E, R> =>
  Effect.gen(function*() {
    const interval = Duration.toMillis(Duration.max(Duration.decode(options.interval), minInterval))
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(Duration.decode(options.timeout))
    const untilDeadline = Effect.map(Clock.currentTimeMillis, (now) => deadline - now)
    const last = yield* Effect.repeat(
      check,
      Schedule.recurUntil(done).pipe(
        Schedule.checkEffect(() => Effect.map(untilDeadline, (left) => left > 0)),
        Schedule.addDelayEffect(() => Effect.map(untilDeadline, (left) => Duration.millis(Math.min(interval, left))))
      )
    )
    return done(last) ? Option.some(last) : Option.none()
  })

/** `pollUntil`, failing with `onTimeout()` when the deadline passes first. */
export const pollOrFail = <A, E, R, E2>(
  check: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  options: PollOptions & { readonly onTimeout: () => E2 }
): Effect.Effect<A, E | E2, R> =>
  Effect.flatMap(
    pollUntil(check, done, options),
    Option.match({ onSome: Effect.succeed, onNone: () => Effect.fail(options.onTimeout()) })
  )
