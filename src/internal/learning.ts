/**
 * Learning a bucket's limits when nobody told the client its plan (`tier: "auto"`), as pure functions over a
 * `Learning` value that the rate limiter keeps per bucket (key and model) and feeds with what happens:
 *
 * - while nothing is known, a probe: a few requests in flight, more as answers succeed;
 * - at a 429, a measurement: what the window held when the server refused (the requests and tokens counted in
 *   it, less those sent after the refused one) is the limit of the dimension that can explain the refusal (the
 *   highest count a window held without a 429 rules a dimension out; when both can, both are set, but for small
 *   requests, which no plan refuses by tokens);
 * - after calm windows at an estimate (callers waited on it and no 429 came), a careful raise: one small step,
 *   doubled after each step that held, while a step that meets a 429 is measured back and waits twice as long.
 * @internal
 */
import { tierQuotas } from "./slidingWindow.js"

/** One of the two quotas of a bucket. */
export type Dimension = "requests" | "tokens"

/** What is known of one dimension's limit. */
export interface Estimate {
  /** The limit enforced; undefined while unknown (nothing enforced). */
  readonly limit: number | undefined
  /** The most a window held without a 429: the real limit is at least this. */
  readonly atLeast: number
  /** How often the limit was confirmed: a 429 that measured it again. */
  readonly confirmations: number
  /**
   * The most the window held by the successes of requests that were in flight when the limit last changed: they
   * can reach the server in another order than they were sent, so a refusal's count can miss some that the server
   * had taken. The limit set by that change is at least this.
   */
  readonly settled: number
}

/** What a bucket has learnt. */
export interface Learning {
  readonly requests: Estimate
  readonly tokens: Estimate
  /** Requests allowed in flight while nothing is known. */
  readonly probe: number
  /**
   * The most the probe grows to while a window has not passed: the requests in flight when the first 429 comes
   * are refused too, so this bounds the 429s that find the limit. Doubled by each window without a 429.
   */
  readonly ceiling: number
  /** When an estimate last changed (a 429 or a raise): calm windows count from here. */
  readonly since: number
  /** Windows without a 429 before the next raise. */
  readonly patience: number
  /** The patience after a raise met a 429: doubled by each such raise, up to `maxPatience`. */
  readonly backoff: number
  /** The next raise's step, per dimension (0: not set yet). */
  readonly step: { readonly requests: number; readonly tokens: number }
  /** The dimension whose raise is on trial: a 429 before the next raise says it went too far. */
  readonly trying: Dimension | undefined
  /** Counts the changes of the estimates: a 429 for a request admitted under older estimates measures, nothing more. */
  readonly generation: number
  /**
   * Resumed from limits learnt before: until this time (a window after the start) a 429 may be the usage of the
   * process that ran before, which the server still counts and this one never saw, so it measures nothing.
   */
  readonly unseenUntil: number
}

/** What the window held (counted, and surely counted by the server) when something happened. */
export interface Count {
  readonly requests: number
  readonly tokens: number
}

/** Requests in flight allowed at first, while nothing is known. */
export const probeStart = 2
/** The probe's first ceiling. */
export const probeCeiling = 8
/** Windows without a 429 after a measurement before the first raise. */
export const basePatience = 3
/** The longest wait, in windows, between raises that keep meeting 429s. */
export const maxPatience = 24
/** The first step of a raise, as a share of the limit. */
const stepShare = 0.02

const unknown: Estimate = { limit: undefined, atLeast: 0, confirmations: 0, settled: 0 }

/** Nothing known: the probe. */
export const initial = (now: number): Learning => ({
  requests: unknown,
  tokens: unknown,
  probe: probeStart,
  ceiling: probeCeiling,
  since: now,
  patience: basePatience,
  backoff: basePatience,
  step: { requests: 0, tokens: 0 },
  trying: undefined,
  generation: 0,
  unseenUntil: 0
})

/**
 * Learning that starts at `now` from limits learnt before (by another process, or an earlier run): known at once, and
 * for a window of `windowMs` a 429 measures nothing (see `unseenUntil`).
 */
export const resumed = (
  now: number,
  learnt: { readonly requests?: number | undefined; readonly tokens?: number | undefined },
  windowMs: number
): Learning => {
  const start = initial(now)
  const from = (limit: number | undefined): Estimate =>
    limit === undefined ? unknown : { ...unknown, limit, confirmations: 1 }
  return { ...start, requests: from(learnt.requests), tokens: from(learnt.tokens), unseenUntil: now + windowMs }
}

/**
 * Learning that starts at `now` from a floor (a plan's documented least limits): enforced at once with no probe, and
 * measured like any estimate (a 429 under it lowers it; calm windows with callers waiting raise it).
 */
export const fromFloor = (
  now: number,
  floor: { readonly requests: number; readonly tokens: number }
): Learning => ({
  ...initial(now),
  requests: { ...unknown, limit: floor.requests },
  tokens: { ...unknown, limit: floor.tokens }
})

/** Whether any limit is known (the probe is over). */
export const known = (learning: Learning): boolean =>
  learning.requests.limit !== undefined || learning.tokens.limit !== undefined

/**
 * An answer came at `now`: the probe grows by half a request (half again in flight with each round of answers),
 * up to its ceiling, which doubles when a whole window of `windowMs` passed without a 429.
 */
export const answered = (learning: Learning, now: number, windowMs: number): Learning => {
  if (known(learning)) return learning
  const calm = now - learning.since >= windowMs
  const ceiling = calm ? learning.ceiling * 2 : learning.ceiling
  return {
    ...learning,
    probe: Math.min(ceiling, learning.probe + 0.5),
    ceiling,
    since: calm ? now : learning.since
  }
}

/**
 * A request admitted at `generation` succeeded while the window held `count`: the limits are at least that, and an
 * estimate below it is lifted (a refusal measured without the requests that were still in flight, a request larger
 * than the token estimate that went through). Those in flight when the limits last changed also keep the later
 * refusals of their time from measuring below them (`settled`).
 */
export const held = (learning: Learning, count: Count, generation: number): Learning => {
  const settling = generation < learning.generation
  const raise = (e: Estimate, n: number): Estimate => {
    const settled = settling ? Math.max(e.settled, n) : e.settled
    const limit = e.limit === undefined ? undefined : Math.max(e.limit, n)
    if (n <= e.atLeast && settled === e.settled && limit === e.limit) return e
    return { ...e, atLeast: Math.max(e.atLeast, n), settled, limit }
  }
  const requests = raise(learning.requests, count.requests)
  const tokens = raise(learning.tokens, count.tokens)
  return requests === learning.requests && tokens === learning.tokens ? learning : { ...learning, requests, tokens }
}

/**
 * A quarter of the fewest tokens a request that a known quota gives (standard4000's: 150,000 a minute over 600
 * requests): a window refused with fewer tokens a request than this was not refused by its token limit on any plan
 * the service sells, however the tokens were estimated.
 */
export const fewTokensPerRequest = Math.min(...Object.values(tierQuotas).map((quota) => quota.tpm / quota.rpm)) / 4

/**
 * The limits a refusal can be explained by: `count` held and one more request of `tokens` did not fit. When both
 * can and the requests were small (`fewTokensPerRequest`), the request limit alone: a token limit learnt from small
 * requests would hold every larger one to a fraction of the quota until raised, window after window.
 */
export const explains = (
  learning: Learning,
  count: Count,
  tokens: number
): { readonly requests: boolean; readonly tokens: boolean } => {
  const requests = learning.requests.atLeast <= count.requests
  const byTokens = learning.tokens.atLeast <= count.tokens + tokens - 1
  // the counts of different moments can contradict each other (a server's clock, jitter): then either may bind
  if (!requests && !byTokens) return { requests: true, tokens: true }
  const small = count.tokens + tokens < fewTokensPerRequest * (count.requests + 1)
  return { requests, tokens: byTokens && !(requests && small) }
}

/**
 * A measurement of `value`: the limit, unless the estimate is lower; a measurement near the estimate confirms it.
 * A refusal under the estimate itself (`current`) shows it too high even when the counts do not (they are the
 * client's estimates of what the server counts): it comes down by at least the refused request (`request`).
 */
const measured = (e: Estimate, value: number, current: boolean, request: number): Estimate => {
  const cap = e.limit === undefined ? value : Math.min(value, current ? e.limit - request : e.limit)
  // a refusal of a request in flight at the last change: never below what requests in flight with it showed
  const limit = Math.max(1, current ? cap : Math.max(cap, e.settled))
  const again = e.limit !== undefined && Math.abs(e.limit - limit) <= e.limit * 0.02
  return { ...e, limit, confirmations: again ? e.confirmations + 1 : 1, settled: current ? 0 : e.settled }
}

/**
 * The server refused a request of `tokens`, admitted at `generation`, while the window held `count` (the requests
 * and tokens counted, less the request itself and those sent after it). The dimensions that can explain it get
 * the measurement as their limit (never higher than their estimate). A refusal of a request admitted under older
 * estimates only measures; a refusal under the current ones ends a raise on trial, which then waits twice as long.
 * A refusal while the window held no request measures nothing (someone else spent the quota).
 */
export const refused = (
  learning: Learning,
  count: Count,
  tokens: number,
  generation: number,
  now: number
): Learning => {
  if (count.requests === 0) return learning
  const which = explains(learning, count, tokens)
  const current = generation >= learning.generation
  const requests = which.requests ? measured(learning.requests, count.requests, current, 1) : learning.requests
  const byTokens = which.tokens
    ? measured(learning.tokens, count.tokens + tokens - 1, current, tokens)
    : learning.tokens
  if (!current) return { ...learning, requests, tokens: byTokens }
  const backoff = learning.trying === undefined ? learning.backoff : Math.min(maxPatience, learning.backoff * 2)
  return {
    ...learning,
    requests,
    tokens: byTokens,
    since: now,
    patience: backoff,
    backoff,
    step: { requests: 0, tokens: 0 },
    trying: undefined,
    generation: learning.generation + 1
  }
}

/**
 * A caller waits because of `binding`'s estimate. After `patience` whole windows without a 429 since the last
 * change, the estimate is raised by a step (the previous raise held: its step doubles). The window's length is
 * `windowMs`.
 */
export const calm = (learning: Learning, binding: Dimension, now: number, windowMs: number): Learning => {
  const estimate = learning[binding]
  if (estimate.limit === undefined || now - learning.since < learning.patience * windowMs) return learning
  const step = { ...learning.step }
  if (learning.trying !== undefined) step[learning.trying] = step[learning.trying] * 2
  if (step[binding] === 0) step[binding] = Math.max(1, Math.ceil(estimate.limit * stepShare))
  const settled = (e: Estimate): Estimate => ({ ...e, settled: 0 })
  return {
    ...learning,
    requests: settled(learning.requests),
    tokens: settled(learning.tokens),
    [binding]: { ...estimate, limit: estimate.limit + step[binding], confirmations: 0, settled: 0 },
    since: now,
    patience: 1,
    step,
    trying: binding,
    generation: learning.generation + 1
  }
}

/** How sure the limiter is of an estimate. */
export type Confidence = "probing" | "measured" | "confirmed"

/** The confidence of one estimate. */
export const confidence = (e: Estimate): Confidence =>
  e.limit === undefined ? "probing" : e.confirmations >= 2 ? "confirmed" : "measured"
