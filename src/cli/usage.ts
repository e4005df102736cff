/**
 * `aifs usage`: what the configured key spent this calendar month, per model (requests, tokens in with those read
 * from and written to the prompt cache, out, and
 * the cost by its plan's prices), as the limiter's store keeps it for every process and run (Redis when
 * `AIFS_LIMITER_REDIS_URL` is set, else the cache directory), and the budget left when `AIFS_BUDGET` is set.
 *
 * @since 0.5.0
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { fingerprint } from "../internal/redact.js"
import * as Spend from "../internal/spend.js"
import * as ClientConfig from "../layers/ClientConfig.js"
import * as RateLimiter from "../layers/RateLimiter.js"
import { client } from "./environment.js"

/** Of the tokens in, those read from and written to the prompt cache, when there are any. */
const cacheOf = (t: RateLimiter.SpendTally): string => {
  const parts = [t.cached > 0 ? `${t.cached} cached` : "", t.written > 0 ? `${t.written} written to the cache` : ""]
  const said = parts.filter((part) => part !== "")
  return said.length === 0 ? "" : ` (${said.join(", ")})`
}

/** One model's month as a line: model, requests, tokens in (cached, written to the cache), out, cost. */
const line = (model: string, t: RateLimiter.SpendTally, priced: boolean): string =>
  [
    model,
    `${t.requests} requests`,
    `${t.input} in${cacheOf(t)}, ${t.output} out`,
    priced ? Spend.format(t.cost) : "no price"
  ].join("\t")

/** The month's total and, with a budget, what is left of it. */
const summary = (spending: RateLimiter.Spending): string => {
  const spent = `total ${Spend.format(spending.total.cost)} this month (${spending.month})`
  if (spending.budget === undefined) return `${spent}; no budget set (AIFS_BUDGET)`
  const left = Math.max(0, spending.budget - spending.total.cost)
  return `${spent}; budget ${Spend.format(spending.budget)}, ${Spend.format(left)} left`
}

/**
 * The `usage` command.
 *
 * @since 0.5.0
 * @category commands
 */
export const usageCommand = Command.make(
  "usage",
  { json: Options.boolean("json").pipe(Options.withDescription("Print the month's spend as one JSON document")) },
  ({ json }) =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter.RateLimiter
      const config = yield* ClientConfig.ClientConfig
      if (!limiter.enabled) return yield* Console.log("the rate limiter is off: nothing is metered")
      const key = fingerprint(config.apiKey)
      const spending = yield* limiter.spending(key)
      if (json) return yield* Console.log(JSON.stringify({ tier: config.tier, key, ...spending }))
      yield* Console.log(`tier ${config.tier}, key ${key}`)
      const models = Object.entries(spending.models).sort(([a], [b]) => a.localeCompare(b))
      yield* Effect.forEach(
        models,
        ([model, tally]) => Console.log(line(model, tally, !spending.unpriced.includes(model))),
        { discard: true }
      )
      yield* Console.log(summary(spending))
    }).pipe(Effect.provide(client), Effect.asVoid)
).pipe(Command.withDescription("What the key spent this month per model, and the budget left (AIFS_BUDGET)"))
