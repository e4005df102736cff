/**
 * The Redis store's spend (the spend meter's `addSpend` and `spendOf`) on a real redis-server: what every process on
 * a prefix adds, per key, calendar month and model, read back by another, kept 40 days; a field of no tally under the
 * key is skipped; behind the fallback, in this process's memory while the server cannot answer.
 */
import { assert, describe, inject, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as Scope from "effect/Scope"
import { Redis } from "ioredis"
import { afterAll, beforeAll } from "vitest"
import * as RedisLimiterStore from "../../src/redis.js"
import { freePort } from "../helpers/redisServer.js"

const url = inject("redisUrl")

const tally = (requests: number, input: number, output: number, cached: number, cost: number, written = 0) => ({
  requests,
  input,
  output,
  cached,
  written,
  cost
})

describe.skipIf(url === undefined)("the Redis store's spend", () => {
  let client: Redis
  let scope: Scope.CloseableScope
  const prefix = `spend${process.pid}`

  beforeAll(async () => {
    client = new Redis(url!, { lazyConnect: true })
    client.setMaxListeners(0)
    await client.connect()
    scope = Effect.runSync(Scope.make())
  })
  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    for (const key of await client.keys(`{${prefix}*`)) await client.del(key)
    client.disconnect()
  })

  const store = (options: RedisLimiterStore.Options = {}) =>
    Effect.runPromise(
      Scope.extend(RedisLimiterStore.make(client, { prefix, onUnavailable: "fail", ...options }), scope)
    )

  it("adds per key, month and model for every store on the prefix; another month or key is apart", async () => {
    const one = await store()
    const two = await store()
    await Effect.runPromise(one.addSpend("key#1", "2026-11", "m", tally(1, 100, 20, 40, 0.5, 30)))
    await Effect.runPromise(two.addSpend("key#1", "2026-11", "m", tally(2, 10, 5, 0, 0.25)))
    await Effect.runPromise(two.addSpend("key#1", "2026-11", "other\u0000model", tally(1, 1, 1, 0, 0.125)))
    await Effect.runPromise(one.addSpend("key#1", "2026-12", "m", tally(1, 7, 7, 0, 1)))
    await Effect.runPromise(one.addSpend("key#2", "2026-11", "m", tally(1, 9, 9, 0, 2)))
    assert.deepStrictEqual(await Effect.runPromise(one.spendOf("key#1", "2026-11")), {
      m: tally(3, 110, 25, 40, 0.75, 30),
      // a model id may hold the separator: the field is what follows the last one
      "other\u0000model": tally(1, 1, 1, 0, 0.125)
    })
    assert.deepStrictEqual(await Effect.runPromise(two.spendOf("key#1", "2026-12")), { m: tally(1, 7, 7, 0, 1) })
    assert.deepStrictEqual(await Effect.runPromise(two.spendOf("key#2", "2026-11")), { m: tally(1, 9, 9, 0, 2) })
    assert.deepStrictEqual(await Effect.runPromise(two.spendOf("key#3", "2026-11")), {})
    const hash = `{${prefix}:v2:spend:key#1}:2026-11`
    const ttl = await client.ttl(hash)
    assert.isTrue(ttl > 39 * 24 * 3600 && ttl <= 40 * 24 * 3600, `ttl ${ttl}`)
    // what is no field of a tally is skipped, a field of no number too (a model with nothing else is absent), and a
    // missing field reads as none
    await client.hset(hash, "stray", "1", "m\u0000colour", "7", "n\u0000cost", "lots", "p\u0000requests", "4")
    assert.deepStrictEqual(await Effect.runPromise(one.spendOf("key#1", "2026-11")), {
      m: tally(3, 110, 25, 40, 0.75, 30),
      "other\u0000model": tally(1, 1, 1, 0, 0.125),
      p: tally(4, 0, 0, 0, 0)
    })
  })

  it("with no server, the fallback keeps spend in this process's memory; set to fail, it fails", async () => {
    const nowhere = await freePort()
    const down = new Redis(`redis://127.0.0.1:${nowhere}`, { lazyConnect: true, maxRetriesPerRequest: 0 })
    const scoped = (options: RedisLimiterStore.Options) =>
      Effect.runPromise(
        Scope.extend(RedisLimiterStore.make(down, { prefix, ...options }), scope).pipe(
          Effect.provide(Logger.remove(Logger.defaultLogger))
        )
      )
    const fallback = await scoped({ onUnavailable: "memory", timeout: "200 millis" })
    await Effect.runPromise(fallback.addSpend("key#1", "2026-11", "m", tally(1, 5, 5, 0, 0.5)))
    await Effect.runPromise(fallback.addSpend("key#1", "2026-11", "m", tally(1, 5, 5, 0, 0.5)))
    assert.deepStrictEqual(await Effect.runPromise(fallback.spendOf("key#1", "2026-11")), {
      m: tally(2, 10, 10, 0, 1)
    })
    const failing = await scoped({ onUnavailable: "fail", timeout: "200 millis" })
    const failed = await Effect.runPromise(Effect.flip(failing.spendOf("key#1", "2026-11")))
    assert.strictEqual(failed._tag, "LimiterUnavailable")
    assert.include(failed.message, "read the spend")
    const notAdded = await Effect.runPromise(
      Effect.flip(failing.addSpend("key#1", "2026-11", "m", tally(1, 1, 1, 0, 1)))
    )
    assert.include(notAdded.message, "add the spend")
    down.disconnect()
  }, 30_000)

  it("keeps a key's context windows for every store on the prefix, 30 days; what is no such windows reads as none", async () => {
    const one = await store()
    const two = await store()
    assert.isUndefined(await Effect.runPromise(two.windowsOf!("key#1")))
    await Effect.runPromise(one.keepWindows!("key#1", { private: 5_000, other: 7_000 }))
    assert.deepStrictEqual(await Effect.runPromise(two.windowsOf!("key#1")), { private: 5_000, other: 7_000 })
    assert.isUndefined(await Effect.runPromise(two.windowsOf!("key#2")))
    // a later listing replaces the whole
    await Effect.runPromise(two.keepWindows!("key#1", {}))
    assert.deepStrictEqual(await Effect.runPromise(one.windowsOf!("key#1")), {})
    const kept = `{${prefix}:v2:windows:key#1}:windows`
    const ttl = await client.ttl(kept)
    assert.isTrue(ttl > 29 * 24 * 3600 && ttl <= 30 * 24 * 3600, `ttl ${ttl}`)
    for (const text of ["{ not json", "[5000]", JSON.stringify({ private: -1 }), JSON.stringify({ private: "5000" })]) {
      await client.set(kept, text)
      assert.isUndefined(await Effect.runPromise(one.windowsOf!("key#1")), text)
    }
  })

  it("with no server, the fallback recalls no windows and keeps none; set to fail, it fails", async () => {
    const nowhere = await freePort()
    const down = new Redis(`redis://127.0.0.1:${nowhere}`, { lazyConnect: true, maxRetriesPerRequest: 0 })
    const scoped = (options: RedisLimiterStore.Options) =>
      Effect.runPromise(Scope.extend(RedisLimiterStore.make(down, { prefix, ...options }), scope))
    const fallback = await scoped({ onUnavailable: "memory", timeout: "200 millis" })
    await Effect.runPromise(fallback.keepWindows!("key#1", { private: 5_000 }))
    assert.isUndefined(await Effect.runPromise(fallback.windowsOf!("key#1")))
    const failing = await scoped({ onUnavailable: "fail", timeout: "200 millis" })
    const failed = await Effect.runPromise(Effect.flip(failing.windowsOf!("key#1")))
    assert.strictEqual(failed._tag, "LimiterUnavailable")
    assert.include(failed.message, "read the context windows")
    const notKept = await Effect.runPromise(Effect.flip(failing.keepWindows!("key#1", { private: 5_000 })))
    assert.include(notKept.message, "keep the context windows")
    down.disconnect()
  }, 30_000)
})
