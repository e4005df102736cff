/**
 * The retry loop of a request: the policy's schedule, set up only after a first failure, each retry reported.
 * @internal
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import type { ApiError } from "../../schemas/Errors.js"
import * as Metrics from "../metrics.js"
import { endpointOf } from "../transport.js"
import type { RequestOptions } from "./types.js"

/**
 * The log annotation a retry's line carries: the library logs retries at the debug level (an application's logger is
 * not the place for every retry), and the CLI's logger shows the lines that carry it at its default level.
 */
export const retryAnnotation = "aifs.retry"

/** An error's message as a clause of a longer line: without its closing period ("...5 seconds."). */
const clause = (message: string | undefined): string => (message ?? "").replace(/[\s.]+$/, "")

/** A retry policy, as `RetryPolicy` provides it: its schedule, and the most retries it makes when bounded. */
export interface Policy {
  readonly schedule: Schedule.Schedule<Duration.Duration, ApiError>
  readonly maxRetries?: number | undefined
}

/** The policy's schedule for one request, each retry counted and logged at debug (`RetryPolicy.reported`). */
export const reported = (
  policy: Policy,
  endpoint: string
): Schedule.Schedule<Duration.Duration, ApiError> => {
  let last: ApiError | undefined
  let retries = 0
  const of = policy.maxRetries === undefined ? "" : ` of ${policy.maxRetries}`
  return policy.schedule.pipe(
    Schedule.tapInput((error: ApiError) =>
      Effect.sync(() => {
        last = error
      })
    ),
    Schedule.onDecision((wait, decision) =>
      ScheduleDecision.isDone(decision) ? Effect.void : Effect.zipRight(
        Effect.all([
          Metric.increment(Metrics.retries),
          Metric.incrementBy(Metrics.retryWaitMillis, Duration.toMillis(wait))
        ]),
        Effect.logDebug(
          `aifs: ${last?.endpoint ?? endpoint}: ${last?._tag}: ${clause(last?.message)}; retry ${++retries}${of} in ${
            Duration.format(Duration.millis(Math.round(Duration.toMillis(wait))))
          }`
        ).pipe(Effect.annotateLogs(retryAnnotation, retries))
      )
    )
  )
}

/**
 * `effect`, retried by the policy unless the request says not to. The schedule's machinery is set up only after
 * a first failure, which it then meets as its first input (most requests succeed at once, and `Effect.retry` would
 * build it for each).
 */
export const retrying = <A>(
  policy: Policy,
  request: HttpClientRequest.HttpClientRequest,
  effect: Effect.Effect<A, ApiError>,
  options: RequestOptions
): Effect.Effect<A, ApiError> =>
  options.retry === false ? effect : Effect.catchAll(effect, (first) => {
    let replayed = false
    return Effect.retry(
      Effect.suspend(() => {
        if (replayed) return effect
        replayed = true
        return Effect.fail(first)
      }),
      reported(policy, endpointOf(request))
    )
  })
