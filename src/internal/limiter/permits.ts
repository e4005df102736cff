/**
 * The permits the limiter grants: each carries out its settlement (`settlement.ts` says what an outcome does) on the
 * store, tells the learner what its bucket learns from it, and stops the key when its budget is spent.
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
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
    // only a bucket that learns has estimated limits
    const paces = weighed === "limit" && Budgets.dimensions.some((d) => Budgets.estimated(bucket.limits[d]))
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

/** A granted request: where it is counted, what it cost, under which estimates, and whether it settled. */
interface Granted {
  readonly core: Core.Core
  readonly bucket: Bucket.Bucket
  /** Its entry in the store. */
  readonly id: number
  /** Its admission number in the bucket. */
  readonly seq: number
  readonly cost: Budgets.Amounts
  /** The generation of the bucket's estimates it was admitted under (its refusal measures them). */
  readonly generation: number
  settled: boolean
}

const windowOf = ({ bucket, core }: Granted) => Core.windowOf(core, bucket)

/** A settlement after which the limiter does not pace the request's retry: every outcome's but a 429's. */
const unpaced = Effect.succeed(false)

/**
 * Counted from now: by then the server has surely counted it; with `evidence`, a success the learner takes in. In the
 * settling fiber's own step when the store answers at once and nothing is learnt (most requests).
 */
const restamp = (g: Granted, fiber: Fiber.RuntimeFiber<boolean, never>, evidence: boolean): Effect.Effect<boolean> => {
  const { bucket, core, id } = g
  // a success ends a streak of 429s: they were noise
  if (evidence && bucket.noise.streak !== 0) bucket.noise = Learning.quiet
  if (!bucket.inFlight.delete(g.seq)) {
    // nothing learnt from it: only the store's count to settle
    const now = core.store.restamp.now
    if (now === undefined) return Effect.as(Core.settle(bucket, core.store.restamp(bucket.id, id, windowOf(g))), false)
    const at = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
    Core.note(bucket, now(bucket.id, id, windowOf(g), at), at)
    return unpaced
  }
  // while probing, the place in flight it leaves lets the head go
  return Core.settle(
    bucket,
    core.store.restamp(bucket.id, id, windowOf(g)),
    Learner.observe(core, bucket, g.generation, evidence)
  ).pipe(
    Effect.zipRight(Bucket.probing(bucket) ? Core.released(core, bucket) : Effect.void),
    Effect.as(false)
  )
}

/** The server never counted it: it all comes back. */
const removed = (g: Granted) =>
  Effect.suspend(() => {
    g.bucket.inFlight.delete(g.seq)
    return Effect.zipRight(
      Core.settle(g.bucket, g.core.store.remove(g.bucket.id, g.id, windowOf(g))),
      Core.released(g.core, g.bucket)
    )
  })

/** Refused with a 429: it comes back, and the refusal is weighed. True when the limiter paces the retry itself. */
const throttled = (g: Granted, retryAfterMs: number | undefined) =>
  Effect.suspend(() => {
    const { bucket, core } = g
    // in flight: admitted to a bucket that learns (one that learns after it was admitted weighs it as known)
    const wasInFlight = bucket.inFlight.delete(g.seq)
    let weighed: Learner.Weighed = "noise"
    const weigh = (usage: Bucket.Usage) =>
      Effect.map(
        wasInFlight
          ? Learner.weigh(core, bucket, g.seq, g.cost, g.generation, usage)
          : weighKnown(core, bucket, g.cost, usage),
        (w) => void (weighed = w)
      )
    return Effect.zipRight(
      Core.settle(bucket, core.store.remove(bucket.id, g.id, windowOf(g)), weigh),
      Effect.suspend(() => refusal(core, bucket, weighed, retryAfterMs))
    )
  })

/** An error answer: the request stays counted, its tokens come back. */
const refund = (g: Granted) =>
  Core.settle(
    g.bucket,
    g.core.store.adjust(g.bucket.id, g.id, { ...Budgets.none, requests: 1 }, windowOf(g)),
    () => Core.released(g.core, g.bucket)
  )

/** Settles `g` by `outcome` (once), as the settlement table says. */
const settle = (g: Granted, outcome: Outcome, error?: ApiError): Effect.Effect<boolean> =>
  Effect.withFiberRuntime<boolean>((fiber) => {
    if (g.settled) return unpaced
    g.settled = true
    Bucket.addPending(g.bucket, g.cost, -1)
    const effects = Settlement.effectsOf(outcome)
    if (effects.evidence === "refusal") return throttled(g, retryAfterOf(error))
    // the key stops first: nothing of it is admitted while the store gives the entry back
    if (effects.stopsKey && error?._tag === "QuotaExceeded") {
      return Effect.as(Effect.zipRight(stopKey(g.core, g.bucket.key, error), removed(g)), false)
    }
    if (effects.entry === "remove") return Effect.as(removed(g), false)
    const restamped = restamp(g, fiber, effects.evidence === "held")
    return effects.tokens === "refunded" ? Effect.zipLeft(restamped, refund(g)) : restamped
  })

/** The usage the answer reports: the entry's token budgets as `Settlement.reconciled` says (mostly: none to change). */
const reconcile = (g: Granted, usage: Usage): Effect.Effect<void> => {
  const next = Settlement.reconciled(g.cost, usage, g.core.reconcile)
  if (next === undefined) return Effect.void
  return Effect.suspend(() =>
    Core.settle(
      g.bucket,
      g.core.store.adjust(g.bucket.id, g.id, next.amounts, windowOf(g)),
      () => next.lowered ? Core.released(g.core, g.bucket) : Core.publish(g.core, g.bucket)
    )
  )
}

/**
 * The permit of a request counted in the store as `id`, costing `cost`. Most requests settle once, by `succeeded`,
 * in one step when the store answers at once.
 */
export const make = (core: Core.Core, bucket: Bucket.Bucket, id: number, cost: Budgets.Amounts): Permit => {
  const g: Granted = {
    core,
    bucket,
    id,
    seq: ++bucket.admissions,
    cost,
    generation: bucket.learning?.generation ?? 0,
    settled: false
  }
  if (bucket.learning !== undefined) bucket.inFlight.set(g.seq, cost)
  Bucket.addPending(bucket, cost, 1)
  return {
    cost,
    settle: (outcome, error) => settle(g, outcome, error),
    reconcile: (usage) => reconcile(g, usage)
  }
}
