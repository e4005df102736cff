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
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as ClientMetrics from "../../src/layers/ClientMetrics.js"
import type * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import { RateLimited, type RequestTooLarge } from "../../src/schemas/Errors.js"
import { ModelList } from "../../src/schemas/Models.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"
import { type Calls, countingStore, limiterOn, memoryStoreWith } from "../helpers/stores.js"

const limiterWith = (options: RateLimiter.Options) =>
  Effect.provide(RateLimiter.RateLimiter, RateLimiter.layer({ margin: 0, ...options }))

/** A request of `input` tokens (no output reserved) on key `key#1` and `model`. */
const ticket = (input = 10, model = "m"): RateLimiter.Ticket => ({ key: "key#1", model, input })

/** The state of `model`'s bucket now. */
const stateOf = (limiter: RateLimiter.RateLimiter.Service, model = "m") =>
  Effect.map(limiter.snapshot, (states) => states.find((s) => s.model === model))

/** What the window of `model`'s bucket counts now, budget by budget. */
const usedOf = (limiter: RateLimiter.RateLimiter.Service, model = "m") =>
  Effect.map(stateOf(limiter, model), (state) => ({
    requests: state?.budgets.requests.used,
    input: state?.budgets.input.used,
    output: state?.budgets.output.used,
    tokens: state?.budgets.tokens.used
  }))

/** The `RequestTooLarge` an acquisition fails with (any other end fails the test). */
const tooLarge = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Effect.flip(effect),
    (error) =>
      error._tag === "RequestTooLarge"
        ? Effect.succeed(error as unknown as RequestTooLarge)
        : Effect.dieMessage(`expected RequestTooLarge, got ${error._tag}`)
  )

/** A 429 refusal as the transport reads it, asking for `retryAfter` (none when undefined). */
const refusedWith = (retryAfter?: Duration.DurationInput) =>
  new RateLimited({
    message: "Rate limit reached",
    status: 429,
    ...(retryAfter === undefined ? {} : { retryAfter: Duration.decode(retryAfter) })
  })

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

/** The times at which `tickets` are admitted, all asked at once, with the clock moved in `step`s until all are. */
const admissionTimes = (
  limiter: RateLimiter.RateLimiter.Service,
  tickets: ReadonlyArray<RateLimiter.Ticket>,
  step: Duration.DurationInput
) =>
  Effect.gen(function*() {
    const times: Array<number> = []
    const fiber = yield* Effect.fork(Effect.forEach(
      tickets,
      (t) =>
        Effect.zipRight(
          limiter.acquire(t),
          Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => times.push(now)))
        ),
      { concurrency: "unbounded" }
    ))
    yield* driveUntilDone(fiber, step)
    return times
  })

describe("RateLimiter", () => {
  it.effect("never admits more than the request quota in any interval of the window's length", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 5, tpm: 1_000_000 } }, window: "10 seconds" })
      const times = yield* admissionTimes(limiter, Array.from({ length: 23 }, () => ticket()), "250 millis")
      assert.strictEqual(times.length, 23)
      assert.strictEqual(maxInAnyWindow(times, 10_000), 5)
      // and it used the quota: 23 requests at 5 per 10 s take four full windows, not more
      assert.isAtMost(Math.max(...times), 40_250)
    }))

  it.effect("never admits more than the combined token quota in any window, and a request that can never fit fails at once", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 1000, tpm: 100 } }, window: "10 seconds" })
      const times = yield* admissionTimes(limiter, Array.from({ length: 9 }, () => ticket(30)), "500 millis")
      assert.strictEqual(times.length, 9)
      assert.strictEqual(maxInAnyWindow(times, 10_000), 3)
      const error = yield* tooLarge(limiter.acquire(ticket(101)))
      assert.strictEqual(error.budget, "tokens")
      assert.strictEqual(error.limit, 100)
      assert.strictEqual(error.requested, 101)
      // the combined budget counts input and output together: 60 in and 41 out do not fit either
      const split = yield* tooLarge(limiter.acquire({ key: "key#1", model: "m", input: 60, output: 41 }))
      assert.deepInclude(split, { budget: "tokens", requested: 101, limit: 100 })
    }))

  it.effect("each budget binds on its own: input and output tokens, each in any window and each refused when too large", () =>
    Effect.gen(function*() {
      for (
        const [budget, quota, request] of [
          ["input", { rpm: 1000, itpm: 100, otpm: 1_000_000 }, { input: 30, output: 1 }],
          ["output", { rpm: 1000, itpm: 1_000_000, otpm: 100 }, { input: 1, output: 30 }]
        ] as const
      ) {
        const limiter = yield* limiterWith({ limits: { m: quota }, window: "10 seconds" })
        const times = yield* admissionTimes(
          limiter,
          Array.from({ length: 9 }, () => ({ key: "key#1", model: "m", ...request })),
          "500 millis"
        )
        assert.strictEqual(maxInAnyWindow(times, 10_000), 3, budget)
        const state = yield* stateOf(limiter)
        assert.strictEqual(state?.binding, budget, budget)
        assert.deepInclude(state?.budgets[budget], { limit: 100, source: "configured" }, budget)
        const error = yield* tooLarge(limiter.acquire({ key: "key#1", model: "m", [budget]: 101 }))
        assert.deepInclude(error, { budget, requested: 101, limit: 100 }, budget)
      }
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
      assert.strictEqual((yield* stateOf(limiter))?.waiting, 3)
      yield* Fiber.interrupt(second)
      assert.strictEqual((yield* stateOf(limiter))?.waiting, 2)
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(head)
      assert.isTrue(Option.isNone(yield* Fiber.poll(third)))
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(third)
      // the interrupted caller's request was never counted
      assert.deepStrictEqual(yield* usedOf(limiter), { requests: 1, input: 10, output: 0, tokens: 10 })
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
      const state = yield* stateOf(limiter)
      assert.strictEqual(state?.waiting, 0)
      assert.strictEqual(state?.budgets.requests.used, 1)
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
        const state = yield* stateOf(limiter)
        assert.strictEqual(state?.waiting, 0)
        // every entry the store admitted reached a caller
        assert.strictEqual((yield* Metric.value(ClientMetrics.limiterAdmitted)).count - admittedBefore, admitted.length)
      }
    }))

  it.effect("reconciles with usage: higher usage raises the count, lower usage is kept unless configured", () =>
    Effect.gen(function*() {
      const keep = yield* limiterWith({ limits: { m: { rpm: 100, tpm: 1000 } } })
      const p1 = yield* keep.acquire(ticket(300))
      yield* p1.reconcile({ input: 100, output: 0 })
      assert.deepStrictEqual(yield* usedOf(keep), { requests: 1, input: 300, output: 0, tokens: 300 })
      yield* p1.reconcile({ input: 450, output: 0 })
      assert.deepStrictEqual(yield* usedOf(keep), { requests: 1, input: 450, output: 0, tokens: 450 })

      const actual = yield* limiterWith({ limits: { m: { rpm: 100, tpm: 1000 } }, reconcile: "actual" })
      const p2 = yield* actual.acquire(ticket(300))
      yield* p2.reconcile({ input: 100, output: 0 })
      assert.deepStrictEqual(yield* usedOf(actual), { requests: 1, input: 100, output: 0, tokens: 100 })
    }))

  it.effect("a caller waiting for tokens goes as soon as a reservation shrinks or comes back, not at the next expiry", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        limits: { m: { rpm: 100, tpm: 1000 } },
        window: "10 seconds",
        reconcile: "actual"
      })
      // 600 reserved (prompt + max_tokens); the next 600 must wait, the window would free them in 10 s
      const first = yield* limiter.acquire({ key: "key#1", model: "m", input: 100, output: 500 })
      const second = yield* Effect.fork(limiter.acquire(ticket(600)))
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(second)))
      // the answer said 100 in and 150 out: 850 fit, and the head of the line goes without the clock moving
      yield* first.reconcile({ input: 100, output: 150 })
      const granted = yield* settled(second, "the head after a reservation shrank")
      assert.strictEqual((yield* stateOf(limiter))?.budgets.tokens.used, 850)
      // the same when a reservation is given back
      const third = yield* Effect.fork(limiter.acquire(ticket(600)))
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(third)))
      yield* granted.settle("unsent")
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
      assert.isTrue(Option.isNone(yield* Fiber.poll(second)))
      // the store is about to say "wait 10 s" when the first answer gives 350 tokens back
      yield* first.reconcile({ input: 250, output: 0 })
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
      assert.deepStrictEqual(permit.cost, { requests: 1, input: 10, output: 0, tokens: 10 })
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
      const waitAfterAnswer = (
        store: Layer.Layer<LimiterStore.LimiterStore>,
        outcome: "succeeded" | "unanswered" | "failed"
      ) =>
        Effect.gen(function*() {
          const limiter = yield* Effect.provide(RateLimiter.RateLimiter, limiterOn(store, options))
          const start = yield* Clock.currentTimeMillis
          const first = yield* limiter.acquire(ticket())
          yield* TestClock.adjust("3 seconds")
          yield* first.settle(outcome)
          const next = yield* Effect.fork(limiter.acquire(ticket()))
          yield* driveUntilDone(next, "1 second")
          return (yield* Clock.currentTimeMillis) - start
        })
      assert.strictEqual(yield* waitAfterAnswer(counting(true), "succeeded"), 13_000)
      assert.deepStrictEqual(calls, { now: 1, effect: 0 })
      assert.strictEqual(yield* waitAfterAnswer(counting(true), "unanswered"), 13_000)
      assert.deepStrictEqual(calls, { now: 2, effect: 0 })
      // an error answer restamps as well (then gives its tokens back)
      assert.strictEqual(yield* waitAfterAnswer(counting(true), "failed"), 13_000)
      assert.deepStrictEqual(calls, { now: 3, effect: 0 })
      // without restamp.now, the same through restamp
      assert.strictEqual(yield* waitAfterAnswer(counting(false), "succeeded"), 13_000)
      assert.deepStrictEqual(calls, { now: 3, effect: 1 })
      // a limiter that learns its limits observes every answer: through restamp, whose count it learns from
      const learning = yield* Effect.provide(RateLimiter.RateLimiter, limiterOn(counting(true), { tier: "auto" }))
      const permit = yield* learning.acquire(ticket())
      yield* permit.settle("succeeded")
      assert.deepStrictEqual(calls, { now: 3, effect: 2 })
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
            (exit): Effect.Effect<void, RateLimiter.Refusal> =>
              Exit.isSuccess(exit)
                ? Effect.sync(() => {
                  received++
                })
                : Effect.zipRight(granted?.settle("unsent") ?? Effect.void, Effect.asVoid(exit))
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
      assert.deepStrictEqual(yield* usedOf(limiter), { requests: 0, input: 0, output: 0, tokens: 0 })
    }))

  it.effect("an answered request counts from the answer, so it never leaves the window before the server's count", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 1, tpm: 1_000_000 } }, window: "10 seconds" })
      const permit = yield* limiter.acquire(ticket())
      // the request took 2 s to reach the server, and no answer came
      yield* TestClock.adjust("2 seconds")
      yield* permit.settle("unanswered")
      const next = yield* Effect.fork(limiter.acquire(ticket()))
      yield* TestClock.adjust("8 seconds")
      assert.isTrue(Option.isNone(yield* Fiber.poll(next)))
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(next)
    }))

  it.effect("a failed request gives back what it reserved: tokens always, the request when never counted", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 100, tpm: 1000 } } })
      const refunded = yield* limiter.acquire({ key: "key#1", model: "m", input: 300, output: 100 })
      yield* refunded.settle("failed")
      const cancelled = yield* limiter.acquire({ key: "key#1", model: "m", input: 200, output: 100 })
      yield* cancelled.settle("unsent")
      assert.deepStrictEqual(yield* usedOf(limiter), { requests: 1, input: 0, output: 0, tokens: 0 })
    }))

  it.effect("a permit settles once: a later settlement changes nothing and paces nothing", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 1, tpm: 1000 } } })
      const permit = yield* limiter.acquire(ticket(300))
      assert.isFalse(yield* permit.settle("unsent"))
      // a throttled settlement at the limit would close the bucket: as a second settlement, it does nothing
      assert.isFalse(yield* permit.settle("throttled", refusedWith("5 seconds")))
      yield* permit.settle("succeeded")
      const state = yield* stateOf(limiter)
      assert.deepStrictEqual(yield* usedOf(limiter), { requests: 0, input: 0, output: 0, tokens: 0 })
      assert.strictEqual(state?.blockedMs, 0)
    }))

  it.effect("a snapshot shows what the window counts now: entries that left it are not counted", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 10, tpm: 1000 } }, window: "10 seconds" })
      const permit = yield* limiter.acquire(ticket(300))
      yield* permit.settle("succeeded")
      yield* TestClock.adjust("9999 millis")
      // asking the store (wouldWait does) is what the snapshot should do by itself
      yield* limiter.wouldWait(ticket())
      assert.deepStrictEqual(yield* usedOf(limiter), { requests: 1, input: 300, output: 0, tokens: 300 })
      yield* TestClock.adjust("1 millis")
      yield* limiter.wouldWait(ticket())
      assert.deepStrictEqual(yield* usedOf(limiter), { requests: 0, input: 0, output: 0, tokens: 0 })
    }))

  // KNOWN BUG (reported, src/layers/RateLimiter.ts `snapshot`): the buckets to refresh are listed once, when the
  // limiter is built (none then), so a snapshot shows the usage of the bucket's last store operation instead of the
  // window's count now. Remove `.fails` once `snapshot` asks the store for every bucket each time it runs.
  it.effect("a snapshot alone asks the store: an entry that left the window is not counted", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 10, tpm: 1000 } }, window: "10 seconds" })
      const permit = yield* limiter.acquire(ticket(300))
      yield* permit.settle("succeeded")
      yield* TestClock.adjust("10 seconds")
      assert.deepStrictEqual(yield* usedOf(limiter), { requests: 0, input: 0, output: 0, tokens: 0 })
    }))

  it.effect("live headers replace the preset limits they name and count usage the process did not send", () =>
    Effect.gen(function*() {
      // standard4000's table gives gpt-4o 30,000 requests, 30M input and 30M output tokens, no combined budget
      const limiter = yield* limiterWith({ tier: "standard4000" })
      yield* limiter.acquire(ticket(10, "gpt-4o"))
      const before = yield* stateOf(limiter, "gpt-4o")
      assert.deepInclude(before?.budgets.requests, { limit: 30_000, source: "plan" })
      assert.deepInclude(before?.budgets.tokens, { limit: undefined, source: "unknown" })
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
      const state = yield* stateOf(limiter, "gpt-4o")
      assert.deepInclude(state?.budgets.requests, { limit: 3, source: "header" })
      assert.deepInclude(state?.budgets.tokens, { limit: 500, source: "header" })
      // the headers say nothing of input and output: the plan's limits stay
      assert.deepInclude(state?.budgets.input, { limit: 30_000_000, source: "plan" })
      assert.deepInclude(state?.budgets.output, { limit: 30_000_000, source: "plan" })
      // the server counts 2 requests and 100 tokens; this process sent 1 request of 10 tokens
      assert.strictEqual(state?.budgets.requests.used, 2)
      assert.strictEqual(state?.budgets.tokens.used, 100)
      // one more fits, the next waits for the window
      yield* limiter.acquire(ticket(10, "gpt-4o"))
      assert.isTrue(yield* limiter.wouldWait(ticket(10, "gpt-4o")))
    }))

  it.effect("a 429 at a limit closes the bucket for the server's time and widens the margin; its headers alone do neither", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 10, tpm: 100_000 } }, margin: "100 millis" })
      // the headers of a 429 teach limits, nothing more (this used to close the bucket and widen the margin)
      yield* limiter.learn("key#1", "m", new RateLimitInfo({ retryAfter: Duration.seconds(3), observedAt: 0 }), 429)
      assert.deepInclude(yield* stateOf(limiter), { blockedMs: 0, marginMs: 100 })
      // the window holds 10 of 10 requests when the last is refused: a refusal at the limit
      const permits = yield* Effect.forEach(Array.from({ length: 10 }, () => ticket()), (t) => limiter.acquire(t))
      assert.isFalse(yield* permits[9]!.settle("throttled", refusedWith("3 seconds")))
      assert.deepInclude(yield* stateOf(limiter), { blockedMs: 3000, marginMs: 350 })
      // the window has room again (the refused request was removed), yet the bucket stays closed for 3 s
      assert.strictEqual((yield* stateOf(limiter))?.budgets.requests.used, 9)
      const fiber = yield* Effect.fork(limiter.acquire(ticket()))
      yield* TestClock.adjust("2999 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust("1 millis")
      yield* settled(fiber, "the caller after the bucket reopened")
    }))

  it.effect("a widened margin narrows a step per calm window after the first, back to the configured one", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        limits: { m: { rpm: 100, tpm: 100 } },
        margin: "100 millis",
        window: "10 seconds"
      })
      const margin = Effect.map(stateOf(limiter), (state) => state?.marginMs)
      // 95 of 100 tokens in the window with the refused request: at the limit; the server asks for no wait, so the
      // bucket is not closed and the next 429 can come at once
      const refusedAtLimit = Effect.flatMap(
        limiter.acquire(ticket(95)),
        (permit) => permit.settle("throttled", refusedWith(Duration.zero))
      )
      yield* refusedAtLimit
      assert.strictEqual(yield* margin, 350)
      // a second 429 in the same window is the same misjudgement; one a window later widens again
      yield* refusedAtLimit
      assert.strictEqual(yield* margin, 350)
      yield* TestClock.adjust("10 seconds")
      yield* refusedAtLimit
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
      yield* refusedAtLimit
      assert.strictEqual(yield* margin, 350)
    }))

  it.effect("estimates a chat body: its prompt in, and out the output cap, or the model's learnt cap, or the default", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ defaultMaxOutputTokens: 500 })
      const body = { model: "m", messages: [{ role: "user", content: "Hello there" }] }
      // 3 priming + 3 per message + "Hello" (2) + "there" (2)
      // the request's own cap is kept apart too: it must fit the context window with the prompt
      assert.deepStrictEqual(limiter.cost("/chat/completions", { ...body, max_tokens: 50 }), {
        model: "m",
        input: 10,
        output: 50,
        cap: 50
      })
      assert.deepStrictEqual(
        limiter.cost("/chat/completions", { ...body, max_tokens: 50, max_completion_tokens: 70 }),
        { model: "m", input: 10, output: 70, cap: 70 }
      )
      assert.deepStrictEqual(limiter.cost("/chat/completions", body), { model: "m", input: 10, output: 500 })
      yield* limiter.learnModels(
        Schema.decodeUnknownSync(ModelList)({ data: [{ id: "m", meta_data: { max_output_length: 800 } }] })
      )
      assert.deepStrictEqual(limiter.cost("/chat/completions", body), { model: "m", input: 10, output: 800 })
      // embeddings generate nothing; an audio model is metered by requests alone
      assert.deepStrictEqual(limiter.cost("/embeddings", { model: "e", input: ["abcd", "abcdefgh"] }), {
        model: "e",
        input: 3,
        output: 0
      })
      assert.deepStrictEqual(limiter.cost("/audio/transcriptions", { model: "whisper-large-v3" }), {
        model: "whisper-large-v3",
        input: 0,
        output: 0
      })
    }))
})
