/**
 * The memory `LimiterStore` against the suite every store passes (test/helpers/storeConformance.ts), and the
 * sliding-window arithmetic under it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as SlidingWindowLog from "../../src/internal/slidingWindow.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import {
  atTime,
  conformsToModel,
  servesInTurn,
  signalsReleases,
  waitsAreExact,
  waitsPastManyEntries
} from "../helpers/storeConformance.js"

const memory = () => Promise.resolve(LimiterStore.makeMemory())

describe("LimiterStore.makeMemory", () => {
  it("answers every operation as the sliding-window rule says: admitted exactly when it fits and nobody is ahead in line", async () => {
    await conformsToModel(memory, 300)
  })

  it("a wait is exact: one millisecond earlier the request still waits, at the end of the wait it is admitted", async () => {
    await waitsAreExact(memory, 100)
  })

  it("a wait that needs hundreds of entries to leave is exact", async () => {
    await waitsPastManyEntries(memory)
  })

  it("serves waiters in turn: once told to wait, a waiter goes before any other goes twice; none starves", async () => {
    await servesInTurn(memory, ["a", "b", "c"], 60)
    await servesInTurn(memory, ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"], 100)
  })

  it("signals capacity coming back: a lowered or removed entry, the first waiter admitted with others behind", async () => {
    await signalsReleases(memory)
  })

  it("a request of more tokens than the whole quota is refused at once and counts nothing", async () => {
    const store = LimiterStore.makeMemory()
    const limits = { requests: 5, tokens: 100, windowMs: 1000 }
    const run = <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(0)(effect))
    assert.deepStrictEqual(await run(store.reserve("b", 101, limits)), { _tag: "TooLarge" })
    assert.deepStrictEqual(await run(store.usage("b", 1000)), { requests: 0, tokens: 0, nextExpiryMs: 0 })
    // exactly the quota fits
    assert.strictEqual((await run(store.reserve("b", 100, limits)))._tag, "Admitted")
  })

  it("reserve.now counts at once what reserve admits; a request that would wait, or a waiter in line, changes nothing", async () => {
    const store = LimiterStore.makeMemory()
    const now = store.reserve.now!
    const limits = { requests: 2, tokens: 100, windowMs: 1000 }
    const usageAt = (at: number, bucket = "b") => Effect.runPromise(atTime(at)(store.usage(bucket, 1000)))
    assert.deepStrictEqual(now("b", 10, limits, 0), {
      _tag: "Admitted",
      id: 1,
      usage: { requests: 1, tokens: 10, nextExpiryMs: 1000 }
    })
    assert.deepStrictEqual(now("b", 20, limits, 500)?.usage, { requests: 2, tokens: 30, nextExpiryMs: 500 })
    // full: nothing counted
    assert.isUndefined(now("b", 10, limits, 999))
    assert.deepStrictEqual(await usageAt(999), { requests: 2, tokens: 30, nextExpiryMs: 1 })
    // the first entry left the window: room again, counted as reserve would
    assert.deepStrictEqual(now("b", 10, limits, 1000)?.usage, { requests: 2, tokens: 30, nextExpiryMs: 500 })
    // more tokens than the whole quota: reserve says so, reserve.now leaves it to it
    assert.isUndefined(now("b", 101, limits, 5000))
    assert.deepStrictEqual(await usageAt(5000), { requests: 0, tokens: 0, nextExpiryMs: 0 })
    // a waiter in the bucket's line keeps its turn: room comes back, but only reserve (for that waiter) admits
    const run = <A>(at: number, effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(at)(effect))
    await run(10_000, store.reserve("c", 1, limits))
    await run(10_000, store.reserve("c", 1, limits))
    assert.strictEqual((await run(10_000, store.reserve("c", 1, limits, "w")))._tag, "Wait")
    assert.isUndefined(now("c", 1, limits, 11_000))
    assert.deepStrictEqual(await usageAt(11_000, "c"), { requests: 0, tokens: 0, nextExpiryMs: 0 })
    assert.strictEqual((await run(11_000, store.reserve("c", 1, limits, "w")))._tag, "Admitted")
    assert.strictEqual(now("c", 1, limits, 11_000)?._tag, "Admitted")
    // a store that wraps reserve leaves reserve.now behind
    const wrapped: LimiterStore.LimiterStore.Service = { ...store, reserve: (...args) => store.reserve(...args) }
    assert.isUndefined(wrapped.reserve.now)
  })

  it("restamp.now moves an entry to the caller's now as restamp does, never earlier; an unknown entry changes nothing", async () => {
    const stores = [LimiterStore.makeMemory(), LimiterStore.makeMemory()]
    const limits = { requests: 5, tokens: 100, windowMs: 1000 }
    const [viaNow, viaEffect] = await Promise.all(stores.map(async (store) => {
      const run = <A>(at: number, effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(at)(effect))
      const first = await run(0, store.reserve("b", 10, limits))
      await run(100, store.reserve("b", 20, limits))
      return { store, run, id: first._tag === "Admitted" ? first.id : -1 }
    }))
    const restamped = [
      viaNow!.store.restamp.now!("b", viaNow!.id, 1000, 400),
      await viaEffect!.run(400, viaEffect!.store.restamp("b", viaEffect!.id, 1000))
    ]
    // the oldest entry is now the second one (sent at 100): it leaves the window first
    assert.deepStrictEqual(restamped, [
      { requests: 2, tokens: 30, nextExpiryMs: 700 },
      { requests: 2, tokens: 30, nextExpiryMs: 700 }
    ])
    // never moved back: a restamp at an earlier moment than the entry's keeps it where it is
    assert.deepStrictEqual(viaNow!.store.restamp.now!("b", viaNow!.id, 1000, 300), {
      requests: 2,
      tokens: 30,
      nextExpiryMs: 800
    })
    // the first entry counts until 1400: at 1100 the second has left, the first not
    assert.deepStrictEqual(viaNow!.store.restamp.now!("b", 999, 1000, 1100), {
      requests: 1,
      tokens: 10,
      nextExpiryMs: 300
    })
    // a store that wraps restamp leaves restamp.now behind
    const wrapped: LimiterStore.LimiterStore.Service = {
      ...viaNow!.store,
      restamp: (...args) => viaNow!.store.restamp(...args)
    }
    assert.isUndefined(wrapped.restamp.now)
  })
})

describe("the sliding-window arithmetic", () => {
  const logOf = (entries: ReadonlyArray<SlidingWindowLog.Entry>) => {
    const log = new SlidingWindowLog.Log<SlidingWindowLog.Entry>()
    for (const entry of entries) log.insert(entry)
    return log
  }

  it("prune drops exactly the entries whose window has ended, keeping the order of the rest", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.nat(100), { maxLength: 20 }),
        FastCheck.nat(150),
        FastCheck.integer({ min: 1, max: 50 }),
        (ats, now, windowMs) => {
          // inserted in any order, kept in time order
          const log = logOf(ats.map((at) => ({ at, requests: 1, tokens: at })))
          log.prune(now, windowMs)
          const kept = [...ats].sort((a, b) => a - b).filter((at) => at + windowMs > now)
          assert.deepStrictEqual([...log].map((e) => e.at), kept)
          assert.strictEqual(log.size, kept.length)
          assert.strictEqual(log.requests, kept.length)
          assert.strictEqual(log.tokens, kept.reduce((sum, at) => sum + at, 0))
          assert.strictEqual(log.first()?.at, kept[0])
        }
      ),
      { numRuns: 200 }
    )
  })

  it("the running totals follow every change: insert, remove, new tokens, prune (through the compaction of the front)", () => {
    const log = new SlidingWindowLog.Log<SlidingWindowLog.Entry & { tokens: number }>()
    const kept: Array<SlidingWindowLog.Entry & { tokens: number }> = []
    for (let i = 0; i < 5000; i++) {
      const entry = { at: i, requests: i % 3 === 0 ? 0 : 1, tokens: i % 7 }
      log.insert(entry)
      kept.push(entry)
      if (i % 5 === 0) log.setTokens(entry, 100)
      if (i % 11 === 0 && kept.length >= 2) {
        assert.strictEqual(log.remove(kept[kept.length - 2]!), true)
        kept.splice(kept.length - 2, 1)
      }
      // a window of 2000: the front leaves as time goes on, past the point where it is compacted
      log.prune(i, 2000)
      while (kept.length > 0 && kept[0]!.at + 2000 <= i) kept.shift()
      assert.strictEqual(log.requests, kept.reduce((sum, e) => sum + e.requests, 0))
      assert.strictEqual(log.tokens, kept.reduce((sum, e) => sum + e.tokens, 0))
    }
    assert.deepStrictEqual([...log], kept)
    assert.strictEqual(log.findLast((e) => e.at < 4000), kept.filter((e) => e.at < 4000).pop())
    // an entry the window no longer holds is not removed twice
    assert.strictEqual(log.remove({ at: 0, requests: 1, tokens: 0 }), false)
    log.prune(10_000, 2000)
    assert.deepStrictEqual([log.size, log.requests, log.tokens, log.first()], [0, 0, 0, undefined])
  })

  it("an emptied log counts from zero again: what rounding left in the totals is gone", () => {
    const log = new SlidingWindowLog.Log<SlidingWindowLog.Entry>()
    const small = { at: 0, requests: 1, tokens: 5 }
    const huge = { at: 1, requests: 1, tokens: 1e17 }
    log.insert(small)
    log.insert(huge)
    log.remove(huge)
    // 5 + 1e17 - 1e17 is 0 in floating point: the running total is off while the small entry stays
    log.prune(100, 50)
    assert.deepStrictEqual([log.size, log.requests, log.tokens], [0, 0, 0])
    log.insert(huge)
    log.remove(huge)
    assert.deepStrictEqual([log.size, log.requests, log.tokens], [0, 0, 0])
  })

  it("waitFor says per dimension how long until one more request fits", () => {
    const entries = [
      { at: 0, requests: 1, tokens: 40 },
      { at: 100, requests: 1, tokens: 30 },
      { at: 200, requests: 1, tokens: 20 }
    ]
    const limits = { requests: 3, tokens: 100, windowMs: 1000 }
    // the requests are full until the first entry leaves; 10 tokens fit now, 20 once the first leaves
    assert.deepStrictEqual(logOf(entries).waitFor(500, 10, limits), { requestsWaitMs: 500, tokensWaitMs: 0 })
    assert.deepStrictEqual(logOf(entries).waitFor(500, 20, limits), {
      requestsWaitMs: 500,
      tokensWaitMs: 500
    })
    // 60 tokens need the first two to leave
    assert.deepStrictEqual(logOf(entries).waitFor(500, 60, { ...limits, requests: 10 }), {
      requestsWaitMs: 0,
      tokensWaitMs: 600
    })
    // usage learnt from elsewhere may count tokens without a request
    assert.deepStrictEqual(
      logOf([{ at: 0, requests: 0, tokens: 90 }, ...entries.slice(1)]).waitFor(500, 10, limits),
      { requestsWaitMs: 0, tokensWaitMs: 500 }
    )
  })
})
