/**
 * The limiter's shared state and buckets built by hand, for the direct tests of its parts (`src/internal/limiter/`):
 * a core on a given store, with one watcher so that states are published, and buckets that learn from a given point.
 */
import * as Effect from "effect/Effect"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Budgets from "../../src/internal/budgets.js"
import type * as Learning from "../../src/internal/learning.js"
import * as Bucket from "../../src/internal/limiter/bucket.js"
import type * as Core from "../../src/internal/limiter/core.js"
import type { Store } from "../../src/internal/limiter/store.js"
import type { BucketState } from "../../src/internal/limiter/types.js"

/** The window of the cores built here. */
export const windowMs = 60_000

/** A core on `store` with one watcher of `changes`. */
export const coreOn = (store: Store): Effect.Effect<Core.Core> =>
  Effect.map(SubscriptionRef.make<ReadonlyArray<BucketState>>([]), (states) => ({
    store,
    windowMs,
    baseMarginMs: 200,
    waiter: "this-process",
    reconcile: "keep",
    buckets: new Map(),
    spent: new Map(),
    states,
    watchers: 1
  }))

/** A bucket of `key` and `model` that learns, at `learning` (its limits applied), registered in `core` when given. */
export const learningBucket = (
  learning: Learning.Learning,
  key = "key",
  core?: Core.Core,
  model = "model"
): Bucket.Bucket => {
  const bucket = Bucket.make(key, model, Budgets.noLimits, true, 200)
  bucket.learning = learning
  Bucket.applyLearnt(bucket)
  core?.buckets.set(bucket.id, bucket)
  return bucket
}

/** The states published to the watchers of `changes`. */
export const published = (core: Core.Core) => Effect.map(SubscriptionRef.get(core.states), (states) => states.length)

/** An amount of each budget: `requests`, `input` and `output` tokens, their sum as the combined one. */
export const amounts = (requests: number, input = 0, output = 0): Budgets.Amounts => ({
  requests,
  input,
  output,
  tokens: input + output
})
