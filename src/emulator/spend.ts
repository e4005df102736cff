/**
 * The monthly budget of a key's project: what its answered requests cost, by the prices of the key's plan, and the
 * service's refusal once the spend reaches the budget.
 *
 * @since 0.4.0
 */
import { isPlan, pricesOf } from "../internal/plans.js"
import * as Costs from "../internal/spend.js"

/**
 * EUR per million input and output tokens where the plan's table gives no price: a custom tier, or a model the key's
 * plan lacks. One euro each, so that a test's budget reads as tokens: 0.001 EUR is a thousand tokens.
 *
 * @since 0.4.0
 * @category prices
 */
export const defaultPrices: Prices = { input: 1, output: 1 }

/**
 * EUR per million tokens.
 *
 * @since 0.4.0
 * @category prices
 */
export interface Prices {
  readonly input: number
  readonly output: number
}

/**
 * The prices of `model` for a key of `tier`: its plan's, else `defaultPrices`.
 *
 * @since 0.4.0
 * @category prices
 */
export const pricesFor = (tier: string, model: string): Prices =>
  (isPlan(tier) ? pricesOf(tier, model) : undefined) ?? defaultPrices

/**
 * What a request of `input` and `output` tokens costs at `prices`, in EUR.
 *
 * @since 0.4.0
 * @category prices
 */
export const costOf = (prices: Prices, usage: { readonly input: number; readonly output: number }): number =>
  Costs.costOf(prices, usage)

/**
 * The calendar month (UTC) of a time, as a count of months: the budget starts again when it changes.
 *
 * @since 0.4.0
 * @category budget
 */
export const monthOf = (millis: number): number => {
  const date = new Date(millis)
  return date.getUTCFullYear() * 12 + date.getUTCMonth()
}

/**
 * The service's answer to a request of a project whose monthly budget is spent (HTTP 429, no `retry-after`), word for
 * word as a user captured it.
 *
 * @since 0.4.0
 * @category budget
 */
export const budgetReachedDetail =
  "Your project reached its monthly budget limit. To increase your limit, please get in touch with the administrator."

/**
 * What a project spent in one month.
 *
 * @since 0.4.0
 * @category budget
 */
export class Spend {
  private month = Number.NaN
  private eur = 0

  /** EUR spent in the month of `now`. */
  at(now: number): number {
    return monthOf(now) === this.month ? this.eur : 0
  }

  /** Adds `eur` spent at `now` (a new month starts from zero). */
  add(now: number, eur: number): void {
    const month = monthOf(now)
    if (month !== this.month) {
      this.month = month
      this.eur = 0
    }
    this.eur += eur
  }
}
