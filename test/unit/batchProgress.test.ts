/**
 * The batch's progress as it is: the ETA from the quota while the limiter waits (never from the recent rate alone),
 * the limiter's wait said, the rates per minute since the start, and the limiter's busiest bucket.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Progress from "../../src/cli/progress.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"

const progress = (done: number, total: number, fields: Partial<Progress.Progress> = {}): Progress.Progress => ({
  total,
  done,
  failed: 0,
  tokens: done * 1000,
  requestMs: done * 500,
  started: 0,
  concurrency: 8,
  ...fields
})

const quota = (fields: Partial<Progress.QuotaState> = {}): Progress.QuotaState => ({
  limitRequests: 20,
  usedRequests: 20,
  limitTokens: 1_000_000,
  usedTokens: 20_000,
  windowMs: 60_000,
  waiting: 0,
  waitMs: 0,
  limit: "limit 20 requests (learnt, measured)",
  ...fields
})

describe("batch progress", () => {
  it("while the limiter waits, the ETA is the quota's: what the window admits, at a window's worth per window", () => {
    // 10 left, none free in a full window of 20 a minute: half a window, but the line waits 45 s first
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), quota({ waiting: 8, waitMs: 45_000 })), 45)
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), quota()), 30)
    // 50 left, 5 free: 45 beyond them, 2.25 windows
    assert.strictEqual(Progress.etaSeconds(progress(20, 70), quota({ usedRequests: 15 })), 135)
    // tokens bind: 10 left of 1000 tokens each, 5000 a window, all used
    assert.strictEqual(
      Progress.etaSeconds(progress(20, 30), quota({ limitRequests: 1000, limitTokens: 5000, usedTokens: 5000 })),
      120
    )
  })

  it("without the quota binding, the ETA is the requests' own time, so many at once; nothing known before one ends", () => {
    // 10 left, 500 ms each, 8 at once
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), undefined), 0.625)
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), quota({ limitRequests: 1000, usedRequests: 0 })), 0.625)
    assert.strictEqual(Progress.etaSeconds(progress(0, 30), quota()), Infinity)
    assert.strictEqual(Progress.etaSeconds(progress(30, 30), quota()), 0)
    assert.isNaN(Progress.etaSeconds(progress(0, 0), undefined))
  })

  it("the line says the rates per minute since the start, the retries, and the wait for the quota window", () => {
    const line = Progress.render(
      progress(20, 30, { failed: 2 }),
      120_000,
      false,
      3,
      quota({ waiting: 8, waitMs: 44_100 })
    )
    assert.strictEqual(
      line,
      "aifs batch: 22/30 (2 failed) 11 req/min 10000 tokens/min, 3 retries, 8 waiting for the quota window (45s), " +
        "limit 20 requests (learnt, measured), ETA 0:45\n"
    )
    assert.strictEqual(
      Progress.render(progress(20, 30), 60_000, true, 0, undefined),
      "\r[################........] 20/30 (0 failed) 20 req/min 20000 tokens/min, 0 retries, ETA 0:01\u001b[K"
    )
    assert.strictEqual(Progress.formatDuration(3599.6), "60:00")
    assert.strictEqual(Progress.formatDuration(65), "1:05")
  })

  it.effect("the quota state: the busiest bucket's window and the callers waiting over all; none when disabled", () =>
    Effect.gen(function*() {
      const disabled = yield* RateLimiter.RateLimiter.pipe(Effect.provide(RateLimiter.layerDisabled))
      const bucket = (model: string, fields: Partial<RateLimiter.BucketState>): RateLimiter.BucketState => ({
        key: "k",
        model,
        limitRequests: 20,
        limitTokens: 10_000,
        fromHeaders: false,
        requests: { value: 20, source: "preset" },
        tokens: { value: 10_000, source: "preset" },
        binding: undefined,
        probe: undefined,
        usedRequests: 0,
        usedTokens: 0,
        nextResetMs: 30_000,
        waiting: 0,
        blockedMs: 0,
        marginMs: 1000,
        ...fields
      })
      const limiter = (buckets: ReadonlyArray<RateLimiter.BucketState>) =>
        Layer.succeed(RateLimiter.RateLimiter, { ...disabled, enabled: true, snapshot: Effect.succeed(buckets) })
      const state = yield* Progress.quotaState(60_000).pipe(Effect.provide(limiter([
        bucket("a", { usedRequests: 5, waiting: 2 }),
        bucket("b", { usedTokens: 9_000, waiting: 3, nextResetMs: 12_000 }),
        bucket("c", { usedRequests: 1, blockedMs: 50_000 })
      ])))
      assert.deepStrictEqual(state, {
        limitRequests: 20,
        usedRequests: 0,
        limitTokens: 10_000,
        usedTokens: 9_000,
        windowMs: 60_000,
        waiting: 5,
        waitMs: 12_000,
        limit: "limit 20 requests (preset)"
      })
      // a bucket closed after a 429 waits its block, even with no caller in line
      const blocked = yield* Progress.quotaState(60_000).pipe(
        Effect.provide(limiter([bucket("c", { usedRequests: 20, blockedMs: 50_000 })]))
      )
      assert.strictEqual(blocked?.waitMs, 50_000)
      assert.isUndefined(yield* Progress.quotaState(60_000).pipe(Effect.provide(limiter([]))))
      assert.isUndefined(yield* Progress.quotaState(60_000).pipe(Effect.provide(RateLimiter.layerDisabled)))
      assert.isUndefined(yield* Progress.quotaState(60_000))
    }))

  it("a bucket's limits in words: the binding one first, where each comes from, how sure a learnt one is", () => {
    const limits = (fields: Partial<RateLimiter.BucketState>) =>
      Progress.describeLimits({
        requests: { value: 45, source: "learnt", confidence: "confirmed" },
        tokens: { value: undefined, source: "unknown", confidence: "probing" },
        binding: undefined,
        probe: undefined,
        ...fields
      } as RateLimiter.BucketState)
    assert.strictEqual(limits({}), "limits 45 requests (learnt, confirmed), tokens unknown")
    assert.strictEqual(limits({ binding: "tokens" }), "limits tokens unknown, 45 requests (learnt, confirmed)")
    assert.strictEqual(
      Progress.describeLimits(
        {
          requests: { value: 600, source: "header" },
          tokens: { value: 9, source: "configured" },
          binding: "requests"
        } as RateLimiter.BucketState,
        "binding"
      ),
      "limit 600 requests (header)"
    )
    assert.strictEqual(limits({ probe: 3 }), "limits probing (3 in flight)")
  })
})
