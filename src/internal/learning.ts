/**
 * Learning a bucket's limits when nobody gave them (`tier: "auto"`, or a model its plan's table lacks), as pure
 * functions over a `Learning` value that the rate limiter keeps per bucket (key and model) and feeds with what
 * happens. Three budgets are learnt: requests, input tokens and output tokens (the combined budget comes only from
 * headers or configuration).
 *
 * - While nothing is known, a probe: a few requests in flight, more as answers succeed.
 * - At a 429, a measurement only when the window it came in is consistent with being at a limit: the window held
 *   more of that budget than any window that passed (`atLeast`). The request limit is blamed first, whenever it can
 *   explain the refusal; a token budget only when the request limit cannot, and never for requests too small to tell
 *   it from the request limit (`small`). A raise on trial that meets a 429 went too far: it alone is measured back.
 * - A 429 that no budget explains is noise (shared capacity, a hiccup): counted, never a measurement. Three 429s in a
 *   row within a window, no success between them, are no noise: the window refuses everything, so what passed
 *   before no longer does; the figures that passed are forgotten and the next refusal measures. Random 429s come
 *   between successes.
 * - After calm windows at an estimate (callers waited on it and no 429 came), a careful raise: one small step,
 *   doubled after each step that held, while a step that meets a 429 is measured back and waits twice as long.
 * @internal
 */
import type { Amounts } from "./budgets.js"
import { fewTokensPerRequest } from "./plans.js"

/** The budgets a bucket learns. */
export const learnt = ["requests", "input", "output"] as const

/** One of the budgets a bucket learns. */
export type Learnt = (typeof learnt)[number]

/** What is known of one budget's limit. */
export interface Estimate {
  /** The limit enforced; undefined while unknown (nothing enforced). */
  readonly limit: number | undefined
  /** The most a window held without a 429: the real limit is at least this. */
  readonly atLeast: number
  /** The last measurement (a 429's count), if any. */
  readonly measured: number | undefined
  /** How often the measurement was confirmed: a 429 that measured it again (not a raise that held). */
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
  readonly input: Estimate
  readonly output: Estimate
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
  /** The next raise's step, per budget (0: not set yet). */
  readonly step: { readonly [D in Learnt]: number }
  /** The budget whose raise is on trial: a 429 before the next raise says it went too far. */
  readonly trying: Learnt | undefined
  /** Counts the changes of the estimates: a 429 for a request admitted under older estimates measures, nothing more. */
  readonly generation: number
  /**
   * Resumed from limits learnt before: until this time (a window after the start) a 429 may be the usage of the
   * process that ran before, which the server still counts and this one never saw, so it measures nothing.
   */
  readonly unseenUntil: number
  /** The 429s taken as noise lately. */
  readonly noise: Noise
}

/** The 429s taken as noise in a row (no success between them), the first at `since`. */
export interface Noise {
  readonly streak: number
  readonly since: number
}

/** No noise. */
export const quiet: Noise = { streak: 0, since: 0 }

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
/** 429s in a row within a window that say the figures believed no longer hold. */
const staleStreak = 3

const unknown: Estimate = { limit: undefined, atLeast: 0, measured: undefined, confirmations: 0, settled: 0 }

/** Nothing known: the probe. */
export const initial = (now: number): Learning => ({
  requests: unknown,
  input: unknown,
  output: unknown,
  probe: probeStart,
  ceiling: probeCeiling,
  since: now,
  patience: basePatience,
  backoff: basePatience,
  step: { requests: 0, input: 0, output: 0 },
  trying: undefined,
  generation: 0,
  unseenUntil: 0,
  noise: quiet
})

/** The limits a learning enforces, by budget. */
export type Limits = { readonly [D in Learnt]?: number | undefined }

/**
 * Learning that starts at `now` from limits learnt and confirmed before (by another process, or an earlier run):
 * known at once, and for a window of `windowMs` a 429 measures nothing (see `unseenUntil`).
 */
export const resumed = (now: number, limits: Limits, windowMs: number): Learning => {
  const from = (limit: number | undefined): Estimate =>
    limit === undefined ? unknown : { ...unknown, limit, measured: limit, confirmations: 2 }
  return {
    ...initial(now),
    requests: from(limits.requests),
    input: from(limits.input),
    output: from(limits.output),
    unseenUntil: now + windowMs
  }
}

/** Whether any limit is known (the probe is over). */
export const known = (learning: Learning): boolean => learnt.some((d) => learning[d].limit !== undefined)

/** The limits it enforces. */
export const limitsOf = (learning: Learning): Limits => ({
  requests: learning.requests.limit,
  input: learning.input.limit,
  output: learning.output.limit
})

/**
 * The limits confirmed (measured again by a second 429): what is worth keeping for the next run. A raise that held
 * is no measurement: what is kept stays the last measurement confirmed.
 */
export const confirmed = (learning: Learning): Limits | undefined => {
  const kept: { [D in Learnt]?: number } = {}
  for (const d of learnt) {
    const { confirmations, measured } = learning[d]
    if (measured !== undefined && confirmations >= 2) kept[d] = measured
  }
  return Object.keys(kept).length === 0 ? undefined : kept
}

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
export const held = (learning: Learning, count: Amounts, generation: number): Learning => {
  const settling = generation < learning.generation
  const raise = (e: Estimate, n: number): Estimate => {
    const settled = settling ? Math.max(e.settled, n) : e.settled
    const limit = e.limit === undefined ? undefined : Math.max(e.limit, n)
    if (n <= e.atLeast && settled === e.settled && limit === e.limit) return e
    return { ...e, atLeast: Math.max(e.atLeast, n), settled, limit }
  }
  const requests = raise(learning.requests, count.requests)
  const input = raise(learning.input, count.input)
  const output = raise(learning.output, count.output)
  // a success ends a streak of refusals: they were noise
  const noise = learning.noise.streak === 0 ? learning.noise : quiet
  return requests === learning.requests && input === learning.input && output === learning.output &&
      noise === learning.noise
    ? learning
    : { ...learning, requests, input, output, noise }
}

/** Whether a window of `count` held too few tokens of `d` a request to tell its token limit from the request limit. */
const small = (d: Exclude<Learnt, "requests">, count: Amounts, request: Amounts): boolean =>
  count[d] + request[d] < fewTokensPerRequest(d) * (count.requests + 1)

/** Share of a firm limit (given, not learnt) a window must hold for a refusal to be blamed on it. */
const nearFirm = 0.9

/**
 * The budgets a refusal can be blamed on: `count` held and one more request of `request` did not fit. A budget whose
 * limit is firm (given, not learnt: `firm`) can explain it when the window, with the request, held nine tenths of it;
 * a budget being learnt only when the window held more of it than any window that passed. The request limit is blamed
 * whenever it can; a token budget only when the request limit cannot, and not for small requests. None: the refusal
 * is noise.
 */
export const explains = (
  learning: Learning,
  count: Amounts,
  request: Amounts,
  firm: Limits = {}
): ReadonlyArray<Learnt> => {
  const can = (d: Learnt) => {
    if (request[d] <= 0) return false
    const limit = firm[d]
    return limit !== undefined ? count[d] + request[d] > limit * nearFirm : count[d] + request[d] > learning[d].atLeast
  }
  if (can("requests")) return ["requests"]
  return (["input", "output"] as const).filter((d) => can(d) && (firm[d] !== undefined || !small(d, count, request)))
}

/**
 * A measurement of `value`: the limit, unless the estimate is lower; a measurement near the last one (a fiftieth of
 * it, one at least) confirms it.
 * A refusal under the estimate itself (`current`) shows it too high even when the counts do not (they are the
 * client's estimates of what the server counts): it comes down by at least the refused request (`request`), never
 * below what a window held without a 429.
 */
const measured = (e: Estimate, value: number, current: boolean, request: number): Estimate => {
  const cap = e.limit === undefined ? value : Math.min(value, current ? e.limit - request : e.limit)
  // a refusal of a request in flight at the last change: never below what requests in flight with it showed
  const limit = Math.max(1, e.atLeast, current ? cap : Math.max(cap, e.settled))
  const again = e.measured !== undefined && Math.abs(e.measured - limit) <= Math.max(1, e.measured * 0.02)
  return {
    ...e,
    limit,
    measured: limit,
    confirmations: again ? e.confirmations + 1 : 1,
    settled: current ? 0 : e.settled
  }
}

/** What a refusal was taken as: a measurement of the budgets blamed, noise, or nothing (nobody's window). */
export type Verdict =
  | { readonly _tag: "Measured"; readonly blamed: ReadonlyArray<Learnt> }
  | { readonly _tag: "Noise" }
  | { readonly _tag: "Ignored" }

/**
 * One more refusal taken as noise at `now`: the streak it extends (a streak older than a window starts again), and
 * whether it says the figures believed no longer hold (three in a row).
 */
export const noisier = (
  noise: Noise,
  now: number,
  windowMs: number
): { readonly noise: Noise; readonly stale: boolean } => {
  const fresh = noise.streak === 0 || now - noise.since >= windowMs
  const streak = fresh ? 1 : noise.streak + 1
  const stale = streak >= staleStreak
  return { noise: stale ? quiet : { streak, since: fresh ? now : noise.since }, stale }
}

/** Counts a refusal as noise; a streak of them forgets the figures that passed. */
const noted = (learning: Learning, now: number, windowMs: number): Learning => {
  const { noise, stale } = noisier(learning.noise, now, windowMs)
  if (!stale) return { ...learning, noise }
  const forget = (e: Estimate): Estimate => ({ ...e, atLeast: 0, settled: 0 })
  return {
    ...learning,
    requests: forget(learning.requests),
    input: forget(learning.input),
    output: forget(learning.output),
    noise
  }
}

/**
 * The server refused a request of `request`, admitted at `generation`, while the window held `count` (what was
 * counted, less the request itself and those sent after it). A raise on trial is measured back; otherwise the
 * budgets that explain it get the measurement as their limit (never higher than their estimate; a firm limit,
 * given in `firm`, is blamed but not changed). A refusal of a request admitted under older estimates only measures;
 * one under the current estimates ends a raise on trial, which then waits twice as long. A refusal while the window
 * held no request measures nothing (someone else spent the quota); one no budget explains is noise.
 */
export const refused = (
  learning: Learning,
  count: Amounts,
  request: Amounts,
  generation: number,
  now: number,
  windowMs: number,
  firm: Limits = {}
): readonly [Learning, Verdict] => {
  if (count.requests === 0) return [learning, { _tag: "Ignored" }]
  const current = generation >= learning.generation
  const blamed = current && learning.trying !== undefined
    ? [learning.trying]
    : explains(learning, count, request, firm)
  if (blamed.length === 0) return [noted(learning, now, windowMs), { _tag: "Noise" }]
  const next = { ...learning }
  for (const d of blamed) {
    if (firm[d] !== undefined) continue
    const value = d === "requests" ? count.requests : count[d] + request[d] - 1
    next[d] = measured(learning[d], value, current, request[d])
  }
  if (!current) return [next, { _tag: "Measured", blamed }]
  const backoff = learning.trying === undefined ? learning.backoff : Math.min(maxPatience, learning.backoff * 2)
  return [{
    ...next,
    since: now,
    patience: backoff,
    backoff,
    step: { requests: 0, input: 0, output: 0 },
    trying: undefined,
    generation: learning.generation + 1
  }, { _tag: "Measured", blamed }]
}

/**
 * A caller waits because of `binding`'s estimate. After `patience` whole windows without a 429 since the last
 * change, the estimate is raised by a step (the previous raise held: its step doubles). The window's length is
 * `windowMs`.
 */
export const calm = (learning: Learning, binding: Learnt, now: number, windowMs: number): Learning => {
  const estimate = learning[binding]
  if (estimate.limit === undefined || now - learning.since < learning.patience * windowMs) return learning
  const step = { ...learning.step }
  if (learning.trying !== undefined) step[learning.trying] = step[learning.trying] * 2
  if (step[binding] === 0) step[binding] = Math.max(1, Math.ceil(estimate.limit * stepShare))
  const settled = (e: Estimate): Estimate => ({ ...e, settled: 0 })
  return {
    ...learning,
    requests: settled(learning.requests),
    input: settled(learning.input),
    output: settled(learning.output),
    [binding]: { ...estimate, limit: estimate.limit + step[binding], settled: 0 },
    since: now,
    patience: 1,
    step,
    trying: binding,
    generation: learning.generation + 1
  }
}

/** How sure the limiter is of an estimate. */
export type Confidence = "probing" | "measured" | "confirmed"

/** The confidence of one estimate: `confirmed` while it is at (or raised from) a measurement confirmed. */
export const confidence = (e: Estimate): Confidence =>
  e.limit === undefined ? "probing" : e.confirmations >= 2 ? "confirmed" : "measured"
