import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as FileSystem from "@effect/platform/FileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as TokenEstimator from "../../src/layers/TokenEstimator.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"
import { tempDir } from "../helpers/tempDir.js"

const W = 10_000
const ticket = (tokens = 10, model = "m") => ({ key: "key#1", model, input: tokens })

/** A limiter with `tier: "auto"` (unless `options` say otherwise) on `store`, and the store itself. */
const learner = (options: RateLimiter.Options = {}, store = LimiterStore.makeMemory()) =>
  Effect.map(
    RateLimiter.make({ tier: "auto", window: `${W} millis`, margin: 0, ...options }).pipe(
      Effect.provide(Layer.merge(Layer.succeed(LimiterStore.LimiterStore, store), TokenEstimator.layer))
    ),
    (limiter) => ({ limiter, store })
  )

const bucketOf = (limiter: RateLimiter.RateLimiter.Service, model = "m") =>
  Effect.map(limiter.snapshot, (states) => states.find((s) => s.model === model)!)

/** One budget's limit as the snapshot shows it, without its use. */
const limitOf = (bucket: RateLimiter.BucketState, budget: RateLimiter.Budget = "requests") => {
  const { used: _, ...limit } = bucket.budgets[budget]
  return limit
}

/** A 429 on a request admitted now: how the limiter settles it (true: it paces the retry itself). */
const refuse = (limiter: RateLimiter.RateLimiter.Service, tokens = 10, model = "m") =>
  Effect.flatMap(limiter.acquire(ticket(tokens, model)), (permit) => permit.settle("throttled"))

/** Whether `fiber` is still running after the fibers it waits on had a few turns. */
const stillWaiting = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
    return Option.isNone(yield* Fiber.poll(fiber))
  })

/** `n` requests admitted and answered with success. */
const succeed = (limiter: RateLimiter.RateLimiter.Service, n: number, tokens = 10) =>
  Effect.forEach(
    Array.from({ length: n }),
    () => Effect.flatMap(limiter.acquire(ticket(tokens)), (permit) => permit.settle("succeeded")),
    { discard: true }
  )

describe("RateLimiter with tier auto", () => {
  it.effect("starts with nothing known: no limit, probing with 2 requests in flight", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner()
      const first = yield* limiter.acquire(ticket())
      const second = yield* limiter.acquire(ticket())
      const third = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* stillWaiting(third))
      const bucket = yield* bucketOf(limiter)
      assert.deepStrictEqual(limitOf(bucket), { limit: undefined, source: "unknown", confidence: "probing" })
      assert.deepStrictEqual(limitOf(bucket, "output"), { limit: undefined, source: "unknown", confidence: "probing" })
      assert.strictEqual(bucket.probe, 2)
      // an answer frees its place in flight, and the probe grows
      yield* first.settle("succeeded")
      yield* Fiber.join(third)
      assert.strictEqual((yield* bucketOf(limiter)).probe, 2)
      yield* second.settle("succeeded")
      assert.strictEqual((yield* bucketOf(limiter)).probe, 3)
      yield* limiter.acquire(ticket())
      yield* limiter.acquire(ticket())
      assert.isTrue(yield* stillWaiting(yield* Effect.fork(limiter.acquire(ticket()))))
    }))

  it.effect("a 429 measures the window: the limit is what it held, the retry is paced; kept once confirmed", () =>
    Effect.gen(function*() {
      const { limiter, store } = yield* learner()
      yield* succeed(limiter, 5)
      assert.isTrue(yield* refuse(limiter))
      const bucket = yield* bucketOf(limiter)
      assert.deepStrictEqual(limitOf(bucket), { limit: 5, source: "learnt", confidence: "measured" })
      assert.strictEqual(bucket.probe, undefined)
      // requests this small were not refused by a token budget on any plan: none is learnt from them
      assert.strictEqual(bucket.budgets.input.source, "unknown")
      // measured once: not kept yet (a measurement may be a misjudgement)
      assert.isUndefined(yield* store.learnt("key#1\u0000m"))
      // a 429 at a limit closes the bucket for the server's time (1 s without one) and widens the margin by 250 ms
      assert.strictEqual(bucket.blockedMs, 1_000)
      assert.strictEqual(bucket.marginMs, 250)
      // three calm windows at it, and a caller waiting on it raises it to 6: the server refuses the sixth again,
      // which measures 5 a second time: confirmed, and kept
      for (let window = 0; window < 3; window++) {
        yield* TestClock.adjust(W + 250)
        yield* succeed(limiter, 5)
      }
      assert.isTrue(yield* refuse(limiter))
      const after = yield* bucketOf(limiter)
      assert.deepStrictEqual(limitOf(after), { limit: 5, source: "learnt", confidence: "confirmed" })
      assert.deepStrictEqual(yield* store.learnt("key#1\u0000m"), { requests: 5 })
    }))

  it.scoped("the changes stream carries what is learnt: the probe as it grows, then the measured limit", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner()
      const seen: Array<RateLimiter.BucketState> = []
      yield* Effect.forkScoped(
        Stream.runForEach(limiter.changes, (states) => Effect.sync(() => states[0] && seen.push(states[0])))
      )
      const drain = Effect.repeatN(Effect.yieldNow(), 20)
      yield* drain
      yield* succeed(limiter, 2)
      yield* drain
      assert.includeMembers(seen.map((s) => s.probe), [2, 3])
      yield* succeed(limiter, 2)
      assert.isTrue(yield* refuse(limiter))
      yield* drain
      const last = seen[seen.length - 1]!
      assert.deepStrictEqual(limitOf(last), { limit: 4, source: "learnt", confidence: "measured" })
      assert.isUndefined(last.probe)
    }))

  it.effect("a 429 on a model the plan's table gives measures nothing: the retry policy waits as before", () =>
    Effect.gen(function*() {
      const { limiter, store } = yield* learner({ tier: "basic" })
      const model = "Llama-3.3-70B-Instruct"
      yield* Effect.forEach(
        Array.from({ length: 5 }),
        () => Effect.flatMap(limiter.acquire(ticket(10, model)), (p) => p.settle("succeeded")),
        { discard: true }
      )
      assert.isFalse(yield* refuse(limiter, 10, model))
      const bucket = yield* bucketOf(limiter, model)
      assert.deepStrictEqual(limitOf(bucket), { limit: 20, source: "plan" })
      assert.deepStrictEqual(limitOf(bucket, "output"), { limit: 5_000, source: "plan" })
      assert.strictEqual(bucket.budgets.requests.used, 5)
      // 5 of 20: a 429 well under the plan's limits is noise: the bucket stays open
      assert.strictEqual(bucket.blockedMs, 0)
      assert.isUndefined(yield* store.learnt(`key#1\u0000${model}`))
    }))

  it.effect("the requests sent after the refused one are not counted in its measurement", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ limits: { m: { tpm: 1_000_000 } } })
      yield* succeed(limiter, 4)
      const refused = yield* limiter.acquire(ticket())
      const later = yield* limiter.acquire(ticket())
      assert.isTrue(yield* refused.settle("throttled"))
      assert.strictEqual((yield* bucketOf(limiter)).budgets.requests.limit, 4)
      // sent with it, it succeeded: the server had taken it, the window held 5
      yield* later.settle("succeeded")
      assert.strictEqual((yield* bucketOf(limiter)).budgets.requests.limit, 5)
    }))

  it.effect("configured limits and headers are not learnt over; the budgets left unknown are", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ limits: { m: { rpm: 3 } } })
      const bucket = yield* Effect.zipRight(limiter.acquire(ticket()), bucketOf(limiter))
      assert.deepStrictEqual(limitOf(bucket), { limit: 3, source: "configured" })
      assert.deepStrictEqual(limitOf(bucket, "input"), { limit: undefined, source: "unknown", confidence: "probing" })
      // the combined budget is never learnt: headers or options give it
      assert.deepStrictEqual(limitOf(bucket, "tokens"), { limit: undefined, source: "unknown" })
      // one limit known: no probe
      assert.strictEqual(bucket.probe, undefined)
      yield* limiter.learn("key#1", "h", new RateLimitInfo({ limitRequests: 7, limitTokens: 700, observedAt: 0 }), 200)
      const headed = yield* bucketOf(limiter, "h")
      assert.deepStrictEqual(limitOf(headed), { limit: 7, source: "header" })
      assert.deepStrictEqual(limitOf(headed, "tokens"), { limit: 700, source: "header" })
    }))

  it.effect("a configured request limit far from full is not blamed: the token budget that can explain it is learnt", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ limits: { m: { rpm: 1_000 } } })
      yield* succeed(limiter, 2, 100)
      assert.isTrue(yield* refuse(limiter, 100))
      assert.deepStrictEqual(limitOf(yield* bucketOf(limiter), "input"), {
        limit: 299,
        source: "learnt",
        confidence: "measured"
      })
      // a request larger than the learnt budget is not refused: it waits for an empty window (and the margin the
      // 429 widened), goes alone, and its success lifts the limit
      const large = yield* Effect.fork(limiter.acquire(ticket(5_000)))
      assert.isTrue(yield* stillWaiting(large))
      yield* TestClock.adjust(W + 250)
      yield* Effect.flatMap(Fiber.join(large), (p) => p.settle("succeeded"))
      assert.strictEqual((yield* bucketOf(limiter)).budgets.input.limit, 5_000)
    }))

  it.effect("starts from the limits the store kept before: no probe, no 429 to pay", () =>
    Effect.gen(function*() {
      const store = LimiterStore.makeMemory()
      yield* store.keepLearnt("key#1\u0000m", { requests: 2 })
      const { limiter } = yield* learner({}, store)
      yield* succeed(limiter, 2)
      const bucket = yield* bucketOf(limiter)
      assert.deepStrictEqual(limitOf(bucket), { limit: 2, source: "learnt", confidence: "confirmed" })
      assert.strictEqual(bucket.budgets.input.source, "unknown")
      const third = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* stillWaiting(third))
      assert.strictEqual((yield* bucketOf(limiter)).binding, "requests")
      yield* TestClock.adjust(W)
      yield* Fiber.join(third)
    }))

  it.effect("a bucket whose limits are configured or from the plan learns nothing: not what the store kept, not from a 429", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [RateLimiter.Options, string]> = [
        [{ limits: { m: { rpm: 100, tpm: 10_000 } } }, "m"],
        [{ limits: { m: { rpm: 100, itpm: 10_000, otpm: 10_000 } } }, "m"],
        [{ tier: "standard4000" }, "Llama-3.3-70B-Instruct"]
      ]
      for (const [options, model] of cases) {
        const store = LimiterStore.makeMemory()
        yield* store.keepLearnt(`key#1\u0000${model}`, { requests: 3, input: 300 })
        const { limiter } = yield* learner(options, store)
        yield* Effect.flatMap(limiter.acquire(ticket(10, model)), (p) => p.settle("succeeded"))
        assert.isFalse(yield* refuse(limiter, 10, model))
        const bucket = yield* bucketOf(limiter, model)
        assert.notStrictEqual(bucket.budgets.requests.source, "learnt")
        assert.isUndefined(bucket.probe)
        const next = yield* Effect.fork(limiter.acquire(ticket(10, model)))
        assert.isFalse(yield* stillWaiting(next), JSON.stringify(options))
      }
    }))

  it.effect("resumed, a 429 in the first window is the usage of the process before: it closes the window, measures nothing", () =>
    Effect.gen(function*() {
      const store = LimiterStore.makeMemory()
      yield* store.keepLearnt("key#1\u0000m", { requests: 5 })
      const { limiter } = yield* learner({ limits: { m: { tpm: 1_000_000 } } }, store)
      yield* succeed(limiter, 2)
      assert.isFalse(yield* refuse(limiter))
      const bucket = yield* bucketOf(limiter)
      assert.strictEqual(bucket.budgets.requests.limit, 5)
      assert.strictEqual(bucket.blockedMs, W)
      const next = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* stillWaiting(next))
      yield* TestClock.adjust(W)
      yield* Fiber.join(next)
      // a window later, a 429 well under what passed (2 requests) is noise: the limit stays, nothing is paced
      assert.isFalse(yield* refuse(limiter))
      assert.strictEqual((yield* bucketOf(limiter)).budgets.requests.limit, 5)
    }))

  it.effect("after 3 calm windows at a learnt limit a caller that waits on it raises it by a step", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ limits: { m: { tpm: 1_000_000 } } })
      yield* succeed(limiter, 4)
      assert.isTrue(yield* refuse(limiter))
      // the 429 widened the margin to 250 ms: each window counts that much longer
      for (let window = 0; window < 3; window++) {
        yield* TestClock.adjust(W + 250)
        yield* succeed(limiter, 4)
      }
      assert.strictEqual((yield* bucketOf(limiter)).budgets.requests.limit, 4)
      yield* succeed(limiter, 1)
      assert.strictEqual((yield* bucketOf(limiter)).budgets.requests.limit, 5)
      assert.strictEqual((yield* bucketOf(limiter)).budgets.requests.confidence, "measured")
    }))

  it.effect("random 429s under what passed are noise: no block, no lower limit, the next request goes at once", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ limits: { m: { tpm: 1_000_000 } } })
      yield* succeed(limiter, 10)
      assert.isTrue(yield* refuse(limiter))
      yield* TestClock.adjust(W + 250)
      yield* succeed(limiter, 3)
      // the fourth of the window is refused: 4 of the 10 that passed
      assert.isFalse(yield* refuse(limiter))
      const bucket = yield* bucketOf(limiter)
      assert.strictEqual(bucket.budgets.requests.limit, 10)
      assert.strictEqual(bucket.blockedMs, 0)
      assert.isFalse(yield* stillWaiting(yield* Effect.fork(limiter.acquire(ticket()))))
    }))
})

describe("RateLimiter with a plan tier (the plan's table)", () => {
  it.effect("a model's three budgets from its row, enforced from the first request, no probe, nothing kept", () =>
    Effect.gen(function*() {
      const { limiter, store } = yield* learner({ tier: "essential" })
      const model = "claude-3-7-sonnet"
      const take = Effect.flatMap(limiter.acquire(ticket(10, model)), (p) => p.settle("succeeded"))
      yield* Effect.repeatN(take, 35)
      const next = yield* Effect.fork(limiter.acquire(ticket(10, model)))
      assert.isTrue(yield* stillWaiting(next))
      const bucket = yield* bucketOf(limiter, model)
      assert.deepStrictEqual(limitOf(bucket), { limit: 36, source: "plan" })
      assert.deepStrictEqual(limitOf(bucket, "input"), { limit: 60_000, source: "plan" })
      assert.deepStrictEqual(limitOf(bucket, "output"), { limit: 30_000, source: "plan" })
      assert.deepStrictEqual(limitOf(bucket, "tokens"), { limit: undefined, source: "unknown" })
      assert.strictEqual(bucket.binding, "requests")
      assert.isUndefined(bucket.probe)
      assert.isUndefined(yield* store.learnt(`key#1\u0000${model}`))
      yield* TestClock.adjust(W)
      yield* Fiber.join(next)
    }))

  it.effect("a model the plan's table lacks is learnt: probing, and what it keeps applies", () =>
    Effect.gen(function*() {
      const store = LimiterStore.makeMemory()
      yield* store.keepLearnt("key#1\u0000m", { requests: 120 })
      const { limiter } = yield* learner({ tier: "professional" })
      yield* succeed(limiter, 1)
      assert.strictEqual((yield* bucketOf(limiter)).probe, 2)
      const kept = yield* learner({ tier: "professional" }, store)
      yield* succeed(kept.limiter, 1)
      assert.deepStrictEqual(limitOf(yield* bucketOf(kept.limiter)), {
        limit: 120,
        source: "learnt",
        confidence: "confirmed"
      })
    }))

  it.effect("a Dynamic Shared Quota model has no fixed limits and never learns: its 429s are capacity", () =>
    Effect.gen(function*() {
      const { limiter, store } = yield* learner({ tier: "essential" })
      const model = "gemini-2.5-flash"
      yield* Effect.repeatN(Effect.flatMap(limiter.acquire(ticket(10, model)), (p) => p.settle("succeeded")), 50)
      assert.isFalse(yield* refuse(limiter, 10, model))
      const bucket = yield* bucketOf(limiter, model)
      assert.deepStrictEqual(limitOf(bucket), { limit: undefined, source: "shared" })
      assert.isUndefined(bucket.probe)
      assert.strictEqual(bucket.blockedMs, 0)
      assert.isUndefined(yield* store.learnt(`key#1\u0000${model}`))
      assert.isFalse(yield* stillWaiting(yield* Effect.fork(limiter.acquire(ticket(10, model)))))
    }))

  it.effect("a limit configured for one budget wins over the plan's; the others stay the plan's", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ tier: "basic", limits: { "Llama-3.3-70B-Instruct": { otpm: 2_000 } } })
      yield* Effect.flatMap(limiter.acquire(ticket(10, "Llama-3.3-70B-Instruct")), (p) => p.settle("succeeded"))
      const bucket = yield* bucketOf(limiter, "Llama-3.3-70B-Instruct")
      assert.deepStrictEqual(limitOf(bucket, "output"), { limit: 2_000, source: "configured" })
      assert.deepStrictEqual(limitOf(bucket), { limit: 20, source: "plan" })
      assert.deepStrictEqual(limitOf(bucket, "input"), { limit: 13_800, source: "plan" })
    }))

  it.effect("a plan's figures that do not hold for the key (429s keep coming under them) are learnt from there", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ tier: "essential" })
      const model = "mistral-medium-3"
      const take = Effect.flatMap(limiter.acquire(ticket(10, model)), (p) => p.settle("succeeded"))
      // the key really allows 10 a window, not the table's 90: the server refuses from the eleventh on
      yield* Effect.repeatN(take, 9)
      // two refusals well under 90 are noise: nothing changes, nothing closes
      assert.isFalse(yield* refuse(limiter, 10, model))
      assert.isFalse(yield* refuse(limiter, 10, model))
      assert.deepStrictEqual(limitOf(yield* bucketOf(limiter, model)), { limit: 90, source: "plan" })
      // a third in the window (three, and more than a fifth of the window's requests): the plan's figure is dropped
      // and what the window held is the limit, which the limiter now paces the retry on
      assert.isTrue(yield* refuse(limiter, 10, model))
      const bucket = yield* bucketOf(limiter, model)
      assert.deepStrictEqual(limitOf(bucket), { limit: 10, source: "learnt", confidence: "measured" })
      assert.strictEqual(bucket.budgets.input.source, "unknown")
      // the next request waits for the window
      assert.isTrue(yield* stillWaiting(yield* Effect.fork(limiter.acquire(ticket(10, model)))))
    }))

  it.effect("audio is metered by requests alone: no token budget, whatever the row says", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ tier: "essential" })
      assert.deepStrictEqual(limiter.cost("/audio/transcriptions", { model: "whisper-large-v3" }), {
        model: "whisper-large-v3",
        input: 0,
        output: 0
      })
      yield* Effect.flatMap(limiter.acquire(ticket(0, "whisper-large-v3")), (p) => p.settle("succeeded"))
      const bucket = yield* bucketOf(limiter, "whisper-large-v3")
      assert.deepStrictEqual(limitOf(bucket), { limit: 300, source: "plan" })
      assert.deepStrictEqual(limitOf(bucket, "input"), { limit: undefined, source: "unknown" })
    }))
})

describe("LimiterStore.layerMemoryCached", () => {
  /** A cached store on `directory`. */
  const cachedStore = (directory: string) =>
    Effect.provide(
      LimiterStore.LimiterStore,
      LimiterStore.layerMemoryCached(directory).pipe(Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer)))
    )
  /** The log lines, kept in `lines`. */
  const logsIn = (lines: Array<string>) =>
    Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => lines.push(String(message))))
  const bucket = "key#0a1b2c3d\u0000m"

  it.scoped("keeps learnt limits in a file per key, named by the fingerprint, which a new store reads", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* tempDir("aifs-cache-")
      const cache = `${dir}/nested`
      const store = yield* cachedStore(cache)
      assert.isUndefined(yield* store.learnt(bucket))
      yield* TestClock.setTime(1_000)
      yield* store.keepLearnt(bucket, { requests: 45 })
      yield* store.keepLearnt("key#0a1b2c3d\u0000other", { tokens: 900 })
      assert.deepStrictEqual(yield* fs.readDirectory(cache), ["limits-key0a1b2c3d.json"])
      assert.deepStrictEqual(JSON.parse(yield* fs.readFileString(`${cache}/limits-key0a1b2c3d.json`)), {
        version: 2,
        models: { m: { requests: 45, learntAt: 1_000 }, other: { tokens: 900, learntAt: 1_000 } }
      })
      const next = yield* cachedStore(cache)
      assert.deepStrictEqual(yield* next.learnt(bucket), { requests: 45 })
      assert.isUndefined(yield* next.learnt("key#99999999\u0000m"))
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("limits older than 30 days are not used", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-cache-")
      yield* Effect.flatMap(cachedStore(dir), (store) => store.keepLearnt(bucket, { requests: 45 }))
      yield* TestClock.adjust("30 days")
      assert.isDefined(yield* Effect.flatMap(cachedStore(dir), (store) => store.learnt(bucket)))
      yield* TestClock.adjust("1 second")
      assert.isUndefined(yield* Effect.flatMap(cachedStore(dir), (store) => store.learnt(bucket)))
    }))

  it.scoped("a file that is not learnt limits is ignored with one warning, and replaced by what is learnt next", () => {
    const warnings: Array<string> = []
    return Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* tempDir("aifs-cache-")
      const file = `${dir}/limits-key0a1b2c3d.json`
      yield* fs.writeFileString(file, `{"version":3,"models":{}}`)
      const store = yield* cachedStore(dir)
      assert.isUndefined(yield* store.learnt(bucket))
      assert.isUndefined(yield* store.learnt("key#0a1b2c3d\u0000other"))
      assert.deepStrictEqual(warnings, [`aifs: learnt limits: ignoring ${file}: it is not a file of learnt limits`])
      yield* store.keepLearnt(bucket, { requests: 7 })
      assert.strictEqual(JSON.parse(yield* fs.readFileString(file)).models.m.requests, 7)
    }).pipe(Effect.provide(NodeFileSystem.layer), Effect.provide(logsIn(warnings)))
  })

  it.scoped("a file of version 1 (limits learnt by the rules before three budgets) is not read, nor warned about", () => {
    const warnings: Array<string> = []
    return Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* tempDir("aifs-cache-")
      const file = `${dir}/limits-key0a1b2c3d.json`
      yield* fs.writeFileString(file, `{"version": 1, "models": {"m": {"tokens": 3164, "learntAt": 0}}}`)
      const store = yield* cachedStore(dir)
      assert.isUndefined(yield* store.learnt(bucket))
      assert.deepStrictEqual(warnings, [])
      yield* store.keepLearnt(bucket, { requests: 7 })
      assert.deepStrictEqual(JSON.parse(yield* fs.readFileString(file)).version, 2)
    }).pipe(Effect.provide(NodeFileSystem.layer), Effect.provide(logsIn(warnings)))
  })

  it.scoped("a directory that cannot be used costs a warning, never a failure; the limits stay in memory", () => {
    const warnings: Array<string> = []
    return Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* tempDir("aifs-cache-")
      // a file where the directory should be
      yield* fs.writeFileString(`${dir}/taken`, "")
      const store = yield* cachedStore(`${dir}/taken`)
      yield* store.keepLearnt(bucket, { requests: 7 })
      yield* store.keepLearnt(bucket, { requests: 8 })
      assert.deepStrictEqual(yield* store.learnt(bucket), { requests: 8 })
      // one for reading, one for writing, however many limits are kept
      assert.strictEqual(warnings.length, 2)
      assert.include(warnings[0], `aifs: learnt limits: cannot read ${dir}/taken/limits-key0a1b2c3d.json: `)
      assert.include(warnings[1], `aifs: learnt limits: cannot keep them in ${dir}/taken/limits-key0a1b2c3d.json`)
      assert.deepStrictEqual(yield* fs.readDirectory(dir), ["taken"])
    }).pipe(Effect.provide(NodeFileSystem.layer), Effect.provide(logsIn(warnings)))
  })

  it.effect("the memory store's learnt limits: none until kept", () =>
    Effect.gen(function*() {
      const store = LimiterStore.makeMemory()
      assert.isUndefined(yield* store.learnt("b"))
      yield* store.keepLearnt("b", { tokens: 9 })
      assert.deepStrictEqual(yield* store.learnt("b"), { tokens: 9 })
    }))

  it("decodes learnt limits from their JSON, and nothing from anything else", () => {
    assert.deepStrictEqual(LimiterStore.decodeLearnt(`{"requests":45}`), { requests: 45 })
    assert.isUndefined(LimiterStore.decodeLearnt(`{"requests":-1}`))
    assert.isUndefined(LimiterStore.decodeLearnt(`{"requests":1.5}`))
    assert.isUndefined(LimiterStore.decodeLearnt("not json"))
  })
})
