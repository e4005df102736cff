/**
 * The limiter as a service, wired from its parts: the buckets (one per key and model, with the limits its plan,
 * options or headers give and what it learns), admission, permits and the learner on one store.
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import { ContextLengthExceeded } from "../../schemas/Errors.js"
import type { ModelList } from "../../schemas/Models.js"
import * as Budgets from "../budgets.js"
import * as Plans from "../plans.js"
import type { BodyEstimate } from "../tokens.js"
import * as Admission from "./admission.js"
import * as Bucket from "./bucket.js"
import * as Core from "./core.js"
import * as Headers from "./headers.js"
import * as Meter from "./meter.js"
import * as Permits from "./permits.js"
import type { ContextWindows, Store } from "./store.js"
import type { BucketState, Options, Service, Ticket } from "./types.js"

/** A model's configured limits: its own over those for every model. */
const configuredOf = (limits: Options["limits"], model: string): Bucket.Configured => {
  const quota = limits === undefined ? {} : { ...limits["*"], ...limits[model] }
  return { requests: quota.rpm, input: quota.itpm, output: quota.otpm, tokens: quota.tpm }
}

/** The limiter's shared state for `options`, on `store`. */
const coreOf = (options: Options, store: Store): Effect.Effect<Core.Core> =>
  Effect.map(SubscriptionRef.make<ReadonlyArray<BucketState>>([]), (states) => ({
    store,
    windowMs: Duration.toMillis(Duration.decode(options.window ?? Duration.minutes(1))),
    baseMarginMs: Duration.toMillis(Duration.decode(options.margin ?? Duration.millis(200))),
    waiter: crypto.randomUUID(),
    reconcile: options.reconcile ?? "keep",
    buckets: new Map(),
    spent: new Map(),
    states,
    watchers: 0
  }))

/**
 * What a request's parameters cost, by `estimate`: whole tokens, rounded up (what a shared store can count); and the
 * models' context windows (configured, else the plan's table, else learnt from a `/models` listing).
 */
const costing = (options: Options, estimate: (path: string, params: unknown) => BodyEstimate) => {
  const maxOutput = new Map<string, number>(Object.entries(options.maxOutputTokens ?? {}))
  const windows = new Map<string, number>(Object.entries(options.contextWindows ?? {}))
  const tier = options.tier ?? "auto"
  const cost: Service["cost"] = (path, params) => {
    const { generates, maxOutputTokens, model, promptTokens } = estimate(path, params)
    if (model !== undefined && Plans.requestsOnly(model)) return { model, input: 0, output: 0 }
    const output = !generates ? 0 : maxOutputTokens ??
      (model === undefined ? undefined : maxOutput.get(model)) ?? options.defaultMaxOutputTokens ?? 1024
    const costs = { model, input: Math.ceil(promptTokens), output: Math.ceil(output) }
    // the request's own cap, when it sets one: what must fit the context window with the prompt
    return generates && maxOutputTokens !== undefined ? { ...costs, cap: Math.ceil(maxOutputTokens) } : costs
  }
  const learnt =
    (known: Map<string, number>, configured: Readonly<Record<string, number>> | undefined) =>
    (id: string, value: unknown) => {
      if (typeof value === "number" && value > 0 && !Object.hasOwn(configured ?? {}, id)) known.set(id, value)
    }
  const learnOutput = learnt(maxOutput, options.maxOutputTokens)
  const learnWindow = learnt(windows, options.contextWindows)
  const learnModels: Service["learnModels"] = (models) =>
    Effect.sync(() => {
      for (const model of models.data) {
        learnOutput(model.id, model.meta_data?.max_output_length)
        learnWindow(model.id, model.meta_data?.max_sequence_length)
      }
    })
  const learnWindows = (windows: ContextWindows) => {
    for (const [model, window] of Object.entries(windows)) learnWindow(model, window)
  }
  // asked at every admission: the tables are read once per model (and limiter)
  const tabled = new Map<string, number | undefined>()
  const tableWindow = (model: string): number | undefined => {
    if (!tabled.has(model)) {
      tabled.set(model, (Plans.isPlan(tier) ? Plans.contextOf(tier, model) : undefined) ?? Plans.contextWindowOf(model))
    }
    return tabled.get(model)
  }
  const windowOf = (model: string): number | undefined => windows.get(model) ?? tableWindow(model)
  // a request too small to overflow any window the tables know does not wait for its model's
  const needsWindow: Service["needsWindow"] = (ticket) =>
    options.contextCheck !== false && (ticket.input ?? 0) + (ticket.cap ?? 0) > Plans.smallestWindow &&
    windowOf(ticket.model) === undefined
  return { cost, learnModels, learnWindows, needsWindow, windowOf }
}

/** The context windows a listing gives: each model's `max_sequence_length`, where it is one. */
const windowsIn = (models: ModelList): ContextWindows =>
  Object.fromEntries(models.data.flatMap((model) => {
    const window = model.meta_data?.max_sequence_length
    return typeof window === "number" && Number.isInteger(window) && window > 0 ? [[model.id, window]] : []
  }))

/**
 * The context windows of a key's listing nobody asked for: learnt, and kept in the store for the key (every process
 * on it, the next run); `recallWindows` learns those kept, and says whether they give the model's (a store that
 * cannot answer or keeps none, or a model listed since: false, and the caller lists and keeps anew).
 */
const windowsKept = (store: Store, learn: (windows: ContextWindows) => void) => ({
  learnWindows: ((models, key) =>
    Effect.suspend(() => {
      const windows = windowsIn(models)
      learn(windows)
      return key === undefined || store.keepWindows === undefined
        ? Effect.void
        : Effect.catchAll(store.keepWindows(key, windows), Core.warned)
    })) satisfies Service["learnWindows"],
  recallWindows:
    ((key, model) =>
      Effect.suspend(() => store.windowsOf === undefined ? Effect.succeed(undefined) : store.windowsOf(key)).pipe(
        Effect.map((kept) => {
          if (kept === undefined) return false
          learn(kept)
          return Object.hasOwn(kept, model)
        }),
        Effect.catchAll((error) => Effect.as(Core.warned(error), false))
      )) satisfies Service["recallWindows"]
})

/** The refusal of a ticket whose prompt and own output cap cannot fit its model's window `window`, if known. */
const overflowOf = (ticket: Ticket, window: number | undefined): ContextLengthExceeded | undefined => {
  const requested = (ticket.input ?? 0) + (ticket.cap ?? 0)
  if (window === undefined || requested <= window) return undefined
  return new ContextLengthExceeded({
    message: `${ticket.model}: about ${requested} tokens (the prompt and max_tokens) cannot fit its context window ` +
      `of ${window}`,
    model: ticket.model,
    window,
    requested
  })
}

/**
 * The limiter with `options`, on `store`, estimating with `estimate`, metering spend with `meter` (what it has not
 * written to the store yet is written a second later: `makeScoped` also writes it when its scope closes).
 */
export const make = (
  options: Options,
  store: Store,
  estimate: (path: string, params: unknown) => BodyEstimate,
  meter: Meter.Meter = Meter.make(options, store)
): Effect.Effect<Service> =>
  Effect.map(coreOf(options, store), (core) => {
    const tier = options.tier ?? "auto"
    const bucketOf = (key: string, model: string): Bucket.Bucket => {
      const known = core.buckets.get(`${key}\u0000${model}`)
      if (known !== undefined) return known
      const preset = tier === "auto" ? undefined : Plans.presetOf(tier, model)
      const start = Bucket.startingLimits(preset, configuredOf(options.limits, model), Plans.requestsOnly(model))
      const bucket = Bucket.make(key, model, start.limits, start.learns, core.baseMarginMs)
      core.buckets.set(bucket.id, bucket)
      return bucket
    }
    const costOf = (ticket: Ticket) => Budgets.cost(ticket.input ?? 0, ticket.output ?? 0)
    const { learnWindows, windowOf, ...costs } = costing(options, estimate)
    const contextCheck = options.contextCheck ?? true
    // a request that cannot fit its model's window is refused first; then the budget's admission (a refusal costs no
    // place in line), then the line's; the permit is metered
    const acquireWith: Service["acquireWith"] = (ticket, then) => {
      const overflow = contextCheck ? overflowOf(ticket, windowOf(ticket.model)) : undefined
      if (overflow !== undefined) return Effect.uninterruptibleMask((restore) => then(Exit.fail(overflow), restore))
      return Effect.matchEffect(Meter.admit(meter, ticket), {
        onFailure: (refusal) => Effect.uninterruptibleMask((restore) => then(Exit.fail(refusal), restore)),
        onSuccess: (estimate) =>
          Admission.acquireWith(core, bucketOf(ticket.key, ticket.model), costOf(ticket), (acquired, restore) =>
            Exit.isSuccess(acquired)
              ? then(Exit.succeed(Meter.metered(meter, ticket, estimate, acquired.value)), restore)
              : Effect.zipRight(Meter.unadmitted(meter, ticket.key, estimate), then(acquired, restore)))
      })
    }
    const states = Effect.clockWith((clock) =>
      Effect.sync(() =>
        [...core.buckets.values()].map((bucket) =>
          Core.stateOf(core, bucket, clock.unsafeCurrentTimeMillis())
        )
      )
    )
    return {
      ...costs,
      ...windowsKept(store, learnWindows),
      acquire: (ticket, onGranted) =>
        acquireWith(ticket, (acquired) => {
          if (Exit.isSuccess(acquired)) {
            onGranted?.(acquired.value)
          }
          return acquired
        }),
      acquireWith,
      spent: (key, error) =>
        Permits.stopKey(core, key, error),
      spending: (key) =>
        Meter.spending(meter, key),
      wouldWait: (ticket) => Admission.wouldWait(core, bucketOf(ticket.key, ticket.model), costOf(ticket)),
      // an answer with no limits teaches nothing (the bucket is known from then on): the common case, in a step
      learn: (key, model, info) =>
        Headers.carriesLimits(info)
          ? Headers.learn(core, bucketOf(key, model), info)
          : Effect.sync(() => void bucketOf(key, model)),
      // the buckets as they are when it runs: each one's usage asked of the store now
      snapshot: Effect.suspend(() =>
        Effect.zipRight(
          Effect.forEach([...core.buckets.values()], (bucket) => Core.freshUsage(core, bucket), { discard: true }),
          states
        )
      ),
      changes: Stream.unwrapScoped(
        Effect.zipRight(
          Effect.acquireRelease(Effect.sync(() => core.watchers++), () => Effect.sync(() => core.watchers--)),
          Effect.flatMap(states, (now) => Effect.as(SubscriptionRef.set(core.states, now), core.states.changes))
        )
      ),
      enabled: true,
      queueRouting: options.queueRouting ?? false
    }
  })

/** `make`, whose spend not yet written to the store is written when the scope closes (a process's last answers). */
export const makeScoped = (
  options: Options,
  store: Store,
  estimate: (path: string, params: unknown) => BodyEstimate
): Effect.Effect<Service, never, Scope.Scope> => {
  const meter = Meter.make(options, store)
  return Effect.zipLeft(make(options, store, estimate, meter), Effect.addFinalizer(() => Meter.close(meter)))
}
