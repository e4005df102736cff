import { assert, describe, it } from "@effect/vitest"
import * as Plans from "../../src/internal/plans.js"
import * as Spend from "../../src/internal/spend.js"

describe("prices", () => {
  it("configured prices win; else the key's plan's row; a model the plan lacks has none", () => {
    assert.deepStrictEqual(Spend.pricesOf("basic", "Llama-3.3-70B-Instruct", undefined), { input: 3.53, output: 3.53 })
    const own = { "Llama-3.3-70B-Instruct": { input: 1, output: 2 } }
    assert.deepStrictEqual(Spend.pricesOf("basic", "Llama-3.3-70B-Instruct", own), { input: 1, output: 2 })
    assert.isUndefined(Spend.pricesOf("basic", "gpt-4o", undefined), "basic does not sell gpt-4o")
    assert.deepStrictEqual(Spend.pricesOf("basic", "gpt-4o", { "gpt-4o": { input: 5, output: 6 } }), {
      input: 5,
      output: 6
    })
  })

  it("on auto (plan unknown): the price every plan selling the model agrees on, else none", () => {
    const selling = (model: string) =>
      Plans.planNames.flatMap((plan) => Plans.pricesOf(plan, model) ?? []).map((p) => `${p.input}/${p.output}`)
    // claude-sonnet-4.6 costs the same on every plan that sells it; gpt-4o less on the current plans than the legacy
    assert.strictEqual(new Set(selling("claude-sonnet-4.6")).size, 1)
    assert.deepStrictEqual(Spend.pricesOf("auto", "claude-sonnet-4.6", undefined), { input: 2.97, output: 14.85 })
    assert.isAbove(new Set(selling("gpt-4o")).size, 1)
    assert.isUndefined(Spend.pricesOf("auto", "gpt-4o", undefined))
    assert.isUndefined(Spend.pricesOf("auto", "no-such-model", undefined))
    // Mistral-Large-2411: one input price on every plan, two output prices: no agreement
    assert.deepStrictEqual(new Set(selling("Mistral-Large-2411").map((p) => p.split("/")[0])).size, 1)
    assert.isUndefined(Spend.pricesOf("auto", "Mistral-Large-2411", undefined))
  })
})

describe("costOf", () => {
  it("input and output at their prices a million tokens; cached input at its own price, else the input price", () => {
    const prices = { input: 2, output: 10 }
    assert.closeTo(Spend.costOf(prices, { input: 1_000, output: 100 }), 0.003, 1e-15)
    assert.closeTo(Spend.costOf(prices, { input: 1_000, output: 100, cached: 400 }), 0.003, 1e-15)
    const cheaper = { ...prices, cachedInput: 0.5 }
    assert.closeTo(
      Spend.costOf(cheaper, { input: 1_000, output: 100, cached: 400 }),
      (600 * 2 + 400 * 0.5 + 1_000) / 1e6,
      1e-15
    )
    // more cached than input (a server's slip) counts no more than the input
    assert.closeTo(Spend.costOf(cheaper, { input: 100, output: 0, cached: 400 }), 100 * 0.5 / 1e6, 1e-15)
    assert.strictEqual(Spend.costOf(prices, { input: 0, output: 0 }), 0)
  })

  it("input written to the cache at its own price, else the input price; never more of it than the uncached input", () => {
    const prices = { input: 2, output: 10 }
    assert.closeTo(Spend.costOf(prices, { input: 1_000, output: 0, written: 300 }), 0.002, 1e-15)
    const priced = { ...prices, cachedInput: 0.5, cacheWrite: 2.5 }
    assert.closeTo(
      Spend.costOf(priced, { input: 1_000, output: 100, cached: 400, written: 300 }),
      (300 * 2 + 400 * 0.5 + 300 * 2.5 + 100 * 10) / 1e6,
      1e-15
    )
    // what the cache read leaves is all the writes can be
    assert.closeTo(
      Spend.costOf(priced, { input: 1_000, output: 0, cached: 800, written: 500 }),
      (800 * 0.5 + 200 * 2.5) / 1e6,
      1e-15
    )
  })
})

describe("tallies and months", () => {
  it("adds tallies field by field; the total of none is empty", () => {
    const a = { requests: 1, input: 10, output: 5, cached: 2, written: 3, cost: 0.5 }
    const b = { requests: 2, input: 1, output: 1, cached: 0, written: 1, cost: 0.25 }
    assert.deepStrictEqual(Spend.add(a, b), { requests: 3, input: 11, output: 6, cached: 2, written: 4, cost: 0.75 })
    assert.deepStrictEqual(Spend.total({ x: a, y: b }), Spend.add(a, b))
    assert.deepStrictEqual(Spend.total({}), Spend.empty)
  })

  it("the calendar month in UTC, as YYYY-MM", () => {
    assert.strictEqual(Spend.monthOf(0), "1970-01")
    assert.strictEqual(Spend.monthOf(Date.UTC(2026, 10, 30, 23, 59, 59, 999)), "2026-11")
    assert.strictEqual(Spend.monthOf(Date.UTC(2026, 11, 1)), "2026-12")
  })

  it("formats amounts: whole units from 100, cents from 0.01, two significant digits below", () => {
    assert.strictEqual(Spend.format(0), "0.00 EUR")
    assert.strictEqual(Spend.format(1234.56), "1235 EUR")
    assert.strictEqual(Spend.format(100), "100 EUR")
    assert.strictEqual(Spend.format(99.994), "99.99 EUR")
    assert.strictEqual(Spend.format(12.345), "12.35 EUR")
    assert.strictEqual(Spend.format(0.01), "0.01 EUR")
    assert.strictEqual(Spend.format(0.00021), "0.00021 EUR")
  })
})
