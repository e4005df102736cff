/**
 * The Redis limiter store on a real redis-server (test/globalSetup.ts): the suite every store passes
 * (test/helpers/storeConformance.ts), its keys (one hash tag per bucket, every key expiring), ids unique across
 * processes, the server's clock, and what a bad URL or password does.
 */
import { assert, describe, inject, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { Redis } from "ioredis"
import { afterAll, beforeAll } from "vitest"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RedisLimiterStore from "../../src/redis.js"
import { startRedis } from "../helpers/redisServer.js"
import { atTime, conformsToModel, signalsReleases, waitsAreExact } from "../helpers/storeConformance.js"

const url = inject("redisUrl")

describe.skipIf(url === undefined)("the Redis limiter store", () => {
  let client: Redis
  let scope: Scope.CloseableScope
  let namespaces = 0

  beforeAll(async () => {
    client = new Redis(url!, { lazyConnect: true })
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

  it(
    "signals capacity coming back to every process: a lowered or removed entry, the first waiter admitted",
    async () => {
      await signalsReleases(() => fresh())
    },
    30_000
  )

  it("keeps every key of a bucket under one hash tag, and every key expires", async () => {
    const store = await fresh({ prefix: "tags" })
    const limits = { requests: 1, tokens: 100, windowMs: 60_000 }
    await Effect.runPromise(atTime(1_000)(store.reserve("key\u0000m", 10, limits, "w1")))
    await Effect.runPromise(atTime(1_000)(store.reserve("key\u0000m", 10, limits, "w2")))
    const keys = await client.keys("{tags:*")
    assert.sameMembers(keys, ["log", "val", "line", "due", "seq"].map((k) => `{tags:key\u0000m}:${k}`))
    for (const key of keys) {
      const ttl = await client.pttl(key)
      assert.isAbove(ttl, 0, key)
      assert.isAtMost(ttl, 2 * limits.windowMs + LimiterStore.waiterGraceMs + 1_000, key)
    }
  })

  it("ids are unique across processes: two stores on one bucket never hand out the same id", async () => {
    const one = await fresh({ prefix: "ids" })
    const other = await fresh({ prefix: "ids" })
    const limits = { requests: 1_000, tokens: 1_000_000, windowMs: 60_000 }
    const ids = await Effect.runPromise(
      Effect.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? one : other).reserve("b", 1, limits)),
        { concurrency: 20 }
      ).pipe(atTime(5_000))
    )
    const admitted = ids.map((r) => r._tag === "Admitted" ? r.id : -1)
    assert.strictEqual(new Set(admitted).size, 200)
    assert.notInclude(admitted, -1)
  })

  it("uses the server's clock by default: a store whose process clock is an hour off counts in the same window", async () => {
    const server = await fresh({ prefix: "clock", clock: "server" })
    const limits = { requests: 1, tokens: 1_000, windowMs: 60_000 }
    // the process clock of this fiber is stopped an hour in the past: the server's TIME decides
    const first = await Effect.runPromise(atTime(Date.now() - 3_600_000)(server.reserve("b", 1, limits)))
    assert.strictEqual(first._tag, "Admitted")
    const second = await Effect.runPromise(server.reserve("b", 1, limits))
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
      const malformed = await build("redis//:s3cret-pass@nowhere")
      assert.strictEqual(malformed._tag, "LimiterUnavailable")
      assert.notInclude(malformed.message, "s3cret-pass")
      const scheme = await build("http://127.0.0.1:6379")
      assert.include(scheme.message, "redis://")
      // the right password connects
      const store = await Effect.runPromise(
        Effect.flatMap(LimiterStore.LimiterStore, (store) => store.usage("b", 1_000)).pipe(
          Effect.provide(RedisLimiterStore.layer(secured.url, { onUnavailable: "fail" }))
        )
      )
      assert.deepStrictEqual(store, { requests: 0, tokens: 0, nextExpiryMs: 0 })
    } finally {
      await secured.stop()
    }
  })
})
