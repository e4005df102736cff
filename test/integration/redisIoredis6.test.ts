/**
 * The Redis limiter store on ioredis 6 (installed here under the alias `ioredis6`): the suite every store passes
 * (test/helpers/storeConformance.ts) on a client of the next major version, on the real redis-server of
 * test/globalSetup.ts. The peer range names 6 beside 5; npm still refuses 6 beside `@effect/experimental` 0.61 (its own
 * optional peer says ^5: docs/installing.md), so these tests are what says 6 works once it may be installed.
 */
import { assert, describe, inject, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import type { Redis } from "ioredis"
import { Redis as Redis6 } from "ioredis6"
import { createRequire } from "node:module"
import { afterAll, beforeAll } from "vitest"
import * as RedisLimiterStore from "../../src/redis.js"
import { conformsToModel, eachBudgetBinds, signalsReleases, waitsAreExact } from "../helpers/storeConformance.js"

const url = inject("redisUrl")

describe.skipIf(url === undefined)("the Redis limiter store on ioredis 6", () => {
  let client: Redis6
  let scope: Scope.CloseableScope
  let namespaces = 0

  beforeAll(async () => {
    client = new Redis6(url!, { lazyConnect: true })
    client.setMaxListeners(0)
    await client.connect()
    scope = Effect.runSync(Scope.make())
  })
  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await client.flushdb()
    client.disconnect()
  })

  /** A store on a client of ioredis 6, in a namespace of its own, on Effect's clock. */
  const fresh = () =>
    Effect.runPromise(
      Scope.extend(
        // the store's parameter is typed with ioredis 5's declarations; the client is 6's, the same API at run time
        RedisLimiterStore.make(client as unknown as Redis, {
          prefix: `v6-${++namespaces}`,
          clock: "effect",
          onUnavailable: "fail"
        }),
        scope
      )
    )

  it("is ioredis 6", () => {
    const { version } = createRequire(import.meta.url)("ioredis6/package.json") as { version: string }
    assert.strictEqual(version.split(".")[0], "6")
  })

  it("answers every operation as the sliding-window rule says", async () => {
    await conformsToModel(() => fresh(), 60)
  }, 120_000)

  it("a wait is exact", async () => {
    await waitsAreExact(() => fresh(), 20)
  }, 60_000)

  it("each budget binds on its own, and releases wake the waiter they are for (its subscription)", async () => {
    await eachBudgetBinds(() => fresh())
    await signalsReleases(() => fresh())
  }, 60_000)
})
