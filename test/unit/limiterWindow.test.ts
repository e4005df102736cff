/**
 * The limiter's window, to the millisecond: a request counts from its admission and, once answered, from its
 * answer, for the window's length plus the safety margin; never more than the quota of any budget (requests, input
 * tokens, output tokens, their combined sum) in any such interval, and a waiting caller goes the moment every
 * budget allows, not later.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import { limiterWith, now, runToEnd, stillWaiting, ticket } from "../helpers/limiter.js"

/** What became of a caller's request: both `succeeded` and `unanswered` keep its tokens, `failed` gives them back. */
type Outcome = "succeeded" | "unanswered" | "failed"

interface Caller {
  /** Milliseconds after the previous caller's arrival. */
  readonly gap: number
  readonly input: number
  readonly output: number
  /** Milliseconds from admission to the server's answer. */
  readonly latency: number
  readonly outcome: Outcome
}

/** The quota of every budget the test sets (undefined: the bucket has no such limit). */
interface Quota {
  readonly requests: number
  readonly input: number | undefined
  readonly output: number | undefined
  readonly tokens: number | undefined
}

/**
 * When each caller should be admitted, worked out from the README's rule alone: callers in arrival order, each as
 * soon as one more request and its input, output and combined (input + output) tokens fit every budget that has a
 * limit; a request counts from its admission until its answer plus `countsMs` (the window plus the margin), and an
 * error answer (`failed`) gives its tokens back at once, the request itself still counting.
 */
const expectedAdmissions = (
  callers: ReadonlyArray<Caller>,
  quota: Quota,
  countsMs: number
): ReadonlyArray<number> => {
  const counted: Array<{ readonly until: number; readonly tokensUntil: number; readonly caller: Caller }> = []
  const times: Array<number> = []
  let arrival = 0
  let previous = 0
  for (const caller of callers) {
    arrival += caller.gap
    const fits = (t: number) => {
      const alive = counted.filter((c) => c.until > t)
      const holding = counted.filter((c) => c.tokensUntil > t)
      const within = (limit: number | undefined, amount: (c: Caller) => number) =>
        limit === undefined || holding.reduce((n, c) => n + amount(c.caller), 0) + amount(caller) <= limit
      return alive.length + 1 <= quota.requests &&
        within(quota.input, (c) => c.input) &&
        within(quota.output, (c) => c.output) &&
        within(quota.tokens, (c) => c.input + c.output)
    }
    const from = Math.max(arrival, previous)
    const changes = counted.flatMap((c) => [c.until, c.tokensUntil]).filter((t) => t > from)
    const at = [from, ...changes].sort((a, b) => a - b).find(fits)!
    times.push(at)
    previous = at
    const answered = at + caller.latency
    const until = answered + countsMs
    counted.push({ until, tokensUntil: caller.outcome === "failed" ? answered : until, caller })
  }
  return times
}

// times on a coarse grid: each distinct moment costs the TestClock a real pause, and coinciding moments are where
// an off-by-one shows
const scenario = FastCheck.record({
  windowMs: FastCheck.constantFrom(1_000, 10_000),
  // undefined: the default margin (200 ms)
  marginMs: FastCheck.constantFrom(undefined, 0, 100, 250, 500),
  requests: FastCheck.integer({ min: 1, max: 3 }),
  // at least one token budget (a bucket without any learns its limits instead), each never below one request
  budgets: FastCheck.record({
    input: FastCheck.option(FastCheck.integer({ min: 100, max: 300 }), { nil: undefined }),
    output: FastCheck.option(FastCheck.integer({ min: 100, max: 300 }), { nil: undefined }),
    tokens: FastCheck.option(FastCheck.integer({ min: 200, max: 400 }), { nil: undefined })
  }).map((b) => b.input === undefined && b.output === undefined && b.tokens === undefined ? { ...b, tokens: 200 } : b),
  callers: FastCheck.array(
    FastCheck.record({
      gap: FastCheck.nat(6).map((n) => n * 250),
      input: FastCheck.integer({ min: 1, max: 100 }),
      output: FastCheck.integer({ min: 0, max: 100 }),
      latency: FastCheck.nat(4).map((n) => n * 200),
      outcome: FastCheck.constantFrom<Outcome>("succeeded", "unanswered", "failed")
    }),
    { minLength: 1, maxLength: 7 }
  )
})

describe("the limiter's window and margin", () => {
  it.effect.prop(
    "admits each caller exactly when every budget over the window plus the margin allows, never sooner, never later",
    { scenario },
    ({ scenario: { budgets, callers, marginMs, requests, windowMs } }) =>
      Effect.gen(function*() {
        const limiter = yield* Effect.provide(
          RateLimiter.RateLimiter,
          RateLimiter.layer({
            window: Duration.millis(windowMs),
            ...(marginMs === undefined ? {} : { margin: Duration.millis(marginMs) }),
            limits: { m: { rpm: requests, itpm: budgets.input, otpm: budgets.output, tpm: budgets.tokens } }
          })
        )
        const admitted: Array<number> = []
        const caller = (c: Caller, index: number) =>
          Effect.gen(function*() {
            const permit = yield* limiter.acquire(ticket(c.input, "m", c.output))
            admitted[index] = yield* now
            yield* Effect.sleep(Duration.millis(c.latency))
            yield* permit.settle(c.outcome)
          })
        const arrivals = Effect.gen(function*() {
          const fibers: Array<Fiber.RuntimeFiber<void, unknown>> = []
          for (const [index, c] of callers.entries()) {
            yield* Effect.sleep(Duration.millis(c.gap))
            fibers.push(yield* Effect.fork(caller(c, index)))
            yield* Effect.yieldNow()
          }
          yield* Fiber.joinAll(fibers)
        })
        yield* runToEnd(yield* Effect.fork(arrivals))
        const countsMs = windowMs + (marginMs ?? 200)
        assert.deepStrictEqual(admitted, expectedAdmissions(callers, { requests, ...budgets }, countsMs))
        // the guarantee itself: never more than the quota within any interval of the window plus the margin
        for (const t of admitted) {
          assert.isAtMost(admitted.filter((u) => u >= t && u < t + countsMs).length, requests)
        }
      }),
    { fastCheck: { numRuns: 25 } }
  )

  it.effect("with the default margin a request counts 200 ms past the window: in admissions, wouldWait and snapshots", () =>
    Effect.gen(function*() {
      const limiter = yield* Effect.provide(
        RateLimiter.RateLimiter,
        RateLimiter.layer({ window: "10 seconds", limits: { m: { rpm: 1, tpm: 1_000 } } })
      )
      yield* limiter.acquire(ticket())
      const next = yield* Effect.fork(limiter.acquire(ticket()))
      // at the window's edge the server may not have dropped the first request yet
      yield* TestClock.adjust("10 seconds")
      assert.isTrue(yield* stillWaiting(next))
      assert.isTrue(yield* limiter.wouldWait(ticket()))
      const [edge] = yield* limiter.snapshot
      assert.strictEqual(edge?.budgets.requests.used, 1)
      assert.strictEqual(edge?.nextResetMs, 200)
      assert.strictEqual(edge?.marginMs, 200)
      yield* TestClock.adjust("199 millis")
      assert.isTrue(yield* stillWaiting(next))
      yield* TestClock.adjust("1 millis")
      assert.isFalse(yield* stillWaiting(next))
      assert.deepStrictEqual((yield* Fiber.join(next)).cost, { requests: 1, input: 10, output: 0, tokens: 10 })
    }))

  it.effect("wouldWait says whether one more request and its tokens fit now, to the last request and token", () =>
    Effect.gen(function*() {
      const limiter = yield* Effect.provide(
        RateLimiter.RateLimiter,
        RateLimiter.layer({ window: "10 seconds", margin: "300 millis", limits: { m: { rpm: 2, tpm: 100 } } })
      )
      yield* limiter.acquire(ticket(60))
      assert.isFalse(yield* limiter.wouldWait(ticket(40)), "exactly the tokens left")
      assert.isTrue(yield* limiter.wouldWait(ticket(41)))
      yield* limiter.acquire(ticket(0))
      assert.isTrue(yield* limiter.wouldWait(ticket(0)), "no request left")
      yield* TestClock.adjust("10299 millis")
      assert.isTrue(yield* limiter.wouldWait(ticket(0)), "the margin still counts them")
      yield* TestClock.adjust("1 millis")
      assert.isFalse(yield* limiter.wouldWait(ticket(100)))
    }))

  it.effect("an input budget binds on its own: the output and the combined sum are not limited", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 10, itpm: 100 } } })
      yield* limiter.acquire(ticket(60, "m", 5_000))
      assert.isFalse(yield* limiter.wouldWait(ticket(40, "m", 100_000)), "exactly the input left, any output")
      assert.isTrue(yield* limiter.wouldWait(ticket(41, "m", 0)))
      const next = yield* Effect.fork(limiter.acquire(ticket(41, "m", 0)))
      assert.isTrue(yield* stillWaiting(next))
      const [state] = yield* limiter.snapshot
      assert.strictEqual(state?.binding, "input")
      assert.deepStrictEqual(
        [state?.budgets.input.used, state?.budgets.output.used, state?.budgets.tokens.used],
        [60, 5_000, 5_060]
      )
      assert.deepStrictEqual([state?.budgets.output.limit, state?.budgets.tokens.limit], [undefined, undefined])
      yield* TestClock.adjust("9999 millis")
      assert.isTrue(yield* stillWaiting(next))
      yield* TestClock.adjust("1 millis")
      assert.isFalse(yield* stillWaiting(next))
    }))

  it.effect("an output budget binds on its own: the input and the combined sum are not limited", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 10, otpm: 100 } } })
      yield* limiter.acquire(ticket(5_000, "m", 60))
      assert.isFalse(yield* limiter.wouldWait(ticket(100_000, "m", 40)), "exactly the output left, any input")
      assert.isTrue(yield* limiter.wouldWait(ticket(0, "m", 41)))
      const next = yield* Effect.fork(limiter.acquire(ticket(0, "m", 41)))
      assert.isTrue(yield* stillWaiting(next))
      assert.strictEqual((yield* limiter.snapshot)[0]?.binding, "output")
      yield* TestClock.adjust("9999 millis")
      assert.isTrue(yield* stillWaiting(next))
      yield* TestClock.adjust("1 millis")
      assert.isFalse(yield* stillWaiting(next))
    }))

  it.effect("the combined budget counts input and output together, to the last token", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 10, tpm: 100 } } })
      const first = yield* limiter.acquire(ticket(30, "m", 30))
      assert.deepStrictEqual(first.cost, { requests: 1, input: 30, output: 30, tokens: 60 })
      assert.isFalse(yield* limiter.wouldWait(ticket(20, "m", 20)), "exactly the sum left")
      assert.isTrue(yield* limiter.wouldWait(ticket(20, "m", 21)))
      assert.isTrue(yield* limiter.wouldWait(ticket(41, "m", 0)))
      assert.isTrue(yield* limiter.wouldWait(ticket(0, "m", 41)))
      const next = yield* Effect.fork(limiter.acquire(ticket(0, "m", 41)))
      assert.isTrue(yield* stillWaiting(next))
      const [state] = yield* limiter.snapshot
      assert.strictEqual(state?.binding, "tokens")
      assert.strictEqual(state?.budgets.tokens.used, 60)
      yield* TestClock.adjust("10 seconds")
      assert.isFalse(yield* stillWaiting(next))
    }))

  it.effect("wouldWait is true while others wait in line, even when this request alone would fit", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 10, tpm: 1_000 } } })
      yield* limiter.acquire(ticket(500))
      const head = yield* Effect.fork(limiter.acquire(ticket(600)))
      assert.isTrue(yield* stillWaiting(head))
      // 10 tokens fit in the window, but the caller would queue behind the head
      assert.isTrue(yield* limiter.wouldWait(ticket(10)))
      yield* Fiber.interrupt(head)
      assert.isFalse(yield* limiter.wouldWait(ticket(10)))
    }))
})
