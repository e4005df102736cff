/**
 * A bucket's budgets as plain values: the service meters each key and model by requests, input tokens and output
 * tokens a minute (its plan data), and some models' headers by a combined token budget. A request costs one request,
 * its prompt estimate in input, its output cap in output and their sum in the combined budget; a bucket holds any of
 * the four limits, and what it does not know it does not enforce.
 * @internal
 */

/** The budgets a bucket can hold, in the order they are shown. */
export const dimensions = ["requests", "input", "output", "tokens"] as const

/** One budget: requests, input tokens, output tokens, or the combined tokens (input and output together). */
export type Dimension = (typeof dimensions)[number]

/** The budgets counted in tokens. */
export const tokenDimensions = ["input", "output", "tokens"] as const satisfies ReadonlyArray<Dimension>

/** An amount of each budget: what a request costs, what a window holds. */
export type Amounts = { readonly [D in Dimension]: number }

/** Nothing of any budget. */
export const none: Amounts = { requests: 0, input: 0, output: 0, tokens: 0 }

/** What one request costs: itself, its input and output tokens, and their sum against the combined budget. */
export const cost = (input: number, output: number): Amounts => ({
  requests: 1,
  input,
  output,
  tokens: input + output
})

/** `a` with `f` applied to each budget. */
export const map = (a: Amounts, f: (value: number, dimension: Dimension) => number): Amounts => ({
  requests: f(a.requests, "requests"),
  input: f(a.input, "input"),
  output: f(a.output, "output"),
  tokens: f(a.tokens, "tokens")
})

/** The sum of two amounts. */
export const add = (a: Amounts, b: Amounts): Amounts => map(a, (value, d) => value + b[d])

/** What `a` holds beyond `b`, never below zero. */
export const subtract = (a: Amounts, b: Amounts): Amounts => map(a, (value, d) => Math.max(0, value - b[d]))

/**
 * Where a limit comes from: the plan's table (`plan`), the options' per-model `limits` (`configured`), the server's
 * `x-ratelimit-limit-*` headers (`header`), learnt from the server's 429s (`learnt`), a quota the service shares
 * between keys and gives no number for (`shared`: "Dynamic Shared Quota", "dynamic": its 429s are capacity, never
 * learnt), or not known (`unknown`: learnt where the bucket learns, else not enforced).
 */
export type Source = "plan" | "configured" | "header" | "learnt" | "shared" | "unknown"

/** One limit: its value (undefined while it has none) and where it comes from. */
export interface Limit {
  readonly value: number | undefined
  readonly source: Source
}

/** Every limit of a bucket. */
export type Limits = { readonly [D in Dimension]: Limit }

/** A limit with no value. */
export const unknown: Limit = { value: undefined, source: "unknown" }

/** The limit of a quota the service shares (no number, never learnt). */
export const shared: Limit = { value: undefined, source: "shared" }

/** A bucket that knows nothing. */
export const noLimits: Limits = { requests: unknown, input: unknown, output: unknown, tokens: unknown }

/** A limit not known: the store takes it as a number, and nothing ever reaches it. */
export const unlimited = Number.MAX_SAFE_INTEGER

/** Whether a limit is an estimate (learnt from 429s): a request above it is not refused, it goes alone. */
export const estimated = (limit: Limit): boolean => limit.source === "learnt"

/**
 * The numbers a store checks a request of `request` against: a limit with no value is `unlimited`, and a learnt one
 * never below the request itself (so a request larger than an estimate waits for an empty window, then goes).
 */
export const enforced = (limits: Limits, request: Amounts): Amounts =>
  map(request, (amount, d) => {
    const limit = limits[d]
    if (limit.value === undefined) return unlimited
    return estimated(limit) ? Math.max(limit.value, amount) : limit.value
  })

/** The first budget a request of `request` can never fit (its firm limit is below the request), if any. */
export const neverFits = (limits: Limits, request: Amounts): Dimension | undefined =>
  dimensions.find((d) => {
    const limit = limits[d]
    return limit.value !== undefined && !estimated(limit) && request[d] > limit.value
  })

/** The first budget that one more request of `request` overruns while the window holds `used`, if any. */
export const binding = (limits: Limits, used: Amounts, request: Amounts): Dimension | undefined => {
  const checked = enforced(limits, request)
  return dimensions.find((d) => request[d] > 0 && used[d] + request[d] > checked[d])
}

/** Whether `value` is a count: a finite number not below zero (a usage field, a length, a token cap). */
export const isCount = (value: unknown): value is number => Number.isFinite(value) && (value as number) >= 0

/** Whether any limit has a value. */
export const anyKnown = (limits: Limits): boolean => dimensions.some((d) => limits[d].value !== undefined)

/** How a budget is named in messages. */
export const noun: { readonly [D in Dimension]: string } = {
  requests: "requests",
  input: "input tokens",
  output: "output tokens",
  tokens: "tokens"
}
