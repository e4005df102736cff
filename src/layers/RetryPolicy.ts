/**
 * When and how long to wait before sending a failed request again. A 429 waits exactly what the server
 * asked for (plus a little jitter); 5xx, timeouts and dropped connections back off exponentially; nothing
 * else is retried; a total wait budget and an attempt count bound it all.
 *
 * @example
 * ```ts
 * import { Errors, RetryPolicy } from "effect-aifs"
 * import * as Duration from "effect/Duration"
 * import * as Option from "effect/Option"
 *
 * // the policy is a function of the failure: read it, test it
 * const settings = RetryPolicy.settings({ baseDelay: "1 second" })
 * const unavailable = new Errors.ServerError({ message: "Model temporarily unavailable", status: 503 })
 * const limited = new Errors.RateLimited({ message: "Slow down", status: 429, retryAfter: Duration.seconds(20) })
 *
 * const waitAfter = (error: Errors.ApiError, retries: number) =>
 *   RetryPolicy.decide(error, { retries, waited: Duration.zero }, settings, 0).pipe(
 *     Option.match({ onNone: () => "give up", onSome: Duration.format })
 *   )
 *
 * console.log([0, 1, 2].map((retries) => waitAfter(unavailable, retries)), waitAfter(limited, 0))
 * // => [ '500ms', '1s', '2s' ] 20s
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as ScheduleInterval from "effect/ScheduleInterval"
import * as Retry from "../internal/request/retry.js"
import type { ApiError } from "../schemas/Errors.js"
import { ClientConfig } from "./ClientConfig.js"

/**
 * The retry policy: a `Schedule` fed with each failure, whose output is the wait it chose.
 * Replace it to change how the client retries.
 *
 * @example
 * ```ts
 * import * as HttpClient from "@effect/platform/HttpClient"
 * import { ClientConfig, type Errors, Inference, InferenceHttp, Models, RetryPolicy, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 * import * as Schedule from "effect/Schedule"
 *
 * // a policy of your own: retry 429s only, with exponential waits, for at most a minute
 * const OnlyRateLimits = Layer.succeed(RetryPolicy.RetryPolicy, {
 *   schedule: Schedule.exponential("100 millis").pipe(
 *     Schedule.whileInput((error: Errors.ApiError) => error._tag === "RateLimited"),
 *     Schedule.upTo("1 minute")
 *   )
 * })
 *
 * let attempts = 0
 * const flaky = Testing.httpClient(() => (attempts++ === 0 ? { status: 429 } : { body: { data: [] } }))
 *
 * const ClientLive = Inference.layer.pipe(
 *   Layer.provide(InferenceHttp.layer),
 *   Layer.provide(OnlyRateLimits),
 *   Layer.provide(ClientConfig.layer({ apiKey: "test-key" })),
 *   Layer.provide(Layer.succeed(HttpClient.HttpClient, flaky))
 * )
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.list())
 *
 * Effect.runPromise(program.pipe(Effect.provide(ClientLive))).then(() => console.log(`${attempts} attempts`))
 * // => 2 attempts
 * ```
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
    /** The most retries the schedule makes, when it has such a bound: shown in the line logged at each retry. */
    readonly maxRetries?: number | undefined
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
    maxRetries: s.maxRetries,
    schedule: Schedule.makeWithState<State, ApiError, Duration.Duration>(
      initial,
      (now, error, state) =>
        Effect.zipWith(Random.next, FiberRef.get(retryUnconnected), (random, unconnected) =>
          Option.match(
            !unconnected && isUnconnected(error) ? Option.none() : decide(error, state, s, random),
            {
              onNone: () => [state, Duration.zero, ScheduleDecision.done] as const,
              onSome: (wait) =>
                [
                  { retries: state.retries + 1, waited: Duration.sum(state.waited, wait) },
                  wait,
                  ScheduleDecision.continueWith(ScheduleInterval.after(now + Duration.toMillis(wait)))
                ] as const
            }
          ))
    )
  }
}

/** A failure of a connection never made (refused, unresolvable, unreachable): the server never saw the request. */
const isUnconnected = (error: ApiError): boolean => error._tag === "TransportError" && error.connected === false

/**
 * Whether the default policy (`make`, `layer`, `layerFromClientConfig`) retries a request whose connection was never
 * made (default `true`: a server that is starting, a network that comes back). `failUnconnected` sets it to `false`
 * for an effect, where nothing is listening is an answer at once: a command typed at a terminal.
 *
 * @since 0.4.0
 * @category fiber refs
 */
export const retryUnconnected: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(true)

/**
 * Runs `effect` with requests whose connection was never made (refused, unresolvable, unreachable) failing at once
 * with their `TransportError` (`connected: false`), every other failure retried as the policy says.
 *
 * @example
 * ```ts
 * import { Models, Node, RetryPolicy } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a port where nothing listens: one attempt, not six retries over half a minute
 * const program = Effect.flatMap(Models.Models, (models) => models.list()).pipe(
 *   RetryPolicy.failUnconnected,
 *   Effect.catchTag("TransportError", (error) => Effect.succeed(`connected: ${error.connected}`)),
 *   Effect.provide(Node.layer({ apiKey: "gen-test", baseUrl: "http://127.0.0.1:9/v2" }))
 * )
 *
 * Effect.runPromise(program).then(console.log)
 * // => connected: false
 * ```
 *
 * @since 0.4.0
 * @category combinators
 */
export const failUnconnected = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(effect, retryUnconnected, false)

/**
 * A policy's schedule for the retries of one request to `endpoint` (a fresh one per request: it counts them), which
 * reports each retry: the `aifs.client.retries` and `aifs.client.retry.wait_ms` metrics, and one log line at the
 * debug level (annotated `aifs.retry`) saying what failed, which retry this is (of how many, when the policy bounds
 * them) and when it goes, e.g. `aifs: POST /v2/chat/completions: ServerError: Model unavailable; retry 1 of 6 in 1s`.
 * The final decision to give up is not a retry.
 *
 * @since 0.2.0
 * @category constructors
 */
export const reported: (
  policy: RetryPolicy.Service,
  endpoint: string
) => Schedule.Schedule<Duration.Duration, ApiError> = Retry.reported

/**
 * The default policy with the given settings.
 *
 * @example
 * ```ts
 * import { Models, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a server that fails twice with 503, then answers (the retry options go to `RetryPolicy.layer`)
 * let attempts = 0
 * const server = Testing.layerHttp(
 *   () => (++attempts < 3 ? { status: 503, body: { detail: "Model unavailable" } } : { body: { data: [] } }),
 *   { retry: { maxRetries: 3, baseDelay: "10 millis" } }
 * )
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.list())
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(() => console.log(`${attempts} attempts`))
 * // => 3 attempts
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<RetryPolicy> => Layer.succeed(RetryPolicy, make(options))

/**
 * The default policy with `maxRetries` from the `ClientConfig`.
 *
 * @example
 * ```ts
 * import { ClientConfig, InferenceHttp, Node, RetryPolicy } from "effect-aifs"
 * import type { InferenceHttpClient } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the default policy, `maxRetries` from the configuration (AIFS_MAX_RETRIES with `ClientConfig.layerFromEnv`)
 * export const TransportLive: Layer.Layer<InferenceHttpClient.InferenceHttpClient> = InferenceHttp.layer.pipe(
 *   Layer.provide(RetryPolicy.layerFromClientConfig),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-...", maxRetries: 2 })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
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
 * @example
 * ```ts
 * import * as HttpClient from "@effect/platform/HttpClient"
 * import { ClientConfig, Inference, InferenceHttp, Models, RetryPolicy, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // every failure comes back at once, e.g. in a request handler with its own deadline
 * const unavailable = Testing.httpClient(() => ({ status: 503, body: { detail: "Model temporarily unavailable" } }))
 *
 * const ClientLive = Inference.layer.pipe(
 *   Layer.provide(InferenceHttp.layer),
 *   Layer.provide(RetryPolicy.layerDisabled),
 *   Layer.provide(ClientConfig.layer({ apiKey: "test-key" })),
 *   Layer.provide(Layer.succeed(HttpClient.HttpClient, unavailable))
 * )
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.list()).pipe(
 *   Effect.map(() => "ok"),
 *   Effect.catchTag("ServerError", (error) => Effect.succeed(`${error.status}, not retried`))
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(ClientLive))).then(console.log)
 * // => 503, not retried
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDisabled: Layer.Layer<RetryPolicy> = Layer.succeed(RetryPolicy, {
  schedule: Schedule.stop.pipe(Schedule.as(Duration.zero))
})
