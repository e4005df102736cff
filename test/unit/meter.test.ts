/**
 * The spend meter (`src/internal/limiter/meter.ts`) as a plain part, on the memory store: what a budget admits and
 * refuses to the cent, what requests in flight hold and give back, when the store is read again and written, the
 * warnings (a model no price covers, 80% of the budget), the metric and the span. The limiter's and the transport's
 * tests (test/integration/spendMeter.test.ts, monthlyBudget.test.ts) show the same through the whole client.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as Meter from "../../src/internal/limiter/meter.js"
import type { Store } from "../../src/internal/limiter/store.js"
import type { Options, Permit, Ticket } from "../../src/internal/limiter/types.js"
import * as Metrics from "../../src/internal/metrics.js"
import type { Tally } from "../../src/internal/spend.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import { LimiterUnavailable } from "../../src/schemas/Errors.js"

/** One euro per input token, two per output token: costs are read off the usage. */
const prices = { priced: { input: 1_000_000, output: 2_000_000 } }
/** A model no plan's table lists and no price is configured for. */
const unpriced = "no-plan-sells-this-model"
const key = "key#0a1b2c3d"
/** The TestClock's month. */
const month = "1970-01"

/** The memory store, with its reads and writes of spend counted. */
const countingStore = () => {
  const inner = LimiterStore.makeMemory()
  const calls = { spendOf: 0, addSpend: 0 }
  const store: Store = {
    ...inner,
    spendOf: (k, m) => Effect.suspend(() => (calls.spendOf++, inner.spendOf(k, m))),
    addSpend: (k, m, model, spent) => Effect.suspend(() => (calls.addSpend++, inner.addSpend(k, m, model, spent)))
  }
  return { store, calls }
}

const meterWith = (options: Options, store: Store = countingStore().store) =>
  Meter.make({ tier: "auto", prices, ...options }, store)

const ticket = (input: number, output: number, model = "priced"): Ticket => ({ key, model, input, output })

/** A permit that records its settlements and reconciliations. */
const innerPermit = () => {
  const settled: Array<string> = []
  const permit: Permit = {
    cost: { requests: 1, input: 0, output: 0, tokens: 0 },
    settle: (outcome) => Effect.sync(() => (settled.push(outcome), false)),
    reconcile: () => Effect.void
  }
  return { permit, settled }
}

/** The log lines, kept in `lines`. */
const logsIn = (lines: Array<string>) =>
  Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => lines.push(String(message))))

const tally = (input: number, output: number, cost: number): Tally => ({
  requests: 1,
  input,
  output,
  cached: 0,
  written: 0,
  cost
})

describe("the spend meter", () => {
  it.effect("without a budget admits everything at no estimate and never reads the store", () =>
    Effect.gen(function*() {
      const { calls, store } = countingStore()
      const meter = meterWith({}, store)
      assert.strictEqual(yield* Meter.admit(meter, ticket(1_000, 1_000)), 0)
      assert.strictEqual(calls.spendOf, 0)
    }))

  it.effect("admits a request that spends the budget to the cent, and refuses the next one, saying the budget is spent", () =>
    Effect.gen(function*() {
      const meter = meterWith({ budget: 10 })
      // 4 input + 3 output tokens: 4 + 6 = 10
      assert.strictEqual(yield* Meter.admit(meter, ticket(4, 3)), 10)
      const refusal = yield* Effect.flip(Meter.admit(meter, ticket(0, 0)))
      assert.strictEqual(refusal._tag, "BudgetExceeded")
      assert.strictEqual(refusal.spent, 10)
      assert.strictEqual(refusal.estimate, 0)
      assert.strictEqual(refusal.message, "priced: the monthly budget of 10.00 EUR is spent (10.00 EUR this month)")
    }))

  it.effect("refuses a request that would cross the budget, saying what it would cost and what is spent", () =>
    Effect.gen(function*() {
      const meter = meterWith({ budget: 10 })
      assert.strictEqual(yield* Meter.admit(meter, ticket(5, 0)), 5)
      const refusal = yield* Effect.flip(Meter.admit(meter, ticket(6, 0)))
      assert.strictEqual(
        refusal.message,
        "priced: this request (about 6.00 EUR) would cross the monthly budget of 10.00 EUR (5.00 EUR spent)"
      )
      // what still fits is admitted
      assert.strictEqual(yield* Meter.admit(meter, ticket(5, 0)), 5)
    }))

  it.effect("admits a model no price covers at no estimate, and warns once per such model that it counts nothing", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const meter = meterWith({ budget: 10 })
      assert.strictEqual(yield* Meter.admit(meter, ticket(1_000, 1_000, unpriced)), 0)
      const record = (model: string) =>
        Effect.provide(Meter.record(meter, ticket(1_000, 1_000, model), { input: 1_000, output: 1_000 }), logsIn(lines))
      yield* record(unpriced)
      yield* record(unpriced)
      yield* record(`${unpriced}-2`)
      const warning = (model: string) =>
        `aifs: spend: no price for ${model} (not in the plan's table, none configured): its requests count ` +
        "nothing against the budget; set its prices"
      assert.deepStrictEqual(lines, [warning(unpriced), warning(`${unpriced}-2`)])
      yield* Meter.record(meter, ticket(1, 1), { input: 1, output: 1 })
      const spending = yield* Meter.spending(meter, key)
      assert.deepStrictEqual(spending.unpriced, [unpriced, `${unpriced}-2`])
      assert.deepStrictEqual(spending.models[unpriced], { ...tally(2_000, 2_000, 0), requests: 2 })
    }))

  it.effect("without a budget gives no warning, priced or not", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const meter = meterWith({})
      yield* Effect.provide(Meter.record(meter, ticket(1, 1, unpriced), { input: 1, output: 1 }), logsIn(lines))
      yield* Effect.provide(Meter.record(meter, ticket(100, 0), { input: 100, output: 0 }), logsIn(lines))
      assert.deepStrictEqual(lines, [])
    }))

  it.effect("warns once when the month's spend reaches 80% of the budget, not before", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const meter = meterWith({ budget: 10 })
      yield* Effect.provide(Meter.record(meter, ticket(7, 0), { input: 7, output: 0 }), logsIn(lines))
      assert.deepStrictEqual(lines, [])
      yield* Effect.provide(Meter.record(meter, ticket(1, 0), { input: 1, output: 0 }), logsIn(lines))
      yield* Effect.provide(Meter.record(meter, ticket(1, 0), { input: 1, output: 0 }), logsIn(lines))
      assert.deepStrictEqual(lines, ["aifs: spend: 8.00 EUR of the monthly budget of 10.00 EUR spent (80% or more)"])
    }))

  it.effect("warns of 80% on an answer of a model priced nowhere too, when what others spent brought it there", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const { store } = countingStore()
      const meter = meterWith({ budget: 10 }, store)
      yield* store.addSpend(key, month, "priced", tally(9, 0, 9))
      yield* Meter.admit(meter, ticket(0, 0, unpriced))
      yield* Effect.provide(Meter.record(meter, ticket(1, 1, unpriced), { input: 1, output: 1 }), logsIn(lines))
      assert.strictEqual(lines.length, 2)
      assert.strictEqual(lines[1], "aifs: spend: 9.00 EUR of the monthly budget of 10.00 EUR spent (80% or more)")
    }))

  it.effect("holds what requests in flight are estimated at until each settles once", () =>
    Effect.gen(function*() {
      const meter = meterWith({ budget: 10 })
      const first = innerPermit()
      const estimate = yield* Meter.admit(meter, ticket(4, 0))
      const permit = Meter.metered(meter, ticket(4, 0), estimate, first.permit)
      assert.strictEqual(yield* Meter.admit(meter, ticket(4, 0)), 4)
      // 8 in flight: a third of 4 would cross 10
      assert.isTrue(Exit.isFailure(yield* Effect.exit(Meter.admit(meter, ticket(4, 0)))))
      // the first settles (twice: the second gives back nothing more); the second stays in flight
      yield* permit.settle("failed")
      yield* permit.settle("failed")
      assert.deepStrictEqual(first.settled, ["failed", "failed"])
      assert.strictEqual(yield* Meter.admit(meter, ticket(4, 0)), 4)
      assert.isTrue(Exit.isFailure(yield* Effect.exit(Meter.admit(meter, ticket(4, 0)))))
    }))

  it.effect("gives back the estimate of a request admitted but never given a permit", () =>
    Effect.gen(function*() {
      const meter = meterWith({ budget: 10 })
      const estimate = yield* Meter.admit(meter, ticket(8, 0))
      assert.isTrue(Exit.isFailure(yield* Effect.exit(Meter.admit(meter, ticket(8, 0)))))
      yield* Meter.unadmitted(meter, key, estimate)
      assert.strictEqual(yield* Meter.admit(meter, ticket(8, 0)), 8)
    }))

  it.effect("reads what other processes spent from the store at most once a second", () =>
    Effect.gen(function*() {
      const { calls, store } = countingStore()
      const meter = meterWith({ budget: 100 }, store)
      yield* Meter.admit(meter, ticket(1, 0))
      assert.strictEqual(calls.spendOf, 1)
      yield* TestClock.adjust(999)
      yield* Meter.admit(meter, ticket(1, 0))
      assert.strictEqual(calls.spendOf, 1)
      yield* TestClock.adjust(1)
      yield* Meter.admit(meter, ticket(1, 0))
      assert.strictEqual(calls.spendOf, 2)
    }))

  it.effect("counts what the store says and what this process has not written to it yet, once each", () =>
    Effect.gen(function*() {
      const store = LimiterStore.makeMemory()
      const meter = meterWith({ budget: 100 }, store)
      // another process wrote 50; this one answers 1, written a second later
      yield* store.addSpend(key, month, "priced", tally(50, 0, 50))
      yield* Meter.record(meter, ticket(1, 0), { input: 1, output: 0 })
      assert.strictEqual((yield* store.spendOf(key, month)).priced!.cost, 50)
      assert.strictEqual((yield* Meter.spending(meter, key)).total.cost, 51)
      yield* TestClock.adjust(1_000)
      assert.strictEqual((yield* store.spendOf(key, month)).priced!.cost, 51)
      assert.strictEqual((yield* Meter.spending(meter, key)).total.cost, 51)
    }))

  it.effect("keeps its own count when the store cannot say, with a warning", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const inner = LimiterStore.makeMemory()
      const store: Store = {
        ...inner,
        spendOf: () => Effect.fail(new LimiterUnavailable({ message: "the store is down" }))
      }
      const meter = meterWith({ budget: 100 }, store)
      yield* Meter.record(meter, ticket(3, 0), { input: 3, output: 0 })
      const seen = yield* Effect.provide(Meter.spending(meter, key), logsIn(lines))
      assert.strictEqual(seen.total.cost, 3)
      assert.deepStrictEqual(lines, ["aifs: limiter store: the store is down"])
    }))

  it.effect("writes what it recorded to the store a second later, in one addition per model", () =>
    Effect.gen(function*() {
      const { calls, store } = countingStore()
      const meter = meterWith({}, store)
      yield* Meter.record(meter, ticket(2, 1), { input: 2, output: 1 })
      yield* Meter.record(meter, ticket(2, 1), { input: 2, output: 1 })
      assert.strictEqual(calls.addSpend, 0)
      yield* TestClock.adjust(1_000)
      assert.strictEqual(calls.addSpend, 1)
      assert.deepStrictEqual(yield* store.spendOf(key, month), { priced: { ...tally(4, 2, 8), requests: 2 } })
      // a later answer is written a second after it, again
      yield* Meter.record(meter, ticket(1, 0), { input: 1, output: 0 })
      yield* TestClock.adjust(1_000)
      assert.strictEqual(calls.addSpend, 2)
    }))

  it.effect("closing writes what is unsaved at once, and the write that waited for its time is cut off", () =>
    Effect.gen(function*() {
      const { calls, store } = countingStore()
      const meter = meterWith({}, store)
      yield* Meter.record(meter, ticket(2, 0), { input: 2, output: 0 })
      const writer = meter.writer!
      yield* Meter.close(meter)
      assert.strictEqual(calls.addSpend, 1)
      assert.isTrue(Exit.isInterrupted(yield* Fiber.await(writer)))
      assert.deepStrictEqual(yield* store.spendOf(key, month), { priced: tally(2, 0, 2) })
    }))

  it.effect("closing waits for a write under way, then writes what came after it", () =>
    Effect.gen(function*() {
      const inner = LimiterStore.makeMemory()
      const gate = yield* Deferred.make<void>()
      const events: Array<string> = []
      let writes = 0
      const store: Store = {
        ...inner,
        // the first write waits on the gate
        addSpend: (k, m, model, spent) =>
          Effect.suspend(() => {
            const first = writes++ === 0
            events.push(first ? "first begins" : "second")
            return first
              ? Effect.zipRight(Deferred.await(gate), Effect.sync(() => events.push("first ends")))
              : Effect.void
          }).pipe(Effect.zipRight(inner.addSpend(k, m, model, spent)))
      }
      const meter = meterWith({}, store)
      yield* Meter.record(meter, ticket(2, 0), { input: 2, output: 0 })
      // the write begins, and waits on the store
      yield* TestClock.adjust(1_000)
      yield* Meter.record(meter, ticket(1, 0), { input: 1, output: 0 })
      const closing = yield* Effect.fork(Meter.close(meter))
      // closing goes as far as it can
      for (let i = 0; i < 100; i++) yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(closing)))
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(closing)
      assert.deepStrictEqual(events, ["first begins", "first ends", "second"])
      assert.deepStrictEqual(yield* store.spendOf(key, month), { priced: { ...tally(3, 0, 3), requests: 2 } })
    }))

  it.effect("writes what the last moments of a month spent to that month, when the next has begun", () =>
    Effect.gen(function*() {
      const { store } = countingStore()
      const meter = meterWith({}, store)
      yield* TestClock.setTime(Date.UTC(2026, 10, 30, 23, 59, 59, 500))
      yield* Meter.record(meter, ticket(2, 0), { input: 2, output: 0 })
      // the next month, before the write of the last one's answer
      yield* TestClock.adjust(600)
      yield* Meter.record(meter, ticket(1, 0), { input: 1, output: 0 })
      yield* Meter.close(meter)
      assert.deepStrictEqual(yield* store.spendOf(key, "2026-11"), { priced: tally(2, 0, 2) })
      assert.deepStrictEqual(yield* store.spendOf(key, "2026-12"), { priced: tally(1, 0, 1) })
      assert.strictEqual((yield* Meter.spending(meter, key)).month, "2026-12")
    }))

  it.effect("counts the cost on the model's `aifs.spend` counter, tagged with the model and the currency", () =>
    Effect.gen(function*() {
      const model = "priced-for-the-counter"
      const meter = meterWith({ prices: { [model]: prices.priced } })
      // the registry is the process's: another run of this test in the same worker counted before
      const counter = Metrics.spend.pipe(Metric.tagged("model", model), Metric.tagged("currency", "EUR"))
      const before = (yield* Metric.value(counter)).count
      yield* Meter.record(meter, ticket(3, 1, model), { input: 3, output: 1 })
      yield* Meter.record(meter, ticket(3, 1, model), { input: 3, output: 1 })
      assert.strictEqual((yield* Metric.value(counter)).count - before, 10)
    }))

  it.effect("puts the cost on the call's span, and nothing for a model priced nowhere", () =>
    Effect.gen(function*() {
      const meter = meterWith({})
      const attributes = (model: string) =>
        Effect.withSpan(
          Effect.zipRight(
            Meter.record(meter, ticket(3, 1, model), { input: 3, output: 1 }),
            Effect.map(Effect.orDie(Effect.currentSpan), (span) => Object.fromEntries(span.attributes))
          ),
          "call"
        )
      assert.deepStrictEqual(yield* attributes("priced"), { "aifs.spend": 5, "aifs.spend.currency": "EUR" })
      assert.deepStrictEqual(yield* attributes(unpriced), {})
    }))
})
