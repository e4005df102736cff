/**
 * Limiters on a memory store with some of its operations changed (held back on a gate, slowed down), for tests of
 * what happens while a store is at work.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as TokenEstimator from "../../src/layers/TokenEstimator.js"
import type { RequestTooLarge } from "../../src/schemas/Errors.js"

/** The memory store, with the operations `patch` returns in place of its own (it is given the original). */
export const memoryStoreWith = (
  patch: (inner: LimiterStore.LimiterStore.Service) => Partial<LimiterStore.LimiterStore.Service>
): Layer.Layer<LimiterStore.LimiterStore> =>
  Layer.effect(
    LimiterStore.LimiterStore,
    Effect.map(LimiterStore.LimiterStore, (inner) => ({ ...inner, ...patch(inner) }))
  )
    .pipe(Layer.provide(LimiterStore.layerMemory))

/** How often a store's operation and its `now` form were called (see `countingStore`). */
export interface Calls {
  now: number
  effect: number
}

/**
 * The memory store with `operation` (`reserve` or `restamp`) counted in `calls`: the function and, when `withNow`,
 * its `now` form (without it, the store has none, as a store that wraps the function).
 */
export const countingStore = (operation: "reserve" | "restamp", calls: Calls, withNow: boolean) =>
  memoryStoreWith((inner) => {
    const original = inner[operation] as (...args: ReadonlyArray<unknown>) => unknown
    const originalNow = inner[operation].now as (...args: ReadonlyArray<unknown>) => unknown
    const counted = (...args: ReadonlyArray<unknown>) => {
      calls.effect++
      return original(...args)
    }
    const now = (...args: ReadonlyArray<unknown>) => {
      calls.now++
      return originalNow(...args)
    }
    return { [operation]: withNow ? Object.assign(counted, { now }) : counted } as Partial<
      LimiterStore.LimiterStore.Service
    >
  })

/** A limiter on `store` with the default estimator. */
export const limiterOn = (
  store: Layer.Layer<LimiterStore.LimiterStore>,
  options: RateLimiter.Options
): Layer.Layer<RateLimiter.RateLimiter> =>
  RateLimiter.layerWith(options).pipe(Layer.provide(Layer.merge(store, TokenEstimator.layer)))

/**
 * The refusal of an `acquire` on a store that cannot be unavailable (the memory store) and a key whose budget is not
 * spent, with no budget of the client's: a `RequestTooLarge` (any other refusal is a defect of the test).
 */
export const refusal = <A, R>(
  effect: Effect.Effect<A, RateLimiter.Refusal, R>
): Effect.Effect<RequestTooLarge, A, R> =>
  Effect.flip(Effect.catchTags(effect, {
    LimiterUnavailable: (error) => Effect.die(error),
    QuotaExceeded: (error) => Effect.die(error),
    BudgetExceeded: (error) => Effect.die(error),
    ContextLengthExceeded: (error) => Effect.die(error)
  }))
