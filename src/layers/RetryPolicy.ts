/**
 * When and how long to wait before sending a failed request again. A 429 waits exactly what the server
 * asked for (plus a little jitter); 5xx, timeouts and dropped connections back off exponentially; nothing
 * else is retried; a total wait budget and an attempt count bound it all.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleInterval from "effect/ScheduleInterval"
import type { ApiError } from "../schemas/Errors.js"
import { ClientConfig } from "./ClientConfig.js"

/**
 * The retry policy: a `Schedule` fed with each failure, whose output is the wait it chose.
 * Replace it to change how the client retries.
 *
 * @since 0.1.0
 * @category tags
 */
export class RetryPolicy extends Context.Tag("effect-aifs/RetryPolicy")<RetryPolicy, RetryPolicy.Service>() {}

/**
 * The types of the `RetryPolicy` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace RetryPolicy {
  /**
   * What `RetryPolicy` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Decides, failure by failure, whether to retry and after how long. */
    readonly schedule: Schedule.Schedule<Duration.Duration, ApiError>
  }
}

/**
 * Settings of the default policy.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Retries after the first attempt (default 6). */
  readonly maxRetries?: number | undefined
  /** Total time all waits of one call may add up to (default 2 minutes). */
  readonly budget?: Duration.DurationInput | undefined
  /** First back-off for 5xx, timeouts and connection failures (default 500 ms). */
  readonly baseDelay?: Duration.DurationInput | undefined
  /** Longest single back-off (default 30 s). */
  readonly maxDelay?: Duration.DurationInput | undefined
  /** Most jitter added to a server-given 429 wait (default 250 ms). */
  readonly rateLimitJitter?: Duration.DurationInput | undefined
}

/**
 * The resolved settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  readonly maxRetries: number
  readonly budget: Duration.Duration
  readonly baseDelay: Duration.Duration
  readonly maxDelay: Duration.Duration
  readonly rateLimitJitter: Duration.Duration
}

/**
 * Fills in the defaults.
 *
 * @since 0.1.0
 * @category constructors
 */
export const settings = (options: Options = {}): Settings => ({
  maxRetries: options.maxRetries ?? 6,
  budget: Duration.decode(options.budget ?? Duration.minutes(2)),
  baseDelay: Duration.decode(options.baseDelay ?? Duration.millis(500)),
  maxDelay: Duration.decode(options.maxDelay ?? Duration.seconds(30)),
  rateLimitJitter: Duration.decode(options.rateLimitJitter ?? Duration.millis(250))
})

/**
 * The state of one call's retries.
 *
 * @since 0.1.0
 * @category models
 */
export interface State {
  /** Retries already made. */
  readonly retries: number
  /** Time already waited. */
  readonly waited: Duration.Duration
}

/**
 * The decision for one failure, given a random number in [0, 1): `Some(wait)` to retry after `wait`,
 * `None` to give up with this error. Exposed so that the policy can be read and tested as a function.
 *
 * @since 0.1.0
 * @category decisions
 */
export const decide = (
  error: ApiError,
  state: State,
  s: Settings,
  random: number
): Option.Option<Duration.Duration> => {
  if (!error.isRetryable || state.retries >= s.maxRetries) return Option.none()
  const serverWait = error._tag === "RateLimited" ? error.retryAfter : undefined
  const wait = serverWait !== undefined
    ? Duration.sum(serverWait, Duration.times(s.rateLimitJitter, random))
    : backoff(state.retries, s, random)
  // a wait that does not fit the budget fails now, with the error that asked for it
  if (Duration.greaterThan(Duration.sum(state.waited, wait), s.budget)) return Option.none()
  return Option.some(wait)
}

/**
 * Exponential back-off with "equal jitter": half the step fixed, half random, capped at `maxDelay`.
 *
 * @since 0.1.0
 * @category decisions
 */
export const backoff = (retries: number, s: Settings, random: number): Duration.Duration => {
  const step = Math.min(Duration.toMillis(s.maxDelay), Duration.toMillis(s.baseDelay) * 2 ** retries)
  return Duration.millis(Math.round(step / 2 + (step / 2) * random))
}

/**
 * The policy as a `Schedule`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): RetryPolicy.Service => {
  const s = settings(options)
  const initial: State = { retries: 0, waited: Duration.zero }
  return {
    schedule: Schedule.makeWithState<State, ApiError, Duration.Duration>(
      initial,
      (now, error, state) =>
        Effect.map(Random.next, (random) =>
          Option.match(decide(error, state, s, random), {
            onNone: () => [state, Duration.zero, ScheduleDecision.done] as const,
            onSome: (wait) =>
              [
                { retries: state.retries + 1, waited: Duration.sum(state.waited, wait) },
                wait,
                ScheduleDecision.continueWith(ScheduleInterval.after(now + Duration.toMillis(wait)))
              ] as const
          }))
    )
  }
}

/**
 * The default policy with the given settings.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<RetryPolicy> => Layer.succeed(RetryPolicy, make(options))

/**
 * The default policy with `maxRetries` from the `ClientConfig`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromClientConfig: Layer.Layer<RetryPolicy, never, ClientConfig> = Layer.effect(
  RetryPolicy,
  Effect.map(ClientConfig, (config) => make({ maxRetries: config.maxRetries }))
)

/**
 * Never retry: every failure is returned at once.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDisabled: Layer.Layer<RetryPolicy> = Layer.succeed(RetryPolicy, {
  schedule: Schedule.stop.pipe(Schedule.as(Duration.zero))
})
