import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as FileSystem from "@effect/platform/FileSystem"
import { assert, describe, inject, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as Inference from "../../src/layers/Inference.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as Node from "../../src/layers/Node.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import * as RedisLimiterStore from "../../src/redis.js"
import * as Chat from "../../src/services/Chat.js"
import { ask } from "../helpers/emulator.js"
import { tempDir } from "../helpers/tempDir.js"

const redisUrl = inject("redisUrl")

const windowMs = 6_000
const llama = "Llama-3.3-70B-Instruct"

/** The emulator with one key whose limits match no preset, and a client told nothing of them (or only its plan). */
const emulatorWithKey = (rpm: number, tpm = 10_000_000, tier: "auto" | ClientConfig.Plan = "auto") =>
  Testing.layerEmulator({
    tier: "custom",
    tiers: { custom: { rpm, tpm } },
    keys: [{ key: Emulator.developmentKey("custom"), tier: "custom" }],
    window: `${windowMs} millis`,
    client: { tier },
    rateLimiter: { margin: 0 }
  })

/** Live milliseconds, off the TestClock. */
const liveSleep = (ms: number) => TestServices.provideLive(Effect.sleep(`${ms} millis`))

/**
 * Waits (live, bounded) until the emulator has nothing on the wire and received nothing new over a few polls: every
 * request is answered, waiting in the limiter or asleep on the TestClock.
 */
const quiet = Effect.gen(function*() {
  const emulator = yield* Emulator.Emulator
  let last = -1
  let still = 0
  for (let i = 0; i < 400 && still < 3; i++) {
    const stats = yield* emulator.stats
    still = stats.inFlight === 0 && stats.received === last ? still + 1 : 0
    last = stats.received
    yield* liveSleep(5)
  }
})

/**
 * Runs `requests` with `concurrency` to completion under the TestClock, moving the clock to the next wake-up
 * whenever the system is quiet, for at most `maxSteps` moves. Returns the clock's time at each 429 the emulator
 * answered, counted at each step.
 */
const drive = (requests: number, concurrency: number, model = llama, maxSteps = 3_000, words = 2) =>
  Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const emulator = yield* Emulator.Emulator
    const refusals: Array<number> = []
    const fiber = yield* Effect.fork(Effect.forEach(
      Array.from({ length: requests }, (_, i) => i),
      (i) => chat.create(ask(model, `question ${i}${" word".repeat(words - 2)}`, { max_tokens: 10 })),
      { concurrency, discard: true }
    ))
    let refused = (yield* emulator.stats).rateLimited
    for (let step = 0; step < maxSteps; step++) {
      yield* quiet
      const now = yield* Clock.currentTimeMillis
      const stats = yield* emulator.stats
      for (; refused < stats.rateLimited; refused++) refusals.push(now)
      if (Option.isSome(yield* Fiber.poll(fiber))) {
        yield* Fiber.join(fiber)
        return refusals
      }
      const wakeUps = Chunk.toReadonlyArray(yield* TestClock.sleeps()).filter((t) => t > now)
      yield* TestClock.adjust(Math.max(1, Math.min(...wakeUps) - now))
    }
    return yield* Effect.dieMessage(`not done after ${maxSteps} clock steps`)
  })

/**
 * A learnt request limit of a 9-a-window key: 9, or 8 when a request that the server took before the refused one was
 * still on its way back and went uncounted (on a loaded machine; a later raise wins it back). Never above.
 */
const learntNine = (value: number | undefined) =>
  assert.isTrue(value === 9 || value === 8, `learnt ${value}, not the key's 9 (or 8)`)

const bucketOf = (model: string) =>
  Effect.flatMap(
    RateLimiter.RateLimiter,
    (limiter) => Effect.map(limiter.snapshot, (states) => states.find((s) => s.model === model))
  )

describe("tier auto: limits learnt from the server", () => {
  it.effect("without headers, the estimate converges to the key's limit, its 429s in the first window and one raise", () =>
    Effect.gen(function*() {
      const start = yield* Clock.currentTimeMillis
      const refusals = yield* drive(60, 8)
      const bucket = yield* bucketOf(llama)
      learntNine(bucket?.budgets.requests.limit)
      assert.strictEqual(bucket?.budgets.requests.source, "learnt")
      // the wall: the requests in flight when the first 429 came; later, only the careful raise after 3 calm
      // windows meets one (the limit has not changed)
      const first = refusals.filter((t) => t - start < windowMs)
      const later = refusals.filter((t) => t - start >= windowMs)
      assert.isAtMost(first.length, 8)
      assert.isAtMost(later.length, 1)
      assert.isTrue(later.every((t) => t - start >= 3 * windowMs), `429s at ${refusals.map((t) => t - start)}`)
      // 60 requests at 9 a window: 6 windows and a bit, nothing lost to the learning
      assert.isAtMost((yield* Clock.currentTimeMillis) - start, 7 * windowMs)
    }).pipe(Effect.provide(emulatorWithKey(9))))
})

describe("a plan tier: each model's budgets from the plan's table", () => {
  it.effect("a key that has its plan's figures: no 429 at all, the table's 300 a window from the first request", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const start = yield* Clock.currentTimeMillis
      // essential gives Llama-3.3-70B-Instruct 300 requests, 300,000 input and 150,000 output tokens a window
      const refusals = yield* drive(900, 32)
      assert.deepStrictEqual(refusals, [])
      const bucket = yield* bucketOf(llama)
      assert.deepStrictEqual([bucket?.budgets.requests.limit, bucket?.budgets.requests.source], [300, "plan"])
      assert.deepStrictEqual([bucket?.budgets.output.limit, bucket?.budgets.output.source], [150_000, "plan"])
      // 900 requests at 300 a window: three windows (the last one's requests go at its start)
      assert.isBelow((yield* Clock.currentTimeMillis) - start, 3 * windowMs)
      assert.strictEqual((yield* emulator.stats).rateLimited, 0)
    }).pipe(Effect.provide(emulatorWithKey(300, 10_000_000, "essential"))))

  it.effect("a key below its plan's figures (the table is wrong for it): 429s until they keep coming, then learnt", () =>
    Effect.gen(function*() {
      const start = yield* Clock.currentTimeMillis
      const refusals = yield* drive(300, 16)
      const bucket = yield* bucketOf(llama)
      const learnt = bucket?.budgets.requests.limit ?? 0
      assert.isTrue(learnt >= 98 && learnt <= 100, `learnt ${learnt}`)
      assert.strictEqual(bucket?.budgets.requests.source, "learnt")
      // the wall: the requests in flight when the 429s came (noise until three came in the window), then at most one
      // later (a raise on trial)
      assert.isAtMost(refusals.filter((t) => t - start < windowMs).length, 16)
      assert.isAtMost(refusals.filter((t) => t - start >= windowMs).length, 1)
    }).pipe(Effect.provide(emulatorWithKey(100, 10_000_000, "essential"))))
})

describe("tier auto: limits that change, models apart, headers", () => {
  it.effect("a limit raised mid-run is found within a bounded number of windows", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      yield* drive(30, 8)
      learntNine((yield* bucketOf(llama))?.budgets.requests.limit)
      yield* emulator.setQuota("custom", { rpm: 40, tpm: 10_000_000 })
      const start = yield* Clock.currentTimeMillis
      // 3 calm windows, then raises of 1, 2, 4, 8, 16 requests, each after a window that held
      const refusals = yield* drive(400, 16)
      const learnt = (yield* bucketOf(llama))?.budgets.requests.limit ?? 0
      assert.isTrue(learnt >= 36 && learnt <= 40, `learnt ${learnt}`)
      // the 400 requests took at most 4 windows more than the raised quota's ideal
      const ideal = (400 / 40) * windowMs
      assert.isAtMost((yield* Clock.currentTimeMillis) - start, ideal + 12 * windowMs)
      // one raise went past the new limit: its 429s are the requests of that step (at most the 16 in flight); a
      // later raise on trial meets one at most (a step of one request past the limit, measured back)
      const windows = refusals.map((t) => Math.floor((t - start) / windowMs))
      const overshoot = windows.filter((w) => w === windows[0]).length
      assert.isAtMost(overshoot, 16, windows.join(","))
      for (const w of new Set(windows.slice(overshoot))) {
        assert.isAtMost(windows.filter((x) => x === w).length, 1, windows.join(","))
      }
    }).pipe(Effect.provide(emulatorWithKey(9))))

  it.effect("a limit lowered mid-run costs a bounded number of 429s and is learnt at the next one", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      yield* drive(30, 8)
      learntNine((yield* bucketOf(llama))?.budgets.requests.limit)
      yield* emulator.setQuota("custom", { rpm: 4, tpm: 10_000_000 })
      const refusals = yield* drive(40, 8)
      // the window still held what the old limit let through: the first 429s measure it draining, and the
      // estimate comes down with each (the counts of a request sent and answered after the refused one can
      // make one measurement a request too high; the next 429 under it lowers it again)
      assert.isAtMost((yield* bucketOf(llama))?.budgets.requests.limit ?? 0, 5)
      const more = yield* drive(40, 8)
      assert.strictEqual((yield* bucketOf(llama))?.budgets.requests.limit, 4)
      // the requests in flight at the new wall, and three in a row to tell the window changed from noise
      assert.isAtMost(refusals.length + more.length, 8 + 3)
    }).pipe(Effect.provide(emulatorWithKey(9))))

  it.effect("two models learn apart: a 429 on one says nothing about the other", () =>
    Effect.gen(function*() {
      yield* drive(30, 8)
      yield* drive(3, 1, "gpt-oss-120b")
      learntNine((yield* bucketOf(llama))?.budgets.requests.limit)
      const other = yield* bucketOf("gpt-oss-120b")
      assert.deepStrictEqual(other?.budgets.requests, {
        limit: undefined,
        source: "unknown",
        confidence: "probing",
        used: 3
      })
      // still probing: a few requests in flight, grown by the three answers
      assert.strictEqual(other?.probe, 3)
    }).pipe(Effect.provide(emulatorWithKey(9))))

  it.effect("a model that sends headers takes its limits from them, with no 429", () =>
    Effect.gen(function*() {
      const refusals = yield* drive(30, 8, "gpt-4o")
      const bucket = yield* bucketOf("gpt-4o")
      assert.deepStrictEqual(bucket?.budgets.requests.limit, 9)
      assert.deepStrictEqual(bucket?.budgets.requests.source, "header")
      assert.strictEqual(refusals.length, 0)
    }).pipe(Effect.provide(emulatorWithKey(9))))

  it.effect("when tokens bind, requests of different sizes tell: the token limit is learnt, not the request one", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      // small requests first: a window holds 12 of them without a 429 (the request limit is at least 12)
      yield* Effect.forEach(
        Array.from({ length: 12 }, (_, i) => i),
        (i) => chat.create(ask(llama, `small ${i}`, { max_tokens: 10 })),
        { discard: true }
      )
      yield* TestClock.adjust(windowMs)
      // then large ones (about 400 tokens): the token limit binds after a few
      yield* drive(12, 4, llama, 3_000, 400)
      const bucket = yield* bucketOf(llama)
      assert.strictEqual(bucket?.budgets.input.source, "learnt")
      assert.strictEqual(bucket?.budgets.requests.source, "unknown")
      // counted as the client counts (its estimate of the prompt and the reserved max_tokens): near the server's
      const learnt = bucket?.budgets.input.limit ?? 0
      assert.isTrue(learnt >= 1_600 && learnt <= 2_400, `learnt ${learnt}`)
      assert.strictEqual(bucket?.binding, "input")
      // counted in the client's estimates, a measurement can be a little high: the next 429 under it lowers it,
      // and then it holds
      const again = yield* drive(24, 4, llama, 3_000, 400)
      assert.isAtMost(again.length, 1)
      assert.strictEqual((yield* drive(12, 4, llama, 3_000, 400)).length, 0)
    }).pipe(Effect.provide(emulatorWithKey(100, 2_000))))
})

describe("tier auto: what was learnt is kept", () => {
  const key = Emulator.developmentKey("custom")
  const emulator = Emulator.layer({
    tiers: { custom: { rpm: 9, tpm: 10_000_000 } },
    keys: [{ key, tier: "custom" }],
    window: `${windowMs} millis`
  })

  it.scoped("without Redis, in a file per key in the cache directory: a restart starts from it, with no 429", () =>
    Effect.gen(function*() {
      const server = yield* Emulator.Emulator
      const fs = yield* FileSystem.FileSystem
      const cache = yield* tempDir("aifs-limits-")
      // each run builds its client from the environment, as a new process would
      const run = <A, E>(effect: Effect.Effect<A, E, Chat.Chat | RateLimiter.RateLimiter | Emulator.Emulator>) =>
        effect.pipe(
          Effect.provide(Node.layerFromEnvWith({ rateLimiter: { margin: 0 } })),
          Effect.withConfigProvider(ConfigProvider.fromMap(
            new Map([
              ["AIFS_API_KEY", key],
              ["AIFS_BASE_URL", server.baseUrl],
              ["AIFS_TIER", "auto"],
              ["AIFS_LIMITER_WINDOW", `${windowMs} millis`],
              ["AIFS_CACHE_DIR", cache]
            ])
          ))
        )
      const first = yield* run(drive(30, 8))
      assert.isAbove(first.length, 0)
      // the key's learnt limits, beside its month's spend
      const all = yield* fs.readDirectory(cache)
      const files = all.filter((file) => file.startsWith("limits-"))
      assert.deepStrictEqual(files.length, 1)
      assert.match(files[0]!, /^limits-key[0-9a-f]{8}\.json$/)
      assert.deepStrictEqual(
        all.filter((file) => !files.includes(file)).map((file) => file.replace(/[0-9a-f]{8}/, "")),
        [
          "spend-key-1970-01.jsonl"
        ]
      )
      const content = yield* fs.readFileString(`${cache}/${files[0]}`)
      assert.notInclude(content, key)
      learntNine(JSON.parse(content).models[llama].requests)
      yield* TestClock.adjust(windowMs)
      const second = yield* run(Effect.gen(function*() {
        const refusals = yield* drive(30, 8)
        return { refusals, bucket: yield* bucketOf(llama) }
      }))
      assert.strictEqual(second.refusals.length, 0)
      learntNine(second.bucket?.budgets.requests.limit)
      assert.strictEqual(second.bucket?.budgets.requests.source, "learnt")
    }).pipe(Effect.provide(Layer.merge(emulator, NodeFileSystem.layer))))

  it.scoped("a broken file is ignored with one warning, and replaced by what is learnt", () =>
    Effect.gen(function*() {
      const server = yield* Emulator.Emulator
      const fs = yield* FileSystem.FileSystem
      const cache = yield* tempDir("aifs-limits-")
      const logs: Array<string> = []
      const config = ClientConfig.layer({ apiKey: key, baseUrl: server.baseUrl, tier: "auto" })
      const client = Inference.layerHttpLimitedWith({ window: `${windowMs} millis`, margin: 0 }).pipe(
        Layer.provide(LimiterStore.layerMemoryCached(cache)),
        Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer)),
        Layer.provide(Node.httpClient),
        Layer.provide(config)
      )
      // the file of this key is written by a first learning, then broken
      yield* drive(20, 8).pipe(Effect.provide(client))
      const [name] = (yield* fs.readDirectory(cache)).filter((file) => file.startsWith("limits-"))
      yield* fs.writeFileString(`${cache}/${name}`, "{ not json")
      yield* TestClock.adjust(windowMs)
      const refusals = yield* drive(20, 8).pipe(
        Effect.provide(client),
        Effect.provide(Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => logs.push(String(message)))))
      )
      assert.isAbove(refusals.length, 0)
      assert.strictEqual(logs.filter((line) => line.includes("is not a file of learnt limits")).length, 1)
      // learnt again (requests sent together reach the server in any order: those that succeed after the 429 that
      // measured the window lift a measurement that missed them)
      const learnt = JSON.parse(yield* fs.readFileString(`${cache}/${name}`)).models[llama].requests
      learntNine(learnt)
    }).pipe(Effect.provide(Layer.merge(emulator, NodeFileSystem.layer))))

  it.scoped("a cache directory that cannot be written: one warning, and the run learns and goes as in memory", () =>
    Effect.gen(function*() {
      const server = yield* Emulator.Emulator
      const fs = yield* FileSystem.FileSystem
      const dir = yield* tempDir("aifs-limits-")
      // a file where the directory would be: every write fails (ENOTDIR)
      yield* fs.writeFileString(`${dir}/file`, "")
      const config = ClientConfig.layer({ apiKey: key, baseUrl: server.baseUrl, tier: "auto" })
      const clientOn = (store: Layer.Layer<LimiterStore.LimiterStore>) =>
        Inference.layerHttpLimitedWith({ window: `${windowMs} millis`, margin: 0 }).pipe(
          Layer.provide(store),
          Layer.provide(Node.httpClient),
          Layer.provide(config)
        )
      const timed = (store: Layer.Layer<LimiterStore.LimiterStore>) =>
        Effect.gen(function*() {
          const logs: Array<string> = []
          const started = yield* Clock.currentTimeMillis
          const result = yield* Effect.gen(function*() {
            const refusals = yield* drive(30, 8)
            return { refusals, bucket: yield* bucketOf(llama) }
          }).pipe(
            Effect.provide(clientOn(store)),
            Effect.provide(
              Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => logs.push(String(message))))
            )
          )
          const tookMs = (yield* Clock.currentTimeMillis) - started
          yield* TestClock.adjust(windowMs)
          return { ...result, tookMs, logs }
        })
      const unwritable = yield* timed(
        LimiterStore.layerMemoryCached(`${dir}/file/cache`).pipe(
          Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer))
        )
      )
      const memory = yield* timed(LimiterStore.layerMemory)
      assert.isAbove(unwritable.refusals.length, 0)
      learntNine(unwritable.bucket?.budgets.requests.limit)
      assert.strictEqual(unwritable.logs.filter((line) => line.includes("cannot keep them in")).length, 1)
      assert.deepStrictEqual(yield* fs.readDirectory(dir), ["file"])
      // the failed writes change nothing of the run's pace (on the TestClock: the limiter's own decisions, not the
      // disk's time): as long as the same run in memory, within a window
      assert.isAtMost(Math.abs(unwritable.tookMs - memory.tookMs), windowMs, `${unwritable.tookMs} vs ${memory.tookMs}`)
    }).pipe(Effect.provide(Layer.merge(emulator, NodeFileSystem.layer))))

  it.scoped.skipIf(redisUrl === undefined)(
    "with Redis, in the store: a process that starts later does not learn again",
    () =>
      Effect.gen(function*() {
        const server = yield* Emulator.Emulator
        const prefix = `learnt-${crypto.randomUUID()}`
        const client = Inference.layerHttpLimitedWith({ window: `${windowMs} millis`, margin: 0 }).pipe(
          Layer.provide(RedisLimiterStore.layer(redisUrl!, { prefix, clock: "effect" })),
          Layer.provide(Node.httpClient),
          Layer.provide(ClientConfig.layer({ apiKey: key, baseUrl: server.baseUrl, tier: "auto" }))
        )
        // long enough for a raise on trial to meet a 429 that measures the limit again: it is kept once confirmed
        const first = yield* drive(60, 8).pipe(Effect.provide(client))
        assert.isAbove(first.length, 0)
        // a second process on the store: a limiter of its own, the store's count and learnt limits
        const second = yield* Effect.gen(function*() {
          const refusals = yield* drive(30, 8)
          return { refusals, bucket: yield* bucketOf(llama) }
        }).pipe(Effect.provide(client))
        assert.strictEqual(second.refusals.length, 0)
        learntNine(second.bucket?.budgets.requests.limit)
      }).pipe(Effect.provide(emulator))
  )
})
