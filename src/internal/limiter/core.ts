/**
 * What the limiter's parts share: its settings, its store, its buckets and the keys whose budget is spent, and the
 * few steps every part takes (keeping the usage a store answered, publishing a bucket's state to observers, waking
 * the head of a line when capacity comes back).
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type { LimiterUnavailable, QuotaExceeded } from "../../schemas/Errors.js"
import * as Bucket from "./bucket.js"
import type { Store } from "./store.js"
import type { BucketState } from "./types.js"

/** The limiter's shared state. */
export interface Core {
  readonly store: Store
  readonly windowMs: number
  readonly baseMarginMs: number
  /** This limiter's name in the store's lines (shared by every process on a shared store). */
  readonly waiter: string
  readonly reconcile: "keep" | "actual"
  readonly buckets: Map<string, Bucket.Bucket>
  /** The keys whose budget is spent (by fingerprint): why, and until when (the next calendar month). */
  readonly spent: Map<string, { readonly error: QuotaExceeded; readonly until: number }>
  readonly states: SubscriptionRef.SubscriptionRef<ReadonlyArray<BucketState>>
  /** Observers of `changes`: states are published only while there are some. */
  watchers: number
}

/** How long a bucket's entries count. */
export const windowOf = (core: Core, bucket: Bucket.Bucket): number => Bucket.windowOf(bucket, core.windowMs)

/** Why `key` admits nothing at `now`, if its budget is spent. */
export const spentOf = (core: Core, key: string, now: number): QuotaExceeded | undefined => {
  const spent = core.spent.get(key)
  if (spent === undefined) return undefined
  if (now < spent.until) return spent.error
  core.spent.delete(key)
  return undefined
}

/** Keeps the usage a store operation answered with at `now` (the state observers see). */
export const note = (bucket: Bucket.Bucket, usage: Bucket.Usage, now: number): void => {
  bucket.usage = usage
  bucket.usageAt = now
}

/** `note` on the clock's time. */
export const noted = (bucket: Bucket.Bucket) => (usage: Bucket.Usage) =>
  Effect.clockWith((clock) => Effect.sync(() => note(bucket, usage, clock.unsafeCurrentTimeMillis())))

/** A store's failure to settle: the request has been sent, so it is not failed for it (the entry leaves on its own). */
export const warned = (error: LimiterUnavailable) => Effect.logWarning(`aifs: limiter store: ${error.message}`)

/** A settlement with the store: its usage noted, then `then`; a store that cannot answer costs a warning. */
export const settle = (
  bucket: Bucket.Bucket,
  operation: Effect.Effect<Bucket.Usage, LimiterUnavailable>,
  then?: (usage: Bucket.Usage) => Effect.Effect<void>
) =>
  operation.pipe(
    Effect.tap(noted(bucket)),
    Effect.flatMap((usage) => then === undefined ? Effect.void : then(usage)),
    Effect.catchAll(warned)
  )

/** The bucket's usage from the store now (the last known one when the store cannot answer). */
export const freshUsage = (core: Core, bucket: Bucket.Bucket) =>
  Effect.suspend(() => core.store.usage(bucket.id, windowOf(core, bucket))).pipe(
    Effect.tap(noted(bucket)),
    Effect.orElseSucceed(() => bucket.usage)
  )

/** The bucket as observers see it now. */
export const stateOf = (core: Core, bucket: Bucket.Bucket, now: number): BucketState => {
  Bucket.settleMargin(bucket, now, core.baseMarginMs, core.windowMs)
  return Bucket.stateOf(bucket, now, spentOf(core, bucket.key, now)?.message)
}

/**
 * Publishes the bucket's state to the watchers of `changes`, if any (only the bucket that changed is recomputed:
 * with thousands of callers waiting, every admission publishes).
 */
export const publish = (core: Core, bucket: Bucket.Bucket) =>
  // asked when it runs, not when it is built: a watcher may have come in between
  Effect.suspend(() =>
    core.watchers === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const state = stateOf(core, bucket, now)
      return SubscriptionRef.update(core.states, (all) => {
        const index = all.findIndex((s) => s.key === state.key && s.model === state.model)
        return index < 0 ? [...all, state] : all.map((s, i) => (i === index ? state : s))
      })
    })
  )

/**
 * Capacity came back (a reservation lowered or given back, new limits, a spent key): the caller at the head of the
 * line looks again now instead of sleeping until the next entry leaves the window.
 */
export const released = (core: Core, bucket: Bucket.Bucket) =>
  Effect.suspend(() => {
    bucket.releases++
    const wake = bucket.wake
    bucket.wake = undefined
    wake?.()
    return publish(core, bucket)
  })
