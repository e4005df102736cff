/**
 * The Redis limiter store on a real redis-server (test/globalSetup.ts): the suite every store passes
 * (test/helpers/storeConformance.ts), its keys (one hash tag per bucket, every key expiring), ids unique across
 * processes, the server's clock, and what a bad URL or password does.
 */
import { assert, describe, inject, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Metric from "effect/Metric"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import { Redis } from "ioredis"
import { createHash } from "node:crypto"
import { afterAll, beforeAll } from "vitest"
import { cost, none } from "../../src/internal/budgets.js"
import * as Scripts from "../../src/internal/redisScripts.js"
import * as ClientMetrics from "../../src/layers/ClientMetrics.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as Node from "../../src/layers/Node.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as RedisLimiterStore from "../../src/redis.js"
import { freePort, startRedis } from "../helpers/redisServer.js"
import {
  atTime,
  conformsToModel,
  eachBudgetBinds,
  limitsOf,
  servesInTurn,
  signalsReleases,
  waitsAreExact,
  waitsPastManyEntries
} from "../helpers/storeConformance.js"

const url = inject("redisUrl")

/** The digests of the store's scripts (what EVALSHA runs). */
const scriptShas = () => Object.values(Scripts).map((lua) => createHash("sha1").update(lua).digest("hex"))

/** A script that keeps the server busy for `ms` (DEBUG SLEEP is disabled by default since Redis 7). */
const serverBusyFor = (ms: number) => `
local start = redis.call('TIME')
while true do
  local t = redis.call('TIME')
  if (t[1] - start[1]) * 1000000 + (t[2] - start[2]) > ${ms * 1000} then return 0 end
end`
const busyFor500ms = serverBusyFor(500)

describe.skipIf(url === undefined)("the Redis limiter store", () => {
  let client: Redis
  let scope: Scope.CloseableScope
  let namespaces = 0

  beforeAll(async () => {
    client = new Redis(url!, { lazyConnect: true })
    // every store made on it listens to it until the suite ends: hundreds of them here, one in an application
    client.setMaxListeners(0)
    await client.connect()
    scope = Effect.runSync(Scope.make())
  })
  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await client.flushdb()
    client.disconnect()
  })

  /** A store on the shared server, in a namespace of its own (a fresh prefix), on Effect's clock. */
  const fresh = (options: RedisLimiterStore.Options = {}) =>
    Effect.runPromise(
      Scope.extend(
        RedisLimiterStore.make(client, {
          prefix: `t${++namespaces}`,
          clock: "effect",
          onUnavailable: "fail",
          ...options
        }),
        scope
      )
    )

  it("answers every operation as the sliding-window rule says, as the memory store does", async () => {
    await conformsToModel(() => fresh(), 150)
  }, 120_000)

  it(
    "a wait is exact: one millisecond earlier the request still waits, at the end of the wait it is admitted",
    async () => {
      await waitsAreExact(() => fresh(), 50)
    },
    60_000
  )

  it("behind its fallback (the default), every operation still answers as the rule says, on the server", async () => {
    await conformsToModel(() => fresh({ onUnavailable: "memory" }), 60)
  }, 120_000)

  it(
    "with no server at all, the fallback answers every operation as the rule says, from this process's memory",
    async () => {
      const nowhere = await freePort()
      const down = () =>
        Effect.runPromise(
          Scope.extend(
            Effect.map(
              Layer.build(RedisLimiterStore.layer(`redis://127.0.0.1:${nowhere}`, { clock: "effect" })),
              Context.get(LimiterStore.LimiterStore)
            ),
            scope
          ).pipe(Effect.provide(Logger.remove(Logger.defaultLogger)))
        )
      await conformsToModel(down, 60)
      await waitsAreExact(down, 20)
      await signalsReleases(down)
    },
    120_000
  )

  it("keeps learnt limits for every store on the prefix, for 30 days; anything else under their key reads as none", async () => {
    const store = await fresh()
    const prefix = `t${namespaces}`
    assert.isUndefined(await Effect.runPromise(store.learnt("key#1\u0000m")))
    await Effect.runPromise(
      store.keepLearnt("key#1\u0000m", { requests: 45, input: 7_000, output: 2_000, tokens: 9_000 })
    )
    // another process's store on the same prefix reads them
    const other = await Effect.runPromise(Scope.extend(
      RedisLimiterStore.make(client, { prefix, clock: "effect", onUnavailable: "fail" }),
      scope
    ))
    assert.deepStrictEqual(await Effect.runPromise(other.learnt("key#1\u0000m")), {
      requests: 45,
      input: 7_000,
      output: 2_000,
      tokens: 9_000
    })
    // each budget on its own: what was not learnt is not there
    await Effect.runPromise(store.keepLearnt("key#2\u0000m", { output: 1_500 }))
    assert.deepStrictEqual(await Effect.runPromise(other.learnt("key#2\u0000m")), { output: 1_500 })
    const ttl = await client.ttl(`{${prefix}:v2:key#1\u0000m}:learnt`)
    assert.isTrue(ttl > 29 * 24 * 3600 && ttl <= 30 * 24 * 3600, `ttl ${ttl}`)
    await client.set(`{${prefix}:v2:key#1\u0000m}:learnt`, "{ broken")
    assert.isUndefined(await Effect.runPromise(store.learnt("key#1\u0000m")))
    // behind the fallback, what is kept is also kept in memory
    const fallback = await fresh({ onUnavailable: "memory" })
    await Effect.runPromise(fallback.keepLearnt("b", { requests: 3 }))
    assert.deepStrictEqual(await Effect.runPromise(fallback.learnt("b")), { requests: 3 })
  })

  it("a wait that needs hundreds of entries to leave is exact", async () => {
    await waitsPastManyEntries(() => fresh())
  })

  it("each of input, output and combined tokens binds on its own, against its own limit and count", async () => {
    await eachBudgetBinds(() => fresh())
  })

  it("the keys of the version before four budgets (entries requests:tokens) are not read, and break nothing", async () => {
    const store = await fresh({ prefix: "old" })
    const limits = limitsOf(60_000, { requests: 10, input: 100, output: 100, tokens: 100 })
    // what that version wrote for a bucket: its entries' values "requests:tokens", its sums under r and t
    await client.zadd("{old:b}:log", 1_000, "1")
    await client.hset("{old:b}:val", "1", "1:90")
    await client.hset("{old:b}:sum", "r", "1", "t", "90")
    await client.set("{old:b}:seq", "1")
    await client.set("{old:b}:learnt", JSON.stringify({ requests: 45, tokens: 9_000 }))
    const answer = await Effect.runPromise(atTime(1_000)(store.reserve("b", cost(50, 40), limits)))
    assert.deepStrictEqual(answer._tag === "Admitted" ? answer.usage : answer, {
      requests: 1,
      input: 50,
      output: 40,
      tokens: 90,
      nextExpiryMs: 60_000
    })
    assert.isUndefined(await Effect.runPromise(store.learnt("b")))
    // and they stay as that version left them, for a process of it still running
    assert.deepStrictEqual(await client.hgetall("{old:b}:sum"), { r: "1", t: "90" })
    assert.deepStrictEqual(await client.hgetall("{old:b}:val"), { 1: "1:90" })
  })

  it("serves processes in turn: once told to wait, a process goes before any other goes twice; none starves", async () => {
    await servesInTurn(() => fresh(), ["a", "b", "c"], 60)
    await servesInTurn(() => fresh(), ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"], 100)
  })

  it(
    "signals capacity coming back to every process: a lowered or removed entry, the first waiter admitted",
    async () => {
      await signalsReleases(() => fresh())
    },
    30_000
  )

  it("a store on a connection of its own (from a URL with a password) wakes a waiter from its first wait", async () => {
    const limits = limitsOf(60_000, { requests: 1, tokens: 100 })
    const secured = await startRedis({ password: "sub-pass" })
    const woken = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      yield* Effect.addFinalizer(() => Effect.promise(secured.stop))
      const store = yield* Effect.map(
        Layer.build(RedisLimiterStore.layer(secured.url, { clock: "effect" })),
        Context.get(LimiterStore.LimiterStore)
      )
      // listening from the start, while the store's connections are still being made
      const wake = yield* Effect.fork(store.released("b", "w1"))
      const entry = yield* atTime(0)(store.reserve("b", cost(10, 0), limits))
      assert.strictEqual((yield* atTime(1)(store.reserve("b", cost(10, 0), limits, "w1")))._tag, "Wait")
      yield* Effect.sleep("50 millis")
      if (entry._tag === "Admitted") yield* atTime(2)(store.remove("b", entry.id, limits.windowMs))
      return yield* Effect.timeout(Fiber.join(wake), "1 second").pipe(Effect.option)
    })))
    assert.strictEqual(woken._tag, "Some")
  }, 30_000)

  it("keeps every key of a bucket under one hash tag, and every key expires", async () => {
    const store = await fresh({ prefix: "tags" })
    const limits = limitsOf(60_000, { requests: 1, tokens: 100 })
    const at = (now: number) => <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(now)(effect))
    await at(1_000)(store.reserve("key\u0000m", cost(10, 0), limits, "w1"))
    await at(1_000)(store.reserve("key\u0000m", cost(10, 0), limits, "w2"))
    await at(1_000)(store.reserve("key\u0000m", cost(10, 0), limits, "w3"))
    // w2 admitted with more to send: a place kept behind w3 (ids given out after the keys' expiry was set)
    const admitted = await at(61_000)(store.reserve("key\u0000m", cost(10, 0), limits, "w2", true))
    assert.isTrue(admitted._tag === "Admitted" && admitted.queuedMs !== undefined, JSON.stringify(admitted))
    const keys = await client.keys("{tags:*")
    assert.sameMembers(keys, ["log", "val", "line", "due", "seq", "sum"].map((k) => `{tags:v2:key\u0000m}:${k}`))
    for (const key of keys) {
      const ttl = await client.pttl(key)
      assert.isAbove(ttl, 0, key)
      assert.isAtMost(ttl, 2 * limits.windowMs + LimiterStore.waiterGraceMs + 1_000, key)
    }
  })

  it("ids are unique across processes: two stores on one bucket never hand out the same id", async () => {
    const one = await fresh({ prefix: "ids" })
    const other = await fresh({ prefix: "ids" })
    const limits = limitsOf(60_000, { requests: 1_000, tokens: 1_000_000 })
    const ids = await Effect.runPromise(
      Effect.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? one : other).reserve("b", cost(1, 0), limits)),
        { concurrency: 20 }
      ).pipe(atTime(5_000))
    )
    const admitted = ids.map((r) => r._tag === "Admitted" ? r.id : -1)
    assert.strictEqual(new Set(admitted).size, 200)
    assert.notInclude(admitted, -1)
  })

  it("uses the server's clock by default: a store whose process clock is an hour off counts in the same window", async () => {
    const server = await fresh({ prefix: "clock", clock: "server" })
    const limits = limitsOf(60_000, { requests: 1, tokens: 1_000 })
    // the process clock of this fiber is stopped an hour in the past: the server's TIME decides
    const first = await Effect.runPromise(atTime(Date.now() - 3_600_000)(server.reserve("b", cost(1, 0), limits)))
    assert.strictEqual(first._tag, "Admitted")
    const second = await Effect.runPromise(server.reserve("b", cost(1, 0), limits))
    assert.strictEqual(second._tag, "Wait")
    if (second._tag === "Wait") {
      assert.isAbove(second.waitMs, 59_000)
      assert.isAtMost(second.waitMs, 60_000)
    }
  })

  it("a malformed URL or a wrong password fails at construction with one line that never shows the password", async () => {
    const secured = await startRedis({ password: "s3cret-pass" })
    try {
      const build = (target: string) =>
        Effect.runPromise(Effect.flip(Effect.scoped(Layer.build(RedisLimiterStore.layer(target)))))
      const wrong = await build(`redis://:wrong-pass@127.0.0.1:${secured.port}`)
      assert.strictEqual(wrong._tag, "LimiterUnavailable")
      assert.match(wrong.message, /WRONGPASS|invalid password|AUTH/i)
      assert.notInclude(wrong.message, "wrong-pass")
      assert.notInclude(wrong.message, "\n")
      // ioredis reads a password from the query string too
      const inQuery = await build(`redis://127.0.0.1:${secured.port}/?password=query-pass`)
      assert.strictEqual(inQuery._tag, "LimiterUnavailable")
      assert.notInclude(inQuery.message, "query-pass")
      const malformed = await build("redis//:s3cret-pass@nowhere")
      assert.strictEqual(malformed._tag, "LimiterUnavailable")
      assert.notInclude(malformed.message, "s3cret-pass")
      const scheme = await build("http://127.0.0.1:6379")
      assert.include(scheme.message, "redis://")
      // a database the server does not have: refused, not counted in database 0 instead
      const database = await build(`redis://:s3cret-pass@127.0.0.1:${secured.port}/99`)
      assert.strictEqual(database._tag, "LimiterUnavailable")
      assert.match(database.message, /cannot use the database its URL names: ERR DB index is out of range$/)
      assert.notInclude(database.message, "s3cret-pass")
      // the right password connects
      const store = await Effect.runPromise(
        Effect.flatMap(LimiterStore.LimiterStore, (store) => store.usage("b", 1_000)).pipe(
          Effect.provide(RedisLimiterStore.layer(secured.url, { onUnavailable: "fail" }))
        )
      )
      assert.deepStrictEqual(store, { ...none, nextExpiryMs: 0 })
      // and so does a database the server has
      const inThree = await Effect.runPromise(
        Effect.flatMap(LimiterStore.LimiterStore, (store) => store.usage("b", 1_000)).pipe(
          Effect.provide(RedisLimiterStore.layer(`${secured.url}/3`, { onUnavailable: "fail" }))
        )
      )
      assert.deepStrictEqual(inThree, { ...none, nextExpiryMs: 0 })
    } finally {
      await secured.stop()
    }
  })

  it(
    "through Node.layerFromEnv, a store that cannot be used is a ConfigError naming AIFS_LIMITER_REDIS_URL",
    async () => {
      const secured = await startRedis({ password: "env-pass" })
      try {
        const build = (redisUrl: string) =>
          Effect.runPromise(
            Effect.scoped(Layer.build(Node.layerFromEnv)).pipe(
              Effect.withConfigProvider(ConfigProvider.fromMap(
                new Map([["AIFS_API_KEY", "gen-test"], ["AIFS_LIMITER_REDIS_URL", redisUrl]])
              )),
              Effect.flip
            )
          )
        const error = await build(`redis://:wrong-pass@127.0.0.1:${secured.port}`)
        assert.isTrue(ConfigError.isConfigError(error))
        assert.include(String(error), "AIFS_LIMITER_REDIS_URL")
        assert.notInclude(String(error), "wrong-pass")
        // the right one builds, and the limiter counts on the server
        await Effect.runPromise(
          Effect.scoped(Effect.gen(function*() {
            const limiter = yield* RateLimiter.RateLimiter
            yield* limiter.acquire({ key: "k", model: "m", input: 1 })
          })).pipe(
            Effect.provide(Node.layerFromEnv),
            Effect.withConfigProvider(ConfigProvider.fromMap(
              new Map([["AIFS_API_KEY", "gen-test"], ["AIFS_LIMITER_REDIS_URL", secured.url], [
                "AIFS_LIMITER_REDIS_PREFIX",
                "env"
              ]])
            ))
          )
        )
        const client = new Redis(secured.url)
        try {
          assert.include(await client.keys("{env:*"), "{env:v2:k\u0000m}:log")
        } finally {
          client.disconnect()
        }
      } finally {
        await secured.stop()
      }
    },
    30_000
  )

  describe("its layers and messages", () => {
    const limits = limitsOf(60_000, { requests: 1_000, tokens: 1_000_000 })
    /** The store of `layer`, for the test's scope. */
    const storeOf = <E>(layer: Layer.Layer<LimiterStore.LimiterStore, E>) =>
      Effect.map(Layer.build(layer), Context.get(LimiterStore.LimiterStore))

    it.scopedLive("a URL that is not one, or not redis:// or rediss://, is refused with one exact line", () =>
      Effect.gen(function*() {
        const notUrl = yield* Effect.flip(storeOf(RedisLimiterStore.layer("redis//:s3cret@nowhere")))
        assert.strictEqual(notUrl.message, "the limiter store's URL is not a URL: (not a URL)")
        const http = yield* Effect.flip(storeOf(RedisLimiterStore.layer("http://u:s3cret@127.0.0.1:6379")))
        assert.strictEqual(http.message, "the limiter store's URL must start with redis:// or rediss://, not http://")
      }))

    it.scopedLive("a server away at start: the default builds, counts in memory with one warning; fail mode refuses", () =>
      Effect.gen(function*() {
        const nowhere = yield* Effect.promise(() => freePort())
        const logs: Array<string> = []
        const logger = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => logs.push(String(message))))
        for (const scheme of ["redis", "rediss"]) {
          const store = yield* storeOf(RedisLimiterStore.layer(`${scheme}://:pass-at-start@127.0.0.1:${nowhere}`)).pipe(
            Effect.provide(logger)
          )
          const answer = yield* store.reserve("b", cost(1, 0), limits).pipe(Effect.provide(logger))
          assert.isTrue(answer._tag === "Admitted" && answer.id < 0, `${scheme}: counted in memory`)
        }
        assert.isTrue(
          logs.some((l) => l.includes("refused the connection") && l.includes("counting in this process's memory"))
        )
        for (const line of logs) assert.notInclude(line, "pass-at-start")
        // it did not connect: nothing says it counts on Redis
        assert.isFalse(logs.some((l) => l.includes("counts on Redis")), logs.join("\n"))
        const refused = yield* Effect.flip(
          storeOf(RedisLimiterStore.layer(`redis://127.0.0.1:${nowhere}`, { onUnavailable: "fail" }))
        )
        assert.match(
          refused.message,
          new RegExp(`^the limiter store \\(redis://127\\.0\\.0\\.1:${nowhere}\\) refused the connection: `)
        )
      }))

    it.scopedLive("a store that connects says once, at info level, which server counts (never its password)", () =>
      Effect.gen(function*() {
        const secured = yield* Effect.acquireRelease(
          Effect.promise(() => startRedis({ password: "info-pass" })),
          (server) => Effect.promise(server.stop)
        )
        const logs: Array<string> = []
        const logger = Logger.replace(
          Logger.defaultLogger,
          Logger.make(({ logLevel, message }) => logs.push(`${logLevel.label} ${String(message)}`))
        )
        const store = yield* storeOf(RedisLimiterStore.layer(secured.url, { prefix: "my-app" })).pipe(
          Effect.provide(logger)
        )
        yield* store.usage("b", 1_000)
        assert.deepStrictEqual(logs, [
          `INFO aifs: the rate limiter counts on Redis at redis://:***@127.0.0.1:${secured.port} (prefix my-app)`
        ])
      }))

    it.scopedLive("every operation that cannot reach the server says which, and why, naming the store", () =>
      Effect.gen(function*() {
        const server = yield* Effect.acquireRelease(Effect.promise(() => startRedis()), (r) => Effect.promise(r.stop))
        const store = yield* storeOf(RedisLimiterStore.layer(server.url, { onUnavailable: "fail" }))
        yield* store.usage("b", 1_000)
        yield* Effect.promise(() => server.stop())
        const failures = yield* Effect.all([
          Effect.flip(store.reserve("b", cost(1, 0), limits)),
          Effect.flip(store.adjust("b", 1, cost(1, 0), 1_000)),
          Effect.flip(store.remove("b", 1, 1_000)),
          Effect.flip(store.restamp("b", 1, 1_000)),
          Effect.flip(store.topUp("b", { requests: 1, requestsAgeMs: 0, tokens: 1, tokensAgeMs: 0 }, 1_000)),
          Effect.flip(store.usage("b", 1_000)),
          Effect.flip(store.leave("b", "w"))
        ])
        const operations = [
          "reserve",
          "adjust",
          "remove",
          "restamp",
          "count the server's usage",
          "read the usage",
          "leave the line"
        ]
        for (const [i, failure] of failures.entries()) {
          assert.include(failure.message, `the limiter store (${server.url}) failed to ${operations[i]}: `)
          assert.notInclude(failure.message, "no answer within", "a refused connection is not a timeout")
          // in words, not ioredis's ("Stream isn't writeable and enableOfflineQueue options is false")
          assert.include(failure.message, "the connection is down (reconnecting)")
        }
      }))

    it.scopedLive("a client of your own without a command timeout: the store's own time limit applies", () =>
      Effect.gen(function*() {
        const server = yield* Effect.acquireRelease(Effect.promise(() => startRedis()), (r) => Effect.promise(r.stop))
        const mine = yield* Effect.acquireRelease(
          Effect.sync(() => new Redis(server.url)),
          (c) => Effect.sync(() => c.disconnect())
        )
        const blocker = yield* Effect.acquireRelease(
          Effect.sync(() => new Redis(server.url)),
          (c) => Effect.sync(() => c.disconnect())
        )
        const probe = yield* Effect.acquireRelease(
          Effect.sync(() => new Redis(server.url)),
          (c) => Effect.sync(() => c.disconnect())
        )
        const store = yield* storeOf(
          RedisLimiterStore.layerFromClient(mine, { onUnavailable: "fail", timeout: "100 millis" })
        )
        yield* store.reserve("b", cost(1, 0), limits)
        // busy long enough that a probe's time limit (200 ms, far above a busy machine's pauses) leaves it busy still
        void blocker.eval(serverBusyFor(1_500), 0).catch(() => undefined)
        for (let i = 0; i < 20; i++) {
          const answered = yield* Effect.promise(() => probe.ping()).pipe(Effect.timeout("200 millis"), Effect.option)
          if (answered._tag === "None") break
        }
        const failure = yield* Effect.flip(store.reserve("b", cost(1, 0), limits))
        // a client of your own is named by the store's default name, its keys under the default prefix
        assert.strictEqual(failure.message, "the limiter store (redis) failed to reserve: no answer within 100ms")
        yield* Effect.sleep("1500 millis")
        assert.include(yield* Effect.promise(() => probe.keys("{aifs:*")), "{aifs:v2:b}:log")
      }))

    it.scopedLive("the store's connections close with its scope; a client you own stays open", () =>
      Effect.gen(function*() {
        const server = yield* Effect.acquireRelease(Effect.promise(() => startRedis()), (r) => Effect.promise(r.stop))
        const probe = yield* Effect.acquireRelease(
          Effect.sync(() => new Redis(server.url)),
          (c) => Effect.sync(() => c.disconnect())
        )
        const clients = Effect.promise(() => probe.client("LIST") as Promise<string>).pipe(
          Effect.map((list) => list.split("\n").filter((l) => l.trim() !== "").length)
        )
        const alone = yield* clients
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* storeOf(RedisLimiterStore.layer(server.url))
          yield* store.reserve("b", cost(1, 0), limits)
          yield* Effect.sleep("50 millis")
          assert.strictEqual(yield* clients, alone + 2, "the operations' connection and the wake-ups'")
        }))
        yield* Effect.sleep("100 millis")
        assert.strictEqual(yield* clients, alone)
        const mine = new Redis(server.url)
        yield* Effect.scoped(
          Effect.flatMap(storeOf(RedisLimiterStore.layerFromClient(mine)), (store) => store.usage("b", 1_000))
        )
        assert.strictEqual(yield* Effect.promise(() => mine.ping()), "PONG")
        mine.disconnect()
      }))

    it.scopedLive("layerConfig reads the URL from a Config", () =>
      Effect.gen(function*() {
        const store = yield* storeOf(RedisLimiterStore.layerConfig(Config.string("MY_REDIS_URL"), { prefix: "cfg" }))
          .pipe(
            Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["MY_REDIS_URL", url!]])))
          )
        yield* store.reserve("b", cost(1, 0), limits)
        assert.include(yield* Effect.promise(() => client.keys("{cfg:*")), "{cfg:v2:b}:log")
        const missing = yield* Effect.flip(storeOf(RedisLimiterStore.layerConfig(Config.string("MY_REDIS_URL"))))
        assert.isTrue(ConfigError.isConfigError(missing))
      }))

    it.effect(
      "memory while the server is away, Redis again once retryAfter has passed on the clock, not before",
      () =>
        Effect.gen(function*() {
          const server = yield* Effect.acquireRelease(Effect.promise(() => startRedis()), (r) => Effect.promise(r.stop))
          const store = yield* storeOf(
            RedisLimiterStore.layer(server.url, { clock: "effect", retryAfter: "10 seconds", timeout: "200 millis" })
          ).pipe(Effect.provide(Logger.remove(Logger.defaultLogger)))
          const onRedis = (answer: LimiterStore.Reservation) => answer._tag === "Admitted" && answer.id > 0
          assert.isTrue(onRedis(yield* store.reserve("b", cost(1, 0), limits)))
          yield* Effect.promise(() => server.stop())
          assert.isFalse(onRedis(yield* store.reserve("b", cost(1, 0), limits)))
          yield* Effect.acquireRelease(Effect.promise(() => startRedis({ port: server.port })), (r) =>
            Effect.promise(r.stop))
          // the server answers again (and ioredis has had time to reconnect), but the clock has not moved
          yield* TestServices.provideLive(Effect.sleep("2500 millis"))
          assert.isFalse(onRedis(yield* store.reserve("b", cost(1, 0), limits)), "still in memory before retryAfter")
          yield* TestClock.adjust("10 seconds")
          let back = false
          for (let i = 0; i < 50 && !back; i++) {
            back = onRedis(yield* store.reserve("b", cost(1, 0), limits))
            if (!back) {
              yield* TestClock.adjust("10 seconds")
              yield* TestServices.provideLive(Effect.sleep("100 millis"))
            }
          }
          assert.isTrue(back, "on the server again")
        }).pipe(Effect.scoped),
      60_000
    )
  })

  describe("when the server is lost", () => {
    const limits = limitsOf(60_000, { requests: 1_000, tokens: 1_000_000 })
    /** The store's warnings and infos, and the store, on a server of its own. */
    const withLogs = (logs: Array<string>) =>
      Effect.provide(Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => logs.push(`${logLevel.label} ${String(message)}`))
      ))

    it("counts in memory with one warning and the metric, then goes back to Redis when it answers again", async () => {
      const server = await startRedis({ password: "lost-pass" })
      let restarted: Awaited<ReturnType<typeof startRedis>> | undefined
      const logs: Array<string> = []
      try {
        await Effect.runPromise(
          Effect.gen(function*() {
            const store = yield* LimiterStore.LimiterStore
            const fallbacks = () => Effect.map(Metric.value(ClientMetrics.limiterStoreFallbacks), (s) => s.count)
            const before = yield* fallbacks()
            const onRedis = yield* store.reserve("b", cost(1, 0), limits)
            assert.isTrue(onRedis._tag === "Admitted" && onRedis.id > 0, "counted on the server")
            yield* Effect.promise(() => server.stop())
            const inMemory = yield* store.reserve("b", cost(1, 0), limits)
            assert.isTrue(inMemory._tag === "Admitted" && inMemory.id < 0, "counted in memory")
            // the entry counted on the server cannot be settled now: the memory's usage answers, nothing fails
            if (onRedis._tag === "Admitted") {
              const usage = yield* store.remove("b", onRedis.id, limits.windowMs)
              assert.deepInclude(usage, { requests: 1, input: 1, output: 0, tokens: 1 })
            }
            yield* store.reserve("b", cost(1, 0), limits)
            assert.strictEqual((yield* fallbacks()) - before, 1, "one outage, counted once")
            assert.lengthOf(logs.filter((l) => l.startsWith("WARN")), 1)
            restarted = yield* Effect.promise(() => startRedis({ port: server.port, password: "lost-pass" }))
            // ioredis reconnects on its own schedule (a second at most here): bounded in tries and time
            let back = false
            for (let i = 0; i < 100 && !back; i++) {
              yield* Effect.sleep("100 millis")
              const answer = yield* store.reserve("b", cost(1, 0), limits)
              back = answer._tag === "Admitted" && answer.id > 0
            }
            assert.isTrue(back, "counted on the server again")
            assert.isTrue(logs.some((l) => l.startsWith("INFO") && l.includes("answers again")), logs.join("\n"))
            for (const line of logs) assert.notInclude(line, "lost-pass")
          }).pipe(
            Effect.provide(RedisLimiterStore.layer(server.url, { retryAfter: "50 millis", timeout: "200 millis" })),
            withLogs(logs)
          )
        )
      } finally {
        await restarted?.stop()
        await server.stop()
      }
    }, 30_000)

    it(
      "with onUnavailable \"fail\", an operation fails with LimiterUnavailable naming the store, not its password",
      async () => {
        const server = await startRedis({ password: "fail-pass" })
        try {
          const error = await Effect.runPromise(
            Effect.gen(function*() {
              const store = yield* LimiterStore.LimiterStore
              yield* store.reserve("b", cost(1, 0), limits)
              yield* Effect.promise(() => server.stop())
              return yield* Effect.flip(store.reserve("b", cost(1, 0), limits))
            }).pipe(
              Effect.provide(RedisLimiterStore.layer(server.url, { onUnavailable: "fail", timeout: "200 millis" }))
            )
          )
          assert.strictEqual(error._tag, "LimiterUnavailable")
          assert.include(error.message, `127.0.0.1:${server.port}`)
          assert.notInclude(error.message, "fail-pass")
        } finally {
          await server.stop()
        }
      },
      30_000
    )

    it("a server too slow to answer within the time limit counts as lost", async () => {
      const server = await startRedis()
      const blocker = new Redis(server.url, { lazyConnect: true })
      const probe = new Redis(server.url)
      try {
        await blocker.connect()
        const answer = await Effect.runPromise(
          Effect.gen(function*() {
            const store = yield* LimiterStore.LimiterStore
            yield* store.reserve("b", cost(1, 0), limits)
            // the server busy for half a second (a script that spins): the operation's 100 ms run out
            void blocker.eval(busyFor500ms, 0).catch(() => undefined)
            // once a ping on a third connection goes unanswered for 50 ms, the server is surely busy (bounded)
            for (let i = 0; i < 20; i++) {
              const answered = yield* Effect.promise(() => probe.ping()).pipe(
                Effect.timeout("50 millis"),
                Effect.option
              )
              if (answered._tag === "None") break
            }
            return yield* Effect.flip(store.reserve("b", cost(1, 0), limits))
          }).pipe(Effect.provide(RedisLimiterStore.layer(server.url, { onUnavailable: "fail", timeout: "100 millis" })))
        )
        assert.strictEqual(answer._tag, "LimiterUnavailable")
        assert.include(answer.message, "no answer within 100ms", answer.message)
      } finally {
        blocker.disconnect()
        probe.disconnect()
        await server.stop()
      }
    }, 30_000)
  })

  describe("at start and in an outage", () => {
    const limits = limitsOf(60_000, { requests: 1_000, tokens: 1_000_000 })
    const fallbacks = () => Effect.map(Metric.value(ClientMetrics.limiterStoreFallbacks), (s) => s.count)
    const quiet = Effect.provide(Logger.remove(Logger.defaultLogger))
    /** The store of `layer`, for the test's scope. */
    const storeOf = <E>(layer: Layer.Layer<LimiterStore.LimiterStore, E>) =>
      Effect.map(Layer.build(layer), Context.get(LimiterStore.LimiterStore))
    const serverFor = Effect.acquireRelease(Effect.promise(() => startRedis()), (r) => Effect.promise(r.stop))
    /** Holds this process's event loop for `ms`: the loop reads no socket and runs no timer meanwhile. */
    const busyFor = (ms: number) =>
      Effect.sync(() => {
        const until = Date.now() + ms
        while (Date.now() < until) {
          // busy
        }
      })

    it.scopedLive(
      "four stores starting at once on a fresh server, their process busy, fall back zero times",
      () =>
        Effect.gen(function*() {
          const server = yield* serverFor
          const before = yield* fallbacks()
          const stores = yield* Effect.all(
            Array.from({ length: 4 }, () => storeOf(RedisLimiterStore.layer(server.url, { prefix: "start" }))),
            { concurrency: "unbounded" }
          )
          // each store's first burst sent, then the process busy for longer than the time limit before its loop
          // reads its sockets again, as a process starting is (loading, compiling, decoding its first answers): from
          // an I/O-side callback (setImmediate), after which Node runs the timers that fell due before it reads
          let sent = 0
          yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
          const bursts = yield* Effect.fork(Effect.all(
            stores.map((store) =>
              Effect.all(
                Array.from(
                  { length: 10 },
                  () => Effect.zipRight(Effect.sync(() => sent++), store.reserve("b", cost(1, 0), limits))
                ),
                { concurrency: "unbounded" }
              )
            ),
            { concurrency: "unbounded" }
          ))
          // (yields to the other fibers only, never to the event loop: each sends its command before it yields)
          for (let i = 0; i < 1_000 && sent < 40; i++) yield* Effect.yieldNow()
          assert.strictEqual(sent, 40)
          yield* busyFor(400)
          const answers = (yield* Fiber.join(bursts)).flat()
          assert.strictEqual((yield* fallbacks()) - before, 0, "no store fell back")
          assert.isTrue(answers.every((a) => a._tag === "Admitted" && a.id > 0), "every request counted on the server")
          // the scripts were on the server before the first operation: none was sent whole
          const probe = yield* Effect.acquireRelease(
            Effect.sync(() => new Redis(server.url)),
            (c) => Effect.sync(() => c.disconnect())
          )
          const stats = yield* Effect.promise(() => probe.info("commandstats"))
          assert.notMatch(stats, /cmdstat_eval:/)
          assert.match(stats, /cmdstat_evalsha:calls=40,/)
        }),
      30_000
    )

    it.scopedLive("a store waits for its client's first connection, its scripts and its subscription before it answers", () =>
      Effect.gen(function*() {
        const server = yield* serverFor
        const lazy = yield* Effect.acquireRelease(
          Effect.sync(() => new Redis(server.url, { lazyConnect: true })),
          (c) => Effect.sync(() => c.disconnect())
        )
        yield* storeOf(RedisLimiterStore.layerFromClient(lazy, { prefix: "lazy" }))
        assert.strictEqual(lazy.status, "ready")
        assert.strictEqual(lazy.listenerCount("error"), 0, "no listener of the wait left behind")
        const probe = yield* Effect.acquireRelease(
          Effect.sync(() => new Redis(server.url)),
          (c) => Effect.sync(() => c.disconnect())
        )
        const loaded = yield* Effect.promise(() => probe.script("EXISTS", ...scriptShas()) as Promise<Array<number>>)
        assert.deepStrictEqual(loaded, scriptShas().map(() => 1), "every script loaded")
        assert.strictEqual(yield* Effect.promise(() => probe.call("PUBSUB", "NUMPAT")), 1, "subscribed")
      }))

    it.scopedLive(
      "a server that hangs: one operation at a time waits for it, the others go on in memory",
      () =>
        Effect.gen(function*() {
          const server = yield* serverFor
          const connection = () =>
            Effect.acquireRelease(Effect.sync(() => new Redis(server.url)), (c) => Effect.sync(() => c.disconnect()))
          const [blocker, probe, own] = [yield* connection(), yield* connection(), yield* connection()]
          // the store's tries of the server, counted as it sends them (the server counts them only once it runs them)
          let sent = 0
          const evalsha = own.evalsha.bind(own) as (...args: Array<unknown>) => Promise<unknown>
          Object.assign(own, {
            evalsha: (...args: Array<unknown>) => {
              sent++
              return evalsha(...args)
            }
          })
          const store = yield* storeOf(
            RedisLimiterStore.layerFromClient(own, { timeout: "100 millis", retryAfter: "20 millis" })
          )
          yield* store.reserve("b", cost(1, 0), limits)
          void blocker.eval(serverBusyFor(2_500), 0).catch(() => undefined)
          // once a ping on a third connection goes unanswered for 50 ms, the server is surely busy (bounded)
          for (let i = 0; i < 20; i++) {
            const answered = yield* Effect.promise(() => probe.ping()).pipe(Effect.timeout("50 millis"), Effect.option)
            if (answered._tag === "None") break
          }
          // the first to find it hanging waits for the time limit; then rounds of ten at once, each round after
          // retryAfter has passed: one of them tries the server again, the others answer from memory
          yield* store.reserve("b", cost(1, 0), limits)
          for (let round = 0; round < 10; round++) {
            yield* Effect.sleep("30 millis")
            yield* Effect.all(Array.from({ length: 10 }, () => store.reserve("b", cost(1, 0), limits)), {
              concurrency: "unbounded"
            })
          }
          // the first reserve, the one that found the server hanging, then at most one a round (not ten)
          assert.isAtMost(sent, 2 + 10, `${sent} operations sent to a server that hangs`)
          assert.isAtLeast(sent, 2 + 3, "the server was tried again, round after round")
        }).pipe(quiet),
      30_000
    )

    it.scopedLive(
      "four stores with the server killed: each waiter wakes, each store admits in memory without waiting, then Redis again",
      () =>
        Effect.gen(function*() {
          const server = yield* serverFor
          // a time limit no pause of this process reaches: an operation that waits for it is plain to see
          const options = { prefix: "outage", retryAfter: "100 millis", timeout: "2 seconds" } as const
          // two on a connection of their own, two on a client of the caller's (which queues while disconnected)
          const clients = yield* Effect.all(Array.from({ length: 2 }, () =>
            Effect.acquireRelease(
              // with a listener of its own for the errors of the outage, as a caller's client has
              Effect.sync(() => new Redis(server.url).on("error", () => {})),
              (c) => Effect.sync(() => c.disconnect())
            )))
          const stores = yield* Effect.all([
            storeOf(RedisLimiterStore.layer(server.url, options)),
            storeOf(RedisLimiterStore.layer(server.url, options)),
            ...clients.map((c) => storeOf(RedisLimiterStore.layerFromClient(c, options)))
          ])
          const full = limitsOf(60_000, { requests: 4 })
          for (const store of stores) yield* store.reserve("b", cost(1, 0), full)
          // each store's waiter told by the server to wait a window, and asleep until capacity comes back
          const sleepers = yield* Effect.forEach(stores, (store, i) =>
            Effect.gen(function*() {
              const answer = yield* store.reserve("b", cost(1, 0), full, `w${i}`)
              assert.strictEqual(answer._tag, "Wait")
              return yield* Effect.fork(store.released("b", `w${i}`))
            }))
          const before = yield* fallbacks()
          yield* Effect.promise(() => server.stop())
          for (const [i, sleeper] of sleepers.entries()) {
            const woken = yield* Fiber.join(sleeper).pipe(Effect.timeout("2 seconds"), Effect.option)
            assert.strictEqual(woken._tag, "Some", `store ${i}: its waiter woken when the server was lost`)
          }
          // a second of the outage: every store admits, and no operation waits for the time limit
          for (const [i, store] of stores.entries()) {
            let admitted = 0
            let slowest = 0
            const end = Date.now() + 1_000
            for (let n = 0; n < 1_000 && Date.now() < end; n++) {
              const start = Date.now()
              const answer = yield* store.reserve("b", cost(1, 0), full, `w${i}`)
              slowest = Math.max(slowest, Date.now() - start)
              if (answer._tag === "Admitted" && answer.id < 0) admitted++
              yield* Effect.sleep("10 millis")
            }
            assert.strictEqual(admitted, 4, `store ${i}: the whole budget, counted alone`)
            assert.isBelow(slowest, 1_000, `store ${i}: no operation waited for the time limit`)
          }
          assert.strictEqual((yield* fallbacks()) - before, 4, "each store fell back once")
          yield* Effect.acquireRelease(
            Effect.promise(() => startRedis({ port: server.port })),
            (r) => Effect.promise(r.stop)
          )
          for (const [i, store] of stores.entries()) {
            let back = false
            for (let n = 0; n < 100 && !back; n++) {
              yield* Effect.sleep("100 millis")
              const answer = yield* store.reserve("b", cost(1, 0), full)
              back = answer._tag === "Admitted" && answer.id > 0
            }
            assert.isTrue(back, `store ${i}: counting on the server again`)
          }
        }).pipe(quiet),
      60_000
    )
  })
})
