/**
 * What requests cost: each model's prices (configured, else the key's plan's table), a request's cost from its usage,
 * the calendar month spend is counted in, and a month's tallies per model. Pure: the limiter's meter keeps them.
 * @internal
 */
import * as Plans from "./plans.js"

/** The currency of the plans' prices (the portal shows "€ / M Tokens"). */
export const currency = "EUR"

/**
 * Prices per million tokens: input, output, and where the price differs from the input price (which they take
 * otherwise) input read from the prompt cache and input written to it.
 */
export interface Prices {
  readonly input: number
  readonly output: number
  readonly cachedInput?: number | undefined
  readonly cacheWrite?: number | undefined
}

/** What one or more answered requests used and cost. */
export interface Tally {
  readonly requests: number
  readonly input: number
  readonly output: number
  /** Of `input`, the tokens read from the prompt cache. */
  readonly cached: number
  /** Of `input`, the tokens written to the prompt cache. */
  readonly written: number
  /** In `currency`. */
  readonly cost: number
}

/** Nothing yet. */
export const empty: Tally = { requests: 0, input: 0, output: 0, cached: 0, written: 0, cost: 0 }

/** Two tallies together. */
export const add = (a: Tally, b: Tally): Tally => ({
  requests: a.requests + b.requests,
  input: a.input + b.input,
  output: a.output + b.output,
  cached: a.cached + b.cached,
  written: a.written + b.written,
  cost: a.cost + b.cost
})

/** The tallies of every model together. */
export const total = (models: Readonly<Record<string, Tally>>): Tally => Object.values(models).reduce(add, empty)

/**
 * A model's prices: the configured ones, else its row on the key's plan; on `auto` (plan unknown), the price every
 * plan that sells the model agrees on; `undefined` when nobody says (its requests are not metered).
 */
export const pricesOf = (
  tier: string,
  model: string,
  configured: Readonly<Record<string, Prices>> | undefined
): Prices | undefined => {
  if (configured !== undefined && Object.hasOwn(configured, model)) return configured[model]
  if (Plans.isPlan(tier)) return Plans.pricesOf(tier, model)
  const offered = Plans.planNames.flatMap((plan) => {
    const prices = Plans.pricesOf(plan, model)
    return prices === undefined ? [] : [prices]
  })
  // the first plan's prices when every plan's are the same (none agrees with all others otherwise)
  return offered.find((prices) => offered.every((other) => samePrices(other, prices)))
}

const samePrices = (a: Prices, b: Prices): boolean => a.input === b.input && a.output === b.output

/** A request's usage at `prices`, in `currency`: its input includes the tokens read from and written to the cache. */
export const costOf = (
  prices: Prices,
  usage: {
    readonly input: number
    readonly output: number
    readonly cached?: number | undefined
    readonly written?: number | undefined
  }
): number => {
  const cached = Math.min(usage.cached ?? 0, usage.input)
  const written = Math.min(usage.written ?? 0, usage.input - cached)
  const input = (usage.input - cached - written) * prices.input + cached * (prices.cachedInput ?? prices.input) +
    written * (prices.cacheWrite ?? prices.input)
  return (input + usage.output * prices.output) / 1_000_000
}

/** The calendar month (UTC) of an epoch time, as `YYYY-MM`: spend and budgets start again each month. */
export const monthOf = (millis: number): string => new Date(millis).toISOString().slice(0, 7)

/** An amount of `currency` for people: whole units from 100, cents from 0.01, two significant digits below. */
export const format = (amount: number): string => {
  const text = amount === 0
    ? "0.00"
    : amount >= 100
    ? amount.toFixed(0)
    : amount >= 0.01
    ? amount.toFixed(2)
    : amount.toPrecision(2)
  return `${text} ${currency}`
}
