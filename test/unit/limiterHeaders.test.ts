/**
 * What the limiter learns from a response: limits from the `x-ratelimit-limit-*` headers (requests and the combined
 * tokens), usage the server counts beyond this process's (kept until the server's reset); and what a 429 does once
 * its permit settles as `throttled`: at a limit it closes the bucket and widens the margin, well under every limit it
 * is noise. The headers of a 429 alone close nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as LimiterHeaders from "../../src/internal/limiter/headers.js"
import type * as RateLimiter from "../../src/layers/RateLimiter.js"
import { RateLimited } from "../../src/schemas/Errors.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"
import { limiterWith, settled, stillWaiting, ticket } from "../helpers/limiter.js"
import { refusal } from "../helpers/stores.js"

type Headers = ConstructorParameters<typeof RateLimitInfo>[0]

/** The limiter learns from a response on `key#1` and model `m` with these headers, now. */
const learnFrom = (limiter: RateLimiter.RateLimiter.Service, headers: Omit<Headers, "observedAt">, status = 200) =>
  Effect.flatMap(
    TestClock.currentTimeMillis,
    (observedAt) => limiter.learn("key#1", "m", new RateLimitInfo({ ...headers, observedAt }), status)
  )

const bucket = (limiter: RateLimiter.RateLimiter.Service) =>
  Effect.map(limiter.snapshot, (states) => states.find((s) => s.model === "m")!)

/** A 429 as the transport reads it, with the server's wait when it gave one. */
const rateLimited = (retryAfter?: Duration.DurationInput) =>
  new RateLimited({
    message: "rate limited",
    status: 429,
    ...(retryAfter === undefined ? {} : { retryAfter: Duration.decode(retryAfter) })
  })

/**
 * A request of 95,000 tokens on `m` (limits of 100,000 tokens: above nine tenths of the limit by itself) refused
 * with a 429: a refusal at the limit. Whether the limiter paces the retry itself.
 */
const refusedAtLimit = (limiter: RateLimiter.RateLimiter.Service, retryAfter?: Duration.DurationInput) =>
  Effect.flatMap(limiter.acquire(ticket(95_000)), (permit) => permit.settle("throttled", rateLimited(retryAfter)))

/** Moves the clock by `ms` and tells whether `fiber` is still waiting then. */
const waitingAfter = <A, E>(fiber: Fiber.Fiber<A, E>, ms: number) =>
  Effect.zipRight(TestClock.adjust(Duration.millis(ms)), stillWaiting(fiber))

describe("usage the server reports", () => {
  it.effect("leaves the local count when the server says its count drops: at each dimension's reset, plus the margin", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        window: "10 seconds",
        margin: "200 millis",
        limits: { m: { rpm: 100, tpm: 100_000 } }
      })
      // another process on the key: 2 requests that leave the server's window in 4 s, 600 tokens in 6 s
      yield* learnFrom(limiter, {
        limitRequests: 3,
        remainingRequests: 1,
        resetRequests: Duration.seconds(4),
        limitTokens: 1_000,
        remainingTokens: 400,
        resetTokens: Duration.seconds(6)
      })
      const learnt = yield* bucket(limiter)
      assert.strictEqual(learnt.budgets.requests.used, 2)
      assert.strictEqual(learnt.budgets.tokens.used, 600)
      assert.strictEqual(learnt.nextResetMs, 4_200)
      yield* limiter.acquire(ticket(100))
      // the request quota is full until the first two leave; then the tokens are, until the 600 leave
      const requestOnly = yield* Effect.fork(limiter.acquire(ticket(0)))
      assert.isTrue(yield* waitingAfter(requestOnly, 4_199))
      assert.isFalse(yield* waitingAfter(requestOnly, 1))
      const tokens = yield* Effect.fork(limiter.acquire(ticket(400)))
      assert.isTrue(yield* waitingAfter(tokens, 1_999))
      assert.isFalse(yield* waitingAfter(tokens, 1))
    }))

  it.effect("without a reset header it counts for a whole window; a reset beyond the window, for one window", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 100, tpm: 100_000 } } })
      yield* learnFrom(limiter, { limitRequests: 1, remainingRequests: 0 })
      const noReset = yield* Effect.fork(limiter.acquire(ticket(0)))
      assert.isTrue(yield* waitingAfter(noReset, 9_999))
      assert.isFalse(yield* waitingAfter(noReset, 1))
      yield* TestClock.adjust("10 seconds")
      yield* learnFrom(limiter, { limitTokens: 50, remainingTokens: 0, resetTokens: Duration.seconds(25) })
      const longReset = yield* Effect.fork(limiter.acquire(ticket(50)))
      assert.strictEqual((yield* bucket(limiter)).nextResetMs, 10_000)
      assert.isTrue(yield* waitingAfter(longReset, 9_999))
      assert.isFalse(yield* waitingAfter(longReset, 1))
    }))

  it.effect("what this process sent is not counted twice when the headers are a little stale (within the margin)", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        window: "10 seconds",
        margin: "200 millis",
        limits: { m: { rpm: 10, tpm: 1_000 } }
      })
      const first = yield* limiter.acquire(ticket(100))
      yield* first.settle("succeeded")
      yield* TestClock.adjust("10100 millis")
      const second = yield* limiter.acquire(ticket(100))
      yield* second.settle("succeeded")
      // the server computed these headers 150 ms ago, when it still counted the first request for 50 ms more
      yield* learnFrom(limiter, {
        limitRequests: 10,
        remainingRequests: 8,
        resetRequests: Duration.millis(50),
        limitTokens: 1_000,
        remainingTokens: 800,
        resetTokens: Duration.millis(50)
      })
      const state = yield* bucket(limiter)
      assert.strictEqual(state.budgets.requests.used, 2)
      assert.strictEqual(state.budgets.tokens.used, 200)
      // the first request leaves at its own time, the window plus the margin after it was answered
      yield* TestClock.adjust("100 millis")
      const later = yield* bucket(limiter)
      assert.strictEqual(later.budgets.requests.used, 1)
      assert.strictEqual(later.budgets.tokens.used, 100)
    }))

  it.effect("a server that counts no more than this process sent adds nothing", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        window: "10 seconds",
        margin: "200 millis",
        limits: { m: { rpm: 10, tpm: 1_000 } }
      })
      const limits = { limitRequests: 10, limitTokens: 1_000, resetRequests: Duration.millis(0) }
      yield* learnFrom(limiter, { ...limits, remainingRequests: 10, remainingTokens: 1_000 })
      const empty = yield* bucket(limiter)
      assert.deepStrictEqual([empty.budgets.requests.used, empty.budgets.tokens.used, empty.nextResetMs], [0, 0, 0])
      yield* TestClock.adjust("1 second")
      yield* limiter.acquire(ticket(100))
      yield* learnFrom(limiter, { ...limits, remainingRequests: 9, remainingTokens: 900 })
      const state = yield* bucket(limiter)
      assert.deepStrictEqual([state.budgets.requests.used, state.budgets.tokens.used, state.nextResetMs], [
        1,
        100,
        10_200
      ])
    }))

  it.effect("remaining counts without the limit they belong to, or a limit without its remaining, count nothing", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 10, tpm: 1_000 } } })
      yield* learnFrom(limiter, { remainingRequests: 2, remainingTokens: 100 })
      yield* learnFrom(limiter, { limitRequests: 10, limitTokens: 1_000 })
      const state = yield* bucket(limiter)
      assert.strictEqual(state.budgets.requests.used, 0)
      assert.strictEqual(state.budgets.tokens.used, 0)
    }))
})

describe("limits from headers", () => {
  it.effect("replace the configured ones, one budget at a time; a zero limit is no limit and is ignored", () =>
    Effect.gen(function*() {
      /** Each budget's limit and source: requests, input, output, combined tokens. */
      const limits = (state: RateLimiter.BucketState) =>
        (["requests", "input", "output", "tokens"] as const).map((d) => [
          state.budgets[d].limit,
          state.budgets[d].source
        ])
      const configured = { m: { rpm: 10, itpm: 500, otpm: 200, tpm: 1_000 } }
      const limiter = yield* limiterWith({ limits: configured })
      yield* learnFrom(limiter, { limitRequests: 0, limitTokens: 0 })
      assert.deepStrictEqual(limits(yield* bucket(limiter)), [
        [10, "configured"],
        [500, "configured"],
        [200, "configured"],
        [1_000, "configured"]
      ])
      yield* learnFrom(limiter, { limitRequests: 30 })
      assert.deepStrictEqual(limits(yield* bucket(limiter)), [
        [30, "header"],
        [500, "configured"],
        [200, "configured"],
        [1_000, "configured"]
      ])
      // the token header is the combined budget's: the input and output budgets keep their own limits
      const other = yield* limiterWith({ limits: configured })
      yield* learnFrom(other, { limitTokens: 5_000 })
      assert.deepStrictEqual(limits(yield* bucket(other)), [
        [10, "configured"],
        [500, "configured"],
        [200, "configured"],
        [5_000, "header"]
      ])
    }))

  it.effect("higher limits wake the caller at the head of the line at once", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 1, tpm: 1_000 } } })
      yield* limiter.acquire(ticket())
      const head = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* stillWaiting(head))
      yield* learnFrom(limiter, { limitRequests: 2 })
      yield* settled(head, "the head after the limit was raised")
      assert.strictEqual(yield* TestClock.currentTimeMillis, 0)
    }))

  it.effect("lower token limits fail a waiting request that can no longer ever fit, at once", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 1, tpm: 1_000 } } })
      yield* limiter.acquire(ticket())
      const head = yield* Effect.fork(limiter.acquire(ticket(600)))
      assert.isTrue(yield* stillWaiting(head))
      yield* learnFrom(limiter, { limitTokens: 500 })
      const error = yield* refusal(settled(head, "the head that can no longer fit"))
      assert.strictEqual(error._tag, "RequestTooLarge")
      assert.deepInclude(error, { budget: "tokens", limit: 500, requested: 600 })
      assert.strictEqual(yield* TestClock.currentTimeMillis, 0)
    }))
})

describe("a 429 at a limit, weighed when its permit settles", () => {
  it.effect("after calm windows the margin is back where it was: a new 429 widens it from the configured margin", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        window: "1 second",
        margin: "100 millis",
        limits: { m: { rpm: 100, tpm: 100_000 } }
      })
      yield* refusedAtLimit(limiter, "10 millis")
      yield* TestClock.adjust("1 second")
      yield* refusedAtLimit(limiter, "10 millis")
      // three windows pass without a word to the limiter; two of them calm ones after the first
      yield* TestClock.adjust("3 seconds")
      yield* refusedAtLimit(limiter, "10 millis")
      assert.strictEqual((yield* bucket(limiter)).marginMs, 350)
    }))

  it.effect("a widened margin narrows by one step per calm window, every window, after the first", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        window: "1 second",
        margin: "100 millis",
        limits: { m: { rpm: 100, tpm: 100_000 } }
      })
      for (let i = 0; i < 4; i++) {
        yield* refusedAtLimit(limiter, "10 millis")
        yield* TestClock.adjust("1 second")
      }
      const margins: Array<number> = []
      for (let i = 0; i < 6; i++) {
        margins.push((yield* bucket(limiter)).marginMs)
        yield* TestClock.adjust("1 second")
      }
      assert.deepStrictEqual(margins, [1_100, 850, 600, 350, 100, 100])
    }))

  it.effect("a narrowed margin counts at once for wouldWait, without anything else asking first", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        window: "1 second",
        margin: "200 millis",
        limits: { m: { rpm: 1, tpm: 100_000 } }
      })
      // one request a window: any refused request was at the limit
      const refused = yield* limiter.acquire(ticket())
      yield* refused.settle("throttled", rateLimited("10 millis"))
      assert.strictEqual((yield* bucket(limiter)).marginMs, 450)
      yield* TestClock.adjust("1500 millis")
      yield* limiter.acquire(ticket())
      // at 2.7 s the window since 0 has a calm window after the first: the margin is 200 ms again, and the request
      // admitted at 1.5 s has left (it would count until 2.95 s with the widened margin)
      yield* TestClock.adjust("1200 millis")
      assert.isFalse(yield* limiter.wouldWait(ticket()))
    }))

  it.effect("closes the bucket for a second when the server gives no wait; a shorter wait later never shortens it", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 100, tpm: 100_000 } } })
      // the window holds nine tenths of the tokens (an answered request): each refusal below comes at the limit
      yield* Effect.flatMap(limiter.acquire(ticket(90_000)), (permit) => permit.settle("succeeded"))
      const [first, second, third] = yield* Effect.all([
        limiter.acquire(ticket(1)),
        limiter.acquire(ticket(1)),
        limiter.acquire(ticket(1))
      ])
      // a bucket that does not learn paces no retry itself: the retry policy waits the server's time
      assert.isFalse(yield* first!.settle("throttled", rateLimited()))
      assert.strictEqual((yield* bucket(limiter)).blockedMs, 1_000)
      assert.isTrue(yield* limiter.wouldWait(ticket()))
      yield* second!.settle("throttled", rateLimited("5 seconds"))
      yield* TestClock.adjust("1 second")
      yield* third!.settle("throttled", rateLimited("100 millis"))
      assert.strictEqual((yield* bucket(limiter)).blockedMs, 4_000)
      const caller = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* waitingAfter(caller, 3_999))
      assert.isTrue(yield* limiter.wouldWait(ticket()))
      assert.isFalse(yield* waitingAfter(caller, 1))
      assert.strictEqual((yield* bucket(limiter)).blockedMs, 0)
      assert.isFalse(yield* limiter.wouldWait(ticket()))
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* bucket(limiter)).blockedMs, 0)
    }))

  it.effect("a 429 well under every known limit is noise: the bucket stays open and the margin as it was", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ margin: "100 millis", limits: { m: { rpm: 100, itpm: 100_000 } } })
      // 89,999 of 100,000 input tokens with the refused request: just under nine tenths
      yield* Effect.flatMap(limiter.acquire(ticket(80_000)), (permit) => permit.settle("succeeded"))
      const refused = yield* limiter.acquire(ticket(9_999))
      assert.isFalse(yield* refused.settle("throttled", rateLimited("5 seconds")))
      const state = yield* bucket(limiter)
      assert.deepStrictEqual([state.blockedMs, state.marginMs], [0, 100])
      assert.isFalse(yield* limiter.wouldWait(ticket()))
      // two tokens more (90,001) are above nine tenths: closed for the server's time, the margin widened
      const atLimit = yield* limiter.acquire(ticket(10_001))
      yield* atLimit.settle("throttled", rateLimited("5 seconds"))
      const closed = yield* bucket(limiter)
      assert.deepStrictEqual([closed.blockedMs, closed.marginMs], [5_000, 350])
    }))

  it.effect("the headers of a 429 close nothing and widen nothing: only the settled permit's refusal is weighed", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ margin: "100 millis", limits: { m: { rpm: 100, tpm: 100_000 } } })
      yield* learnFrom(limiter, { retryAfter: Duration.seconds(5) }, 429)
      const state = yield* bucket(limiter)
      assert.deepStrictEqual([state.blockedMs, state.marginMs], [0, 100])
      assert.isFalse(yield* limiter.wouldWait(ticket()))
    }))

  it.effect("a successful answer neither closes the bucket nor widens the margin", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ margin: "100 millis", limits: { m: { rpm: 100, tpm: 100_000 } } })
      yield* learnFrom(limiter, { retryAfter: Duration.seconds(5) }, 200)
      // at the limit, answered
      yield* Effect.flatMap(limiter.acquire(ticket(95_000)), (permit) => permit.settle("succeeded"))
      const state = yield* bucket(limiter)
      assert.strictEqual(state.blockedMs, 0)
      assert.strictEqual(state.marginMs, 100)
    }))

  it.effect("widens the margin by 250 ms once a window, up to 5 s", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        window: "1 second",
        margin: "100 millis",
        limits: { m: { rpm: 100, tpm: 100_000 } }
      })
      const margins: Array<number> = []
      for (let i = 0; i < 24; i++) {
        yield* refusedAtLimit(limiter, "10 millis")
        margins.push((yield* bucket(limiter)).marginMs)
        // one window later exactly: a new misjudgement
        yield* TestClock.adjust("1 second")
      }
      assert.deepStrictEqual(margins, Array.from({ length: 24 }, (_, i) => Math.min(5_000, 100 + 250 * (i + 1))))
    }))

  it.effect("twice in one window widens the margin once", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        window: "1 second",
        margin: "100 millis",
        limits: { m: { rpm: 100, tpm: 100_000 } }
      })
      yield* refusedAtLimit(limiter, "10 millis")
      yield* TestClock.adjust("999 millis")
      // closed for a millisecond: open again when the window since the first widening is over
      yield* refusedAtLimit(limiter, "1 millis")
      assert.strictEqual((yield* bucket(limiter)).marginMs, 350)
      yield* TestClock.adjust("1 millis")
      yield* refusedAtLimit(limiter, "10 millis")
      assert.strictEqual((yield* bucket(limiter)).marginMs, 600)
    }))
})

describe("the server's count in an answer's headers", () => {
  const info = (headers: Omit<Headers, "observedAt">) => new RateLimitInfo({ ...headers, observedAt: 0 })

  it("is the limit less what remains, dated by the reset: a limit or a remainder alone counts nothing", () => {
    const both = LimiterHeaders.serverCount(
      info({
        limitRequests: 100,
        remainingRequests: 60,
        resetRequests: Duration.seconds(20),
        limitTokens: 1_000,
        remainingTokens: 900
      }),
      60_000
    )
    assert.deepStrictEqual(both, { requests: 40, requestsAgeMs: 40_000, tokens: 100, tokensAgeMs: 0 })
    const limitsAlone = LimiterHeaders.serverCount(info({ limitRequests: 100, limitTokens: 1_000 }), 60_000)
    assert.deepInclude(limitsAlone, { requests: 0, tokens: 0 })
    const remainingAlone = LimiterHeaders.serverCount(info({ remainingRequests: 60, remainingTokens: 900 }), 60_000)
    assert.deepInclude(remainingAlone, { requests: 0, tokens: 0 })
  })
})
