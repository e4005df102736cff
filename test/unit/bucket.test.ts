/**
 * One bucket as a value (internal/limiter/bucket.ts): a new bucket's state, what its unsettled permits reserve, and the
 * numbers a store checks a request against, kept while the limits and margin stay and only while none is learnt.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Budgets from "../../src/internal/budgets.js"
import * as Bucket from "../../src/internal/limiter/bucket.js"

const W = 60_000

const plan = (requests: number, input: number, output: number): Budgets.Limits => ({
  ...Budgets.noLimits,
  requests: { value: requests, source: "plan" },
  input: { value: input, source: "plan" },
  output: { value: output, source: "plan" }
})

describe("a bucket", () => {
  it("starts with no usage, no place kept in the store's line and nothing reserved", () => {
    const bucket = Bucket.make("k", "m", plan(10, 1_000, 500), false, 200)
    assert.deepInclude(bucket, { id: "k\u0000m", placeInStore: false, queuedUntil: 0, blockedUntil: 0, recalled: true })
    assert.deepStrictEqual(bucket.usage, { ...Budgets.none, nextExpiryMs: 0 })
    assert.deepStrictEqual(bucket.pending, Budgets.none)
    assert.isFalse(Bucket.make("k", "m", Budgets.noLimits, true, 200).recalled, "a learning bucket recalls once")
  })

  it("counts each unsettled permit's cost in every budget, and out again", () => {
    const bucket = Bucket.make("k", "m", plan(10, 1_000, 500), false, 200)
    Bucket.addPending(bucket, Budgets.cost(100, 20), 1)
    Bucket.addPending(bucket, Budgets.cost(300, 40), 1)
    assert.deepStrictEqual(bucket.pending, { requests: 2, input: 400, output: 60, tokens: 460 })
    Bucket.addPending(bucket, Budgets.cost(100, 20), -1)
    assert.deepStrictEqual(bucket.pending, { requests: 1, input: 300, output: 40, tokens: 340 })
  })

  it("gives a store its limits over the window and margin, the same numbers while limits and margin stay", () => {
    const bucket = Bucket.make("k", "m", plan(10, 1_000, 500), false, 200)
    const first = Bucket.storeLimits(bucket, Budgets.cost(100, 20), W)
    assert.deepStrictEqual(first, {
      requests: 10,
      input: 1_000,
      output: 500,
      tokens: Budgets.unlimited,
      windowMs: W + 200
    })
    assert.strictEqual(Bucket.storeLimits(bucket, Budgets.cost(5, 5), W), first, "kept, not made again")
    bucket.marginMs = 700
    assert.strictEqual(Bucket.storeLimits(bucket, Budgets.cost(100, 20), W).windowMs, W + 700, "a new margin")
    bucket.limits = plan(20, 1_000, 500)
    assert.strictEqual(Bucket.storeLimits(bucket, Budgets.cost(100, 20), W).requests, 20, "new limits")
  })

  it("with a learnt limit, checks each request against it or against the request itself, whichever is larger", () => {
    const limits = { ...plan(10, 1_000, 500), input: { value: 1_000, source: "learnt" as const } }
    const bucket = Bucket.make("k", "m", limits, true, 200)
    assert.strictEqual(Bucket.storeLimits(bucket, Budgets.cost(100, 20), W).input, 1_000)
    assert.strictEqual(Bucket.storeLimits(bucket, Budgets.cost(3_000, 20), W).input, 3_000)
    assert.strictEqual(Bucket.storeLimits(bucket, Budgets.cost(100, 20), W).input, 1_000)
  })
})

describe("a count", () => {
  it("is a finite number not below zero, and nothing else", () => {
    for (const value of [0, 1, 0.5, 1e9]) assert.isTrue(Budgets.isCount(value), String(value))
    for (const value of [-1, -0.5, Number.NaN, Infinity, -Infinity, "3", null, undefined, {}]) {
      assert.isFalse(Budgets.isCount(value), String(value))
    }
  })
})
