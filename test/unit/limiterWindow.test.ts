/**
 * The limiter's window, to the millisecond: a request counts from its admission and, once answered, from its
 * answer, for the window's length plus the safety margin; never more than the quota in any such interval, and a
 * waiting caller goes the moment the quota allows, not later.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import { limiterWith, now, runToEnd, stillWaiting, ticket } from "../helpers/limiter.js"

interface Caller {
  /** Milliseconds after the previous caller's arrival. */
  readonly gap: number
  readonly tokens: number
  /** Milliseconds from admission to the server's answer. */
  readonly latency: number
}

/**
 * When each caller should be admitted, worked out from the README's rule alone: callers in arrival order, each as
 * soon as one more request and its tokens fit, a request counting from its admission until its answer plus
 * `countsMs` (the window plus the margin).
 */
const expectedAdmissions = (
  callers: ReadonlyArray<Caller>,
  quota: { readonly requests: number; readonly tokens: number },
  countsMs: number
): ReadonlyArray<number> => {
  const counted: Array<{ readonly until: number; readonly tokens: number }> = []
  const times: Array<number> = []
  let arrival = 0
  let previous = 0
  for (const caller of callers) {
    arrival += caller.gap
    const fits = (t: number) => {
      const alive = counted.filter((c) => c.until > t)
      return alive.length + 1 <= quota.requests &&
        alive.reduce((n, c) => n + c.tokens, 0) + caller.tokens <= quota.tokens
    }
    const from = Math.max(arrival, previous)
    const at = [from, ...counted.map((c) => c.until).filter((t) => t > from)].sort((a, b) => a - b).find(fits)!
    times.push(at)
    previous = at
    counted.push({ until: at + caller.latency + countsMs, tokens: caller.tokens })
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
  tokens: FastCheck.integer({ min: 100, max: 300 }),
  callers: FastCheck.array(
    FastCheck.record({
      gap: FastCheck.nat(6).map((n) => n * 250),
      tokens: FastCheck.integer({ min: 1, max: 100 }),
      latency: FastCheck.nat(4).map((n) => n * 200)
    }),
    { minLength: 1, maxLength: 7 }
  )
})

describe("the limiter's window and margin", () => {
  it.effect.prop(
    "admits each caller exactly when the quota over the window plus the margin allows, never sooner, never later",
    { scenario },
    ({ scenario: { callers, marginMs, requests, tokens, windowMs } }) =>
      Effect.gen(function*() {
        const limiter = yield* Effect.provide(
          RateLimiter.RateLimiter,
          RateLimiter.layer({
            window: Duration.millis(windowMs),
            ...(marginMs === undefined ? {} : { margin: Duration.millis(marginMs) }),
            limits: { m: { rpm: requests, tpm: tokens } }
          })
        )
        const admitted: Array<number> = []
        const caller = (c: Caller, index: number) =>
          Effect.gen(function*() {
            const permit = yield* limiter.acquire(ticket(c.tokens))
            admitted[index] = yield* now
            yield* Effect.sleep(Duration.millis(c.latency))
            yield* permit.answered
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
        assert.deepStrictEqual(admitted, expectedAdmissions(callers, { requests, tokens }, countsMs))
        // the guarantee itself: never more than the quota within any interval of the window plus the margin
        for (const t of admitted) {
          assert.isAtMost(admitted.filter((u) => u >= t && u < t + countsMs).length, requests)
        }
      }),
    { fastCheck: { numRuns: 15 } }
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
      assert.strictEqual(edge?.usedRequests, 1)
      assert.strictEqual(edge?.nextResetMs, 200)
      assert.strictEqual(edge?.marginMs, 200)
      yield* TestClock.adjust("199 millis")
      assert.isTrue(yield* stillWaiting(next))
      yield* TestClock.adjust("1 millis")
      assert.isFalse(yield* stillWaiting(next))
      assert.strictEqual((yield* Fiber.join(next)).tokens, 10)
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
