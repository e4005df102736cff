/**
 * The learner (`src/internal/limiter/learner.ts`), the Effect shell around `learning.ts`, as a plain part on the
 * memory store: what it publishes to observers and when it stays quiet, what it keeps in the store (the limits newly
 * confirmed, once), what a 429 is weighed as, what the window is taken to have held, and when calm windows raise a
 * limit. test/unit/limiterLearning.test.ts shows the same through the whole limiter.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as Budgets from "../../src/internal/budgets.js"
import * as Learning from "../../src/internal/learning.js"
import * as Bucket from "../../src/internal/limiter/bucket.js"
import * as Learner from "../../src/internal/limiter/learner.js"
import type { LearntLimits } from "../../src/internal/limiter/store.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import { amounts, coreOn, learningBucket, published, windowMs } from "../helpers/limiterParts.js"

/** A core on the memory store, its `keepLearnt` calls recorded. */
const coreWith = (kept: Array<LearntLimits>) => {
  const inner = LimiterStore.makeMemory()
  return coreOn({
    ...inner,
    keepLearnt: (bucket, limits) => Effect.suspend(() => (kept.push(limits), inner.keepLearnt(bucket, limits)))
  })
}

const bucketAt = (learning: Learning.Learning) => learningBucket(learning)

/** An estimate at `limit`, measured there `confirmations` times. */
const at = (limit: number, confirmations: number): Learning.Estimate => ({
  limit,
  atLeast: 0,
  measured: limit,
  confirmations,
  settled: 0
})

describe("the learner", () => {
  it.effect("publishes nothing and wakes nobody when observers would see the same (the probe within one request)", () =>
    Effect.gen(function*() {
      const core = yield* coreWith([])
      const before = Learning.initial(0)
      const bucket = bucketAt(before)
      yield* Learner.relearn(core, bucket, before)
      yield* Learner.relearn(core, bucket, { ...before, probe: before.probe + 0.5 })
      assert.strictEqual(yield* published(core), 0)
      assert.strictEqual(bucket.releases, 0)
      yield* Learner.relearn(core, bucket, { ...before, probe: before.probe + 1 })
      assert.strictEqual(yield* published(core), 1)
      assert.strictEqual(bucket.releases, 0)
    }))

  it.effect("publishes when one budget's confidence changes though its limit does not, and keeps nothing yet", () =>
    Effect.gen(function*() {
      const kept: Array<LearntLimits> = []
      const core = yield* coreWith(kept)
      const before = { ...Learning.initial(0), requests: at(10, 1), input: at(5_000, 1) }
      const bucket = bucketAt(before)
      yield* Learner.relearn(core, bucket, { ...before, requests: at(10, 2) })
      assert.strictEqual(yield* published(core), 1)
      assert.strictEqual(bucket.releases, 0)
      // a confirmation that does not move the limit is kept with the next change of a limit, not now (keeping it at
      // once made a first CLI run learn faster and meet more 429s: test/cli/learntLimits.test.ts, to be understood)
      assert.deepStrictEqual(kept, [])
    }))

  it.effect("new limits wake the head of the line, and the limits confirmed are kept once", () =>
    Effect.gen(function*() {
      const kept: Array<LearntLimits> = []
      const core = yield* coreWith(kept)
      const before = { ...Learning.initial(0), requests: at(10, 1) }
      const bucket = bucketAt(before)
      // measured lower, not confirmed: nothing to keep
      const lower = { ...before, requests: at(9, 1) }
      yield* Learner.relearn(core, bucket, lower)
      assert.strictEqual(bucket.releases, 1)
      assert.strictEqual(bucket.limits.requests.value, 9)
      assert.deepStrictEqual(kept, [])
      const confirmed = { ...lower, requests: at(9, 2) }
      yield* Learner.relearn(core, bucket, confirmed)
      // a raise that held moves the limit, not what is confirmed: nothing more to keep
      yield* Learner.relearn(core, bucket, { ...confirmed, requests: { ...at(9, 2), limit: 10 } })
      assert.strictEqual(bucket.limits.requests.value, 10)
      assert.strictEqual(bucket.releases, 2)
      assert.deepStrictEqual(kept, [{ requests: 9 }])
      // another budget confirmed: both kept
      yield* Learner.relearn(core, bucket, { ...confirmed, output: at(400, 2) })
      assert.deepStrictEqual(kept, [{ requests: 9 }, { requests: 9, output: 400 }])
    }))

  it.effect("a success tells the learning the window held all the bucket counted, none of it in flight", () =>
    Effect.gen(function*() {
      const core = yield* coreWith([])
      const bucket = bucketAt({ ...Learning.initial(0), requests: { ...at(4, 1), atLeast: 0 } })
      // the first admission (0) is still in flight: it counts as in flight whatever its number
      bucket.inFlight.set(0, amounts(1))
      bucket.inFlight.set(1, amounts(1))
      yield* Learner.observe(core, bucket, 0, true)({ ...amounts(4), nextExpiryMs: 0 })
      assert.strictEqual(bucket.learning!.requests.atLeast, 2)
    }))

  it.effect("weighs a 429 at a limit as a limit, one no budget explains as noise, one while resuming as elsewhere", () =>
    Effect.gen(function*() {
      const core = yield* coreWith([])
      yield* TestClock.setTime(10 * windowMs)
      const now = 10 * windowMs
      // the window held 3 requests (the refused one and one sent after it are in flight): more than ever passed
      const limited = bucketAt({ ...Learning.initial(0), requests: { ...at(10, 0), atLeast: 2 } })
      limited.inFlight.set(7, amounts(1))
      limited.inFlight.set(8, amounts(1))
      assert.strictEqual(yield* Learner.weigh(core, limited, 7, amounts(1), 0, amounts(4)), "limit")
      // measured at what the window held without the one sent after it: 3
      assert.strictEqual(limited.learning!.requests.measured, 3)
      // under what windows held before: noise
      const noisy = bucketAt({ ...Learning.initial(0), requests: { ...at(10, 0), atLeast: 8 } })
      assert.strictEqual(yield* Learner.weigh(core, noisy, 1, amounts(1), 0, amounts(3)), "noise")
      assert.strictEqual(noisy.learning!.requests.measured, 10)
      const resumed = bucketAt(Learning.resumed(now, { requests: 10 }, windowMs))
      assert.strictEqual(yield* Learner.weigh(core, resumed, 1, amounts(1), 0, amounts(3)), "elsewhere")
      assert.strictEqual(resumed.blockedUntil, now + windowMs)
    }))

  it.effect("calm windows raise a learnt request or input limit, never the combined budget or a firm one", () =>
    Effect.gen(function*() {
      const core = yield* coreWith([])
      const now = 100 * windowMs
      const learning = { ...Learning.initial(0), requests: at(10, 2), input: at(5_000, 2) }
      const raises = (bucket: Bucket.Bucket, binding: Budgets.Dimension) => Learner.calm(core, bucket, binding, now)
      assert.isFalse(yield* raises(bucketAt(learning), "tokens"))
      const firm = bucketAt(learning)
      firm.limits = { ...firm.limits, requests: { value: 10, source: "configured" } }
      assert.isFalse(yield* raises(firm, "requests"))
      const fixed = Bucket.make("key", "model", Budgets.noLimits, false, 200)
      assert.isFalse(yield* Learner.calm(core, fixed, "requests", now))
      const input = bucketAt(learning)
      assert.isTrue(yield* raises(input, "input"))
      assert.strictEqual(input.limits.input.value, 5_100)
      const requests = bucketAt(learning)
      assert.isTrue(yield* raises(requests, "requests"))
      assert.strictEqual(requests.limits.requests.value, 11)
      // too soon after the raise: nothing
      assert.isFalse(yield* raises(requests, "requests"))
    }))
})
