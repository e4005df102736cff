/**
 * Effect metrics of the client: requests, rate-limit responses met, time spent waiting before retries.
 * @internal
 */
import * as Metric from "effect/Metric"

/** Attempts sent, by outcome. */
export const requests = Metric.counter("aifs_client_requests_total", {
  description: "HTTP attempts sent by the inference client",
  incremental: true
})

/** 429 responses met (before any retry). */
export const rateLimited = Metric.counter("aifs_client_rate_limited_total", {
  description: "429 responses met by the inference client",
  incremental: true
})

/** Retries made. */
export const retries = Metric.counter("aifs_client_retries_total", {
  description: "Retries made by the inference client",
  incremental: true
})

/** Milliseconds waited before retries. */
export const retryWaitMillis = Metric.counter("aifs_client_retry_wait_ms_total", {
  description: "Milliseconds the inference client waited before retries",
  incremental: true
})
