import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import type * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as ClientMetrics from "../../src/layers/ClientMetrics.js"
import type * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import type { LimiterUnavailable, RequestTooLarge } from "../../src/schemas/Errors.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"
import { type Calls, countingStore, limiterOn, memoryStoreWith, refusal } from "../helpers/stores.js"

const limiterWith = (options: RateLimiter.Options) =>
  Effect.provide(RateLimiter.RateLimiter, RateLimiter.layer({ margin: 0, ...options }))

const ticket = (tokens = 10, model = "m") => ({ key: "key#1", model, tokens })

/** Moves the TestClock in steps until `fiber` is done; bounded in steps. */
const driveUntilDone = <A, E>(fiber: Fiber.Fiber<A, E>, step: Duration.DurationInput, maxSteps = 1000) =>
  Effect.gen(function*() {
    for (let i = 0; i < maxSteps; i++) {
      if (Option.isSome(yield* Fiber.poll(fiber))) return yield* Fiber.join(fiber)
      yield* TestClock.adjust(step)
    }
    return yield* Effect.dieMessage(`not done after ${maxSteps} steps`)
  })

/** The result of `fiber` once the fibers it waits on have run (a few yields), or a failed assertion: never a hang. */
const settled = <A, E>(fiber: Fiber.Fiber<A, E>, what: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 50; i++) {
      const exit = yield* Fiber.poll(fiber)
      if (Option.isSome(exit)) return yield* exit.value
      yield* Effect.yieldNow()
    }
    return assert.fail(`${what}: still waiting`)
  })

/** The largest number of admissions within any interval of `windowMs` starting at an admission. */
const maxInAnyWindow = (times: ReadonlyArray<number>, windowMs: number): number =>
  Math.max(0, ...times.map((t) => times.filter((u) => u >= t && u < t + windowMs).length))

describe("RateLimiter", () => {
  it.effect("never admits more than the request quota in any interval of the window's length", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 5, tpm: 1_000_000 } }, window: "10 seconds" })
      const times: Array<number> = []
      const all = Effect.forEach(
        Array.from({ length: 23 }, () => ticket()),
        (t) =>
          Effect.zipRight(
            limiter.acquire(t),
            Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => times.push(now)))
          ),
        { concurrency: "unbounded" }
      )
      const fiber = yield* Effect.fork(all)
      yield* driveUntilDone(fiber, "250 millis")
      assert.strictEqual(times.length, 23)
      assert.strictEqual(maxInAnyWindow(times, 10_000), 5)
      // and it used the quota: 23 requests at 5 per 10 s take four full windows, not more
      assert.isAtMost(Math.max(...times), 40_250)
    }))

  it.effect("never admits more than the token quota in any window, and a request that can never fit fails at once", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 1000, tpm: 100 } }, window: "10 seconds" })
      const times: Array<number> = []
      const fiber = yield* Effect.fork(Effect.forEach(
        Array.from({ length: 9 }, () => ticket(30)),
        (t) =>
          Effect.zipRight(
            limiter.acquire(t),
            Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => times.push(now)))
          ),
        { concurrency: "unbounded" }
      ))
      yield* driveUntilDone(fiber, "500 millis")
      assert.strictEqual(maxInAnyWindow(times, 10_000), 3)
      const error = yield* refusal(limiter.acquire(ticket(101)))
      assert.strictEqual(error._tag, "RequestTooLarge")
      assert.strictEqual(error.limit, 100)
      assert.strictEqual(error.requested, 101)
    }))

  it.effect("serves waiting callers in arrival order", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 1, tpm: 1_000_000 } }, window: "1 second" })
      const order: Array<number> = []
      const fibers = []
      for (let i = 0; i < 6; i++) {
        fibers.push(yield* Effect.fork(Effect.zipRight(limiter.acquire(ticket()), Effect.sync(() => order.push(i)))))
        yield* Effect.yieldNow()
      }
      yield* driveUntilDone(Fiber.all(fibers), "100 millis")
      assert.deepStrictEqual(order, [0, 1, 2, 3, 4, 5])
    }))

  it.effect("an interrupted waiter gives up its place and the ones behind it move up", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 1, tpm: 1_000_000 } }, window: "10 seconds" })
      yield* limiter.acquire(ticket())
      const head = yield* Effect.fork(limiter.acquire(ticket()))
      yield* Effect.yieldNow()
      const second = yield* Effect.fork(limiter.acquire(ticket()))
      yield* Effect.yieldNow()
      const third = yield* Effect.fork(limiter.acquire(ticket()))
      yield* Effect.yieldNow()
      assert.strictEqual((yield* limiter.snapshot)[0]?.waiting, 3)
      yield* Fiber.interrupt(second)
      assert.strictEqual((yield* limiter.snapshot)[0]?.waiting, 2)
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(head)
      assert.isTrue(Option.isNone(yield* Fiber.poll(third)))
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(third)
      // the interrupted caller's request was never counted
      assert.strictEqual((yield* limiter.snapshot)[0]?.usedRequests, 1)
    }))

  it.effect("interrupting the caller at the head, or one whose turn has just come, hands the turn on", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 1, tpm: 1_000_000 } }, window: "10 seconds" })
      yield* limiter.acquire(ticket())
      // the head sleeps until the window passes; `next` and `last` wait in line behind it
      const head = yield* Effect.fork(limiter.acquire(ticket()))
      yield* Effect.yieldNow()
      const next = yield* Effect.fork(limiter.acquire(ticket()))
      const last = yield* Effect.fork(limiter.acquire(ticket()))
      yield* Effect.yieldNow()
      // both interrupted at once: the head hands its turn to `next`, whose interruption is already on its way,
      // so `next` is interrupted with the turn in hand and must hand it to `last`
      yield* Fiber.interruptFork(head)
      yield* Fiber.interruptFork(next)
      yield* TestClock.adjust("10 seconds")
      yield* settled(last, "the caller behind an interrupted turn")
      assert.isTrue(Exit.isInterrupted(yield* Fiber.await(next)))
      const [state] = yield* limiter.snapshot
      assert.strictEqual(state?.waiting, 0)
      assert.strictEqual(state?.usedRequests, 1)
      // and the line is free for the next caller
      const after = yield* Effect.fork(limiter.acquire(ticket()))
      yield* TestClock.adjust("10 seconds")
      yield* settled(after, "the next caller")
    }))

  it.effect("random arrivals and interruptions: the rest are admitted in arrival order, within the quota, none left", () =>
    Effect.gen(function*() {
      const scenarios = FastCheck.sample(
        FastCheck.array(FastCheck.record({ interrupt: FastCheck.boolean(), afterSteps: FastCheck.nat(12) }), {
          minLength: 1,
          maxLength: 30
        }),
        20
      )
      for (const callers of scenarios) {
        const limiter = yield* limiterWith({ limits: { m: { rpm: 3, tpm: 1_000_000 } }, window: "1 second" })
        const admittedBefore = (yield* Metric.value(ClientMetrics.limiterAdmitted)).count
        const admitted: Array<{ readonly index: number; readonly at: number }> = []
        const fibers: Array<Fiber.RuntimeFiber<number, unknown>> = []
        for (const [index] of callers.entries()) {
          fibers.push(
            yield* Effect.fork(
              Effect.flatMap(
                limiter.acquire(ticket()),
                () => Effect.flatMap(Clock.currentTimeMillis, (at) => Effect.sync(() => admitted.push({ index, at })))
              )
            )
          )
          yield* Effect.yieldNow()
        }
        // interruptions land at their times while the clock moves on
        const due = callers.flatMap((caller, index) => caller.interrupt ? [{ index, step: caller.afterSteps }] : [])
        // 30 callers at 3 a second need 10 s: 60 steps of 250 ms bound the run
        for (let step = 0; step < 60; step++) {
          for (const { index } of due.filter((d) => d.step === step)) yield* Fiber.interrupt(fibers[index]!)
          if ((yield* Effect.forEach(fibers, Fiber.poll)).every(Option.isSome)) break
          yield* TestClock.adjust("250 millis")
        }
        const cancelled = new Set(due.map((d) => d.index))
        const order = admitted.map((a) => a.index)
        // everyone not interrupted (or interrupted only after admission) got through, in arrival order
        assert.deepStrictEqual(order, [...order].sort((a, b) => a - b))
        for (const [index] of callers.entries()) {
          if (!cancelled.has(index)) assert.include(order, index)
        }
        assert.isAtMost(maxInAnyWindow(admitted.map((a) => a.at), 1_000), 3)
        const [state] = yield* limiter.snapshot
        assert.strictEqual(state?.waiting, 0)
        // every entry the store admitted reached a caller
        assert.strictEqual((yield* Metric.value(ClientMetrics.limiterAdmitted)).count - admittedBefore, admitted.length)
      }
    }))

  it.effect("reconciles with usage: higher usage raises the count, lower usage is kept unless configured", () =>
    Effect.gen(function*() {
      const keep = yield* limiterWith({ limits: { m: { rpm: 100, tpm: 1000 } } })
      const p1 = yield* keep.acquire(ticket(300))
      yield* p1.reconcile(100)
      assert.strictEqual((yield* keep.snapshot)[0]?.usedTokens, 300)
      yield* p1.reconcile(450)
      assert.strictEqual((yield* keep.snapshot)[0]?.usedTokens, 450)

      const actual = yield* limiterWith({ limits: { m: { rpm: 100, tpm: 1000 } }, reconcile: "actual" })
      const p2 = yield* actual.acquire(ticket(300))
      yield* p2.reconcile(100)
      assert.strictEqual((yield* actual.snapshot)[0]?.usedTokens, 100)
    }))

  it.effect("a caller waiting for tokens goes as soon as a reservation shrinks or comes back, not at the next expiry", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        limits: { m: { rpm: 100, tpm: 1000 } },
        window: "10 seconds",
        reconcile: "actual"
      })
      // 600 reserved (prompt + max_tokens); the next 600 must wait, the window would free them in 10 s
      const first = yield* limiter.acquire(ticket(600))
      const second = yield* Effect.fork(limiter.acquire(ticket(600)))
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(second)))
      // the answer said 250 tokens: 850 fit, and the head of the line goes without the clock moving
      yield* first.reconcile(250)
      const granted = yield* settled(second, "the head after a reservation shrank")
      assert.strictEqual((yield* limiter.snapshot)[0]?.usedTokens, 850)
      // the same when a reservation is given back
      const third = yield* Effect.fork(limiter.acquire(ticket(600)))
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(third)))
      yield* granted.cancel
      yield* settled(third, "the head after a reservation came back")
      assert.strictEqual(yield* Clock.currentTimeMillis, 0)
    }))

  it.effect("capacity that comes back while the store is answering the head is not missed", () =>
    Effect.gen(function*() {
      // a store whose second answer is held back until the test lets it go
      const gate = yield* Deferred.make<void>()
      let reserves = 0
      const heldStore = memoryStoreWith((inner) => ({
        reserve: (...args) =>
          Effect.flatMap(
            inner.reserve(...args),
            (answer) => ++reserves === 2 ? Effect.as(Deferred.await(gate), answer) : Effect.succeed(answer)
          )
      }))
      const limiter = yield* Effect.provide(
        RateLimiter.RateLimiter,
        limiterOn(heldStore, {
          margin: 0,
          limits: { m: { rpm: 100, tpm: 1000 } },
          window: "10 seconds",
          reconcile: "actual"
        })
      )
      const first = yield* limiter.acquire(ticket(600))
      const second = yield* Effect.fork(limiter.acquire(ticket(600)))
      yield* Effect.yieldNow()
      // the store is about to say "wait 10 s" when the first answer gives 350 tokens back
      yield* first.reconcile(250)
      yield* Deferred.succeed(gate, undefined)
      yield* settled(second, "the head whose capacity came back during the store's answer")
    }))

  it.effect("a request to an idle bucket is admitted in one step by the store's reserve.now; a busy bucket's waits in line", () =>
    Effect.gen(function*() {
      // `effect`: the calls of reserve
      const calls: Calls = { now: 0, effect: 0 }
      const counting = (withNow: boolean) => countingStore("reserve", calls, withNow)
      const options = { margin: 0, window: "10 seconds", limits: { m: { rpm: 2, tpm: 1_000_000 } } } as const
      const limiter = yield* Effect.provide(RateLimiter.RateLimiter, limiterOn(counting(true), options))
      yield* limiter.acquire(ticket())
      yield* limiter.acquire(ticket())
      assert.deepStrictEqual(calls, { now: 2, effect: 0 })
      // the window is full: reserve.now changes nothing, the caller waits in line through reserve until it frees
      const third = yield* Effect.fork(limiter.acquire(ticket()))
      const permit = yield* driveUntilDone(third, "1 second")
      assert.strictEqual(permit.tokens, 10)
      assert.strictEqual(calls.now, 3)
      assert.isAtLeast(calls.effect, 2)
      assert.strictEqual(yield* Clock.currentTimeMillis, 10_000)
      // the window full again (one more goes at once), and while the line is busy no request asks past it
      yield* limiter.acquire(ticket())
      calls.effect = 0
      calls.now = 0
      const waiting = yield* Effect.fork(limiter.acquire(ticket()))
      yield* Effect.yieldNow()
      const behind = yield* Effect.fork(limiter.acquire(ticket()))
      yield* driveUntilDone(waiting, "1 second")
      yield* driveUntilDone(behind, "1 second")
      assert.strictEqual(calls.now, 1, "only the first asked reserve.now: the second found the line busy")
      assert.isAtLeast(calls.effect, 2)
      // a store without reserve.now: every request through reserve
      calls.effect = 0
      const plain = yield* Effect.provide(RateLimiter.RateLimiter, limiterOn(counting(false), options))
      yield* plain.acquire(ticket())
      yield* plain.acquire(ticket())
      assert.deepStrictEqual(calls.effect, 2)
    }))

  it.effect("an answer settles its permit by the store's restamp.now while nothing is learnt; else, or without it, by restamp", () =>
    Effect.gen(function*() {
      // `effect`: the calls of restamp
      const calls: Calls = { now: 0, effect: 0 }
      const counting = (withNow: boolean) => countingStore("restamp", calls, withNow)
      const options = { margin: 0, window: "10 seconds", limits: { m: { rpm: 1, tpm: 1_000_000 } } } as const
      // the next request waits until the first's entry leaves the window: 10 s after its answer came, not its sending
      const waitAfterAnswer = (store: Layer.Layer<LimiterStore.LimiterStore>, answer: "succeeded" | "answered") =>
        Effect.gen(function*() {
          const limiter = yield* Effect.provide(RateLimiter.RateLimiter, limiterOn(store, options))
          const start = yield* Clock.currentTimeMillis
          const first = yield* limiter.acquire(ticket())
          yield* TestClock.adjust("3 seconds")
          yield* first[answer]
          const next = yield* Effect.fork(limiter.acquire(ticket()))
          yield* driveUntilDone(next, "1 second")
          return (yield* Clock.currentTimeMillis) - start
        })
      assert.strictEqual(yield* waitAfterAnswer(counting(true), "succeeded"), 13_000)
      assert.deepStrictEqual(calls, { now: 1, effect: 0 })
      assert.strictEqual(yield* waitAfterAnswer(counting(true), "answered"), 13_000)
      assert.deepStrictEqual(calls, { now: 2, effect: 0 })
      // without restamp.now, the same through restamp
      assert.strictEqual(yield* waitAfterAnswer(counting(false), "succeeded"), 13_000)
      assert.deepStrictEqual(calls, { now: 2, effect: 1 })
      // a limiter that learns its limits observes every answer: through restamp, whose count it learns from
      const learning = yield* Effect.provide(RateLimiter.RateLimiter, limiterOn(counting(true), { tier: "auto" }))
      const permit = yield* learning.acquire(ticket())
      yield* permit.succeeded
      assert.deepStrictEqual(calls, { now: 2, effect: 2 })
    }))

  it.effect("onGranted sees a permit granted just as its caller is interrupted, so that the caller can give it back", () =>
    Effect.gen(function*() {
      // the store's answer to an admitted reservation is held up (its I/O): the interruption lands meanwhile
      const gate = yield* Deferred.make<void>()
      let hold = false
      const slowStore = memoryStoreWith((inner) => ({
        reserve: (...args) => Effect.tap(inner.reserve(...args), () => hold ? Deferred.await(gate) : Effect.void)
      }))
      const limiter = yield* Effect.provide(
        RateLimiter.RateLimiter,
        limiterOn(slowStore, { margin: 0, limits: { m: { rpm: 100, tpm: 1_000_000 } } })
      )
      let received = 0
      let granted: RateLimiter.Permit | undefined
      hold = true
      // the guard of a caller that waits interruptibly inside an uninterruptible region (as the transport does)
      const caller = yield* Effect.fork(
        Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(
            Effect.exit(restore(limiter.acquire(ticket(), (permit) => {
              granted = permit
            }))),
            (exit): Effect.Effect<void, RequestTooLarge | LimiterUnavailable> =>
              Exit.isSuccess(exit)
                ? Effect.sync(() => {
                  received++
                })
                : Effect.zipRight(granted?.cancel ?? Effect.void, Effect.asVoid(exit))
          )
        )
      )
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
      yield* Fiber.interruptFork(caller)
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
      hold = false
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.await(caller)
      // the interruption won: the caller never received the permit, its guard gave it back
      assert.strictEqual(received, 0)
      assert.isDefined(granted)
      assert.strictEqual((yield* limiter.snapshot)[0]?.usedRequests, 0)
    }))

  it.effect("an answered request counts from the answer, so it never leaves the window before the server's count", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 1, tpm: 1_000_000 } }, window: "10 seconds" })
      const permit = yield* limiter.acquire(ticket())
      // the request took 2 s to reach the server and be answered
      yield* TestClock.adjust("2 seconds")
      yield* permit.answered
      const next = yield* Effect.fork(limiter.acquire(ticket()))
      yield* TestClock.adjust("8 seconds")
      assert.isTrue(Option.isNone(yield* Fiber.poll(next)))
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(next)
    }))

  it.effect("a failed request gives back what it reserved: tokens always, the request when never counted", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 100, tpm: 1000 } } })
      const refunded = yield* limiter.acquire(ticket(300))
      yield* refunded.refund
      const cancelled = yield* limiter.acquire(ticket(200))
      yield* cancelled.cancel
      const state = (yield* limiter.snapshot)[0]
      assert.strictEqual(state?.usedTokens, 0)
      assert.strictEqual(state?.usedRequests, 1)
    }))

  it.effect("live headers replace the preset limits and count usage the process did not send", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ tier: "standard4000" })
      yield* limiter.acquire(ticket(10, "gpt-4o"))
      yield* limiter.learn(
        "key#1",
        "gpt-4o",
        new RateLimitInfo({
          limitRequests: 3,
          limitTokens: 500,
          remainingRequests: 1,
          remainingTokens: 400,
          observedAt: 0
        }),
        200
      )
      const state = (yield* limiter.snapshot).find((s) => s.model === "gpt-4o")
      assert.strictEqual(state?.limitRequests, 3)
      assert.strictEqual(state?.limitTokens, 500)
      assert.isTrue(state?.fromHeaders)
      // the server counts 2 requests and 100 tokens; this process sent 1 request of 10 tokens
      assert.strictEqual(state?.usedRequests, 2)
      assert.strictEqual(state?.usedTokens, 100)
      // one more fits, the next waits for the window
      yield* limiter.acquire(ticket(10, "gpt-4o"))
      assert.isTrue(yield* limiter.wouldWait(ticket(10, "gpt-4o")))
    }))

  it.effect("an unpredicted 429 closes the bucket until the server's reset and widens the margin", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 100, tpm: 100_000 } }, margin: "100 millis" })
      yield* limiter.learn("key#1", "m", new RateLimitInfo({ retryAfter: Duration.seconds(3), observedAt: 0 }), 429)
      const state = (yield* limiter.snapshot)[0]
      assert.strictEqual(state?.blockedMs, 3000)
      assert.strictEqual(state?.marginMs, 350)
      const fiber = yield* Effect.fork(limiter.acquire(ticket()))
      yield* TestClock.adjust("2999 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust("1 millis")
      yield* Fiber.join(fiber)
    }))

  it.effect("a widened margin narrows a step per calm window after the first, back to the configured one", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        limits: { m: { rpm: 100, tpm: 100_000 } },
        margin: "100 millis",
        window: "10 seconds"
      })
      const margin = Effect.map(limiter.snapshot, (states) => states[0]?.marginMs)
      const unpredicted429 = Effect.flatMap(
        Clock.currentTimeMillis,
        (now) =>
          limiter.learn("key#1", "m", new RateLimitInfo({ retryAfter: Duration.seconds(1), observedAt: now }), 429)
      )
      yield* unpredicted429
      assert.strictEqual(yield* margin, 350)
      // a second 429 in the same window is the same misjudgement; one a window later widens again
      yield* unpredicted429
      assert.strictEqual(yield* margin, 350)
      yield* TestClock.adjust("10 seconds")
      yield* unpredicted429
      assert.strictEqual(yield* margin, 600)
      // calm: the first window keeps it, each further one narrows it by a step
      yield* TestClock.adjust("19999 millis")
      assert.strictEqual(yield* margin, 600)
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* margin, 350)
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(yield* margin, 100)
      yield* TestClock.adjust("60 seconds")
      assert.strictEqual(yield* margin, 100, "never below the configured margin")
      // a 429 after the calm widens from the configured margin again
      yield* unpredicted429
      assert.strictEqual(yield* margin, 350)
    }))

  it.effect("estimates a chat body: prompt plus the output cap, or the default cap, or the learnt one", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ defaultMaxOutputTokens: 500 })
      const body = { model: "m", messages: [{ role: "user", content: "Hello there" }] }
      // 3 priming + 3 per message + "Hello" (2) + "there" (2)
      assert.deepStrictEqual(limiter.cost("/chat/completions", { ...body, max_tokens: 50 }), { model: "m", tokens: 60 })
      assert.deepStrictEqual(limiter.cost("/chat/completions", body), { model: "m", tokens: 510 })
      assert.deepStrictEqual(limiter.cost("/embeddings", { model: "e", input: ["abcd", "abcdefgh"] }), {
        model: "e",
        tokens: 3
      })
    }))
})
