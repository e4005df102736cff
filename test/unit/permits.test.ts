/**
 * The limiter's permits (`src/internal/limiter/permits.ts`) as a plain part on the memory store: a spent budget stops
 * its key and no other, a 429 while resuming closes the bucket for the server's time, a success ends a streak of
 * noise and an error answer does not, and which settlements the limiter paces. test/unit/permitSettlement.test.ts
 * shows every outcome through the whole limiter and the transport.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as Budgets from "../../src/internal/budgets.js"
import * as Learning from "../../src/internal/learning.js"
import * as Bucket from "../../src/internal/limiter/bucket.js"
import type * as Core from "../../src/internal/limiter/core.js"
import * as Permits from "../../src/internal/limiter/permits.js"
import type { Store } from "../../src/internal/limiter/store.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import { QuotaExceeded, RateLimited, ServerError } from "../../src/schemas/Errors.js"
import { amounts, coreOn, learningBucket, windowMs } from "../helpers/limiterParts.js"

const quotaExceeded = new QuotaExceeded({ message: "Your project reached its monthly budget limit", status: 429 })

/** A permit for one request of `cost` in `bucket`, counted in the store. */
const grant = (core: Core.Core, bucket: Bucket.Bucket, cost = amounts(1)) =>
  Effect.map(
    Effect.orDie(core.store.reserve(bucket.id, cost, unlimited)),
    (reservation) => Permits.make(core, bucket, reservation._tag === "Admitted" ? reservation.id : -1, cost)
  )

const unlimited = {
  requests: Budgets.unlimited,
  input: Budgets.unlimited,
  output: Budgets.unlimited,
  tokens: Budgets.unlimited,
  windowMs
}

const memoryCore = (store: Store = LimiterStore.makeMemory()) => coreOn(store)

describe("the limiter's permits", () => {
  it.effect("a spent budget stops every bucket of its key until the next month, and no other key", () =>
    Effect.gen(function*() {
      const core = yield* memoryCore()
      yield* TestClock.setTime(Date.UTC(2026, 10, 27, 12))
      const spent = learningBucket(Learning.initial(0), "spent-key", core)
      const other = learningBucket(Learning.initial(0), "spent-key", core, "another-model")
      const elsewhere = learningBucket(Learning.initial(0), "other-key", core)
      const permit = yield* grant(core, spent)
      assert.isFalse(yield* permit.settle("spent", quotaExceeded))
      assert.deepStrictEqual(core.spent.get("spent-key"), { error: quotaExceeded, until: Date.UTC(2026, 11, 1) })
      assert.isFalse(core.spent.has("other-key"))
      // the head of each line of the key looks again (and sees the key stopped); the other key's sleeps on
      assert.strictEqual(core.buckets.size, 3)
      assert.isAtLeast(spent.releases, 1)
      assert.isAtLeast(other.releases, 1)
      assert.strictEqual(elsewhere.releases, 0)
    }))

  it.effect("only a spent budget's own error stops the key", () =>
    Effect.gen(function*() {
      const core = yield* memoryCore()
      const bucket = learningBucket(Learning.initial(0), "key", core)
      yield* (yield* grant(core, bucket)).settle("spent")
      assert.isFalse(core.spent.has("key"))
      yield* (yield* grant(core, bucket)).settle("failed", quotaExceeded)
      assert.isFalse(core.spent.has("key"))
    }))

  it.effect("a 429 while resuming from limits learnt before closes the bucket for the server's time", () =>
    Effect.gen(function*() {
      const core = yield* memoryCore()
      const now = 10 * windowMs
      yield* TestClock.setTime(now)
      const bucket = learningBucket(Learning.resumed(now, { requests: 10 }, windowMs), "key", core)
      const permit = yield* grant(core, bucket)
      const retryAfter = Duration.millis(2 * windowMs)
      const paced = yield* permit.settle(
        "throttled",
        new RateLimited({ message: "slow down", status: 429, retryAfter })
      )
      assert.isFalse(paced)
      // later than the end of resuming (a window from its start)
      assert.strictEqual(bucket.blockedUntil, now + 2 * windowMs)
    }))

  it.effect("a success ends a streak of noise; an error answer does not, and teaches nothing", () =>
    Effect.gen(function*() {
      const core = yield* memoryCore()
      const bucket = learningBucket({
        ...Learning.initial(0),
        requests: { ...Learning.initial(0).requests, limit: 10 }
      })
      const streak: Learning.Noise = { streak: 2, since: 0 }
      bucket.noise = streak
      assert.isFalse(
        yield* (yield* grant(core, bucket)).settle("failed", new ServerError({ message: "no", status: 500 }))
      )
      assert.strictEqual(bucket.noise, streak)
      assert.strictEqual(bucket.learning!.requests.atLeast, 0)
      assert.isFalse(yield* (yield* grant(core, bucket)).settle("succeeded"))
      assert.deepStrictEqual(bucket.noise, Learning.quiet)
      // the window held both: the error answer's request stays counted
      assert.strictEqual(bucket.learning!.requests.atLeast, 2)
    }))

  it.effect("a success on a store that answers only as an effect is settled unpaced, as on the memory store", () =>
    Effect.gen(function*() {
      const inner = LimiterStore.makeMemory()
      const restamps: Array<number> = []
      const store: Store = {
        ...inner,
        restamp: (bucket, id, window) => Effect.suspend(() => (restamps.push(id), inner.restamp(bucket, id, window)))
      }
      const core = yield* memoryCore(store)
      const fixed = Bucket.make("key", "fixed", Budgets.noLimits, false, 200)
      const permit = yield* grant(core, fixed)
      assert.isFalse(yield* permit.settle("succeeded"))
      assert.strictEqual(restamps.length, 1)
      // settled once
      assert.isFalse(yield* permit.settle("succeeded"))
      assert.strictEqual(restamps.length, 1)
    }))
})
