/**
 * The progress of `aifs batch`, told as it is: lines done of the total and failed, the requests and tokens per
 * minute achieved since the start, retries so far, the rate limiter's state (requests waiting for the quota's
 * window, and for how long), and an ETA from the quota (what the window still admits, at the pace it admits) or
 * from the requests' own time, whichever is longer: never from the recent rate alone, which climbs while the limiter
 * waits. A bar on a terminal, a plain line elsewhere.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Metrics from "../layers/ClientMetrics.js"
import * as RateLimiter from "../layers/RateLimiter.js"

/**
 * What a run has done so far (updated by the run as its results come).
 *
 * @since 0.2.0
 * @category models
 */
export interface Progress {
  total: number
  done: number
  failed: number
  tokens: number
  /** The milliseconds the finished requests took, waits in the limiter included. */
  requestMs: number
  readonly started: number
  readonly concurrency: number
}

/**
 * The limiter's state for the run: the busiest bucket's use of its window, and the callers waiting for it.
 *
 * @since 0.2.0
 * @category models
 */
export interface QuotaState {
  readonly limitRequests: number
  readonly usedRequests: number
  readonly limitTokens: number
  readonly usedTokens: number
  readonly windowMs: number
  /** Requests waiting in the limiter's line, over every bucket. */
  readonly waiting: number
  /** Milliseconds until the busiest bucket admits again (0 when it admits now). */
  readonly waitMs: number
  /** The busiest bucket's binding limit and where it comes from, e.g. `45 requests (learnt, measured)`. */
  readonly limit: string
}

/**
 * One limit as users read it: `45 requests (learnt, measured)`, `600 requests (header)`, `tokens unknown`.
 *
 * @since 0.3.0
 * @category formatting
 */
export const describeLimit = (limit: RateLimiter.Limit, unit: "requests" | "tokens"): string =>
  limit.value === undefined
    ? `${unit} unknown`
    : `${limit.value} ${unit} (${limit.source}${limit.source === "learnt" ? `, ${limit.confidence}` : ""})`

/**
 * A bucket's limits, the binding one first: `limits probing (3 in flight)` while nothing is known.
 *
 * @since 0.3.0
 * @category formatting
 */
export const describeLimits = (bucket: RateLimiter.BucketState, only?: "binding"): string => {
  if (bucket.probe !== undefined) return `limits probing (${bucket.probe} in flight)`
  const requests = describeLimit(bucket.requests, "requests")
  const tokens = describeLimit(bucket.tokens, "tokens")
  const first = bucket.binding === "tokens" ? tokens : requests
  return only === "binding" ? `limit ${first}` : `limits ${first}, ${first === tokens ? requests : tokens}`
}

/**
 * Minutes and seconds (up to the next second), the seconds on two digits; `--:--` when unknown.
 *
 * @since 0.2.0
 * @category formatting
 */
export const formatDuration = (seconds: number): string => {
  if (!Number.isFinite(seconds)) return "--:--"
  const s = Math.ceil(seconds)
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`
}

/** The windows a need of `need` takes beyond what is free in the current one. */
const windowsFor = (need: number, limit: number, used: number): number =>
  limit <= 0 ? 0 : Math.max(0, need - Math.max(0, limit - used)) / limit

/**
 * Seconds until the run ends: the longer of what the quota allows (the requests and tokens left, beyond what the
 * window has free, at a window's worth per window, and no sooner than the limiter's wait) and what the requests
 * take (their mean time, `concurrency` at once). Unknown (Infinity) before anything finished.
 *
 * @since 0.2.0
 * @category formatting
 */
export const etaSeconds = (p: Progress, quota: QuotaState | undefined): number => {
  const finished = p.done + p.failed
  const left = Math.max(0, Math.max(p.total, finished) - finished)
  if (left === 0) return finished === 0 ? Number.NaN : 0
  if (finished === 0) return Infinity
  const byTime = (left * (p.requestMs / finished)) / p.concurrency
  if (quota === undefined) return byTime / 1000
  const tokensPerRequest = p.tokens / finished
  const windows = Math.max(
    windowsFor(left, quota.limitRequests, quota.usedRequests),
    windowsFor(left * tokensPerRequest, quota.limitTokens, quota.usedTokens)
  )
  return Math.max(byTime, windows * quota.windowMs, quota.waiting > 0 ? quota.waitMs : 0) / 1000
}

/**
 * The progress line (plain) or bar (terminal).
 *
 * @since 0.2.0
 * @category formatting
 */
export const render = (
  p: Progress,
  now: number,
  tty: boolean,
  retries: number,
  quota: QuotaState | undefined
): string => {
  const minutes = Math.max(1, now - p.started) / 60_000
  const finished = p.done + p.failed
  // never fewer than finished, even if the input grew during the run
  const total = Math.max(p.total, finished)
  const waiting = quota !== undefined && quota.waiting > 0
    ? `, ${quota.waiting} waiting for the quota window (${Math.ceil(quota.waitMs / 1000)}s)`
    : ""
  const limit = quota === undefined ? "" : `, ${quota.limit}`
  const stats = `${finished}/${total} (${p.failed} failed) ${Math.round(finished / minutes)} req/min ${
    Math.round(p.tokens / minutes)
  } tokens/min, ${retries} retries${waiting}${limit}, ETA ${formatDuration(etaSeconds(p, quota))}`
  if (!tty) return `aifs batch: ${stats}\n`
  const width = 24
  const filled = total === 0 ? width : Math.round((finished / total) * width)
  return `\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${stats}\u001b[K`
}

/**
 * The limiter's state for the progress line: its busiest bucket (most of its window used) and the callers waiting
 * over all of them; nothing without a limiter or before any bucket.
 *
 * @since 0.2.0
 * @category reading
 */
export const quotaState = (windowMs: number): Effect.Effect<QuotaState | undefined> =>
  Effect.gen(function*() {
    const limiter = yield* Effect.serviceOption(RateLimiter.RateLimiter)
    if (Option.isNone(limiter) || !limiter.value.enabled) return undefined
    const buckets = yield* limiter.value.snapshot
    if (buckets.length === 0) return undefined
    const use = (b: RateLimiter.BucketState) =>
      Math.max(b.usedRequests / Math.max(1, b.limitRequests), b.usedTokens / Math.max(1, b.limitTokens))
    const busiest = buckets.reduce((a, b) => (use(b) > use(a) ? b : a))
    return {
      limitRequests: busiest.limitRequests,
      usedRequests: busiest.usedRequests,
      limitTokens: busiest.limitTokens,
      usedTokens: busiest.usedTokens,
      windowMs,
      waiting: buckets.reduce((sum, b) => sum + b.waiting, 0),
      waitMs: Math.max(busiest.blockedMs, busiest.waiting > 0 ? busiest.nextResetMs : 0),
      limit: describeLimits(busiest, "binding")
    }
  })

/**
 * The client's retries so far (its `aifs_client_retries_total` metric).
 *
 * @since 0.2.0
 * @category reading
 */
export const retriesSoFar: Effect.Effect<number> = Effect.map(Metric.value(Metrics.retries), (state) => state.count)
