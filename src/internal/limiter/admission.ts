/**
 * Admission: a request's wait for its bucket's budgets. An idle bucket admits in one step when the store answers at
 * once; otherwise the caller joins the bucket's fair line, and the caller at its head asks the store until every
 * budget has room, sleeping until the window frees or capacity comes back. Only the waits can be interrupted, and an
 * entry the store admitted always becomes the permit its caller gets.
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Metric from "effect/Metric"
import { RequestTooLarge } from "../../schemas/Errors.js"
import * as Budgets from "../budgets.js"
import * as ClientMetrics from "../metrics.js"
import * as Bucket from "./bucket.js"
import * as Core from "./core.js"
import * as Learner from "./learner.js"
import * as Line from "./line.js"
import * as Permits from "./permits.js"
import type { Reservation } from "./store.js"
import type { Permit, Refusal, Restore } from "./types.js"

/** What `acquireWith` runs on how an acquisition ended. */
export type Then<A, E, R> = (acquired: Exit.Exit<Permit, Refusal>, restore: Restore) => Effect.Effect<A, E, R>

/** The refusal of a request costing `cost` that can never fit the bucket's `budget`. */
export const tooLarge = (bucket: Bucket.Bucket, cost: Budgets.Amounts, budget: Budgets.Dimension) => {
  const limit = bucket.limits[budget].value ?? 0
  const advice = budget === "output" ? "lower max_tokens" : budget === "input" ?
    "shorten the input" :
    "lower max_tokens or shorten the input"
  return new RequestTooLarge({
    message: `a request to ${bucket.model} needs about ${cost[budget]} ${Budgets.noun[budget]}, more than the ` +
      `${limit} the quota allows per window: ${advice}`,
    model: bucket.model,
    budget,
    requested: cost[budget],
    limit
  })
}

/** Why the bucket can admit nothing now, whatever the window holds: its key is spent, or the request never fits. */
const refusedAt = (core: Core.Core, bucket: Bucket.Bucket, cost: Budgets.Amounts, now: number) => {
  const spent = Core.spentOf(core, bucket.key, now)
  if (spent !== undefined) return spent
  const budget = Budgets.neverFits(bucket.limits, cost)
  return budget === undefined ? undefined : tooLarge(bucket, cost, budget)
}

/** The limits the store checks a request of `cost` against. */
const limitsFor = (core: Core.Core, bucket: Bucket.Bucket, cost: Budgets.Amounts) =>
  Bucket.storeLimits(bucket, cost, core.windowMs)

/** A wait the bucket itself imposes (closed after a 429, a place kept in the store's line, a full probe), if any. */
const ownWait = (core: Core.Core, bucket: Bucket.Bucket, now: number, queuedUntil: number): number | undefined => {
  if (bucket.blockedUntil > now) return bucket.blockedUntil - now
  if (queuedUntil > now) return queuedUntil - now
  // probing: woken when a request in flight lands (the window's length bounds a wake-up lost)
  const probe = Bucket.probe(bucket)
  return probe !== undefined && bucket.inFlight.size >= probe ? core.windowMs : undefined
}

/** The head sleeps until the window frees enough, or sooner when a reservation shrinks or comes back. */
const sleep = (core: Core.Core, bucket: Bucket.Bucket, waitMs: number, restore: Restore) =>
  Effect.gen(function*() {
    const wake = yield* Deferred.make<void>()
    const done = () => Deferred.unsafeDone(wake, Exit.void)
    bucket.wake = done
    yield* restore(Effect.raceAll([
      Effect.sleep(Duration.millis(waitMs)),
      Deferred.await(wake),
      core.store.released(bucket.id, core.waiter)
    ]))
    if (bucket.wake === done) bucket.wake = undefined
  })

/** The store's answer was to wait: notes the binding budget; a learnt one may be raised after calm windows. */
const waited = (core: Core.Core, bucket: Bucket.Bucket, usage: Budgets.Amounts, cost: Budgets.Amounts, now: number) => {
  const binding = Budgets.binding(bucket.limits, usage, cost)
  if (binding === undefined) return Effect.succeed(false)
  bucket.binding = binding
  return Learner.calm(core, bucket, binding, now)
}

/** The store's answer to a reservation at the head, or the bucket's own wait. */
const reserve = (core: Core.Core, bucket: Bucket.Bucket, cost: Budgets.Amounts, now: number) => {
  const queuedUntil = bucket.queuedUntil
  bucket.queuedUntil = 0
  const own = ownWait(core, bucket, now, queuedUntil)
  if (own !== undefined) return Effect.succeed<Reservation>({ _tag: "Wait", waitMs: own, usage: bucket.usage })
  return core.store.reserve(bucket.id, cost, limitsFor(core, bucket, cost), core.waiter, bucket.line.size > 1)
}

/** Counts an admission of `cost` that waited since `arrived`. */
const admitted = (cost: Budgets.Amounts, waitedMs: number) =>
  Effect.zipRight(
    Effect.zipRight(
      Metric.increment(ClientMetrics.limiterAdmitted),
      Metric.incrementBy(ClientMetrics.limiterTokensReserved, cost.tokens)
    ),
    waitedMs > 0 ? Metric.incrementBy(ClientMetrics.limiterWaitMillis, waitedMs) : Effect.void
  )

/**
 * The admission loop of the caller whose turn it is, at the head of `bucket`'s line: only its sleeps can be
 * interrupted (`restore`), and an entry the store admitted always becomes the permit it returns.
 */
const atHead = (core: Core.Core, bucket: Bucket.Bucket, cost: Budgets.Amounts, restore: Restore, arrived: number) =>
  Effect.gen(function*() {
    yield* Learner.recall(core, bucket)
    yield* Core.publish(core, bucket)
    while (true) {
      const now = yield* Clock.currentTimeMillis
      const refused = refusedAt(core, bucket, cost, now)
      if (refused !== undefined) return yield* Effect.fail(refused)
      Bucket.settleMargin(bucket, now, core.baseMarginMs, core.windowMs)
      // capacity that comes back while the store answers is not missed: the count tells
      const releases = bucket.releases
      const reservation = yield* reserve(core, bucket, cost, now)
      if (reservation._tag === "TooLarge") {
        bucket.placeInStore = false
        return yield* Effect.fail(tooLarge(bucket, cost, Budgets.neverFits(bucket.limits, cost) ?? "tokens"))
      }
      Core.note(bucket, reservation.usage, now)
      bucket.placeInStore = reservation._tag === "Wait" || reservation.queuedMs !== undefined
      if (reservation._tag === "Admitted") {
        if (reservation.queuedMs !== undefined) bucket.queuedUntil = now + reservation.queuedMs
        yield* admitted(cost, now - arrived)
        return Permits.make(core, bucket, reservation.id, cost)
      }
      if (yield* waited(core, bucket, reservation.usage, cost, now)) continue
      if (bucket.releases !== releases) continue
      yield* sleep(core, bucket, reservation.waitMs, restore)
    }
  })

/** A caller left the line: once nobody here needs it, the place kept in the store's line is given up. */
const left = (core: Core.Core, bucket: Bucket.Bucket) => () => {
  if (bucket.line.size > 0 || !bucket.placeInStore) return Core.publish(core, bucket)
  bucket.placeInStore = false
  bucket.queuedUntil = 0
  return Effect.zipRight(Effect.ignore(core.store.leave(bucket.id, core.waiter)), Core.publish(core, bucket))
}

/**
 * A request to an idle bucket (nobody in line, here or in the store's; nothing blocked; no probe; nobody watching
 * `changes`) admitted in one step, when the store answers at once; `undefined`: it takes the line.
 */
const admitNow = (core: Core.Core, bucket: Bucket.Bucket, cost: Budgets.Amounts, now: number) => {
  const reserveNow = core.store.reserve.now
  if (reserveNow === undefined || bucket.line.busy || !bucket.recalled || core.watchers > 0) return undefined
  if (bucket.blockedUntil > now || bucket.queuedUntil > now || Bucket.probing(bucket)) return undefined
  Bucket.settleMargin(bucket, now, core.baseMarginMs, core.windowMs)
  const reservation = reserveNow(bucket.id, cost, limitsFor(core, bucket, cost), now)
  if (reservation === undefined) return undefined
  bucket.queuedUntil = 0
  Core.note(bucket, reservation.usage, now)
  bucket.placeInStore = false
  return Permits.make(core, bucket, reservation.id, cost)
}

/**
 * Waits for `bucket`'s budgets to admit a request costing `cost`, then runs `then` on how it ended (the permit, a
 * refusal or an interruption) in the same uninterruptible step; `restore` makes what `then` runs interruptible again.
 */
export const acquireWith = <A, E, R>(
  core: Core.Core,
  bucket: Bucket.Bucket,
  cost: Budgets.Amounts,
  then: Then<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.withFiberRuntime((fiber) => {
      const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
      const refused = refusedAt(core, bucket, cost, now)
      if (refused !== undefined) return then(Exit.fail(refused), restore)
      const granted = admitNow(core, bucket, cost, now)
      if (granted !== undefined) {
        const labels = fiber.getFiberRef(FiberRef.currentMetricLabels)
        ClientMetrics.limiterAdmitted.unsafeUpdate(1, labels)
        ClientMetrics.limiterTokensReserved.unsafeUpdate(cost.tokens, labels)
        return then(Exit.succeed(granted), restore)
      }
      // few frames stay on a waiting caller's fiber: thousands may wait at once
      const behind = bucket.line.busy
      const turn = atHead(core, bucket, cost, restore, now)
      const joined = Line.join(bucket.line, restore, turn, left(core, bucket), (exit) => then(exit, restore))
      // observers see a caller join a line that is busy (the head publishes its own turn)
      return behind && core.watchers > 0 ? Effect.zipRight(Core.publish(core, bucket), joined) : joined
    })
  )

/** Whether a request costing `cost` would have to wait now (for queue routing). */
export const wouldWait = (core: Core.Core, bucket: Bucket.Bucket, cost: Budgets.Amounts) =>
  Effect.gen(function*() {
    yield* Learner.recall(core, bucket)
    const now = yield* Clock.currentTimeMillis
    // a key whose budget is spent goes nowhere: its request fails in the limiter, not in the queue
    if (Core.spentOf(core, bucket.key, now) !== undefined) return false
    if (bucket.line.size > 0 || bucket.blockedUntil > now) return true
    Bucket.settleMargin(bucket, now, core.baseMarginMs, core.windowMs)
    const usage = yield* Core.freshUsage(core, bucket)
    return Budgets.binding(bucket.limits, usage, cost) !== undefined
  })
