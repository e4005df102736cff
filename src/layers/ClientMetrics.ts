/**
 * Effect metrics of the inference client: attempts sent (by status), 429s met, retries and the time waited
 * before them. Read them with `Metric.value`, or export them with your metrics backend.
 *
 * @example
 * ```ts
 * import { ClientMetrics, Models, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Metric from "effect/Metric"
 *
 * // counters of the whole process: export them with your metrics backend, or read them
 * const program = Effect.gen(function*() {
 *   const models = yield* Models.Models
 *   yield* models.list()
 *   // attempts are tagged with the response status
 *   const ok = yield* Metric.value(ClientMetrics.requests.pipe(Metric.tagged("status", "200")))
 *   const retried = yield* Metric.value(ClientMetrics.retries)
 *   return `${ok.count} attempt(s) answered 200, ${retried.count} retried`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as Metrics from "../internal/metrics.js"

/**
 * Attempts sent, tagged with the response `status`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const requests = Metrics.requests

/**
 * 429 responses met (each one, retried or not).
 *
 * @since 0.1.0
 * @category metrics
 */
export const rateLimited = Metrics.rateLimited

/**
 * Retries made.
 *
 * @since 0.1.0
 * @category metrics
 */
export const retries = Metrics.retries

/**
 * Milliseconds waited before retries.
 *
 * @since 0.1.0
 * @category metrics
 */
export const retryWaitMillis = Metrics.retryWaitMillis

/**
 * Requests admitted by the proactive rate limiter.
 *
 * @since 0.1.0
 * @category metrics
 */
export const limiterAdmitted = Metrics.limiterAdmitted

/**
 * Tokens reserved by the proactive rate limiter.
 *
 * @since 0.1.0
 * @category metrics
 */
export const limiterTokensReserved = Metrics.limiterTokensReserved

/**
 * Milliseconds requests spent waiting in the rate limiter for capacity.
 *
 * @since 0.1.0
 * @category metrics
 */
export const limiterWaitMillis = Metrics.limiterWaitMillis

/**
 * Times a shared limiter store (Redis) could not answer and the limiter counted in the process's own memory
 * instead (one per outage).
 *
 * @since 0.2.0
 * @category metrics
 */
export const limiterStoreFallbacks = Metrics.limiterStoreFallbacks

/**
 * `gen_ai.client.operation.duration`: seconds from a model operation's start (after the limiter's wait) to its
 * answer or its stream's end, retries included, with the GenAI conventions' buckets. Tagged
 * `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, and `error.type` when it failed.
 *
 * @since 0.3.0
 * @category metrics
 */
export const operationDuration = Metrics.operationDuration

/**
 * `gen_ai.client.token.usage`: the tokens a model operation used, as its answer counted them (`usage`), one
 * observation per `gen_ai.token.type` (`input`, `output`), with the GenAI conventions' buckets (powers of 4).
 *
 * @since 0.3.0
 * @category metrics
 */
export const tokenUsage = Metrics.tokenUsage

/**
 * `aifs.limiter.wait`: seconds a request waited in the client's rate limiter before its first attempt (requests
 * that did not wait count as 0), with the same buckets as the operation's duration below 0.01 s added.
 *
 * @since 0.3.0
 * @category metrics
 */
export const limiterWait = Metrics.limiterWait
