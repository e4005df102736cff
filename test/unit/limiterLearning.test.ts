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
const ticket = (tokens = 10, model = "m") => ({ key: "key#1", model, tokens })

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
    () => Effect.flatMap(limiter.acquire(ticket(tokens)), (permit) => permit.succeeded),
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
      assert.deepStrictEqual(bucket.requests, { value: undefined, source: "unknown", confidence: "probing" })
      assert.strictEqual(bucket.limitRequests, Number.POSITIVE_INFINITY)
      assert.strictEqual(bucket.probe, 2)
      // an answer frees its place in flight, and the probe grows
      yield* first.succeeded
      yield* Fiber.join(third)
      assert.strictEqual((yield* bucketOf(limiter)).probe, 2)
      yield* second.succeeded
      assert.strictEqual((yield* bucketOf(limiter)).probe, 3)
      // the third and two more make three in flight: a fourth waits
      yield* limiter.acquire(ticket())
      yield* limiter.acquire(ticket())
      assert.isTrue(yield* stillWaiting(yield* Effect.fork(limiter.acquire(ticket()))))
    }))

  it.effect("a 429 measures the window: the limit is what it held, the retry is paced by the limiter", () =>
    Effect.gen(function*() {
      const { limiter, store } = yield* learner()
      yield* succeed(limiter, 5)
      const refused = yield* limiter.acquire(ticket())
      assert.isTrue(yield* refused.throttled)
      const bucket = yield* bucketOf(limiter)
      assert.deepStrictEqual(bucket.requests, { value: 5, source: "learnt", confidence: "measured" })
      assert.strictEqual(bucket.probe, undefined)
      // kept in the store, for other processes and the next run; requests this small (10 tokens each) were not
      // refused by a token limit on any plan: none is learnt from them
      assert.deepStrictEqual(yield* store.learnt("key#1\u0000m"), { requests: 5 })
      assert.strictEqual(bucket.tokens.source, "unknown")
      // the retry waits in the limiter until the first entry leaves the window
      const retry = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* stillWaiting(retry))
      yield* TestClock.adjust(W)
      yield* Fiber.join(retry)
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
      // the probe: 2, then 3 after two answers (nothing else an observer sees changes on the first)
      yield* succeed(limiter, 2)
      yield* drain
      assert.includeMembers(seen.map((s) => s.probe), [2, 3])
      yield* succeed(limiter, 2)
      assert.isTrue(yield* Effect.flatMap(limiter.acquire(ticket()), (p) => p.throttled))
      yield* drain
      const last = seen[seen.length - 1]!
      assert.deepStrictEqual(last.requests, { value: 4, source: "learnt", confidence: "measured" })
      assert.isUndefined(last.probe)
    }))

  it.effect("a 429 with a preset tier measures nothing: the retry policy waits as before", () =>
    Effect.gen(function*() {
      const { limiter, store } = yield* learner({ tier: "basic" })
      yield* succeed(limiter, 5)
      const refused = yield* limiter.acquire(ticket())
      assert.isFalse(yield* refused.throttled)
      const bucket = yield* bucketOf(limiter)
      assert.deepStrictEqual(bucket.requests, { value: 20, source: "preset" })
      assert.strictEqual(bucket.usedRequests, 5)
      assert.isUndefined(yield* store.learnt("key#1\u0000m"))
    }))

  it.effect("the requests sent after the refused one are not counted in its measurement", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ limits: { m: { tpm: 1_000_000 } } })
      yield* succeed(limiter, 4)
      const refused = yield* limiter.acquire(ticket())
      const later = yield* limiter.acquire(ticket())
      assert.isTrue(yield* refused.throttled)
      assert.strictEqual((yield* bucketOf(limiter)).requests.value, 4)
      // sent with it, it succeeded: the server had taken it, the window held 5
      yield* later.succeeded
      assert.strictEqual((yield* bucketOf(limiter)).requests.value, 5)
    }))

  it.effect("configured limits and headers are not learnt over", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ limits: { m: { rpm: 3 } } })
      const bucket = yield* Effect.zipRight(limiter.acquire(ticket()), bucketOf(limiter))
      assert.deepStrictEqual(bucket.requests, { value: 3, source: "configured" })
      assert.deepStrictEqual(bucket.tokens, { value: undefined, source: "unknown", confidence: "probing" })
      // one limit known: no probe
      assert.strictEqual(bucket.probe, undefined)
      yield* limiter.learn("key#1", "h", new RateLimitInfo({ limitRequests: 7, limitTokens: 700, observedAt: 0 }), 200)
      const headed = yield* bucketOf(limiter, "h")
      assert.deepStrictEqual(headed.requests, { value: 7, source: "header" })
      assert.isTrue(headed.fromHeaders)
    }))

  it.effect("starts from the limits the store learnt before: no probe, no 429 to pay", () =>
    Effect.gen(function*() {
      const store = LimiterStore.makeMemory()
      yield* store.keepLearnt("key#1\u0000m", { requests: 2 })
      const { limiter } = yield* learner({}, store)
      yield* succeed(limiter, 2)
      const bucket = yield* bucketOf(limiter)
      assert.deepStrictEqual(bucket.requests, { value: 2, source: "learnt", confidence: "measured" })
      assert.deepStrictEqual(bucket.tokens.source, "unknown")
      const third = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* stillWaiting(third))
      assert.strictEqual((yield* bucketOf(limiter)).binding, "requests")
      yield* TestClock.adjust(W)
      yield* Fiber.join(third)
    }))

  it.effect("a bucket whose limits are configured or preset learns nothing: not what the store kept, not from a 429", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<RateLimiter.Options> = [
        { limits: { m: { rpm: 100, tpm: 10_000 } } },
        { tier: "standard4000" }
      ]
      for (const options of cases) {
        const store = LimiterStore.makeMemory()
        yield* store.keepLearnt("key#1\u0000m", { requests: 3, tokens: 300 })
        const { limiter } = yield* learner(options, store)
        yield* succeed(limiter, 2)
        const refused = yield* limiter.acquire(ticket())
        // not paced by the limiter: the retry policy waits as for any 429
        assert.isFalse(yield* refused.throttled)
        const bucket = yield* bucketOf(limiter)
        assert.notStrictEqual(bucket.requests.source, "learnt")
        assert.isUndefined(bucket.probe)
        // a bucket that had recalled learnt limits would take this 429 for the usage of a process before and close
        // its window: this one goes on
        const next = yield* Effect.fork(limiter.acquire(ticket()))
        assert.isFalse(yield* stillWaiting(next), JSON.stringify(options))
      }
    }))

  it.effect("resumed, a 429 in the first window is the usage of the process before: it closes the window, measures nothing", () =>
    Effect.gen(function*() {
      const store = LimiterStore.makeMemory()
      yield* store.keepLearnt("key#1\u0000m", { requests: 5 })
      const { limiter } = yield* learner({ limits: { m: { tpm: 1_000_000 } } }, store)
      yield* succeed(limiter, 2)
      assert.isTrue(yield* Effect.flatMap(limiter.acquire(ticket()), (p) => p.throttled))
      const bucket = yield* bucketOf(limiter)
      assert.strictEqual(bucket.requests.value, 5)
      assert.strictEqual(bucket.blockedMs, W)
      const next = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* stillWaiting(next))
      yield* TestClock.adjust(W)
      yield* Fiber.join(next)
      // a window later, a 429 measures again
      assert.isTrue(yield* Effect.flatMap(limiter.acquire(ticket()), (p) => p.throttled))
      assert.strictEqual((yield* bucketOf(limiter)).requests.value, 1)
    }))

  it.effect("after 3 calm windows at a learnt limit a caller that waits on it raises it by a step", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ limits: { m: { tpm: 1_000_000 } } })
      yield* succeed(limiter, 4)
      assert.isTrue(yield* Effect.flatMap(limiter.acquire(ticket()), (p) => p.throttled))
      for (let window = 0; window < 3; window++) {
        yield* TestClock.adjust(W)
        yield* succeed(limiter, 4)
      }
      assert.strictEqual((yield* bucketOf(limiter)).requests.value, 4)
      // the fifth of the window waits on the limit: three windows have passed since the 429, it is raised
      yield* succeed(limiter, 1)
      assert.strictEqual((yield* bucketOf(limiter)).requests.value, 5)
      assert.strictEqual((yield* bucketOf(limiter)).requests.confidence, "measured")
    }))

  it.effect("a request larger than a learnt token limit is not refused: it goes alone, and its success lifts the limit", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ limits: { m: { rpm: 1_000 } } })
      yield* succeed(limiter, 2, 100)
      assert.isTrue(yield* Effect.flatMap(limiter.acquire(ticket(100)), (p) => p.throttled))
      assert.deepStrictEqual((yield* bucketOf(limiter)).tokens, {
        value: 299,
        source: "learnt",
        confidence: "measured"
      })
      // 5,000 tokens: it waits until the window holds no tokens, then goes alone
      const large = yield* Effect.fork(limiter.acquire(ticket(5_000)))
      assert.isTrue(yield* stillWaiting(large))
      yield* TestClock.adjust(W)
      yield* Effect.flatMap(Fiber.join(large), (p) => p.succeeded)
      assert.strictEqual((yield* bucketOf(limiter)).tokens.value, 5_000)
    }))
})

describe("RateLimiter with a plan tier (from the plans' floor)", () => {
  it.effect("300 requests and 300,000 tokens enforced from the first request, no probe; a floor is not kept as learnt", () =>
    Effect.gen(function*() {
      const { limiter, store } = yield* learner({ tier: "professional" })
      yield* succeed(limiter, 300)
      const next = yield* Effect.fork(limiter.acquire(ticket()))
      assert.isTrue(yield* stillWaiting(next))
      const bucket = yield* bucketOf(limiter)
      assert.deepStrictEqual(bucket.requests, { value: 300, source: "plan" })
      assert.deepStrictEqual(bucket.tokens, { value: 300_000, source: "plan" })
      assert.isUndefined(bucket.probe)
      assert.isUndefined(yield* store.learnt("key#1\u0000m"))
      yield* TestClock.adjust(W)
      yield* Fiber.join(next)
    }))

  it.effect("a 429 under the floor (a dynamic quota) measures the window, as auto does", () =>
    Effect.gen(function*() {
      const { limiter, store } = yield* learner({ tier: "essential" })
      yield* succeed(limiter, 100)
      assert.isTrue(yield* Effect.flatMap(limiter.acquire(ticket()), (p) => p.throttled))
      assert.deepStrictEqual((yield* bucketOf(limiter)).requests, {
        value: 100,
        source: "learnt",
        confidence: "measured"
      })
      assert.strictEqual((yield* store.learnt("key#1\u0000m"))?.requests, 100)
    }))

  it.effect("3 calm windows with callers waiting at the floor raise it; the other limit stays the plan's", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ tier: "agentic" })
      yield* succeed(limiter, 300)
      for (let window = 0; window < 3; window++) {
        yield* TestClock.adjust(W)
        yield* succeed(limiter, 300)
      }
      assert.deepStrictEqual((yield* bucketOf(limiter)).requests, { value: 300, source: "plan" })
      yield* succeed(limiter, 1)
      const bucket = yield* bucketOf(limiter)
      assert.deepStrictEqual(bucket.requests, { value: 306, source: "learnt", confidence: "measured" })
      assert.deepStrictEqual(bucket.tokens, { value: 300_000, source: "plan" })
    }))

  it.effect("a limit configured for one dimension is kept; the other starts from the floor", () =>
    Effect.gen(function*() {
      const { limiter } = yield* learner({ tier: "professional", limits: { m: { rpm: 50 } } })
      yield* succeed(limiter, 1)
      const bucket = yield* bucketOf(limiter)
      assert.deepStrictEqual(bucket.requests, { value: 50, source: "configured" })
      assert.deepStrictEqual(bucket.tokens, { value: 300_000, source: "plan" })
    }))

  it.effect("limits kept from before win over the floor", () =>
    Effect.gen(function*() {
      const store = LimiterStore.makeMemory()
      yield* store.keepLearnt("key#1\u0000m", { requests: 120 })
      const { limiter } = yield* learner({ tier: "professional" }, store)
      yield* succeed(limiter, 1)
      const bucket = yield* bucketOf(limiter)
      assert.deepStrictEqual(bucket.requests, { value: 120, source: "learnt", confidence: "measured" })
      assert.deepStrictEqual(bucket.tokens, { value: 300_000, source: "plan" })
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
        version: 1,
        models: { m: { requests: 45, learntAt: 1_000 }, other: { tokens: 900, learntAt: 1_000 } }
      })
      const next = yield* cachedStore(cache)
      assert.deepStrictEqual(yield* next.learnt(bucket), { requests: 45, tokens: undefined })
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
      yield* fs.writeFileString(file, `{"version":2,"models":{}}`)
      const store = yield* cachedStore(dir)
      assert.isUndefined(yield* store.learnt(bucket))
      assert.isUndefined(yield* store.learnt("key#0a1b2c3d\u0000other"))
      assert.deepStrictEqual(warnings, [`aifs: learnt limits: ignoring ${file}: it is not a file of learnt limits`])
      yield* store.keepLearnt(bucket, { requests: 7 })
      assert.strictEqual(JSON.parse(yield* fs.readFileString(file)).models.m.requests, 7)
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
