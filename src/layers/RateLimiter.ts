/**
 * The proactive rate limiter: per key and model, a bucket of budgets over a sliding window (requests, input tokens,
 * output tokens, and a combined token budget where one is known), so that requests wait on the client instead of
 * collecting 429s. Limits come from the plan's table (the service's own data, per model), per-model options and,
 * where the model sends them, the live `x-ratelimit-*` headers; what none of them gives is learnt from the server's
 * 429s. Waiting callers are served in arrival order; an interrupted caller gives up its place. A key whose budget is
 * spent stops admitting on every model at once.
 *
 * This module wires the limiter's parts (`src/internal/limiter/`): the bucket and its budgets, the fair line,
 * admission, permit settlement and the learner.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Clock from "effect/Clock"
 * import * as Effect from "effect/Effect"
 *
 * // 2 requests per second for this model: the third request waits on the client instead of collecting a 429
 * const server = Testing.layerEmulator({
 *   rateLimiter: { window: "1 second", limits: { "Llama-3.3-70B-Instruct": { rpm: 2 } } }
 * })
 *
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   const start = yield* Clock.currentTimeMillis
 *   const ask = chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }] })
 *   yield* Effect.all([ask, ask, ask], { concurrency: "unbounded" })
 *   return `3 answers after ${(yield* Clock.currentTimeMillis) - start >= 1000 ? "more" : "less"} than a second`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => 3 answers after more than a second
 * ```
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Budgets from "../internal/budgets.js"
import * as Service from "../internal/limiter/service.js"
import type * as Types from "../internal/limiter/types.js"
import type * as LimitsSpec from "../internal/limitsSpec.js"
import * as Plans from "../internal/plans.js"
import * as Spend from "../internal/spend.js"
import { ClientConfig, type Plan } from "./ClientConfig.js"
import { layerMemory, LimiterStore } from "./LimiterStore.js"
import * as TokenEstimator from "./TokenEstimator.js"

/**
 * One model's limits per window: `rpm` requests, `itpm` input tokens, `otpm` output tokens, `tpm` combined.
 *
 * @since 0.1.0
 * @category models
 */
export type Quota = LimitsSpec.Quota
/**
 * A budget: `requests`, `input` tokens, `output` tokens, or combined `tokens`.
 *
 * @since 0.4.0
 * @category models
 */
export type Budget = Budgets.Dimension
/**
 * Where a limit comes from (see `Budgets.Source`): `plan`, `configured`, `header`, `learnt`, `shared`, `unknown`.
 *
 * @since 0.3.0
 * @category models
 */
export type LimitSource = Budgets.Source
/**
 * How sure the limiter is of a learnt limit.
 *
 * @since 0.3.0
 * @category models
 */
export type Confidence = Types.Confidence
/**
 * One budget of a bucket: its limit, source, confidence and what the window holds.
 *
 * @since 0.4.0
 * @category models
 */
export type BudgetState = Types.BudgetState
/**
 * The state of one bucket, for dashboards and progress displays.
 *
 * @since 0.1.0
 * @category models
 */
export type BucketState = Types.BucketState
/**
 * What the limiter counts for one request.
 *
 * @since 0.4.0
 * @category models
 */
export type Ticket = Types.Ticket
/**
 * What became of a granted request (see `Permit.settle`).
 *
 * @since 0.4.0
 * @category models
 */
export type Outcome = Types.Outcome
/**
 * A reservation made for one request.
 *
 * @since 0.1.0
 * @category models
 */
export type Permit = Types.Permit
/**
 * Makes an effect interruptible again inside an uninterruptible region.
 *
 * @since 0.3.0
 * @category models
 */
export type Restore = Types.Restore
/**
 * Why a request was not admitted.
 *
 * @since 0.4.0
 * @category models
 */
export type Refusal = Types.Refusal

/**
 * What a key spent in a calendar month, by model, with its budget (`RateLimiter.Service.spending`).
 *
 * @since 0.5.0
 * @category models
 */
export type Spending = Types.Spending

/**
 * Prices per million tokens of a model (`Options.prices`): input, output, and where they differ from the input price,
 * input read from the prompt cache (`cachedInput`) and written to it (`cacheWrite`).
 *
 * @since 0.5.0
 * @category models
 */
export type Prices = Spend.Prices

/**
 * What answered requests used and cost: requests, input tokens (those read from and written to the prompt cache
 * included), output tokens, the input tokens read from the cache (`cached`) and written to it (`written`), and the cost
 * in the plans' currency.
 *
 * @since 0.5.0
 * @category models
 */
export type SpendTally = Spend.Tally

/**
 * A model's preset on a plan, from the plan's table: its requests, input and output tokens a minute, `"shared"` for a
 * quota the service shares between keys (no fixed number), `undefined` when the table lacks the model.
 *
 * @since 0.4.0
 * @category presets
 */
export const preset = (plan: Plan, model: string): Quota | "shared" | undefined => {
  const limits = Plans.presetOf(plan, model)
  if (limits === undefined) return undefined
  if (limits.requests.source === "shared") return "shared"
  return { rpm: limits.requests.value, itpm: limits.input.value, otpm: limits.output.value }
}

/**
 * Settings of the limiter: the key's plan, per-model limits, the window and margin, how answers reconcile, output
 * reserves, queue routing.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Types.Options {}

/**
 * The limiter.
 *
 * @since 0.1.0
 * @category tags
 */
export class RateLimiter extends Context.Tag("effect-aifs/RateLimiter")<RateLimiter, RateLimiter.Service>() {}

/**
 * A gate on the limiter's line, for a graceful stop: once `open` is false, no request leaves the line, while those
 * already sent finish (`aifs batch` closes it at the first Ctrl-C or SIGTERM).
 *
 * @since 0.3.0
 * @category tags
 */
export class Admitting extends Context.Tag("effect-aifs/RateLimiter/Admitting")<Admitting, { open: boolean }>() {}

/**
 * The types of the `RateLimiter` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace RateLimiter {
  /**
   * What `RateLimiter` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service extends Types.Service {}
}

/**
 * Builds a limiter on a store and an estimator.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options = {}
): Effect.Effect<RateLimiter.Service, never, LimiterStore | TokenEstimator.TokenEstimator> =>
  Effect.flatMap(
    Effect.all([LimiterStore, TokenEstimator.TokenEstimator]),
    ([store, estimator]) => Service.make(options, store, estimator.estimate)
  )

/**
 * A limiter with the memory store and the default estimator.
 *
 * @example
 * ```ts
 * import { RateLimiter } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the limiter on its own: a permit per request, counted in the key's and model's bucket (basic: 20/13,800/5,000)
 * const program = Effect.gen(function*() {
 *   const limiter = yield* RateLimiter.RateLimiter
 *   const permit = yield* limiter.acquire({ key: "my-key", model: "Llama-3.3-70B-Instruct", input: 500, output: 200 })
 *   yield* permit.settle("succeeded")
 *   const [bucket] = yield* limiter.snapshot
 *   return bucket === undefined ? "no bucket" : `${bucket.budgets.output.used}/${bucket.budgets.output.limit} out`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(RateLimiter.layer({ tier: "basic" })))).then(console.log)
 * // => 200/5000 out
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<RateLimiter> =>
  layerWith(options).pipe(Layer.provide(Layer.merge(layerMemory, TokenEstimator.layer)))

/**
 * A limiter on a store and estimator you provide (a shared store, a real tokenizer).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (
  options: Options = {}
): Layer.Layer<RateLimiter, never, LimiterStore | TokenEstimator.TokenEstimator> =>
  Layer.scoped(
    RateLimiter,
    Effect.flatMap(
      Effect.all([LimiterStore, TokenEstimator.TokenEstimator]),
      ([store, estimator]) => Service.makeScoped(options, store, estimator.estimate)
    )
  )

/**
 * A limiter on a store you provide whose tier comes from the `ClientConfig` (`AIFS_TIER`), with the default estimator.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerFromClientConfigWith = (
  options: Options = {}
): Layer.Layer<RateLimiter, never, ClientConfig | LimiterStore> =>
  Layer.unwrapEffect(
    Effect.map(ClientConfig, (config) =>
      layerWith({ tier: config.tier, ...options }).pipe(Layer.provide(TokenEstimator.layer)))
  )

/**
 * A limiter whose tier comes from the `ClientConfig` (`AIFS_TIER`), on the memory store.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromClientConfig = (options: Options = {}): Layer.Layer<RateLimiter, never, ClientConfig> =>
  layerFromClientConfigWith(options).pipe(Layer.provide(layerMemory))

const noPermit: Permit = { cost: Budgets.none, settle: () => Effect.succeed(false), reconcile: () => Effect.void }

/**
 * No proactive limiting: requests go out at once and only the retry policy reacts to 429s.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDisabled: Layer.Layer<RateLimiter> = Layer.succeed(RateLimiter, {
  cost: () => ({ model: undefined, input: 0, output: 0 }),
  acquire: () => Effect.succeed(noPermit),
  acquireWith: (_, then) => Effect.uninterruptibleMask((restore) => then(Exit.succeed(noPermit), restore)),
  spent: () => Effect.void,
  spending: () =>
    Effect.map(Clock.currentTimeMillis, (now) => ({
      month: Spend.monthOf(now),
      models: {},
      total: Spend.empty,
      budget: undefined,
      currency: Spend.currency,
      unpriced: []
    })),
  wouldWait: () => Effect.succeed(false),
  learn: () => Effect.void,
  learnModels: () => Effect.void,
  learnWindows: () => Effect.void,
  needsWindow: () => false,
  snapshot: Effect.succeed([]),
  changes: Stream.make([]),
  enabled: false,
  queueRouting: false
})
