import { assert, describe, it } from "@effect/vitest"
import * as Learning from "../../src/internal/learning.js"

const W = 60_000

/** Learning after a first refusal with `requests` and `tokens` held and a refused request of `size` tokens. */
const measuredAt = (requests: number, tokens: number, size = 100, from = Learning.initial(0)) =>
  Learning.refused(from, { requests, tokens }, size, from.generation, 1_000)

describe("learning a bucket's limits", () => {
  it("probes while nothing is known: 2 in flight, half a request more per answer, none once something is known", () => {
    let learning = Learning.initial(0)
    assert.strictEqual(learning.probe, 2)
    assert.isFalse(Learning.known(learning))
    learning = Learning.answered(Learning.answered(learning, 10, W), 20, W)
    assert.strictEqual(learning.probe, 3)
    const measured = measuredAt(10, 1_000)
    assert.isTrue(Learning.known(measured))
    assert.strictEqual(Learning.answered(measured, 30, W), measured)
  })

  it("the probe grows to 8 in flight within a window, and its ceiling doubles with each window without a 429", () => {
    let learning = Learning.initial(0)
    for (let i = 0; i < 40; i++) learning = Learning.answered(learning, i, W)
    assert.strictEqual(learning.probe, 8)
    learning = Learning.answered(learning, W - 1, W)
    assert.strictEqual(learning.probe, 8)
    learning = Learning.answered(learning, W, W)
    assert.strictEqual(learning.probe, 8.5)
    assert.strictEqual(learning.ceiling, 16)
    assert.strictEqual(learning.since, W)
    for (let i = 0; i < 40; i++) learning = Learning.answered(learning, W + i, W)
    assert.strictEqual(learning.probe, 16)
  })

  it("a first refusal sets both limits when both can explain it: what the window held, and the tokens one less", () => {
    const learning = measuredAt(45, 9_000, 200)
    assert.strictEqual(learning.requests.limit, 45)
    assert.strictEqual(learning.tokens.limit, 9_199)
    assert.strictEqual(Learning.confidence(learning.requests), "measured")
    assert.strictEqual(learning.generation, 1)
    assert.strictEqual(learning.since, 1_000)
  })

  it("a window that held more requests without a 429 rules the request limit out: only tokens are learnt", () => {
    const before = Learning.held(Learning.initial(0), { requests: 30, tokens: 3_000 }, 0)
    const learning = measuredAt(12, 4_000, 500, before)
    assert.isUndefined(learning.requests.limit)
    assert.strictEqual(learning.tokens.limit, 4_499)
    assert.deepStrictEqual(Learning.explains(before, { requests: 12, tokens: 4_000 }, 500), {
      requests: false,
      tokens: true
    })
  })

  it("...and a window that held more tokens rules the token limit out", () => {
    const before = Learning.held(Learning.initial(0), { requests: 5, tokens: 50_000 }, 0)
    const learning = measuredAt(20, 2_000, 100, before)
    assert.strictEqual(learning.requests.limit, 20)
    assert.isUndefined(learning.tokens.limit)
  })

  it("requests far smaller than any plan's tokens a request are refused by the request limit: tokens stay open", () => {
    // standard4000 gives 250 tokens a request (150,000 over 600); a quarter of it is the line
    assert.strictEqual(Learning.fewTokensPerRequest, 62.5)
    const small = measuredAt(20, 19 * 30, 30)
    assert.strictEqual(small.requests.limit, 20)
    assert.isUndefined(small.tokens.limit)
    // at the line (20 requests of 62.5 tokens) both can still explain it, as for any larger requests
    assert.deepStrictEqual(Learning.explains(Learning.initial(0), { requests: 19, tokens: 1_187 }, 63), {
      requests: true,
      tokens: true
    })
    assert.deepStrictEqual(Learning.explains(Learning.initial(0), { requests: 19, tokens: 1_187 }, 62), {
      requests: true,
      tokens: false
    })
    // a window that held more requests before rules the request limit out: then the small requests' tokens bind
    const held = Learning.held(Learning.initial(0), { requests: 30, tokens: 300 }, 0)
    assert.deepStrictEqual(Learning.explains(held, { requests: 20, tokens: 400 }, 10), {
      requests: false,
      tokens: true
    })
  })

  it("counts that contradict each other leave both limits open to the measurement", () => {
    const before = Learning.held(Learning.initial(0), { requests: 30, tokens: 50_000 }, 0)
    assert.deepStrictEqual(Learning.explains(before, { requests: 10, tokens: 1_000 }, 100), {
      requests: true,
      tokens: true
    })
  })

  it("a refusal while the window held nothing measures nothing (someone else spent the quota)", () => {
    const learning = Learning.initial(0)
    assert.strictEqual(Learning.refused(learning, { requests: 0, tokens: 0 }, 100, 0, 5), learning)
  })

  it("a refusal under the current estimate lowers it by at least the refused request, even when the count does not", () => {
    const learning = measuredAt(45, 9_000)
    const again = Learning.refused(learning, { requests: 45, tokens: 9_000 }, 100, learning.generation, 2_000)
    assert.strictEqual(again.requests.limit, 44)
    assert.strictEqual(again.tokens.limit, 9_099 - 100)
    assert.strictEqual(again.generation, learning.generation + 1)
  })

  it("a refusal of a request admitted before the estimate changed only measures: lower, never below what settled", () => {
    const learning = measuredAt(45, 9_000)
    const lower = Learning.refused(learning, { requests: 40, tokens: 8_000 }, 100, 0, 2_000)
    assert.strictEqual(lower.requests.limit, 40)
    assert.strictEqual(lower.generation, learning.generation)
    assert.strictEqual(lower.since, learning.since)
    const higher = Learning.refused(learning, { requests: 50, tokens: 9_500 }, 100, 0, 2_000)
    assert.strictEqual(higher.requests.limit, 45)
    // a request sent with the refused ones succeeded while the window held 44: a later refusal cannot go below
    const settled = Learning.held(lower, { requests: 44, tokens: 8_800 }, 0)
    assert.strictEqual(settled.requests.limit, 44)
    assert.strictEqual(Learning.refused(settled, { requests: 41, tokens: 8_000 }, 100, 0, 2_500).requests.limit, 44)
  })

  it("a success while the window held more than an estimate lifts it; one under it only raises the lower bound", () => {
    const learning = measuredAt(45, 9_000)
    const below = Learning.held(learning, { requests: 40, tokens: 12_000 }, learning.generation)
    assert.strictEqual(below.requests.limit, 45)
    assert.strictEqual(below.requests.atLeast, 40)
    assert.strictEqual(below.requests.settled, 0)
    assert.strictEqual(below.tokens.limit, 12_000)
    assert.strictEqual(Learning.held(below, { requests: 3, tokens: 100 }, below.generation), below)
  })

  it("a measurement that agrees with the estimate confirms it", () => {
    const learning = measuredAt(45, 9_000)
    const again = Learning.refused(learning, { requests: 45, tokens: 9_000 }, 100, 0, 2_000)
    assert.strictEqual(Learning.confidence(again.requests), "confirmed")
    assert.strictEqual(Learning.confidence(Learning.initial(0).requests), "probing")
  })

  it("raises after 3 calm windows, by a step that doubles while raises hold", () => {
    let learning = measuredAt(100, 1_000_000)
    assert.strictEqual(Learning.calm(learning, "requests", 1_000 + 3 * W - 1, W), learning)
    learning = Learning.calm(learning, "requests", 1_000 + 3 * W, W)
    assert.strictEqual(learning.requests.limit, 102)
    assert.strictEqual(learning.trying, "requests")
    // the next raise after one window at it, twice the step
    assert.strictEqual(Learning.calm(learning, "requests", 1_000 + 4 * W - 1, W), learning)
    learning = Learning.calm(learning, "requests", 1_000 + 4 * W, W)
    assert.strictEqual(learning.requests.limit, 106)
    learning = Learning.calm(learning, "requests", 1_000 + 5 * W, W)
    assert.strictEqual(learning.requests.limit, 114)
  })

  it("a raise that meets a 429 is measured back, and the next waits twice as long, up to 24 windows", () => {
    let learning = Learning.calm(measuredAt(100, 1_000_000), "requests", 1_000 + 3 * W, W)
    learning = Learning.refused(learning, { requests: 100, tokens: 1_000 }, 10, learning.generation, 200_000)
    assert.strictEqual(learning.requests.limit, 100)
    assert.strictEqual(learning.patience, 6)
    assert.isUndefined(learning.trying)
    for (let i = 0; i < 5; i++) {
      learning = Learning.calm(learning, "requests", learning.since + learning.patience * W, W)
      learning = Learning.refused(learning, { requests: 100, tokens: 1_000 }, 10, learning.generation, learning.since)
    }
    assert.strictEqual(learning.patience, Learning.maxPatience)
  })

  it("no raise of a limit not learnt", () => {
    const learning = measuredAt(100, 1_000_000)
    const onlyRequests = { ...learning, tokens: Learning.initial(0).tokens }
    assert.strictEqual(Learning.calm(onlyRequests, "tokens", 10 * W, W), onlyRequests)
  })

  it("starts from a floor: known at once, no probe, and a 429 measures from the start", () => {
    const learning = Learning.fromFloor(5, { requests: 300, tokens: 300_000 })
    assert.isTrue(Learning.known(learning))
    assert.strictEqual(learning.requests.limit, 300)
    assert.strictEqual(learning.tokens.limit, 300_000)
    assert.strictEqual(learning.requests.atLeast, 0)
    assert.strictEqual(learning.since, 5)
    assert.strictEqual(learning.unseenUntil, 0)
  })

  it("resumes from limits learnt before: known at once, no probe", () => {
    const learning = Learning.resumed(5, { requests: 45 }, W)
    assert.isTrue(Learning.known(learning))
    assert.strictEqual(learning.requests.limit, 45)
    assert.isUndefined(learning.tokens.limit)
    assert.strictEqual(learning.since, 5)
    // for a window, a 429 may be the usage of the process before
    assert.strictEqual(learning.unseenUntil, 5 + W)
    assert.strictEqual(Learning.initial(5).unseenUntil, 0)
  })
})
