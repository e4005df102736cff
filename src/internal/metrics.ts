/**
 * The client's metrics, defined once: the request path and the limiter count into them, `ClientMetrics` exports
 * them. Named as OpenTelemetry names metrics (dotted, the unit in the metadata or, for counters of milliseconds, as
 * the span attribute `aifs.limiter.wait_ms` does). A leaf.
 * @internal
 */
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import { operationDurationKey, tokenUsageKey } from "./telemetry.js"

/** Attempts sent, tagged with the response `status`. */
export const requests = Metric.counter("aifs.client.requests", {
  description: "HTTP attempts sent by the inference client",
  incremental: true
})

/** 429 responses met (each one, retried or not). */
export const rateLimited = Metric.counter("aifs.client.rate_limited", {
  description: "429 responses met by the inference client",
  incremental: true
})

/** Retries made. */
export const retries = Metric.counter("aifs.client.retries", {
  description: "Retries made by the inference client",
  incremental: true
})

/** Milliseconds waited before retries. */
export const retryWaitMillis = Metric.counter("aifs.client.retry.wait_ms", {
  description: "Milliseconds the inference client waited before retries",
  incremental: true
})

/** Requests admitted by the proactive rate limiter. */
export const limiterAdmitted = Metric.counter("aifs.limiter.admitted", {
  description: "Requests admitted by the client's rate limiter",
  incremental: true
})

/** Tokens reserved by the proactive rate limiter. */
export const limiterTokensReserved = Metric.counter("aifs.limiter.tokens_reserved", {
  description: "Tokens reserved by the client's rate limiter",
  incremental: true
})

/** Milliseconds requests spent waiting in the rate limiter for capacity. */
export const limiterWaitMillis = Metric.counter("aifs.limiter.wait_ms", {
  description: "Milliseconds requests waited in the client's rate limiter",
  incremental: true
})

/** Times a shared limiter store (Redis) could not answer and the limiter counted in the process's own memory */
export const limiterStoreFallbacks = Metric.counter("aifs.limiter.store.fallbacks", {
  description: "Outages of the shared limiter store during which the limiter counted in the process's memory",
  incremental: true
})

/** `gen_ai.client.operation.duration`: seconds from a model operation's start (after the limiter's wait) to its */
export const operationDuration = Metric.fromMetricKey(operationDurationKey)

/** `gen_ai.client.token.usage`: the tokens a model operation used, as its answer counted them (`usage`), one */
export const tokenUsage = Metric.fromMetricKey(tokenUsageKey)

/** `aifs.limiter.wait`: seconds a request waited in the client's rate limiter before its first attempt (requests */
export const limiterWait = Metric.histogram(
  "aifs.limiter.wait",
  MetricBoundaries.fromIterable([0, 0.01, 0.04, 0.16, 0.64, 2.56, 10.24, 40.96, 163.84]),
  "Time waited in the client's rate limiter (s)"
)

/** What answered requests cost (usage times the key's plan's prices, or those configured), by model and currency. */
export const spend = Metric.counter("aifs.spend", {
  description: "What the inference client's answered requests cost, by the prices of the key's plan",
  incremental: true
})
