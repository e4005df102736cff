/**
 * Per-key, per-model limits over a sliding window, counted exactly in each budget the service meters (requests,
 * input tokens, output tokens, and a custom tier's combined tokens): a request sent at `t` counts against every
 * interval that contains `t`, until `t + window`.
 *
 * Which limits meter a key's model (`meterOf`), first match wins:
 * 1. a quota given for the key's tier (a custom tier, or a plan's name in `tiers` / `setQuota`): that flat quota on
 *    every model;
 * 2. the key's tier names a plan whose table has the model: the row's requests, input and output tokens per window
 *    (no combined budget: the plans have none); a "Dynamic Shared Quota" or "dynamic" row has no number and is not
 *    metered;
 * 3. a model the plan's table lacks: the seed tier's flat quota (`fallbackQuotas`; a plan without a seed of its own
 *    takes basic's, the smallest). The routes never meter one: a plan's key gets 404 for a model outside its plan.
 *
 * Whisper (audio) models are metered by requests alone, whatever the tier: their token budgets are not text tokens.
 *
 * @since 0.1.0
 */
import { type Amounts, type Dimension, dimensions, noun, unlimited } from "../internal/budgets.js"
import { isPlan, requestsOnly, rowOf } from "../internal/plans.js"
import type { Figure } from "../internal/planTables.js"
import * as SlidingWindowLog from "../internal/slidingWindow.js"

/**
 * A flat quota per window: requests (`rpm`), and any of combined tokens (`tpm`: input and output together), input
 * tokens (`itpm`) and output tokens (`otpm`). A budget left out is not metered.
 *
 * @since 0.1.0
 * @category models
 */
export interface Quota {
  /** Requests per window. */
  readonly rpm: number
  /** Input and output tokens together per window. */
  readonly tpm?: number | undefined
  /** Input (prompt) tokens per window. */
  readonly itpm?: number | undefined
  /** Output (completion) tokens per window. */
  readonly otpm?: number | undefined
}

/**
 * The seed tiers' flat quotas: the limits of a plan's model its table lacks, should one be metered (the routes answer a
 * plan's key 404 for a model outside its plan), and the figures of a custom tier that stands in for the seed's.
 *
 * @since 0.4.0
 * @category models
 */
export const fallbackQuotas = {
  basic: { rpm: 20, tpm: 18_750 },
  standard4000: { rpm: 600, tpm: 150_000 }
} as const satisfies Record<string, Quota>

/**
 * What meters a key's model: each budget's limit per window (`unlimited` where that budget is not metered), and where
 * the limits come from: the plan's table (`plan`), a flat quota (`quota`: a custom tier, a quota given for a plan, or
 * the fallback), or a quota the service shares and gives no number for (`shared`: nothing is metered).
 *
 * @since 0.4.0
 * @category models
 */
export interface Meter {
  readonly limits: Amounts
  readonly source: "plan" | "quota" | "shared"
}

const flat = (quota: Quota): Amounts => ({
  requests: quota.rpm,
  input: quota.itpm ?? unlimited,
  output: quota.otpm ?? unlimited,
  tokens: quota.tpm ?? unlimited
})

const figure = (value: Figure): number => typeof value === "number" ? value : unlimited

const resolve = (tier: string, quota: Quota | undefined, model: string): Meter => {
  if (quota !== undefined) return { limits: flat(quota), source: "quota" }
  const row = isPlan(tier) ? rowOf(tier, model) : undefined
  if (row !== undefined) {
    const limits = { requests: figure(row[0]), input: figure(row[1]), output: figure(row[2]), tokens: unlimited }
    return { limits, source: dimensions.every((d) => limits[d] === unlimited) ? "shared" : "plan" }
  }
  const seed: Quota = Object.hasOwn(fallbackQuotas, tier)
    ? fallbackQuotas[tier as keyof typeof fallbackQuotas]
    : fallbackQuotas.basic
  return { limits: flat(seed), source: "quota" }
}

/**
 * The limits of `model` for a key of `tier`, given the quota set for that tier if any (see the module's header).
 *
 * @since 0.4.0
 * @category models
 */
export const meterOf = (tier: string, quota: Quota | undefined, model: string): Meter => {
  const meter = resolve(tier, quota, model)
  if (!requestsOnly(model)) return meter
  return { ...meter, limits: { ...meter.limits, input: unlimited, output: unlimited, tokens: unlimited } }
}

/**
 * Whether a budget is metered (has a number).
 *
 * @since 0.4.0
 * @category models
 */
export const metered = (limit: number): boolean => limit < unlimited

/**
 * The token count the `x-ratelimit-*-tokens` headers speak of, and its limit: the combined tokens against the combined
 * limit when one is set; else input and output together against their limits summed; else the one of them that is
 * metered. `undefined` when no token budget is metered.
 *
 * @since 0.4.0
 * @category headers
 */
export const headerTokens = (
  limits: Amounts
): { readonly limit: number; readonly count: (amounts: Amounts) => number } | undefined => {
  if (metered(limits.tokens)) return { limit: limits.tokens, count: (a) => a.tokens }
  if (metered(limits.input) && metered(limits.output)) {
    return { limit: limits.input + limits.output, count: (a) => a.input + a.output }
  }
  if (metered(limits.input)) return { limit: limits.input, count: (a) => a.input }
  if (metered(limits.output)) return { limit: limits.output, count: (a) => a.output }
  return undefined
}

/**
 * What the window says about itself, for the `x-ratelimit-*` headers: requests, and the tokens `headerTokens` picks
 * (`undefined` when no token budget is metered).
 *
 * @since 0.1.0
 * @category models
 */
export interface WindowStatus {
  readonly limitRequests: number
  readonly limitTokens: number | undefined
  readonly remainingRequests: number
  readonly remainingTokens: number | undefined
  /** Milliseconds until the request count next drops (0 when nothing is counted). */
  readonly resetRequestsMs: number
  /** Milliseconds until the token count next drops (0 when nothing is counted). */
  readonly resetTokensMs: number
}

/**
 * The decision for one request: admitted, to wait (`by` the budget whose wait is the longest, the first of them in
 * `dimensions` order on a tie), or never to fit (`by` the first budget whose limit is below the request).
 *
 * @since 0.1.0
 * @category models
 */
export type Admission =
  | { readonly _tag: "Admitted" }
  | {
    readonly _tag: "Wait"
    /** Milliseconds until this request would be admitted. */
    readonly waitMs: number
    /** The budget that refused it. */
    readonly by: Dimension
    /** How long until it fits, per budget (0 where it fits now). */
    readonly waits: SlidingWindowLog.Waits
  }
  | { readonly _tag: "TooLarge"; readonly by: Dimension }

/**
 * A sliding-window log for one key and model. It counts; the limits it is checked against are the caller's, read at
 * each request, so that a quota changed mid-run applies at once to what the window already holds.
 *
 * @since 0.1.0
 * @category models
 */
export class SlidingWindow {
  private readonly entries = new SlidingWindowLog.Log<SlidingWindowLog.Entry>()

  constructor(readonly windowMs: number) {}

  /** Whether a request costing `request` may go now under `limits`, and if not how long until it may. */
  check(now: number, request: Amounts, limits: Amounts): Admission {
    const over = dimensions.find((d) => request[d] > limits[d])
    if (over !== undefined) return { _tag: "TooLarge", by: over }
    this.entries.prune(now, this.windowMs)
    const waits = this.entries.waitFor(now, request, limits, this.windowMs)
    const waitMs = SlidingWindowLog.longest(waits)
    if (waitMs === 0) return { _tag: "Admitted" }
    return { _tag: "Wait", waitMs, by: dimensions.find((d) => waits[d] === waitMs)!, waits }
  }

  /** Counts a request sent at `now`. */
  record(now: number, request: Amounts): void {
    this.entries.insert({ at: now, ...request })
  }

  /** The window's state at `now` under `limits`. */
  status(now: number, limits: Amounts): WindowStatus {
    this.entries.prune(now, this.windowMs)
    const tokens = headerTokens(limits)
    const totals = this.entries.totals
    const oldest = this.entries.first()
    let oldestWithTokens: SlidingWindowLog.Entry | undefined
    for (const entry of this.entries) {
      if (tokens !== undefined && tokens.count(entry) > 0) {
        oldestWithTokens = entry
        break
      }
    }
    return {
      limitRequests: limits.requests,
      limitTokens: tokens?.limit,
      remainingRequests: Math.max(0, limits.requests - totals.requests),
      remainingTokens: tokens === undefined ? undefined : Math.max(0, tokens.limit - tokens.count(totals)),
      resetRequestsMs: oldest ? oldest.at + this.windowMs - now : 0,
      resetTokensMs: oldestWithTokens ? oldestWithTokens.at + this.windowMs - now : 0
    }
  }
}

/**
 * How a refusal names a budget and its limit: `20 requests`, `13800 input tokens`.
 *
 * @since 0.4.0
 * @category headers
 */
export const describeLimit = (by: Dimension, limits: Amounts): string => `${limits[by]} ${noun[by]}`

/**
 * Formats milliseconds as the upstream formats its reset headers: `12ms`, `3s`, `1.5s`, `6m0s`, `1h4m48s`.
 *
 * @since 0.1.0
 * @category headers
 */
export const formatGoDuration = (ms: number): string => {
  const total = Math.max(0, Math.round(ms))
  if (total < 1000) return `${total}ms`
  const hours = Math.floor(total / 3_600_000)
  const minutes = Math.floor((total % 3_600_000) / 60_000)
  const seconds = (total % 60_000) / 1000
  const s = `${Number.isInteger(seconds) ? seconds : seconds.toFixed(3).replace(/0+$/, "")}s`
  if (hours > 0) return `${hours}h${minutes}m${s}`
  if (minutes > 0) return `${minutes}m${s}`
  return s
}
