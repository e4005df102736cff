/**
 * What the limiter learns from a response: limits from the `x-ratelimit-limit-*` headers, usage the server counts
 * beyond this process's (kept until the server's reset), and the bucket closed after a 429 it did not predict.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import type * as RateLimiter from "../../src/layers/RateLimiter.js"
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
      assert.strictEqual(learnt.usedRequests, 2)
      assert.strictEqual(learnt.usedTokens, 600)
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
      yield* first.answered
      yield* TestClock.adjust("10100 millis")
      const second = yield* limiter.acquire(ticket(100))
      yield* second.answered
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
      assert.strictEqual(state.usedRequests, 2)
      assert.strictEqual(state.usedTokens, 200)
      // the first request leaves at its own time, the window plus the margin after it was answered
      yield* TestClock.adjust("100 millis")
      const later = yield* bucket(limiter)
      assert.strictEqual(later.usedRequests, 1)
      assert.strictEqual(later.usedTokens, 100)
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
      assert.deepStrictEqual([empty.usedRequests, empty.usedTokens, empty.nextResetMs], [0, 0, 0])
      yield* TestClock.adjust("1 second")
      yield* limiter.acquire(ticket(100))
      yield* learnFrom(limiter, { ...limits, remainingRequests: 9, remainingTokens: 900 })
      const state = yield* bucket(limiter)
      assert.deepStrictEqual([state.usedRequests, state.usedTokens, state.nextResetMs], [1, 100, 10_200])
    }))

  it.effect("remaining counts without the limit they belong to, or a limit without its remaining, count nothing", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 10, tpm: 1_000 } } })
      yield* learnFrom(limiter, { remainingRequests: 2, remainingTokens: 100 })
      yield* learnFrom(limiter, { limitRequests: 10, limitTokens: 1_000 })
      const state = yield* bucket(limiter)
      assert.strictEqual(state.usedRequests, 0)
      assert.strictEqual(state.usedTokens, 0)
    }))
})

describe("limits from headers", () => {
  it.effect("replace the configured ones, one dimension at a time; a zero limit is no limit and is ignored", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 10, tpm: 1_000 } } })
      yield* learnFrom(limiter, { limitRequests: 0, limitTokens: 0 })
      let state = yield* bucket(limiter)
      assert.deepStrictEqual([state.limitRequests, state.limitTokens, state.fromHeaders], [10, 1_000, false])
      yield* learnFrom(limiter, { limitRequests: 30 })
      state = yield* bucket(limiter)
      assert.deepStrictEqual([state.limitRequests, state.limitTokens, state.fromHeaders], [30, 1_000, true])
      const other = yield* limiterWith({ limits: { m: { rpm: 10, tpm: 1_000 } } })
      yield* learnFrom(other, { limitTokens: 5_000 })
      state = yield* bucket(other)
      assert.deepStrictEqual([state.limitRequests, state.limitTokens, state.fromHeaders], [10, 5_000, true])
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
      assert.strictEqual(error.limit, 500)
      assert.strictEqual(error.requested, 600)
      assert.strictEqual(yield* TestClock.currentTimeMillis, 0)
    }))
})

describe("a 429 the limiter did not predict", () => {
  it.effect("after calm windows the margin is back where it was: a new 429 widens it from the configured margin", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        window: "1 second",
        margin: "100 millis",
        limits: { m: { rpm: 100, tpm: 100_000 } }
      })
      yield* learnFrom(limiter, { retryAfter: Duration.millis(10) }, 429)
      yield* TestClock.adjust("1 second")
      yield* learnFrom(limiter, { retryAfter: Duration.millis(10) }, 429)
      // three windows pass without a word to the limiter; two of them calm ones after the first
      yield* TestClock.adjust("3 seconds")
      yield* learnFrom(limiter, { retryAfter: Duration.millis(10) }, 429)
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
        yield* learnFrom(limiter, { retryAfter: Duration.millis(10) }, 429)
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
      yield* learnFrom(limiter, { retryAfter: Duration.millis(10) }, 429)
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
      yield* learnFrom(limiter, {}, 429)
      assert.strictEqual((yield* bucket(limiter)).blockedMs, 1_000)
      assert.isTrue(yield* limiter.wouldWait(ticket()))
      yield* learnFrom(limiter, { retryAfter: Duration.seconds(5) }, 429)
      yield* TestClock.adjust("1 second")
      yield* learnFrom(limiter, { retryAfter: Duration.millis(100) }, 429)
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

  it.effect("a successful answer neither closes the bucket nor widens the margin", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ margin: "100 millis", limits: { m: { rpm: 100, tpm: 100_000 } } })
      yield* learnFrom(limiter, { retryAfter: Duration.seconds(5) }, 200)
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
        yield* learnFrom(limiter, { retryAfter: Duration.millis(10) }, 429)
        margins.push((yield* bucket(limiter)).marginMs)
        // one window later exactly: a new misjudgement
        yield* TestClock.adjust("1 second")
      }
      assert.deepStrictEqual(margins, Array.from({ length: 24 }, (_, i) => Math.min(5_000, 100 + 250 * (i + 1))))
    }))
})
