/**
 * The spend meter: what each key's answered requests cost this calendar month, by its plan's prices (or those
 * configured), kept in the limiter's store so that processes and runs add up. With a budget, a warning once at 80%,
 * and from 100% (or for a request whose estimate, its prompt and whole output cap, would cross it) a refusal before
 * the request is sent.
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import { BudgetExceeded } from "../../schemas/Errors.js"
import * as Metrics from "../metrics.js"
import * as Spend from "../spend.js"
import { warned } from "./core.js"
import type { Store } from "./store.js"
import type { Options, Permit, Spending, Ticket, Usage } from "./types.js"

/** One key's month as this process knows it. */
interface KeyMonth {
  readonly month: string
  /** What the store said when last read, and what this process added since. */
  models: Record<string, Spend.Tally>
  /** What this process added that is not in the store yet (written a second later, or when the limiter closes). */
  unsaved: Record<string, Spend.Tally>
  /** When the store was last read, in epoch milliseconds. */
  readAt: number
  /** What the requests admitted and not yet settled are estimated to cost. */
  pending: number
  /** Whether the 80% warning was given. */
  warned: boolean
}

/** The meter of one limiter. */
export interface Meter {
  readonly store: Store
  readonly tier: string
  readonly budget: number | undefined
  readonly prices: Options["prices"]
  /** Each key's months, by key and month: a month that ended keeps what it has not written yet until it is. */
  readonly keys: Map<string, KeyMonth & { readonly key: string }>
  /** Models answered with usage that no price covers, warned about once (with a budget). */
  readonly unpriced: Set<string>
  /** The write of what is unsaved, once scheduled. */
  writer: Fiber.RuntimeFiber<void> | undefined
  /** One write at a time: closing waits for a write under way. */
  readonly writing: Effect.Semaphore
  /** The `aifs.spend` counter of each model (tagged once, not per answer). */
  readonly counters: Map<string, Metric.Metric.Counter<number>>
}

/**
 * How long what this process spent stays in its memory before it is written to the store, in one addition per model:
 * an answer never waits for the store (a file or Redis), and a run of a million requests writes a few hundred times.
 */
const writeAfter = Duration.seconds(1)

/** How long what other processes spent may go unseen: the store is read again after this long. */
const refreshMs = 1000

/** The meter of a limiter with `options`, keeping spend in `store`. */
export const make = (options: Options, store: Store): Meter => ({
  store,
  tier: options.tier ?? "auto",
  budget: options.budget,
  prices: options.prices,
  keys: new Map(),
  unpriced: new Set(),
  writer: undefined,
  writing: Effect.unsafeMakeSemaphore(1),
  counters: new Map()
})

/** The model's `aifs.spend` counter, tagged with it and the currency. */
const counterOf = (meter: Meter, model: string): Metric.Metric.Counter<number> => {
  let counter = meter.counters.get(model)
  if (counter === undefined) {
    counter = Metrics.spend.pipe(Metric.tagged("model", model), Metric.tagged("currency", Spend.currency))
    meter.counters.set(model, counter)
  }
  return counter
}

const priceOf = (meter: Meter, model: string) => Spend.pricesOf(meter.tier, model, meter.prices)

/** The key's month at `now` as known in this process (a new month starts from nothing). */
const local = (meter: Meter, key: string, now: number): KeyMonth => {
  const month = Spend.monthOf(now)
  const id = `${key}\n${month}`
  const known = meter.keys.get(id)
  if (known !== undefined) return known
  const fresh = {
    key,
    month,
    models: {},
    unsaved: {},
    readAt: Number.NEGATIVE_INFINITY,
    pending: 0,
    warned: false
  }
  meter.keys.set(id, fresh)
  return fresh
}

/** The key's month at `now`, read from the store when older than `refreshMs` (a store that cannot answer: a warning). */
const current = (meter: Meter, key: string, now: number): Effect.Effect<KeyMonth> => {
  const known = local(meter, key, now)
  if (now - known.readAt < refreshMs) return Effect.succeed(known)
  known.readAt = now
  return meter.store.spendOf(key, known.month).pipe(
    Effect.map((models) => {
      // the store's count (a field a store of one's own lacks, such as `written` before it was counted, is none), and
      // what this process has not written to it yet
      known.models = Object.fromEntries(
        Object.entries(models).map(([model, tally]) => [model, { ...Spend.empty, ...tally }])
      )
      for (const [model, tally] of Object.entries(known.unsaved)) {
        known.models[model] = Spend.add(known.models[model] ?? Spend.empty, tally)
      }
      return known
    }),
    Effect.catchAll((error) => Effect.as(warned(error), known))
  )
}

const spentIn = (month: KeyMonth): number => Spend.total(month.models).cost

/** The refusal of a request estimated at `estimate` when `spent` (with what is in flight) is what the key spent. */
const exceeded = (budget: number, spent: number, estimate: number, model: string) =>
  new BudgetExceeded({
    message: spent >= budget
      ? `${model}: the monthly budget of ${Spend.format(budget)} is spent (${Spend.format(spent)} this month)`
      : `${model}: this request (about ${Spend.format(estimate)}) would cross the monthly budget of ` +
        `${Spend.format(budget)} (${Spend.format(spent)} spent)`,
    budget,
    spent,
    estimate,
    currency: Spend.currency,
    model
  })

/**
 * Admits a request to the key's budget: its estimate is counted as in flight until its permit settles, and returned;
 * fails with `BudgetExceeded` when the budget is spent or the request would cross it. Nothing to do without a budget.
 */
export const admit = (meter: Meter, ticket: Ticket): Effect.Effect<number, BudgetExceeded> => {
  const budget = meter.budget
  if (budget === undefined) return Effect.succeed(0)
  return Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.flatMap(current(meter, ticket.key, now), (month) => {
      const prices = priceOf(meter, ticket.model)
      const estimate = prices === undefined
        ? 0
        : Spend.costOf(prices, { input: ticket.input ?? 0, output: ticket.output ?? 0 })
      const spent = spentIn(month) + month.pending
      if (spent >= budget || spent + estimate > budget) {
        return Effect.fail(exceeded(budget, spent, estimate, ticket.model))
      }
      month.pending += estimate
      return Effect.succeed(estimate)
    }))
}

/** A request admitted at `estimate` settled: its estimate is no longer in flight. */
const release = (meter: Meter, key: string, estimate: number) =>
  Effect.clockWith((clock) =>
    Effect.sync(() => {
      const month = local(meter, key, clock.unsafeCurrentTimeMillis())
      month.pending = Math.max(0, month.pending - estimate)
    })
  )

/** The warnings a recorded spend calls for: a model no price covers (once), 80% of the budget (once a month). */
const warnings = (meter: Meter, month: KeyMonth, model: string, priced: boolean): Effect.Effect<void> => {
  const budget = meter.budget
  if (budget === undefined) return Effect.void
  const unpriced = !priced && !meter.unpriced.has(model)
  if (unpriced) meter.unpriced.add(model)
  const spent = spentIn(month)
  const high = !month.warned && spent >= 0.8 * budget
  if (high) month.warned = true
  return Effect.zipRight(
    unpriced
      ? Effect.logWarning(
        `aifs: spend: no price for ${model} (not in the plan's table, none configured): its requests count nothing ` +
          `against the budget; set its prices`
      )
      : Effect.void,
    high
      ? Effect.logWarning(
        `aifs: spend: ${Spend.format(spent)} of the monthly budget of ${Spend.format(budget)} spent (80% or more)`
      )
      : Effect.void
  )
}

/** Records what an answered request used: its cost added for the key and model, the metric, the call's span. */
export const record = (meter: Meter, ticket: Ticket, usage: Usage): Effect.Effect<void> =>
  Effect.suspend(() => {
    const { key, model } = ticket
    const prices = priceOf(meter, model)
    const cost = prices === undefined ? 0 : Spend.costOf(prices, usage)
    const spent: Spend.Tally = {
      requests: 1,
      input: usage.input,
      output: usage.output,
      cached: usage.cached ?? 0,
      written: usage.written ?? 0,
      cost
    }
    return Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const month = local(meter, key, now)
      month.models[model] = Spend.add(month.models[model] ?? Spend.empty, spent)
      month.unsaved[model] = Spend.add(month.unsaved[model] ?? Spend.empty, spent)
      return Effect.all([
        scheduleWrite(meter),
        Metric.update(counterOf(meter, model), cost),
        // a model priced nowhere has no cost to show (not a cost of 0)
        prices === undefined
          ? Effect.void
          : Effect.annotateCurrentSpan({ "aifs.spend": cost, "aifs.spend.currency": Spend.currency }),
        warnings(meter, month, model, prices !== undefined)
      ], { discard: true })
    })
  })

/**
 * Writes what every key's months hold unsaved to the store, one addition per model (a failure: a warning). One write
 * at a time, never cut off once begun (what it took from `unsaved` is written); a month that ended goes once written.
 */
export const save = (meter: Meter): Effect.Effect<void> =>
  meter.writing.withPermits(1)(Effect.uninterruptible(Effect.clockWith((clock) => {
    const current = Spend.monthOf(clock.unsafeCurrentTimeMillis())
    return Effect.forEach([...meter.keys.entries()], ([id, month]) => {
      const unsaved = Object.entries(month.unsaved)
      month.unsaved = {}
      if (month.month !== current) meter.keys.delete(id)
      return Effect.forEach(
        unsaved,
        ([model, spent]) => Effect.catchAll(meter.store.addSpend(month.key, month.month, model, spent), warned),
        { discard: true }
      )
    }, { discard: true })
  })))

/** The write of what is unsaved, `writeAfter` from now, unless one is scheduled already. */
const scheduleWrite = (meter: Meter): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (meter.writer !== undefined) return Effect.void
    const write = Effect.zipRight(
      Effect.sleep(writeAfter),
      Effect.suspend(() => {
        meter.writer = undefined
        return save(meter)
      })
    )
    // interruptible even when scheduled from a finalizer (a stream's end): `close` interrupts the wait
    return Effect.map(Effect.forkDaemon(Effect.interruptible(write)), (fiber) => void (meter.writer = fiber))
  })

/**
 * The meter closed with its limiter: a write still waiting for its time is cut off, one under way is waited for, and
 * what is unsaved is written now.
 */
export const close = (meter: Meter): Effect.Effect<void> =>
  Effect.suspend(() => {
    const writer = meter.writer
    meter.writer = undefined
    return Effect.zipRight(writer === undefined ? Effect.void : Fiber.interrupt(writer), save(meter))
  })

/** `permit`, metered: its settlement releases its estimate, its usage is recorded. */
export const metered = (meter: Meter, ticket: Ticket, estimate: number, permit: Permit): Permit => {
  let settled = false
  return {
    cost: permit.cost,
    settle: (outcome, error) =>
      Effect.suspend(() => {
        if (settled || estimate === 0) return permit.settle(outcome, error)
        settled = true
        return Effect.zipRight(release(meter, ticket.key, estimate), permit.settle(outcome, error))
      }),
    reconcile: (usage) => Effect.zipRight(record(meter, ticket, usage), permit.reconcile(usage))
  }
}

/** A request admitted at `estimate` that got no permit (refused, interrupted): its estimate is released. */
export const unadmitted = (meter: Meter, key: string, estimate: number): Effect.Effect<void> =>
  estimate === 0 ? Effect.void : release(meter, key, estimate)

/** What the key spent this month, from the store (this process's count when the store cannot answer). */
export const spending = (meter: Meter, key: string): Effect.Effect<Spending> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const known = local(meter, key, now)
    known.readAt = Number.NEGATIVE_INFINITY
    return Effect.map(current(meter, key, now), (month) => ({
      month: month.month,
      models: month.models,
      total: Spend.total(month.models),
      budget: meter.budget,
      currency: Spend.currency,
      unpriced: Object.keys(month.models).filter((model) => priceOf(meter, model) === undefined)
    }))
  })
