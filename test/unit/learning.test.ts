import { assert, describe, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import * as Budgets from "../../src/internal/budgets.js"
import * as Learning from "../../src/internal/learning.js"
import { fewTokensPerRequest } from "../../src/internal/plans.js"

const W = 60_000

/** What a window held: `requests` requests, `input` and `output` tokens. */
const held = (requests: number, input: number, output = 0): Budgets.Amounts => ({
  requests,
  input,
  output,
  tokens: input + output
})

/** A request of `input` tokens in and `output` out. */
const request = (input = 100, output = 0) => Budgets.cost(input, output)

/** Learning after a refusal while the window held `count` of a request of `size`. */
const refusedAt = (count: Budgets.Amounts, size = request(), from = Learning.initial(0), now = 1_000) =>
  Learning.refused(from, count, size, from.generation, now, W)

describe("learning a bucket's limits", () => {
  it("probes while nothing is known: 2 in flight, half a request more per answer, none once something is known", () => {
    let learning = Learning.initial(0)
    assert.strictEqual(learning.probe, 2)
    assert.isFalse(Learning.known(learning))
    learning = Learning.answered(Learning.answered(learning, 10, W), 20, W)
    assert.strictEqual(learning.probe, 3)
    const [measured] = refusedAt(held(10, 1_000))
    assert.isTrue(Learning.known(measured))
    assert.strictEqual(Learning.answered(measured, 30, W), measured)
  })

  it("the probe grows to 8 in flight within a window, and its ceiling doubles with each window without a 429", () => {
    let learning = Learning.initial(0)
    for (let i = 0; i < 40; i++) learning = Learning.answered(learning, i, W)
    assert.strictEqual(learning.probe, 8)
    learning = Learning.answered(learning, W, W)
    assert.strictEqual(learning.probe, 8.5)
    assert.strictEqual(learning.ceiling, 16)
  })

  it("a first refusal is the request limit's: what the window held; the token budgets stay open", () => {
    const [learning, verdict] = refusedAt(held(45, 9_000, 4_000), request(200, 100))
    assert.deepStrictEqual(verdict, { _tag: "Measured", blamed: ["requests"] })
    assert.strictEqual(learning.requests.limit, 45)
    assert.isUndefined(learning.input.limit)
    assert.isUndefined(learning.output.limit)
    assert.strictEqual(Learning.confidence(learning.requests), "measured")
    assert.strictEqual(learning.generation, 1)
  })

  it("a window that held more requests without a 429 rules the request limit out: the token budget that can is learnt", () => {
    // 30 requests passed before; now 12 large ones were refused: their input is the limit, not the count
    const before = Learning.held(Learning.initial(0), held(30, 3_000, 300), 0)
    const [learning, verdict] = refusedAt(held(12, 6_000, 120), request(500, 10), before)
    assert.deepStrictEqual(verdict, { _tag: "Measured", blamed: ["input"] })
    assert.isUndefined(learning.requests.limit)
    assert.strictEqual(learning.input.limit, 6_499)
    assert.isUndefined(learning.output.limit, "the output held 130 of 300 that passed: it cannot explain it")
  })

  it("the output budget is learnt when it alone can explain the refusal", () => {
    const before = Learning.held(Learning.initial(0), held(30, 30_000, 3_000), 0)
    const [learning] = refusedAt(held(10, 10_000, 4_800), request(1_000, 400), before)
    assert.strictEqual(learning.output.limit, 5_199)
    assert.isUndefined(learning.input.limit)
  })

  it("requests too small to tell a token budget from the request limit never teach a token limit", () => {
    // the window held fewer requests than passed before (no request limit), with tokens a request under the line
    const line = fewTokensPerRequest("input")
    assert.isAbove(line, 10)
    const before = Learning.held(Learning.initial(0), held(100, 100, 0), 0)
    const few = Math.floor(line) - 1
    const [learning, verdict] = refusedAt(held(28, 28 * few, 0), request(few), before)
    assert.deepStrictEqual(verdict, { _tag: "Noise" })
    assert.isUndefined(learning.input.limit)
    // requests of more tokens than the line can be refused by a token budget
    const many = Math.ceil(line) + 100
    const [larger] = refusedAt(
      held(28, 28 * many),
      request(many),
      Learning.held(Learning.initial(0), held(100, 2_800), 0)
    )
    assert.strictEqual(larger.input.limit, 29 * many - 1)
  })

  it("a 429 well under what is known to pass is noise: counted, never a measurement", () => {
    const [known] = refusedAt(held(100, 1_000))
    const passed = Learning.held(known, held(100, 1_000), known.generation)
    // the chaos trial: a refusal at 28 of a 100-a-window key
    const [after, verdict] = refusedAt(held(28, 280), request(10), passed, 5_000)
    assert.deepStrictEqual(verdict, { _tag: "Noise" })
    assert.strictEqual(after.requests.limit, 100)
    assert.strictEqual(after.noise.streak, 1)
  })

  it("three 429s in a row within a window, no success between, are no noise: what passed is forgotten, the next measures", () => {
    const [known] = refusedAt(held(100, 1_000))
    let learning = Learning.held(known, held(100, 1_000), known.generation)
    // the key's limit fell to 40: every request over it is refused, at 40 in the window, none passes
    for (let i = 0; i < 2; i++) {
      const [next, verdict] = Learning.refused(learning, held(40, 400), request(10), 0, 10_000 + i, W)
      assert.deepStrictEqual(verdict, { _tag: "Noise" }, `refusal ${i}`)
      assert.strictEqual(next.requests.atLeast, 100)
      learning = next
    }
    const [next, verdict] = Learning.refused(learning, held(40, 400), request(10), 0, 10_002, W)
    assert.deepStrictEqual(verdict, { _tag: "Noise" })
    assert.strictEqual(next.requests.atLeast, 0, "the third in a row: the figures that passed are forgotten")
    const [measured] = Learning.refused(next, held(40, 400), request(10), next.generation, 10_003, W)
    assert.strictEqual(measured.requests.limit, 40)
  })

  it("429s between successes, or a streak spread over more than a window, never forget what passed", () => {
    const [known] = refusedAt(held(100, 1_000))
    let learning = Learning.held(known, held(100, 1_000), known.generation)
    for (let i = 0; i < 30; i++) {
      learning = Learning.refused(learning, held(30 + i, 300), request(10), 0, 5_000 + i * 1_000, W)[0]
      learning = Learning.refused(learning, held(31 + i, 310), request(10), 0, 5_500 + i * 1_000, W)[0]
      learning = Learning.held(learning, held(32 + i, 320), learning.generation)
    }
    assert.strictEqual(learning.requests.atLeast, 100)
    // two, then a third more than a window after the first: a new streak
    learning = Learning.refused(learning, held(40, 400), request(10), 0, 100_000, W)[0]
    learning = Learning.refused(learning, held(40, 400), request(10), 0, 100_001, W)[0]
    learning = Learning.refused(learning, held(40, 400), request(10), 0, 100_000 + W, W)[0]
    assert.strictEqual(learning.requests.atLeast, 100)
    assert.strictEqual(learning.requests.limit, 100)
  })

  it("a raise past the real request limit is measured back as the request limit, never read as a token limit", () => {
    // the chaos trial's second case: 100 known, raised to 102, refused at 100 in flight order (99 counted)
    const [first] = refusedAt(held(100, 3_000), request(30))
    let learning = Learning.held(first, held(100, 3_000), first.generation)
    learning = Learning.calm(learning, "requests", 1_000 + 3 * W, W)
    assert.strictEqual(learning.requests.limit, 102)
    const [back, verdict] = Learning.refused(learning, held(99, 3_000), request(30), learning.generation, 200_000, W)
    assert.deepStrictEqual(verdict, { _tag: "Measured", blamed: ["requests"] })
    assert.strictEqual(back.requests.limit, 100, "never below what a window held")
    assert.isUndefined(back.input.limit)
    assert.isUndefined(back.output.limit)
  })

  it("a refusal while the window held nothing measures nothing (someone else spent the quota)", () => {
    const learning = Learning.initial(0)
    const [after, verdict] = Learning.refused(learning, Budgets.none, request(), 0, 5, W)
    assert.strictEqual(after, learning)
    assert.deepStrictEqual(verdict, { _tag: "Ignored" })
  })

  it("a refusal under the current estimate lowers it by at least the refused request, never below what passed", () => {
    const [learning] = refusedAt(held(45, 9_000))
    const [again] = Learning.refused(learning, held(45, 9_000), request(), learning.generation, 2_000, W)
    // refused at its own estimate: the counts are the client's estimates of the server's, so it comes down by one
    assert.strictEqual(again.requests.limit, 44)
    // a window of 44 passed since: a refusal at 44 now finds the limit at what passed, not under it
    const passed = Learning.held(again, held(44, 8_800), again.generation)
    const [floor] = Learning.refused(passed, held(44, 8_800), request(), passed.generation, 3_000, W)
    assert.strictEqual(floor.requests.limit, 44)
  })

  it("a success while the window held more than an estimate lifts it; one under it only raises the lower bound", () => {
    const [learning] = refusedAt(held(45, 9_000))
    const below = Learning.held(learning, held(40, 12_000), learning.generation)
    assert.strictEqual(below.requests.limit, 45)
    assert.strictEqual(below.requests.atLeast, 40)
    const above = Learning.held(below, held(50, 100), below.generation)
    assert.strictEqual(above.requests.limit, 50)
    assert.strictEqual(Learning.held(above, held(3, 100), above.generation), above)
  })

  it("a measurement that agrees with the estimate confirms it, and only confirmed limits are worth keeping", () => {
    const [learning] = refusedAt(held(45, 9_000))
    assert.isUndefined(Learning.confirmed(learning))
    const [again] = Learning.refused(learning, held(45, 9_000), request(), 0, 2_000, W)
    assert.strictEqual(Learning.confidence(again.requests), "confirmed")
    assert.deepStrictEqual(Learning.confirmed(again), { requests: 45 })
    assert.strictEqual(Learning.confidence(Learning.initial(0).requests), "probing")
  })

  it("a measurement confirms the last one within a fiftieth of it (one at least), not further", () => {
    const [first] = refusedAt(held(100, 10_000))
    const next = (requests: number) =>
      Learning.refused(first, held(requests, 10_000), request(), first.generation, 2_000, W)[0].requests
    assert.deepInclude(next(98), { measured: 98, confirmations: 2 })
    assert.deepInclude(next(97), { measured: 97, confirmations: 1 })
    assert.deepInclude(next(60), { measured: 60, confirmations: 1 })
    const [few] = refusedAt(held(10, 1_000))
    const after = Learning.refused(few, held(9, 1_000), request(), few.generation, 2_000, W)[0].requests
    assert.deepInclude(after, { measured: 9, confirmations: 2 }, "one request apart: the same limit")
  })

  it("raises after 3 calm windows, by a step that doubles while raises hold", () => {
    let [learning] = refusedAt(held(100, 1_000_000))
    assert.strictEqual(Learning.calm(learning, "requests", 1_000 + 3 * W - 1, W), learning)
    learning = Learning.calm(learning, "requests", 1_000 + 3 * W, W)
    assert.strictEqual(learning.requests.limit, 102)
    assert.strictEqual(learning.trying, "requests")
    learning = Learning.calm(learning, "requests", 1_000 + 4 * W, W)
    assert.strictEqual(learning.requests.limit, 106)
    learning = Learning.calm(learning, "requests", 1_000 + 5 * W, W)
    assert.strictEqual(learning.requests.limit, 114)
  })

  it("a raise that meets a 429 is measured back, and the next waits twice as long, up to 24 windows", () => {
    let [learning] = refusedAt(held(100, 1_000))
    learning = Learning.calm(learning, "requests", 1_000 + 3 * W, W)
    learning = Learning.refused(learning, held(100, 1_000), request(10), learning.generation, 200_000, W)[0]
    assert.strictEqual(learning.requests.limit, 100)
    assert.strictEqual(learning.patience, 6)
    assert.isUndefined(learning.trying)
    for (let i = 0; i < 5; i++) {
      learning = Learning.calm(learning, "requests", learning.since + learning.patience * W, W)
      learning = Learning.refused(learning, held(100, 1_000), request(10), learning.generation, learning.since, W)[0]
    }
    assert.strictEqual(learning.patience, Learning.maxPatience)
  })

  it("no raise of a limit not learnt", () => {
    const [learning] = refusedAt(held(100, 1_000))
    assert.strictEqual(Learning.calm(learning, "input", 10 * W, W), learning)
  })

  it("resumes from limits confirmed before: known at once, no probe, and a 429 in the first window measures nothing", () => {
    const learning = Learning.resumed(5, { requests: 45, output: 5_000 }, W)
    assert.isTrue(Learning.known(learning))
    assert.deepStrictEqual(Learning.limitsOf(learning), { requests: 45, input: undefined, output: 5_000 })
    assert.deepStrictEqual(Learning.confirmed(learning), { requests: 45, output: 5_000 })
    assert.strictEqual(learning.unseenUntil, 5 + W)
    assert.strictEqual(Learning.initial(5).unseenUntil, 0)
  })

  it("property: random 429s under what a window held, no more than two a window, never lower the limit", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.integer({ min: 10, max: 500 }),
        FastCheck.array(FastCheck.tuple(FastCheck.double({ min: 0, max: 0.98, noNaN: true }), FastCheck.boolean()), {
          maxLength: 60
        }),
        (limit, events) => {
          let [learning] = refusedAt(held(limit, limit * 10))
          learning = Learning.held(learning, held(limit, limit * 10), learning.generation)
          let now = 2_000
          for (const [share, success] of events) {
            now += W / 2
            const count = held(Math.floor(share * limit), Math.floor(share * limit) * 10)
            learning = success
              ? Learning.held(learning, count, learning.generation)
              : Learning.refused(learning, count, request(10), learning.generation, now, W)[0]
          }
          return learning.requests.limit === limit && learning.input.limit === undefined
        }
      )
    )
  })
})
