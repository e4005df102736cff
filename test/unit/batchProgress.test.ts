/**
 * The batch's progress as it is: the ETA from the quota while the limiter waits (never from the recent rate alone),
 * over every budget the busiest bucket has a limit for, the limiter's wait said, the rates per minute since the
 * start, and the limiter's busiest bucket with its binding budget named.
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

type QuotaBudgets = Progress.QuotaState["budgets"]

/** The quota state: 20 requests a window, all used; a combined budget of 1,000,000 tokens, 20,000 used. */
const quota = (
  fields: Partial<Omit<Progress.QuotaState, "budgets">> & { readonly budgets?: Partial<QuotaBudgets> } = {}
): Progress.QuotaState => ({
  windowMs: 60_000,
  waiting: 0,
  waitMs: 0,
  limit: "limit 20 requests (learnt, measured)",
  ...fields,
  budgets: {
    requests: { limit: 20, used: 20 },
    input: { limit: undefined, used: 0 },
    output: { limit: undefined, used: 0 },
    tokens: { limit: 1_000_000, used: 20_000 },
    ...fields.budgets
  }
})

type Budget = RateLimiter.BudgetState

/** A bucket of key `k`: 20 requests and 10,000 combined tokens a window from the plan, nothing used. */
const bucket = (
  model: string,
  fields: Partial<Omit<RateLimiter.BucketState, "budgets">> & {
    readonly budgets?: Partial<Record<RateLimiter.Budget, Partial<Budget>>>
  } = {}
): RateLimiter.BucketState => {
  const budget = (base: Budget, own: Partial<Budget> | undefined): Budget => ({ ...base, ...own })
  const unknown: Budget = { limit: undefined, source: "unknown", used: 0 }
  return {
    key: "k",
    model,
    binding: undefined,
    probe: undefined,
    nextResetMs: 30_000,
    waiting: 0,
    blockedMs: 0,
    marginMs: 1000,
    spent: undefined,
    ...fields,
    budgets: {
      requests: budget({ limit: 20, source: "plan", used: 0 }, fields.budgets?.requests),
      input: budget(unknown, fields.budgets?.input),
      output: budget(unknown, fields.budgets?.output),
      tokens: budget({ limit: 10_000, source: "plan", used: 0 }, fields.budgets?.tokens)
    }
  }
}

describe("batch progress", () => {
  it("while the limiter waits, the ETA is the quota's: what the window admits, at a window's worth per window", () => {
    // 10 left, none free in a full window of 20 a minute: half a window, but the line waits 45 s first
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), quota({ waiting: 8, waitMs: 45_000 })), 45)
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), quota()), 30)
    // 50 left, 5 free: 45 beyond them, 2.25 windows
    assert.strictEqual(
      Progress.etaSeconds(progress(20, 70), quota({ budgets: { requests: { limit: 20, used: 15 } } })),
      135
    )
    // tokens bind: 10 left at what the window's requests spent each (1000), 5000 a window, all used
    assert.strictEqual(
      Progress.etaSeconds(
        progress(20, 30),
        quota({ budgets: { requests: { limit: 1000, used: 5 }, tokens: { limit: 5000, used: 5000 } } })
      ),
      120
    )
  })

  it("the ETA is the longest over every budget with a limit: input or output alone can bind; an unknown one never", () => {
    const free = { requests: { limit: 1000, used: 10 }, tokens: { limit: undefined, used: 1_000_000 } }
    // 10 left of 200 output tokens each (what the window's 10 requests spent): 2000, a full window of 2000 used
    const output = { output: { limit: 2000, used: 2000 } }
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), quota({ budgets: { ...free, ...output } })), 60)
    // 10 left of 300 input tokens each: 3000, 1000 still free of 4000: half a window
    const input = { input: { limit: 4000, used: 3000 } }
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), quota({ budgets: { ...free, ...input } })), 30)
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), quota({ budgets: { ...free, ...input, ...output } })), 60)
    // the combined budget's million tokens used, but no limit known for it: it takes no time
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), quota({ budgets: free })), 0.625)
  })

  it("without the quota binding, the ETA is the requests' own time, so many at once; nothing known before one ends", () => {
    // 10 left, 500 ms each, 8 at once
    assert.strictEqual(Progress.etaSeconds(progress(20, 30), undefined), 0.625)
    assert.strictEqual(
      Progress.etaSeconds(progress(20, 30), quota({ budgets: { requests: { limit: 1000, used: 0 } } })),
      0.625
    )
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
      const limiter = (buckets: ReadonlyArray<RateLimiter.BucketState>) =>
        Layer.succeed(RateLimiter.RateLimiter, { ...disabled, enabled: true, snapshot: Effect.succeed(buckets) })
      const state = yield* Progress.quotaState(60_000).pipe(Effect.provide(limiter([
        bucket("a", { budgets: { requests: { used: 5 } }, waiting: 2 }),
        bucket("b", { budgets: { tokens: { used: 9_000 } }, waiting: 3, nextResetMs: 12_000 }),
        bucket("c", { budgets: { requests: { used: 1 } }, blockedMs: 50_000 })
      ])))
      assert.deepStrictEqual(state, {
        budgets: {
          requests: { limit: 20, used: 0 },
          input: { limit: undefined, used: 0 },
          output: { limit: undefined, used: 0 },
          tokens: { limit: 10_000, used: 9_000 }
        },
        windowMs: 60_000,
        waiting: 5,
        waitMs: 12_000,
        limit: "limit 20 requests (plan)"
      })
      // a bucket closed after a 429 at a limit waits its block, even with no caller in line
      const blocked = yield* Progress.quotaState(60_000).pipe(
        Effect.provide(limiter([bucket("c", { budgets: { requests: { used: 20 } }, blockedMs: 50_000 })]))
      )
      assert.strictEqual(blocked?.waitMs, 50_000)
      assert.isUndefined(yield* Progress.quotaState(60_000).pipe(Effect.provide(limiter([]))))
      assert.isUndefined(yield* Progress.quotaState(60_000).pipe(Effect.provide(RateLimiter.layerDisabled)))
      assert.isUndefined(yield* Progress.quotaState(60_000))
    }))

  it.effect("the busiest bucket by any budget; its binding budget named in the line, its ETA over every budget", () =>
    Effect.gen(function*() {
      const disabled = yield* RateLimiter.RateLimiter.pipe(Effect.provide(RateLimiter.layerDisabled))
      const limiter = (buckets: ReadonlyArray<RateLimiter.BucketState>) =>
        Layer.succeed(RateLimiter.RateLimiter, { ...disabled, enabled: true, snapshot: Effect.succeed(buckets) })
      // b's combined budget is 90% used; d's output budget 98%, binding: d is the busiest
      const d = bucket("d", {
        budgets: {
          requests: { used: 10 },
          input: { limit: 13_800, source: "plan", used: 2_000 },
          output: { limit: 5_000, source: "plan", used: 4_900 },
          tokens: { limit: undefined, source: "unknown", used: 6_900 }
        },
        binding: "output",
        waiting: 4,
        nextResetMs: 20_000
      })
      const state = yield* Progress.quotaState(60_000).pipe(Effect.provide(limiter([
        bucket("b", { budgets: { tokens: { used: 9_000 } } }),
        d
      ])))
      assert.isDefined(state)
      assert.strictEqual(state?.limit, "limit 5000 output tokens (plan)")
      assert.deepStrictEqual(state?.budgets.output, { limit: 5_000, used: 4_900 })
      assert.strictEqual(state?.waitMs, 20_000)
      // 10 left of 490 output tokens each: 4900, 100 free of 5000 a window: 0.96 windows, longer than any other
      const eta = Progress.etaSeconds(progress(20, 30), state)
      assert.strictEqual(eta, 57.6)
      assert.strictEqual(
        Progress.render(progress(20, 30), 60_000, false, 0, state),
        "aifs batch: 20/30 (0 failed) 20 req/min 20000 tokens/min, 0 retries, 4 waiting for the quota window (20s), " +
          "limit 5000 output tokens (plan), ETA 0:58\n"
      )
    }))

  it("a bucket's limits in words: the binding one first, where each comes from, how sure a learnt one is", () => {
    const learnt = { requests: { limit: 45, source: "learnt", confidence: "confirmed" } } as const
    assert.strictEqual(
      Progress.describeLimits(bucket("m", { budgets: { ...learnt, tokens: { limit: undefined, source: "unknown" } } })),
      "limits 45 requests (learnt, confirmed), tokens unknown"
    )
    const plan = bucket("m", {
      budgets: {
        requests: { limit: 20, source: "plan" },
        input: { limit: 13_800, source: "plan" },
        output: { limit: 5_000, source: "plan" },
        tokens: { limit: 9_000, source: "header" }
      }
    })
    assert.strictEqual(
      Progress.describeLimits(plan),
      "limits 20 requests (plan), 13800 input tokens (plan), 5000 output tokens (plan), 9000 tokens (header)"
    )
    assert.strictEqual(
      Progress.describeLimits({ ...plan, binding: "output" }),
      "limits 5000 output tokens (plan), 20 requests (plan), 13800 input tokens (plan), 9000 tokens (header)"
    )
    assert.strictEqual(
      Progress.describeLimits({ ...plan, binding: "input" }, "binding"),
      "limit 13800 input tokens (plan)"
    )
    assert.strictEqual(
      Progress.describeLimits(
        bucket("m", {
          budgets: { requests: { limit: 600, source: "header" }, tokens: { limit: 9, source: "configured" } },
          binding: "requests"
        }),
        "binding"
      ),
      "limit 600 requests (header)"
    )
    assert.strictEqual(Progress.describeLimits(bucket("m", { probe: 3 })), "limits probing (3 in flight)")
    assert.strictEqual(
      Progress.describeLimits(bucket("m", { budgets: { requests: { limit: undefined, source: "shared" } } })),
      "a shared quota (no fixed limits)"
    )
    assert.strictEqual(
      Progress.describeLimits(bucket("m", { spent: "You exceeded your current quota" })),
      "the key's budget is spent: You exceeded your current quota"
    )
  })
})
