/**
 * What the spend meter reads from a store of one's own that knows fewer fields than this version (a tally without
 * `written`, the input written to the prompt cache, as stores kept it before it was counted): none of them, never NaN.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import { limiterOn, memoryStoreWith } from "../helpers/stores.js"

describe("a store's tallies without the newer fields", () => {
  it.effect("read as none: the month's figures and total are numbers", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 10, 29))
      const older = { requests: 2, input: 30, output: 4, cached: 10, cost: 0.5 }
      const store = memoryStoreWith(() => ({
        spendOf: () => Effect.succeed({ m: older } as never)
      }))
      const limiter = yield* RateLimiter.RateLimiter.pipe(Effect.provide(limiterOn(store, { budget: 10 })))
      const spending = yield* limiter.spending("key#1")
      assert.deepStrictEqual(spending.models, { m: { ...older, written: 0 } })
      assert.deepStrictEqual(spending.total, { ...older, written: 0 })
    }))
})
