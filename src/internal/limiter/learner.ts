/**
 * The Effect shell around `learning.ts` for a bucket that learns its limits: it recalls what was learnt before, feeds
 * the learning with answers, refusals and calm waits, applies what changes, and keeps in the store what is confirmed.
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Budgets from "../budgets.js"
import * as Learning from "../learning.js"
import * as Bucket from "./bucket.js"
import * as Core from "./core.js"

/** Whether observers see the same of two learnings besides their limits: the probe and how sure each limit is. */
const sameToObservers = (a: Learning.Learning, b: Learning.Learning) =>
  Math.floor(a.probe) === Math.floor(b.probe) &&
  Learning.learnt.every((d) => Learning.confidence(a[d]) === Learning.confidence(b[d]))

/** Takes `next` as what the bucket learnt: new limits may let the head go, and what is confirmed is kept. */
export const relearn = (core: Core.Core, bucket: Bucket.Bucket, next: Learning.Learning) =>
  Effect.suspend(() => {
    const before = bucket.learning!
    bucket.learning = next
    // most answers change nothing observers see: no state is published for them (one per request otherwise)
    if (!Bucket.applyLearnt(bucket)) {
      return next === before || sameToObservers(before, next) ? Effect.void : Core.publish(core, bucket)
    }
    const kept = Learning.confirmed(next)
    const keep = kept === undefined || kept === Learning.confirmed(before)
      ? Effect.void
      : Effect.catchAll(core.store.keepLearnt(bucket.id, kept), Core.warned)
    return Effect.zipRight(keep, Core.released(core, bucket))
  })

/** The limits learnt before (by another process on the store, or an earlier run), once per bucket. */
export const recall = (core: Core.Core, bucket: Bucket.Bucket) =>
  Effect.suspend(() => {
    if (bucket.recalled) return Effect.void
    bucket.recalled = true
    return Effect.flatMap(Effect.orElseSucceed(core.store.learnt(bucket.id), () => undefined), (kept) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        // the probe's windows count from the first request
        bucket.learning = kept === undefined
          ? Learning.initial(now)
          : Learning.resumed(now, kept, core.windowMs)
        Bucket.applyLearnt(bucket)
        return Core.publish(core, bucket)
      }))
  })

/** What the window held at an answer: the usage less what is still in flight (those after `after`, or all). */
const heldAt = (bucket: Bucket.Bucket, usage: Budgets.Amounts, after: number): Budgets.Amounts => {
  let count: Budgets.Amounts = usage
  for (const [seq, cost] of bucket.inFlight) {
    if (seq > after) count = Budgets.subtract(count, cost)
  }
  return count
}

/**
 * A request admitted at `generation` answered while the store counted `usage`: the window held at least what was
 * not in flight (a success lifts a limit measured too low, see `Learning.held`).
 */
export const observe =
  (core: Core.Core, bucket: Bucket.Bucket, generation: number, succeeded: boolean) => (usage: Bucket.Usage) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const answered = Learning.answered(bucket.learning!, now, core.windowMs)
      const next = succeeded ? Learning.held(answered, heldAt(bucket, usage, -1), generation) : answered
      return relearn(core, bucket, next)
    })

/** How the limiter took a refusal: at a limit (close the bucket for the server's time), or not (noise, another's). */
export type Weighed = "limit" | "noise" | "elsewhere"

/**
 * The server refused the request admitted as `seq` (costing `cost`, at `generation`) while the store counted `usage`
 * without it: the window held that, less the requests sent after it. Resumed from limits learnt before, the server
 * may still count what the process before this one sent: the window is taken as full until that is surely gone.
 */
export const weigh = (
  core: Core.Core,
  bucket: Bucket.Bucket,
  seq: number,
  cost: Budgets.Amounts,
  generation: number,
  usage: Budgets.Amounts
): Effect.Effect<Weighed> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const learning = bucket.learning!
    if (now < learning.unseenUntil) {
      bucket.blockedUntil = Math.max(bucket.blockedUntil, learning.unseenUntil)
      return Effect.as(Core.publish(core, bucket), "elsewhere" as const)
    }
    const count = heldAt(bucket, usage, seq)
    const firm = Bucket.firmLimits(bucket)
    const [next, verdict] = Learning.refused(learning, count, cost, generation, now, core.windowMs, firm)
    const weighed: Weighed = verdict._tag === "Measured" ? "limit" : verdict._tag === "Noise" ? "noise" : "elsewhere"
    return Effect.as(relearn(core, bucket, next), weighed)
  })

/**
 * A caller must wait because `binding` is full: for a learnt limit, calm windows at it may call for a raise (true:
 * the limits changed, look again).
 */
export const calm = (core: Core.Core, bucket: Bucket.Bucket, binding: Budgets.Dimension, now: number) =>
  Effect.suspend(() => {
    if (bucket.learning === undefined || binding === "tokens" || !Budgets.estimated(bucket.limits[binding])) {
      return Effect.succeed(false)
    }
    const next = Learning.calm(bucket.learning, binding, now, core.windowMs)
    return next === bucket.learning ? Effect.succeed(false) : Effect.as(relearn(core, bucket, next), true)
  })
