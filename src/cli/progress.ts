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
  /** The busiest bucket's budgets: each one's limit (undefined while unknown) and what its window holds. */
  readonly budgets: {
    readonly [D in RateLimiter.Budget]: { readonly limit: number | undefined; readonly used: number }
  }
  readonly windowMs: number
  /** Requests waiting in the limiter's line, over every bucket. */
  readonly waiting: number
  /** Milliseconds until the busiest bucket admits again (0 when it admits now). */
  readonly waitMs: number
  /** The busiest bucket's binding limit and where it comes from, e.g. `45 requests (learnt, measured)`. */
  readonly limit: string
}

const units: { readonly [D in RateLimiter.Budget]: string } = {
  requests: "requests",
  input: "input tokens",
  output: "output tokens",
  tokens: "tokens"
}

/**
 * One budget's limit as users read it: `45 requests (learnt, measured)`, `5000 output tokens (plan)`,
 * `requests unknown`.
 *
 * @since 0.3.0
 * @category formatting
 */
export const describeLimit = (budget: RateLimiter.BudgetState, name: RateLimiter.Budget): string =>
  budget.limit === undefined
    ? `${units[name]} unknown`
    : `${budget.limit} ${units[name]} (${budget.source}${
      budget.confidence === undefined ? "" : `, ${budget.confidence}`
    })`

/**
 * A bucket's limits, the binding one first (every known budget, with its source); `limits probing (3 in flight)`
 * while nothing is known, `a shared quota` for a model whose quota has no fixed number, and why its key admits
 * nothing when its budget is spent.
 *
 * @since 0.3.0
 * @category formatting
 */
export const describeLimits = (bucket: RateLimiter.BucketState, only?: "binding"): string => {
  if (bucket.spent !== undefined) return `the key's budget is spent: ${bucket.spent}`
  if (bucket.probe !== undefined) return `limits probing (${bucket.probe} in flight)`
  if (bucket.budgets.requests.source === "shared") return "a shared quota (no fixed limits)"
  const names = (["requests", "input", "output", "tokens"] as const).filter((d) =>
    d === "requests" || bucket.budgets[d].limit !== undefined
  )
  const binding = bucket.binding
  const ordered = binding === undefined || !names.includes(binding)
    ? names
    : [binding, ...names.filter((d) => d !== binding)]
  const parts = ordered.map((d) => describeLimit(bucket.budgets[d], d))
  if (names.length === 1) parts.push("tokens unknown")
  return only === "binding" ? `limit ${parts[0]}` : `limits ${parts.join(", ")}`
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
  const { budgets } = quota
  // each budget's need: the requests left, or their tokens at what the window's requests spent of it each
  const windows = Math.max(...(["requests", "input", "output", "tokens"] as const).map((d) => {
    const { limit, used } = budgets[d]
    if (limit === undefined) return 0
    const need = d === "requests" ? left : left * (used / Math.max(1, budgets.requests.used))
    return windowsFor(need, limit, used)
  }))
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
      Math.max(...Object.values(b.budgets).map((d) => d.limit === undefined ? 0 : d.used / Math.max(1, d.limit)))
    const busiest = buckets.reduce((a, b) => (use(b) > use(a) ? b : a))
    const budget = (d: RateLimiter.BudgetState) => ({ limit: d.limit, used: d.used })
    return {
      budgets: {
        requests: budget(busiest.budgets.requests),
        input: budget(busiest.budgets.input),
        output: budget(busiest.budgets.output),
        tokens: budget(busiest.budgets.tokens)
      },
      windowMs,
      waiting: buckets.reduce((sum, b) => sum + b.waiting, 0),
      waitMs: Math.max(busiest.blockedMs, busiest.waiting > 0 ? busiest.nextResetMs : 0),
      limit: describeLimits(busiest, "binding")
    }
  })

/**
 * The client's retries so far (its `aifs.client.retries` metric).
 *
 * @since 0.2.0
 * @category reading
 */
export const retriesSoFar: Effect.Effect<number> = Effect.map(Metric.value(Metrics.retries), (state) => state.count)
