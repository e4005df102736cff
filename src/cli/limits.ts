/**
 * `aifs limits`: the rate limiter's state for the configured key, per model: the limits it applies and where each
 * comes from (the server's headers, the tier's preset, learnt from 429s with `AIFS_TIER=auto`), what the window holds now (shared with the other processes
 * of the key when a Redis store is set), when its oldest entry leaves, and any block after an unpredicted 429.
 *
 * @since 0.2.0
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { fingerprint } from "../internal/redact.js"
import * as ClientConfig from "../layers/ClientConfig.js"
import * as RateLimiter from "../layers/RateLimiter.js"
import * as Models from "../services/Models.js"
import { client } from "./environment.js"
import { describeLimits } from "./progress.js"

/** One bucket as a line: model, each budget's use, the limits with their sources, the next reset. */
const line = (b: RateLimiter.BucketState): string =>
  [
    b.model,
    `${b.budgets.requests.used} requests, ${b.budgets.input.used} in, ${b.budgets.output.used} out used`,
    describeLimits(b),
    b.budgets.requests.used > 0 ? `next reset ${Math.ceil(b.nextResetMs / 1000)}s` : "window empty",
    ...(b.blockedMs > 0 ? [`blocked ${Math.ceil(b.blockedMs / 1000)}s`] : [])
  ].join("\t")

/**
 * The `limits` command.
 *
 * @since 0.2.0
 * @category commands
 */
export const limitsCommand = Command.make(
  "limits",
  {
    models: Options.text("model").pipe(
      Options.withAlias("m"),
      Options.repeated,
      // optional: shown in brackets in the usage line (a repeated option alone reads as required)
      Options.withDefault<ReadonlyArray<string>>([]),
      Options.withDescription("Only these models (default: every model the key lists)")
    ),
    json: Options.boolean("json").pipe(Options.withDescription("Print the buckets as one JSON document"))
  },
  ({ json, models }) =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter.RateLimiter
      const config = yield* ClientConfig.ClientConfig
      if (!limiter.enabled) return yield* Console.log("the rate limiter is off")
      const ids = models.length > 0 ?
        models :
        (yield* Effect.flatMap(Models.Models, (m) => m.list())).data.map((m) => m.id)
      const key = fingerprint(config.apiKey)
      // asking whether a request of no tokens would wait reads each model's window from the store
      yield* Effect.forEach(ids, (model) => limiter.wouldWait({ key, model }), { discard: true })
      const buckets = (yield* limiter.snapshot).filter((b) => b.key === key && ids.includes(b.model))
      if (json) return yield* Console.log(JSON.stringify({ tier: config.tier, buckets }))
      yield* Console.log(`tier ${config.tier}, key ${key}`)
      yield* Effect.forEach(buckets, (b) => Console.log(line(b)), { discard: true })
    }).pipe(Effect.provide(client), Effect.asVoid)
).pipe(Command.withDescription("The rate limiter's limits and window per model, for the configured key"))
