/**
 * One bucket of the rate limiter (a key and a model) as a plain value and the functions that change it, no Effect:
 * its limits and where each comes from, what it learns, its safety margin, blocks after a 429 at a limit, the usage
 * the store last reported and its waiting line.
 * @internal
 */
import type { RateLimitInfo } from "../../schemas/RateLimit.js"
import * as Budgets from "../budgets.js"
import * as Learning from "../learning.js"
import * as Line from "./line.js"
import type { BucketState, Confidence } from "./types.js"

/** What a store reported of a bucket's window. */
export interface Usage extends Budgets.Amounts {
  readonly nextExpiryMs: number
}

/** A bucket. */
export interface Bucket {
  readonly id: string
  readonly key: string
  readonly model: string
  /** The limits enforced, each with its source. */
  limits: Budgets.Limits
  /** What was learnt, for a bucket that learns its limits; else undefined. */
  learning: Learning.Learning | undefined
  /** Whether the store was asked for the limits learnt before (once, by the first caller). */
  recalled: boolean
  /** With `learning`: this limiter's permits not answered yet (their cost by admission number). */
  readonly inFlight: Map<number, Budgets.Amounts>
  /** What this limiter's permits not settled yet reserved, in every bucket (a 429 weighed without `learning`). */
  readonly pending: { -readonly [D in Budgets.Dimension]: number }
  admissions: number
  /** Which budget made the last caller wait. */
  binding: Budgets.Dimension | undefined
  marginMs: number
  widenedAt: number
  blockedUntil: number
  /**
   * Until when the store keeps this limiter's next request a place at the back of its line (taken with the last
   * admission while others waited), so that it waits without asking; 0 when it keeps none.
   */
  queuedUntil: number
  /** Whether the store keeps a place in its line for this limiter (given up when nobody here needs it any more). */
  placeInStore: boolean
  /** For a bucket that does not learn: the 429s at none of its limits lately (see `demote`). */
  noise: Learning.Noise
  /** The limits the store last checked a request against, while they hold for any request (none is learnt). */
  checked: { readonly of: Budgets.Limits; readonly marginMs: number; readonly limits: StoreLimits } | undefined
  /** The usage the store reported with its last answer, and when (for observers, without asking it again). */
  usage: Usage
  usageAt: number
  /** Wakes the caller at the head of the line from its sleep when capacity comes back. */
  wake: (() => void) | undefined
  /** How many times capacity came back (so that a release during a reservation is not missed). */
  releases: number
  readonly line: Line.Line
}

/** The numbers a store checks a request against, and how long an entry counts. */
export interface StoreLimits extends Budgets.Amounts {
  readonly windowMs: number
}

/**
 * The limits a store checks a request costing `cost` against: kept while the bucket's limits and margin stay, when
 * none is learnt (a learnt one depends on the request: see `Budgets.enforced`).
 */
export const storeLimits = (bucket: Bucket, cost: Budgets.Amounts, windowMs: number): StoreLimits => {
  const checked = bucket.checked
  if (checked !== undefined && checked.of === bucket.limits && checked.marginMs === bucket.marginMs) {
    return checked.limits
  }
  const limits = { ...Budgets.enforced(bucket.limits, cost), windowMs: windowOf(bucket, windowMs) }
  const general = !Budgets.dimensions.some((d) => Budgets.estimated(bucket.limits[d]))
  bucket.checked = general ? { of: bucket.limits, marginMs: bucket.marginMs, limits } : undefined
  return limits
}

/** Each unpredicted 429 at a limit widens the margin by this much, up to `maxMarginMs`. */
export const marginStepMs = 250
export const maxMarginMs = 5000

/** A new bucket with `limits`, learning what they leave unknown when `learns`. */
export const make = (
  key: string,
  model: string,
  limits: Budgets.Limits,
  learns: boolean,
  marginMs: number
): Bucket => ({
  id: `${key}\u0000${model}`,
  key,
  model,
  limits,
  learning: learns ? Learning.initial(0) : undefined,
  recalled: !learns,
  inFlight: new Map(),
  pending: { ...Budgets.none },
  admissions: 0,
  binding: undefined,
  marginMs,
  widenedAt: Number.NEGATIVE_INFINITY,
  blockedUntil: 0,
  queuedUntil: 0,
  placeInStore: false,
  noise: Learning.quiet,
  checked: undefined,
  usage: { ...Budgets.none, nextExpiryMs: 0 },
  usageAt: 0,
  wake: undefined,
  releases: 0,
  line: Line.make()
})

/** Counts a permit's cost in (`1`) or out (`-1`) of what the bucket's permits not settled yet reserved. */
export const addPending = (bucket: Bucket, cost: Budgets.Amounts, sign: 1 | -1): void => {
  const pending = bucket.pending
  pending.requests += sign * cost.requests
  pending.input += sign * cost.input
  pending.output += sign * cost.output
  pending.tokens += sign * cost.tokens
}

/** Whether a limit follows what the bucket learns: learnt, or not known yet. */
const followsLearning = (limit: Budgets.Limit): boolean => limit.source === "unknown" || limit.source === "learnt"

/** The limits of the budgets a learning bucket does not learn (given by its plan, options or headers). */
export const firmLimits = (bucket: Bucket): Learning.Limits => {
  const firm: { [D in Learning.Learnt]?: number } = {}
  for (const d of Learning.learnt) {
    const limit = bucket.limits[d]
    if (!followsLearning(limit) && limit.value !== undefined) firm[d] = limit.value
  }
  return firm
}

/** While nothing is known of a learning bucket's limits: its requests in flight are bounded instead. */
export const probing = (bucket: Bucket): boolean => bucket.learning !== undefined && !Budgets.anyKnown(bucket.limits)

/** The probe's bound on requests in flight, while probing. */
export const probe = (bucket: Bucket): number | undefined =>
  probing(bucket) ? Math.floor(bucket.learning!.probe) : undefined

/** How long an entry counts: the window and the margin. */
export const windowOf = (bucket: Bucket, windowMs: number): number => windowMs + bucket.marginMs

/** Narrows a widened margin by a step for each calm window since it was last widened (after the first). */
export const settleMargin = (bucket: Bucket, now: number, baseMs: number, windowMs: number): void => {
  if (bucket.marginMs <= baseMs) return
  const calmWindows = Math.floor((now - bucket.widenedAt) / windowMs) - 1
  if (calmWindows <= 0) return
  bucket.marginMs = Math.max(baseMs, bucket.marginMs - calmWindows * marginStepMs)
  bucket.widenedAt += calmWindows * windowMs
}

/** A 429 at a limit: closed until the server's time, and the margin widened (at most once a window). */
export const throttledAt = (bucket: Bucket, now: number, waitMs: number, windowMs: number): void => {
  bucket.blockedUntil = Math.max(bucket.blockedUntil, now + waitMs)
  if (now - bucket.widenedAt >= windowMs) {
    bucket.marginMs = Math.min(maxMarginMs, bucket.marginMs + marginStepMs)
    bucket.widenedAt = now
  }
}

/** Takes the limits an answer's headers give (requests, combined tokens); true when one changed. */
export const applyHeaders = (bucket: Bucket, info: RateLimitInfo): boolean => {
  const header = (value: number | undefined, limit: Budgets.Limit): Budgets.Limit =>
    value === undefined || value <= 0 || (limit.source === "header" && limit.value === value)
      ? limit
      : { value, source: "header" }
  const requests = header(info.limitRequests, bucket.limits.requests)
  const tokens = header(info.limitTokens, bucket.limits.tokens)
  if (requests === bucket.limits.requests && tokens === bucket.limits.tokens) return false
  // a new object only when something changed: what depends on it (the store's limits) is kept meanwhile
  const changed = requests.value !== bucket.limits.requests.value || tokens.value !== bucket.limits.tokens.value
  bucket.limits = { ...bucket.limits, requests, tokens }
  return changed
}

/** Sets the limits that follow learning from what was learnt; true when one changed. */
export const applyLearnt = (bucket: Bucket): boolean => {
  const learnt = Learning.limitsOf(bucket.learning!)
  let changed = false
  const next = { ...bucket.limits }
  for (const d of Learning.learnt) {
    if (!followsLearning(bucket.limits[d])) continue
    const value = learnt[d]
    changed ||= value !== bucket.limits[d].value
    next[d] = value === undefined ? Budgets.unknown : { value, source: "learnt" }
  }
  bucket.limits = next
  return changed
}

/**
 * The plan's figures do not hold for this key (429s keep coming well under them: the table is wrong for it, or the
 * plan changed): its limits from the plan are forgotten and learnt from here, starting with this refusal, which the
 * window held `count` for. Limits configured or from headers stay. True when something was demoted.
 */
export const demote = (
  bucket: Bucket,
  count: Budgets.Amounts,
  cost: Budgets.Amounts,
  now: number,
  windowMs: number
) => {
  const plan = Budgets.dimensions.filter((d) => bucket.limits[d].source === "plan")
  if (plan.length === 0) return false
  const limits: { [D in Budgets.Dimension]: Budgets.Limit } = { ...bucket.limits }
  for (const d of plan) limits[d] = Budgets.unknown
  bucket.limits = limits
  const [learning] = Learning.refused(Learning.initial(now), count, cost, 0, now, windowMs, firmLimits(bucket))
  bucket.learning = learning
  bucket.recalled = true
  applyLearnt(bucket)
  return true
}

/** The confidence of a budget's limit, where the bucket learns it. */
const confidenceOf = (bucket: Bucket, d: Budgets.Dimension): Confidence | undefined => {
  const learning = bucket.learning
  if (learning === undefined || d === "tokens" || !followsLearning(bucket.limits[d])) return undefined
  return Learning.confidence(learning[d])
}

/** The bucket as observers see it at `now`; `spent` says why its key admits nothing, if it does not. */
export const stateOf = (bucket: Bucket, now: number, spent: string | undefined): BucketState => {
  const { usage } = bucket
  const budget = (d: Budgets.Dimension) => {
    const limit = bucket.limits[d]
    const confidence = confidenceOf(bucket, d)
    return {
      limit: limit.value,
      source: limit.source,
      used: usage[d],
      ...(confidence === undefined ? {} : { confidence })
    }
  }
  return {
    key: bucket.key,
    model: bucket.model,
    budgets: {
      requests: budget("requests"),
      input: budget("input"),
      output: budget("output"),
      tokens: budget("tokens")
    },
    binding: bucket.binding,
    probe: probe(bucket),
    nextResetMs: Math.max(0, usage.nextExpiryMs - (now - bucket.usageAt)),
    waiting: bucket.line.size,
    blockedMs: Math.max(0, bucket.blockedUntil - now),
    marginMs: bucket.marginMs,
    spent
  }
}

/** A model's limits from the options' `limits` (`*` under the model's own): configured where given. */
export interface Configured {
  readonly requests?: number | undefined
  readonly input?: number | undefined
  readonly output?: number | undefined
  readonly tokens?: number | undefined
}

/**
 * A new bucket's limits: configured ones over the plan's preset (`undefined`: none, the plan's table lacks the model
 * or the tier is `auto`), and whether it learns those left unknown: it does when there is no preset and its requests,
 * or all its token budgets, are unknown. A model metered by requests alone keeps no token budget.
 */
export const startingLimits = (
  preset: Budgets.Limits | undefined,
  configured: Configured,
  requestsOnly: boolean
): { readonly limits: Budgets.Limits; readonly learns: boolean } => {
  const from = preset ?? Budgets.noLimits
  const result: { [D in Budgets.Dimension]: Budgets.Limit } = { ...Budgets.noLimits }
  for (const d of Budgets.dimensions) {
    const value = configured[d]
    result[d] = requestsOnly && d !== "requests"
      ? Budgets.unknown
      : value !== undefined
      ? { value, source: "configured" }
      : from[d]
  }
  const unknown = (d: Budgets.Dimension) => result[d].source === "unknown"
  const learns = preset === undefined &&
    (unknown("requests") || (!requestsOnly && Budgets.tokenDimensions.every(unknown)))
  return { limits: result, learns }
}
