/**
 * Polling on the Effect `Clock` (so that `TestClock` drives it): check, sleep, check again, until a
 * condition holds or a deadline passes.
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** Runs `check` every `interval` until `done` holds (`Some`) or `timeout` has passed (`None`). */
export const pollUntil = <A, E, R>(
  check: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  options: { readonly interval: Duration.DurationInput; readonly timeout: Duration.DurationInput }
): Effect.Effect<Option.Option<A>, E, R> =>
  Effect.gen(function*() {
    const interval = Duration.toMillis(Duration.decode(options.interval))
    const deadline = (yield* Clock.currentTimeMillis) + Duration.toMillis(Duration.decode(options.timeout))
    // bounded by the deadline; the count bound guards against a zero interval
    const maxRounds = interval > 0 ? Math.ceil((deadline - (yield* Clock.currentTimeMillis)) / interval) + 2 : 1000
    for (let round = 0; round < maxRounds; round++) {
      const value = yield* check
      if (done(value)) return Option.some(value)
      const now = yield* Clock.currentTimeMillis
      if (now >= deadline) return Option.none()
      yield* Effect.sleep(Math.min(interval, deadline - now))
    }
    return Option.none()
  })
