/**
 * The limiter as its users meet it beyond the window: what a request is estimated to cost, what a settled permit
 * gives back and whom that wakes, what observers and metrics see, the long line, and the layers.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Scheduler from "effect/Scheduler"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as ClientMetrics from "../../src/layers/ClientMetrics.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import { LimiterUnavailable, RateLimited, RequestTooLarge } from "../../src/schemas/Errors.js"
import { ModelList } from "../../src/schemas/Models.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"
import { limiterWith, runReady, settled, stillWaiting, ticket } from "../helpers/limiter.js"
import { limiterOn, memoryStoreWith, refusal } from "../helpers/stores.js"

const count = (counter: Metric.Metric.Counter<number>) => Effect.map(Metric.value(counter), (state) => state.count)

const chatBody = (model: string | undefined, maxTokens?: number) => ({
  ...(model === undefined ? {} : { model }),
  messages: [{ role: "user", content: "Hello there" }],
  ...(maxTokens === undefined ? {} : { max_tokens: maxTokens })
})
// 3 priming + 3 per message + "Hello" (2) + "there" (2)
const prompt = 10

/** A catalogue as `GET /models` sends it. */
const models = (entries: ReadonlyArray<{ id: string; meta_data?: unknown }>) =>
  Schema.decodeUnknownSync(ModelList)({
    object: "list",
    data: entries.map((e) => ({ object: "model", created: 0, owned_by: "x", ...e }))
  })

describe("what a request is estimated to cost", () => {
  it.effect("its output cap first, then the model's configured cap, the catalogue's max_output_length, the default", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ maxOutputTokens: { configured: 300 }, defaultMaxOutputTokens: 500 })
      yield* limiter.learnModels(models([
        { id: "configured", meta_data: { max_output_length: 700 } },
        { id: "catalogued", meta_data: { max_output_length: 700 } },
        { id: "zero", meta_data: { max_output_length: 0 } },
        { id: "unknown", meta_data: {} },
        { id: "bare" }
      ]))
      const cost = (model: string | undefined, maxTokens?: number) =>
        limiter.cost("/chat/completions", chatBody(model, maxTokens))
      assert.deepStrictEqual(cost("configured", 50), { model: "configured", input: prompt, output: 50, cap: 50 })
      assert.deepStrictEqual(cost("configured"), { model: "configured", input: prompt, output: 300 })
      assert.deepStrictEqual(cost("catalogued"), { model: "catalogued", input: prompt, output: 700 })
      assert.deepStrictEqual(cost("zero"), { model: "zero", input: prompt, output: 500 })
      assert.deepStrictEqual(cost("unknown"), { model: "unknown", input: prompt, output: 500 })
      assert.deepStrictEqual(cost("bare"), { model: "bare", input: prompt, output: 500 })
      assert.deepStrictEqual(cost(undefined), { model: undefined, input: prompt, output: 500 })
      // max_completion_tokens, the newer name, is read before max_tokens
      assert.strictEqual(
        limiter.cost("/chat/completions", { ...chatBody("bare", 50), max_completion_tokens: 70 }).output,
        70
      )
    }))

  it.effect("a listing nobody asked for teaches windows alone; a request needs one only when large and unknown", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ contextWindows: { configured: 9_000 } })
      const large = (model: string) => ({ key: "k", model, input: 4_000, cap: 1 })
      assert.isTrue(limiter.needsWindow(large("private")))
      assert.isFalse(limiter.needsWindow({ ...large("private"), cap: 0 }), "no more than the smallest window")
      assert.isFalse(limiter.needsWindow(large("configured")))
      assert.isFalse(limiter.needsWindow(large("Llama-3.3-70B-Instruct")), "the tables give it")
      yield* limiter.learnWindows(models([
        { id: "private", meta_data: { max_sequence_length: 5_000, max_output_length: 700 } },
        { id: "configured", meta_data: { max_sequence_length: 20_000 } },
        { id: "bare" }
      ]))
      assert.isFalse(limiter.needsWindow(large("private")))
      assert.deepStrictEqual(limiter.cost("/chat/completions", chatBody("private")).output, 1_024, "no output cap")
      const refused = yield* Effect.flip(limiter.acquire({ ...large("private"), input: 4_990, cap: 11 }))
      assert.deepInclude(refused, { _tag: "ContextLengthExceeded", window: 5_000, requested: 5_001 })
      assert.include(refused.message, "private: about 5001 tokens")
      assert.include(refused.message, "context window of 5000")
      // exactly the window fits
      assert.strictEqual((yield* limiter.acquire({ ...large("private"), input: 4_989, cap: 11 })).cost.input, 4_989)
      const configured = yield* Effect.flip(limiter.acquire({ ...large("configured"), input: 9_000 }))
      assert.deepInclude(configured, { _tag: "ContextLengthExceeded", window: 9_000 }, "configured wins")
      const unchecked = yield* limiterWith({ contextCheck: false })
      assert.isFalse(unchecked.needsWindow(large("private")))
    }))

  it.effect("1,024 output tokens when nothing says otherwise; none for an endpoint that generates nothing", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({})
      assert.deepStrictEqual(limiter.cost("/chat/completions", chatBody("m")), {
        model: "m",
        input: prompt,
        output: 1024
      })
      assert.deepStrictEqual(limiter.cost("/embeddings", { model: "e", input: ["abcd", "abcdefgh"] }), {
        model: "e",
        input: 3,
        output: 0
      })
      // a model metered by requests alone (audio) costs no tokens, whatever its parameters say
      assert.deepStrictEqual(limiter.cost("/chat/completions", chatBody("whisper-large-v3", 50)), {
        model: "whisper-large-v3",
        input: 0,
        output: 0
      })
    }))

  it.effect("a request of exactly the token quota fits; one more token never does", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "1 second", limits: { m: { rpm: 10, tpm: 1_000 } } })
      yield* limiter.acquire(ticket(1_000))
      const next = yield* Effect.fork(limiter.acquire(ticket(1_000)))
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* settled(next, "a request of the whole quota")).cost.tokens, 1_000)
      const error = yield* refusal(limiter.acquire(ticket(1_001)))
      assert.deepInclude(error, { budget: "tokens", requested: 1_001, limit: 1_000 })
    }))

  it.effect("a store that finds the request too large (a shared store with its own limits) fails it", () =>
    Effect.gen(function*() {
      const store = memoryStoreWith(() => ({ reserve: () => Effect.succeed({ _tag: "TooLarge" as const }) }))
      const limiter = yield* Effect.provide(
        RateLimiter.RateLimiter,
        limiterOn(store, { limits: { m: { tpm: 1_000 } } })
      )
      const error = yield* refusal(limiter.acquire(ticket(10)))
      assert.strictEqual(error._tag, "RequestTooLarge")
      // no budget of its own is too small: the refusal names the combined one, with what the request needs of it
      assert.deepInclude(error, { budget: "tokens", requested: 10, limit: 1_000 })
      assert.strictEqual((yield* limiter.snapshot)[0]?.waiting, 0)
    }))

  it.effect("a request that can never fit fails at once, saying what it needs and what the quota allows", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { "big-model": { tpm: 1_000 } } })
      const error = yield* refusal(limiter.acquire(ticket(1_001, "big-model")))
      assert.strictEqual(error.model, "big-model")
      assert.include(error.message, "big-model")
      assert.include(error.message, "1001 tokens")
      assert.include(error.message, "the 1000 the quota allows")
      assert.include(error.message, "max_tokens")
      assert.strictEqual(error.budget, "tokens")
      assert.strictEqual((yield* limiter.snapshot)[0]?.waiting, 0)
    }))

  it.effect("RequestTooLarge names the budget the request can never fit, what it needs of it and the limit", () =>
    Effect.gen(function*() {
      const tooLarge = (limits: RateLimiter.Quota, input: number, output: number) =>
        Effect.flatMap(
          limiterWith({ limits: { m: { rpm: 10, ...limits } } }),
          (limiter) => refusal(limiter.acquire(ticket(input, "m", output)))
        )
      const input = yield* tooLarge({ itpm: 100, otpm: 100, tpm: 1_000 }, 101, 100)
      assert.deepInclude(input, { budget: "input", requested: 101, limit: 100, model: "m" })
      assert.include(input.message, "101 input tokens")
      assert.include(input.message, "shorten the input")
      assert.notInclude(input.message, "max_tokens")
      const output = yield* tooLarge({ itpm: 100, otpm: 100, tpm: 1_000 }, 100, 101)
      assert.deepInclude(output, { budget: "output", requested: 101, limit: 100 })
      assert.include(output.message, "101 output tokens")
      assert.include(output.message, "lower max_tokens")
      assert.notInclude(output.message, "shorten the input")
      // each part fits its own budget; their sum does not fit the combined one
      const combined = yield* tooLarge({ itpm: 100, otpm: 100, tpm: 150 }, 100, 51)
      assert.deepInclude(combined, { budget: "tokens", requested: 151, limit: 150 })
      assert.include(combined.message, "lower max_tokens or shorten the input")
      // a request that fits every budget but output only waits: its output of exactly the limit fits
      const limiter = yield* limiterWith({ limits: { m: { rpm: 10, otpm: 100 } } })
      assert.deepStrictEqual((yield* limiter.acquire(ticket(1_000_000, "m", 100))).cost.output, 100)
    }))
})

describe("a settled permit", () => {
  it.effect("an error answer keeps the slot, gives the tokens back, and the head waiting for tokens goes at once", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 100, tpm: 1_000 } } })
      const failed = yield* limiter.acquire(ticket(700))
      const head = yield* Effect.fork(limiter.acquire(ticket(700)))
      assert.isTrue(yield* stillWaiting(head))
      yield* failed.settle("failed")
      yield* settled(head, "the head after a refund")
      const [state] = yield* limiter.snapshot
      assert.strictEqual(state?.budgets.requests.used, 2)
      assert.strictEqual(state?.budgets.tokens.used, 700)
      assert.strictEqual(state?.budgets.input.used, 700)
    }))

  it.effect("a request the server never counted gives its slot and its tokens back, and the head goes at once", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 1, tpm: 1_000 } } })
      const refused = yield* limiter.acquire(ticket(700))
      const head = yield* Effect.fork(limiter.acquire(ticket(700)))
      assert.isTrue(yield* stillWaiting(head))
      yield* refused.settle("unsent")
      yield* settled(head, "the head after a cancel")
      const [state] = yield* limiter.snapshot
      assert.strictEqual(state?.budgets.requests.used, 1)
      assert.strictEqual(state?.budgets.tokens.used, 700)
      assert.strictEqual(yield* TestClock.currentTimeMillis, 0)
    }))

  it.effect("a usage equal to the reservation changes nothing, in either mode: observers see no new state", () =>
    Effect.gen(function*() {
      for (const reconcile of ["keep", "actual"] as const) {
        const limiter = yield* limiterWith({ reconcile, limits: { m: { rpm: 100, tpm: 1_000 } } })
        const permit = yield* limiter.acquire(ticket(300))
        const seen: Array<ReadonlyArray<RateLimiter.BucketState>> = []
        const observer = yield* Effect.fork(
          Stream.runForEach(limiter.changes, (states) => Effect.sync(() => seen.push(states)))
        )
        yield* runReady
        yield* permit.reconcile({ input: 300, output: 0 })
        yield* runReady
        yield* Fiber.interrupt(observer)
        assert.strictEqual(seen.length, 1, `${reconcile}: only the state as it was`)
        assert.strictEqual((yield* limiter.snapshot)[0]?.budgets.tokens.used, 300, reconcile)
      }
    }))

  it.effect("observers see a usage above the reservation as soon as it is counted", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 100, tpm: 1_000 } } })
      const permit = yield* limiter.acquire(ticket(300, "m", 100))
      // more input than estimated, the whole output reserved: the input and the combined sum are raised
      yield* permit.reconcile({ input: 450, output: 100 })
      const latest = yield* Stream.runHead(limiter.changes)
      const budgets = latest._tag === "Some" ? latest.value[0]?.budgets : undefined
      assert.deepStrictEqual([budgets?.input.used, budgets?.output.used, budgets?.tokens.used], [450, 100, 550])
    }))
})

describe("what observers and metrics see", () => {
  it.effect("changes: one state per bucket, each updated in place after every change", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { a: { rpm: 5, tpm: 1_000 }, b: { rpm: 7, tpm: 1_000 } } })
      const seen: Array<ReadonlyArray<RateLimiter.BucketState>> = []
      const observer = yield* Effect.fork(
        Stream.runForEach(limiter.changes, (states) => Effect.sync(() => seen.push(states)))
      )
      yield* runReady
      assert.deepStrictEqual(seen, [[]], "no bucket before the first request")
      yield* limiter.acquire(ticket(10, "a"))
      yield* limiter.acquire(ticket(20, "b"))
      yield* limiter.acquire({ ...ticket(40, "a"), key: "key#2" })
      yield* limiter.acquire(ticket(30, "a"))
      yield* runReady
      yield* Fiber.interrupt(observer)
      const last = seen[seen.length - 1]!
      assert.deepStrictEqual(
        last.map((s) => [s.key, s.model, s.budgets.requests.limit, s.budgets.requests.used, s.budgets.tokens.used]),
        [
          ["key#1", "a", 5, 2, 40],
          ["key#1", "b", 7, 1, 20],
          ["key#2", "a", 5, 1, 40]
        ]
      )
      assert.deepStrictEqual(yield* limiter.snapshot, last)
    }))

  it.effect("snapshot reads the window as it is now: a request that left it is no longer counted", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 10, tpm: 1_000 } } })
      yield* limiter.acquire(ticket(100))
      yield* TestClock.adjust("9999 millis")
      assert.strictEqual((yield* limiter.snapshot)[0]?.budgets.requests.used, 1)
      // nothing else asks the store in between: the snapshot itself must
      yield* TestClock.adjust("1 millis")
      const [state] = yield* limiter.snapshot
      assert.deepStrictEqual(
        [state?.budgets.requests.used, state?.budgets.input.used, state?.budgets.tokens.used, state?.nextResetMs],
        [0, 0, 0, 0]
      )
    }))

  it.effect("the wait a request spent, in line behind others and at the head, is counted from its arrival", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "1 second", limits: { m: { rpm: 1, tpm: 1_000 } } })
      const waitedBefore = yield* count(ClientMetrics.limiterWaitMillis)
      const reservedBefore = yield* count(ClientMetrics.limiterTokensReserved)
      const admittedBefore = yield* count(ClientMetrics.limiterAdmitted)
      // the clock does not start at zero: the wait is a difference of times
      yield* TestClock.adjust("5 seconds")
      yield* limiter.acquire(ticket(5))
      const second = yield* Effect.fork(limiter.acquire(ticket(6)))
      yield* runReady
      const third = yield* Effect.fork(limiter.acquire(ticket(7)))
      yield* runReady
      // the second goes at 1 s, the third, in line since 0, at 2 s
      yield* TestClock.adjust("1 second")
      yield* settled(second, "the second")
      yield* TestClock.adjust("1 second")
      yield* settled(third, "the third")
      assert.strictEqual((yield* count(ClientMetrics.limiterWaitMillis)) - waitedBefore, 3_000)
      assert.strictEqual((yield* count(ClientMetrics.limiterTokensReserved)) - reservedBefore, 18)
      assert.strictEqual((yield* count(ClientMetrics.limiterAdmitted)) - admittedBefore, 3)
    }))

  it.effect("a store that cannot settle a permit costs the request nothing: each failure is one warning, without the key", () =>
    Effect.gen(function*() {
      const unavailable = new LimiterUnavailable({ message: "redis://127.0.0.1:1: connection refused" })
      const store = memoryStoreWith(() => ({
        restamp: () => Effect.fail(unavailable),
        adjust: () => Effect.fail(unavailable),
        remove: () => Effect.fail(unavailable),
        topUp: () => Effect.fail(unavailable)
      }))
      const limiter = yield* Effect.provide(RateLimiter.RateLimiter, limiterOn(store, { limits: { m: { rpm: 5 } } }))
      const logs: Array<{ readonly level: string; readonly message: unknown }> = []
      const recording = Logger.make(({ logLevel, message }) => logs.push({ level: logLevel.label, message }))
      yield* Effect.gen(function*() {
        // a usage beyond the reservation (adjust), an error answer (restamp, then the tokens back: adjust)
        const permit = yield* limiter.acquire(ticket(10))
        yield* permit.reconcile({ input: 20, output: 0 })
        yield* permit.settle("failed")
        // a request never sent (remove)
        const unsent = yield* limiter.acquire(ticket(10))
        yield* unsent.settle("unsent")
        // what the server counts beyond this process (top up)
        yield* limiter.learn(
          "key",
          "m",
          new RateLimitInfo({ limitRequests: 5, remainingRequests: 1, observedAt: 0 }),
          200
        )
      }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, recording)))
      assert.deepStrictEqual(
        logs,
        Array.from({ length: 5 }, () => ({ level: "WARN", message: [`aifs: limiter store: ${unavailable.message}`] }))
      )
      // the reservations made before the store failed are still counted
      assert.strictEqual((yield* limiter.snapshot)[0]?.budgets.requests.used, 2)
    }))
})

/** A scheduler that has its fiber yield once, at its `k`-th step, and otherwise runs it as the default one does. */
const yieldingOnceAt = (k: number): Scheduler.Scheduler => {
  let steps = 0
  return {
    shouldYield: () => ++steps === k ? 0 : false,
    scheduleTask: (task, priority, fiber) => Scheduler.defaultScheduler.scheduleTask(task, priority, fiber)
  }
}

describe("the line", () => {
  it.effect("a caller that arrives as the turn is handed on is never stranded, wherever its fiber pauses", () =>
    Effect.gen(function*() {
      // at every step of the newcomer's arrival, a pause in which the head finishes and hands the turn on
      const stranded: Array<number> = []
      for (let k = 1; k <= 60; k++) {
        const gate = yield* Deferred.make<void>()
        let held = true
        const store = memoryStoreWith((inner) => ({
          reserve: (...args) => {
            const answer = inner.reserve(...args)
            if (!held) return answer
            held = false
            return Effect.zipRight(Deferred.await(gate), answer)
          }
        }))
        const limiter = yield* Effect.provide(
          RateLimiter.RateLimiter,
          limiterOn(store, { limits: { m: { rpm: 100, tpm: 1_000 } } })
        )
        // the head waits on the store; the newcomer queues behind it while the store answers
        const head = yield* Effect.fork(limiter.acquire(ticket()))
        yield* runReady
        const newcomer = yield* Effect.fork(Effect.withScheduler(limiter.acquire(ticket()), yieldingOnceAt(k)))
        yield* Deferred.succeed(gate, undefined)
        yield* runReady
        const exits = [yield* Fiber.poll(head), yield* Fiber.poll(newcomer)]
        if (!exits.every((exit) => Option.isSome(exit) && Exit.isSuccess(exit.value))) stranded.push(k)
        yield* Fiber.interrupt(newcomer)
      }
      assert.deepStrictEqual(stranded, [])
    }))

  it.effect("a request that can never fit fails at once, also while others wait in line", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 1, tpm: 1_000 } } })
      yield* limiter.acquire(ticket())
      const head = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* stillWaiting(head))
      const tooLarge = yield* Effect.fork(limiter.acquire(ticket(1_001)))
      const error = yield* Effect.flip(settled(tooLarge, "a request larger than the quota"))
      assert.strictEqual(error._tag, "RequestTooLarge")
      assert.strictEqual((yield* limiter.snapshot)[0]?.waiting, 1)
    }))

  it.effect("thousands of callers, some giving up, are served in arrival order", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 1_000_000, tpm: 1_000_000_000 } } })
      // a 429 at the token limit closes the bucket for the server's second: everyone lines up behind the head
      const atLimit = yield* limiter.acquire(ticket(1_000_000_000))
      yield* atLimit.settle("throttled", new RateLimited({ message: "slow down", status: 429 }))
      assert.strictEqual((yield* limiter.snapshot)[0]?.blockedMs, 1_000)
      const order: Array<number> = []
      const callers = 2_200
      const fibers: Array<Fiber.RuntimeFiber<number, unknown>> = []
      for (let i = 0; i < callers; i++) {
        fibers.push(yield* Effect.fork(Effect.zipRight(limiter.acquire(ticket(1)), Effect.sync(() => order.push(i)))))
      }
      yield* runReady
      const gaveUp = new Set(Array.from({ length: callers }, (_, i) => i).filter((i) => i % 7 === 3 || i === 1))
      yield* Effect.forEach([...gaveUp], (i) => Fiber.interrupt(fibers[i]!), { discard: true })
      yield* TestClock.adjust("1 second")
      yield* Fiber.await(fibers[callers - 1]!)
      assert.deepStrictEqual(order, Array.from({ length: callers }, (_, i) => i).filter((i) => !gaveUp.has(i)))
      assert.strictEqual((yield* limiter.snapshot)[0]?.waiting, 0)
    }))
})

describe("acquireWith: the permit handed to the caller's continuation", () => {
  /** What `then` saw: how the acquisition ended, and whether it ran interruptibly, alone and under `restore`. */
  const observed = (limiter: RateLimiter.RateLimiter.Service, tokens = 10) =>
    limiter.acquireWith(ticket(tokens), (acquired, restore) =>
      Effect.gen(function*() {
        const interruptible = yield* Effect.checkInterruptible(Effect.succeed)
        const restored = yield* restore(Effect.checkInterruptible(Effect.succeed))
        return { acquired, interruptible, restored }
      }))

  it.effect("runs on the permit in the limiter's uninterruptible step, at once or after the line; restore undoes it", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 1, tpm: 1_000 } } })
      const first = yield* observed(limiter)
      assert.isTrue(Exit.isSuccess(first.acquired))
      assert.deepStrictEqual([first.interruptible, first.restored], [false, true])
      // the window is full: the second caller waits, then gets its permit the same way
      const second = yield* Effect.fork(observed(limiter))
      assert.isTrue(yield* stillWaiting(second))
      yield* TestClock.adjust("10 seconds")
      const later = yield* settled(second, "the caller in line")
      assert.isTrue(Exit.isSuccess(later.acquired))
      assert.deepStrictEqual([later.interruptible, later.restored], [false, true])
      assert.strictEqual((yield* limiter.snapshot)[0]?.budgets.requests.used, 1)
    }))

  it.effect("sees a refusal as a failure it may turn into a value of its own", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { rpm: 10, tpm: 1_000 } } })
      const seen = yield* limiter.acquireWith(
        ticket(1_001),
        (acquired) => Effect.succeed(Exit.isFailure(acquired) ? Cause.squash(acquired.cause) : acquired.value)
      )
      assert.instanceOf(seen, RequestTooLarge)
    }))

  it.effect("interrupted in line: it sees the interruption, gives up its place, and the next caller is served", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ window: "10 seconds", limits: { m: { rpm: 1, tpm: 1_000 } } })
      yield* limiter.acquire(ticket())
      const seen: Array<string> = []
      const head = yield* Effect.fork(limiter.acquire(ticket()))
      const quitter = yield* Effect.fork(limiter.acquireWith(ticket(), (acquired) => {
        seen.push(Exit.isInterrupted(acquired) ? "interrupted" : "other")
        return acquired
      }))
      const next = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* stillWaiting(next))
      yield* Fiber.interrupt(quitter)
      assert.deepStrictEqual(seen, ["interrupted"])
      assert.strictEqual((yield* limiter.snapshot)[0]?.waiting, 2)
      yield* TestClock.adjust("10 seconds")
      yield* settled(head, "the head")
      yield* TestClock.adjust("10 seconds")
      yield* settled(next, "the caller behind the one that left")
    }))
})

describe("the layers", () => {
  it.effect("layerDisabled: requests go at once, nothing is counted or estimated", () =>
    Effect.gen(function*() {
      const limiter = yield* Effect.provide(RateLimiter.RateLimiter, RateLimiter.layerDisabled)
      assert.isFalse(limiter.enabled)
      assert.isFalse(limiter.queueRouting)
      assert.deepStrictEqual(limiter.cost("/chat/completions", chatBody("m")), {
        model: undefined,
        input: 0,
        output: 0
      })
      const outcomes = ["unsent", "succeeded", "failed", "unanswered", "throttled", "spent"] as const
      for (let i = 0; i < 100; i++) {
        const permit = yield* limiter.acquire(ticket(1_000_000, "m", 1_000_000))
        assert.deepStrictEqual(permit.cost, { requests: 0, input: 0, output: 0, tokens: 0 })
        yield* permit.reconcile({ input: 10, output: 10 })
        assert.isFalse(yield* permit.settle(outcomes[i % outcomes.length]!))
      }
      const handed = yield* limiter.acquireWith(ticket(1_000_000), (acquired) => acquired)
      assert.strictEqual(handed.cost.tokens, 0)
      assert.isFalse(yield* limiter.wouldWait(ticket()))
      yield* limiter.learn("key#1", "m", new RateLimitInfo({ observedAt: 0 }), 429)
      yield* limiter.learnModels(models([{ id: "m", meta_data: { max_output_length: 5 } }]))
      assert.deepStrictEqual(yield* limiter.snapshot, [])
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Stream.runCollect(limiter.changes)), [[]])
    }))

  it.effect("the presets: learnt by default; a plan's table per model, the tier of the configuration with layerFromClientConfig", () =>
    Effect.gen(function*() {
      const llama = "Llama-3.3-70B-Instruct"
      /** The limits of `model`'s bucket: requests, input, output, combined; the requests' source; the margin. */
      const limits = (layer: Layer.Layer<RateLimiter.RateLimiter>, model = llama) =>
        Effect.gen(function*() {
          const limiter = yield* Effect.provide(RateLimiter.RateLimiter, layer)
          assert.isTrue(limiter.enabled)
          yield* limiter.acquire(ticket(10, model))
          const [state] = yield* limiter.snapshot
          const budgets = state!.budgets
          return [
            budgets.requests.limit,
            budgets.input.limit,
            budgets.output.limit,
            budgets.tokens.limit,
            budgets.requests.source,
            state!.marginMs
          ]
        })
      // auto: nothing known, everything learnt
      assert.deepStrictEqual(yield* limits(RateLimiter.layer()), [
        undefined,
        undefined,
        undefined,
        undefined,
        "unknown",
        200
      ])
      // a plan: the model's row of its table (requests, input, output; the plans have no combined budget)
      assert.deepStrictEqual(
        yield* limits(RateLimiter.layer({ tier: "basic" })),
        [20, 13_800, 5_000, undefined, "plan", 200]
      )
      assert.deepStrictEqual(
        yield* limits(RateLimiter.layer({ tier: "standard4000" })),
        [600, 138_000, 50_000, undefined, "plan", 200]
      )
      assert.deepStrictEqual(RateLimiter.preset("basic", llama), { rpm: 20, itpm: 13_800, otpm: 5_000 })
      // a model the plan's table lacks is learnt, as with auto
      assert.deepStrictEqual(
        yield* limits(RateLimiter.layer({ tier: "basic" }), "m"),
        [undefined, undefined, undefined, undefined, "unknown", 200]
      )
      assert.isUndefined(RateLimiter.preset("basic", "m"))
      // configured limits over the plan's, one budget at a time
      assert.deepStrictEqual(
        yield* limits(RateLimiter.layer({ tier: "standard4000", limits: { [llama]: { rpm: 7 } } })),
        [7, 138_000, 50_000, undefined, "configured", 200]
      )
      assert.deepStrictEqual(
        yield* limits(
          RateLimiter.layerFromClientConfig({ margin: "1 second" }).pipe(
            Layer.provide(ClientConfig.layer({ apiKey: "gen-test", tier: "standard4000" }))
          )
        ),
        [600, 138_000, 50_000, undefined, "plan", 1_000]
      )
      const routing = yield* Effect.provide(RateLimiter.RateLimiter, RateLimiter.layer({ queueRouting: true }))
      assert.isTrue(routing.queueRouting)
      assert.isFalse((yield* Effect.provide(RateLimiter.RateLimiter, RateLimiter.layer())).queueRouting)
    }))
})
