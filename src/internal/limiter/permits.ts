/**
 * The permits the limiter grants: each carries out its settlement (`settlement.ts` says what an outcome does) on the
 * store, tells the learner what its bucket learns from it, and stops the key when its budget is spent.
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { ApiError, QuotaExceeded } from "../../schemas/Errors.js"
import * as Budgets from "../budgets.js"
import * as Learning from "../learning.js"
import * as Bucket from "./bucket.js"
import * as Core from "./core.js"
import * as Learner from "./learner.js"
import * as Settlement from "./settlement.js"
import type { Outcome, Permit, Usage } from "./types.js"

/** A refusal the server gives no time for closes the bucket this long. */
const defaultBlockMs = 1000

/** The first day of the next calendar month (UTC) after `now`: when a monthly budget starts again. */
const nextMonth = (now: number): number => {
  const date = new Date(now)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1)
}

/** The key's budget is spent: every bucket of the key stops admitting, and the head of each line looks again. */
export const stopKey = (core: Core.Core, key: string, error: QuotaExceeded) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    core.spent.set(key, { error, until: nextMonth(now) })
    const buckets = [...core.buckets.values()].filter((bucket) => bucket.key === key)
    return Effect.forEach(buckets, (bucket) => Core.released(core, bucket), { discard: true })
  })

/**
 * A throttled request's refusal weighed: at a limit, the bucket closes for the server's time (`retryAfterMs`) and its
 * margin widens; noise leaves it open (only that request's retry waits). True when the limiter paces the retry itself.
 */
const refusal = (
  core: Core.Core,
  bucket: Bucket.Bucket,
  weighed: Learner.Weighed,
  retryAfterMs: number | undefined
) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (weighed === "limit") Bucket.throttledAt(bucket, now, retryAfterMs ?? defaultBlockMs, core.windowMs)
    if (weighed === "elsewhere" && retryAfterMs !== undefined) {
      bucket.blockedUntil = Math.max(bucket.blockedUntil, now + retryAfterMs)
    }
    const paces = weighed === "limit" && bucket.learning !== undefined &&
      Budgets.dimensions.some((d) => Budgets.estimated(bucket.limits[d]))
    return Effect.as(Core.released(core, bucket), paces)
  })

/**
 * A refusal weighed against a bucket that does not learn: at a limit when the window was near a known one; else
 * noise, unless noise keeps coming, which says the plan's figures do not hold for this key: they are learnt from here.
 */
const weighKnown = (core: Core.Core, bucket: Bucket.Bucket, cost: Budgets.Amounts, usage: Budgets.Amounts) =>
  Effect.map(Clock.currentTimeMillis, (now): Learner.Weighed => {
    if (Settlement.atLimit(bucket.limits, usage, cost)) return "limit"
    const { noise, stale } = Learning.noisier(bucket.noise, now, core.windowMs)
    bucket.noise = noise
    // what the window surely held: less what is still on its way (those sent after it, and before it unanswered)
    const held = Budgets.subtract(usage, bucket.pending)
    return stale && Bucket.demote(bucket, held, cost, now, core.windowMs) ? "limit" : "noise"
  })

/** The wait a 429 asked for, in milliseconds. */
const retryAfterOf = (error: ApiError | undefined): number | undefined =>
  error?._tag === "RateLimited" && error.retryAfter !== undefined ? Duration.toMillis(error.retryAfter) : undefined

/**
 * The permit of a request counted in the store as `id`, costing `cost`. Most requests settle once, by `succeeded`,
 * in one step when the store answers at once.
 */
export const make = (core: Core.Core, bucket: Bucket.Bucket, id: number, cost: Budgets.Amounts): Permit => {
  const seq = ++bucket.admissions
  const generation = bucket.learning?.generation ?? 0
  const learns = bucket.learning !== undefined
  if (learns) bucket.inFlight.set(seq, cost)
  for (const d of Budgets.dimensions) bucket.pending[d] += cost[d]
  const windowMs = () => Core.windowOf(core, bucket)
  let settled = false

  const restamp = (evidence: boolean) =>
    Effect.withFiberRuntime<void>((fiber) => {
      // a success ends a streak of 429s: they were noise
      if (evidence && bucket.noise.streak !== 0) bucket.noise = Learning.quiet
      if (!bucket.inFlight.delete(seq)) {
        // nothing learnt from it: only the store's count to settle, in this step when the store answers at once
        const now = core.store.restamp.now
        if (now === undefined) return Core.settle(bucket, core.store.restamp(bucket.id, id, windowMs()))
        const at = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
        Core.note(bucket, now(bucket.id, id, windowMs(), at), at)
        return Effect.void
      }
      // while probing, the place in flight it leaves lets the head go
      return Effect.zipRight(
        Core.settle(
          bucket,
          core.store.restamp(bucket.id, id, windowMs()),
          Learner.observe(core, bucket, generation, evidence)
        ),
        Bucket.probing(bucket) ? Core.released(core, bucket) : Effect.void
      )
    })

  const removed = (then?: (usage: Bucket.Usage) => Effect.Effect<void>) =>
    Effect.suspend(() => {
      bucket.inFlight.delete(seq)
      return Effect.zipRight(
        Core.settle(bucket, core.store.remove(bucket.id, id, windowMs()), then),
        Core.released(core, bucket)
      )
    })

  const throttled = (retryAfterMs: number | undefined) =>
    Effect.suspend(() => {
      const wasInFlight = bucket.inFlight.delete(seq)
      let weighed: Learner.Weighed = "noise"
      const weigh = (usage: Bucket.Usage) =>
        Effect.map(
          learns && wasInFlight
            ? Learner.weigh(core, bucket, seq, cost, generation, usage)
            : weighKnown(core, bucket, cost, usage),
          (w) => void (weighed = w)
        )
      return Effect.zipRight(
        Core.settle(bucket, core.store.remove(bucket.id, id, windowMs()), weigh),
        Effect.suspend(() => refusal(core, bucket, weighed, retryAfterMs))
      )
    })

  const refund = Core.settle(
    bucket,
    core.store.adjust(bucket.id, id, { ...Budgets.none, requests: 1 }, windowMs()),
    () => Core.released(core, bucket)
  )

  const settle = (outcome: Outcome, error?: ApiError): Effect.Effect<boolean> =>
    Effect.suspend(() => {
      if (settled) return Effect.succeed(false)
      settled = true
      for (const d of Budgets.dimensions) bucket.pending[d] -= cost[d]
      const effects = Settlement.effectsOf(outcome)
      if (effects.evidence === "refusal") return throttled(retryAfterOf(error))
      // the key stops first: nothing of it is admitted while the store gives the entry back
      if (effects.stopsKey && error?._tag === "QuotaExceeded") {
        return Effect.as(Effect.zipRight(stopKey(core, bucket.key, error), removed()), false)
      }
      if (effects.entry === "remove") return Effect.as(removed(), false)
      const restamped = restamp(effects.evidence === "held")
      return Effect.as(effects.tokens === "refunded" ? Effect.zipRight(restamped, refund) : restamped, false)
    })

  const reconcile = (usage: Usage) =>
    Effect.suspend(() => {
      const next = Settlement.reconciled(cost, usage, core.reconcile)
      if (next === undefined) return Effect.void
      return Core.settle(
        bucket,
        core.store.adjust(bucket.id, id, next.amounts, windowMs()),
        () => next.lowered ? Core.released(core, bucket) : Core.publish(core, bucket)
      )
    })

  return { cost, settle, reconcile }
}
