/**
 * Two limiters (two processes, as far as the store can tell) on one store: they take turns in its line, a limiter
 * admitted with more requests of its own waiting keeps a place at the back of the line without asking again, and a
 * place kept for a request that will never be sent is given up. On the `TestClock`, the memory store.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as TokenEstimator from "../../src/layers/TokenEstimator.js"
import { now, runReady, runToEnd, ticket } from "../helpers/limiter.js"

/**
 * One store, its reserve and leave calls recorded by caller, and two limiters on it (1 request per second). The
 * reserve call numbered `holdAt` (from 0), if any, waits for `gate` before the store answers.
 */
const twoOnOneStore = (holdAt = -1) =>
  Effect.gen(function*() {
    const inner = LimiterStore.makeMemory()
    const calls: Array<string> = []
    const gate = yield* Deferred.make<void>()
    let reserves = 0
    const store: LimiterStore.LimiterStore.Service = {
      ...inner,
      reserve: (bucket, request, limits, waiter, more) =>
        Effect.suspend(() => reserves++ === holdAt ? Deferred.await(gate) : Effect.void).pipe(
          Effect.zipRight(inner.reserve(bucket, request, limits, waiter, more)),
          Effect.zipLeft(Effect.sync(() => calls.push(`reserve ${waiter}`)))
        ),
      leave: (bucket, waiter) =>
        Effect.zipLeft(inner.leave(bucket, waiter), Effect.sync(() => calls.push(`leave ${waiter}`)))
    }
    const limiter = () =>
      Effect.map(
        Layer.build(
          RateLimiter.layerWith({ margin: 0, window: "1 second", limits: { m: { rpm: 1 } } }).pipe(
            Layer.provide(Layer.merge(Layer.succeed(LimiterStore.LimiterStore, store), TokenEstimator.layer))
          )
        ),
        Context.get(RateLimiter.RateLimiter)
      )
    return { calls, gate, a: yield* limiter(), b: yield* limiter() }
  })

/** The store calls by limiter name (`b` made the first call), in order. */
const byName = (calls: ReadonlyArray<string>, first: string, other: string) => {
  const firstId = calls[0]!.split(" ")[1]
  return calls.map((c) => `${c.split(" ")[0]} ${c.split(" ")[1] === firstId ? first : other}`)
}

describe("limiters sharing one store's line", () => {
  it.scoped("take turns; one admitted with more to send keeps a place behind the other without asking again", () =>
    Effect.gen(function*() {
      const { a, b, calls } = yield* twoOnOneStore()
      const admitted: Array<string> = []
      const take = (limiter: RateLimiter.RateLimiter.Service, name: string) =>
        Effect.flatMap(limiter.acquire(ticket()), () => Effect.map(now, (t) => admitted.push(`${name}@${t}`)))
      yield* take(b, "b1")
      const a1 = yield* Effect.fork(take(a, "a1"))
      yield* runReady
      const a2 = yield* Effect.fork(take(a, "a2"))
      const b2 = yield* Effect.fork(take(b, "b2"))
      yield* runReady
      yield* runToEnd(Fiber.zip(Fiber.zip(a1, a2), b2))
      // first come, first served between the limiters, one per window
      assert.deepStrictEqual(admitted, ["b1@0", "a1@1000", "b2@2000", "a2@3000"])
      // a1's admission (at 1000) kept a2's place behind b2: a2 first asks when b2 is through, at 2000
      assert.deepStrictEqual(byName(calls, "b", "a"), [
        "reserve b", // b1 admitted at 0
        "reserve a", // a1 waits, first in line
        "reserve b", // b2 waits behind a
        "reserve a", // a1 admitted at 1000, a place kept for a2 behind b
        "reserve b", // b2 woken as first: waits for the window
        "reserve b", // b2 admitted at 2000
        "reserve a", // a2 woken as first: waits for the window
        "reserve a" // a2 admitted at 3000
      ])
    }))

  it.scoped("a place kept for a request that is interrupted before its turn is given up, and the other goes on", () =>
    Effect.gen(function*() {
      // the fourth reserve (a1's admission at 1000, asked while a2 waits behind it) is held until a2 is gone
      const { a, b, calls, gate } = yield* twoOnOneStore(3)
      yield* b.acquire(ticket())
      const a1 = yield* Effect.fork(a.acquire(ticket()))
      yield* runReady
      const a2 = yield* Effect.fork(a.acquire(ticket()))
      const b2 = yield* Effect.fork(b.acquire(ticket()))
      yield* runReady
      yield* TestClock.adjust("1 second")
      yield* runReady
      yield* Fiber.interrupt(a2)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(a1)
      // the store kept a place for a's next request; nobody here will send it
      assert.deepStrictEqual(byName(calls, "b", "a").slice(3), ["reserve a", "leave a"])
      yield* runToEnd(b2)
      assert.strictEqual(yield* now, 2000)
      assert.notInclude(byName(calls, "b", "a").slice(5), "reserve a", "a asks nothing more")
    }))

  it.scoped("the place is given up when every caller of the limiter is interrupted together, head and follower", () =>
    Effect.gen(function*() {
      const { a, b, calls } = yield* twoOnOneStore()
      yield* b.acquire(ticket())
      const a1 = yield* Effect.fork(a.acquire(ticket()))
      yield* runReady
      const a2 = yield* Effect.fork(a.acquire(ticket()))
      yield* runReady
      assert.deepStrictEqual(byName(calls, "b", "a"), ["reserve b", "reserve a"])
      // the head first (the turn passes to a2), then a2 before it runs
      yield* Fiber.interrupt(a1)
      yield* Fiber.interrupt(a2)
      yield* runReady
      assert.strictEqual(byName(calls, "b", "a").at(-1), "leave a")
    }))
})
