/**
 * The memory `LimiterStore` against the suite every store passes (test/helpers/storeConformance.ts), and the
 * sliding-window arithmetic under it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import { cost, none } from "../../src/internal/budgets.js"
import * as SlidingWindowLog from "../../src/internal/slidingWindow.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
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

  it("each of input, output and combined tokens binds on its own, against its own limit and count", async () => {
    await eachBudgetBinds(memory)
  })

  it("a request above the whole quota of any budget is refused at once and counts nothing", async () => {
    const store = LimiterStore.makeMemory()
    const limits = limitsOf(1000, { requests: 5, input: 60, output: 50, tokens: 100 })
    const run = <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(0)(effect))
    for (const over of [cost(61, 0), cost(0, 51), { ...cost(50, 50), tokens: 101 }]) {
      assert.deepStrictEqual(await run(store.reserve("b", over, limits)), { _tag: "TooLarge" }, JSON.stringify(over))
    }
    assert.deepStrictEqual(await run(store.usage("b", 1000)), { ...none, nextExpiryMs: 0 })
    // exactly the quota fits
    assert.strictEqual((await run(store.reserve("b", cost(50, 50), limitsOf(1000, { tokens: 100 }))))._tag, "Admitted")
  })

  it("reserve.now counts at once what reserve admits; a request that would wait, or a waiter in line, changes nothing", async () => {
    const store = LimiterStore.makeMemory()
    const now = store.reserve.now!
    const limits = limitsOf(1000, { requests: 2, input: 100, output: 100, tokens: 100 })
    const usageAt = (at: number, bucket = "b") => Effect.runPromise(atTime(at)(store.usage(bucket, 1000)))
    const usage = (input: number, tokens: number, nextExpiryMs: number) => ({ ...none, input, tokens, nextExpiryMs })
    assert.deepStrictEqual(now("b", cost(10, 0), limits, 0), {
      _tag: "Admitted",
      id: 1,
      usage: { ...usage(10, 10, 1000), requests: 1 }
    })
    assert.deepStrictEqual(now("b", cost(20, 0), limits, 500)?.usage, { ...usage(30, 30, 500), requests: 2 })
    // full: nothing counted
    assert.isUndefined(now("b", cost(10, 0), limits, 999))
    assert.deepStrictEqual(await usageAt(999), { ...usage(30, 30, 1), requests: 2 })
    // the first entry left the window: room again, counted as reserve would
    assert.deepStrictEqual(now("b", cost(10, 0), limits, 1000)?.usage, { ...usage(30, 30, 500), requests: 2 })
    // above the whole quota of one budget: reserve says so, reserve.now leaves it to it
    assert.isUndefined(now("b", cost(0, 101), limits, 5000))
    assert.deepStrictEqual(await usageAt(5000), { ...none, nextExpiryMs: 0 })
    // a waiter in the bucket's line keeps its turn: room comes back, but only reserve (for that waiter) admits
    const run = <A>(at: number, effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(at)(effect))
    await run(10_000, store.reserve("c", cost(1, 0), limits))
    await run(10_000, store.reserve("c", cost(1, 0), limits))
    assert.strictEqual((await run(10_000, store.reserve("c", cost(1, 0), limits, "w")))._tag, "Wait")
    assert.isUndefined(now("c", cost(1, 0), limits, 11_000))
    assert.deepStrictEqual(await usageAt(11_000, "c"), { ...none, nextExpiryMs: 0 })
    assert.strictEqual((await run(11_000, store.reserve("c", cost(1, 0), limits, "w")))._tag, "Admitted")
    assert.strictEqual(now("c", cost(1, 0), limits, 11_000)?._tag, "Admitted")
    // a store that wraps reserve leaves reserve.now behind
    const wrapped: LimiterStore.LimiterStore.Service = { ...store, reserve: (...args) => store.reserve(...args) }
    assert.isUndefined(wrapped.reserve.now)
  })

  it("restamp.now moves an entry to the caller's now as restamp does, never earlier; an unknown entry changes nothing", async () => {
    const stores = [LimiterStore.makeMemory(), LimiterStore.makeMemory()]
    const limits = limitsOf(1000, { requests: 5, input: 100, output: 100, tokens: 100 })
    const [viaNow, viaEffect] = await Promise.all(stores.map(async (store) => {
      const run = <A>(at: number, effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(at)(effect))
      const first = await run(0, store.reserve("b", cost(10, 0), limits))
      await run(100, store.reserve("b", cost(0, 20), limits))
      return { store, run, id: first._tag === "Admitted" ? first.id : -1 }
    }))
    const restamped = [
      viaNow!.store.restamp.now!("b", viaNow!.id, 1000, 400),
      await viaEffect!.run(400, viaEffect!.store.restamp("b", viaEffect!.id, 1000))
    ]
    // the oldest entry is now the second one (sent at 100): it leaves the window first
    const both = { requests: 2, input: 10, output: 20, tokens: 30 }
    assert.deepStrictEqual(restamped, [{ ...both, nextExpiryMs: 700 }, { ...both, nextExpiryMs: 700 }])
    // never moved back: a restamp at an earlier moment than the entry's keeps it where it is
    assert.deepStrictEqual(viaNow!.store.restamp.now!("b", viaNow!.id, 1000, 300), { ...both, nextExpiryMs: 800 })
    // the first entry counts until 1400: at 1100 the second has left, the first not
    assert.deepStrictEqual(viaNow!.store.restamp.now!("b", 999, 1000, 1100), {
      requests: 1,
      input: 10,
      output: 0,
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
  const sums = (entries: ReadonlyArray<SlidingWindowLog.Entry>) => ({
    requests: entries.reduce((n, e) => n + e.requests, 0),
    input: entries.reduce((n, e) => n + e.input, 0),
    output: entries.reduce((n, e) => n + e.output, 0),
    tokens: entries.reduce((n, e) => n + e.tokens, 0)
  })

  it("prune drops exactly the entries whose window has ended, keeping the order of the rest", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.nat(100), { maxLength: 20 }),
        FastCheck.nat(150),
        FastCheck.integer({ min: 1, max: 50 }),
        (ats, now, windowMs) => {
          // inserted in any order, kept in time order
          const log = logOf(ats.map((at) => ({ at, requests: 1, input: at % 7, output: at % 5, tokens: at })))
          log.prune(now, windowMs)
          const kept = [...ats].sort((a, b) => a - b).filter((at) => at + windowMs > now)
          assert.deepStrictEqual([...log].map((e) => e.at), kept)
          assert.strictEqual(log.size, kept.length)
          assert.deepStrictEqual(
            log.totals,
            sums(kept.map((at) => ({ at, requests: 1, input: at % 7, output: at % 5, tokens: at })))
          )
          assert.strictEqual(log.first()?.at, kept[0])
        }
      ),
      { numRuns: 200 }
    )
  })

  it("the running totals follow every change: insert, remove, replace, prune (through the compaction of the front)", () => {
    const log = new SlidingWindowLog.Log<SlidingWindowLog.Entry>()
    const kept: Array<SlidingWindowLog.Entry> = []
    for (let i = 0; i < 5000; i++) {
      const entry = { at: i, requests: i % 3 === 0 ? 0 : 1, input: i % 5, output: i % 3, tokens: i % 7 }
      log.insert(entry)
      kept.push(entry)
      if (i % 5 === 0) {
        const next = { ...entry, input: 40, output: 60, tokens: 100 }
        assert.isTrue(log.replace(entry, next))
        kept[kept.length - 1] = next
      }
      if (i % 11 === 0 && kept.length >= 2) {
        assert.strictEqual(log.remove(kept[kept.length - 2]!), true)
        kept.splice(kept.length - 2, 1)
      }
      // a window of 2000: the front leaves as time goes on, past the point where it is compacted
      log.prune(i, 2000)
      while (kept.length > 0 && kept[0]!.at + 2000 <= i) kept.shift()
      assert.deepStrictEqual(log.totals, sums(kept))
    }
    assert.deepStrictEqual([...log], kept)
    assert.strictEqual(log.findLast((e) => e.at < 4000), kept.filter((e) => e.at < 4000).pop())
    // an entry the window no longer holds is not removed twice, nor replaced
    const gone = { at: 0, requests: 1, input: 0, output: 0, tokens: 0 }
    assert.strictEqual(log.remove(gone), false)
    assert.strictEqual(log.replace(gone, { ...gone, tokens: 5 }), false)
    log.prune(10_000, 2000)
    assert.deepStrictEqual([log.size, log.totals, log.first()], [0, none, undefined])
  })

  it("an emptied log counts from zero again: what rounding left in the totals is gone", () => {
    const log = new SlidingWindowLog.Log<SlidingWindowLog.Entry>()
    const small = { at: 0, requests: 1, input: 5, output: 5, tokens: 5 }
    const huge = { at: 1, requests: 1, input: 1e17, output: 1e17, tokens: 1e17 }
    log.insert(small)
    log.insert(huge)
    log.remove(huge)
    // 5 + 1e17 - 1e17 is 0 in floating point: the running total is off while the small entry stays
    log.prune(100, 50)
    assert.deepStrictEqual([log.size, log.totals], [0, none])
    log.insert(huge)
    log.remove(huge)
    assert.deepStrictEqual([log.size, log.totals], [0, none])
  })

  it("waitFor says per budget how long until one more request fits; a budget the request costs none of never waits", () => {
    const entries = [
      { at: 0, requests: 1, input: 40, output: 0, tokens: 40 },
      { at: 100, requests: 1, input: 0, output: 30, tokens: 30 },
      { at: 200, requests: 1, input: 20, output: 0, tokens: 20 }
    ]
    const limits = { requests: 3, input: 100, output: 40, tokens: 100 }
    const waits = (request: LimiterStore.Budgets, given = limits) => logOf(entries).waitFor(500, request, given, 1000)
    // the requests are full until the first entry leaves; 10 tokens fit now, 20 once the first leaves
    assert.deepStrictEqual(waits(cost(10, 0)), { requests: 500, input: 0, output: 0, tokens: 0 })
    assert.deepStrictEqual(waits(cost(20, 0)), { requests: 500, input: 0, output: 0, tokens: 500 })
    // 60 combined tokens need the first two to leave; output counts only its own: 20 more need the second to leave
    assert.deepStrictEqual(waits(cost(0, 60), { ...limits, requests: 10, output: 100 }), {
      requests: 0,
      input: 0,
      output: 0,
      tokens: 600
    })
    assert.deepStrictEqual(waits(cost(0, 20), { ...limits, requests: 10, tokens: 1000 }), {
      requests: 0,
      input: 0,
      output: 600,
      tokens: 0
    })
    // input: 90 more need the first (40) and the third (20) to leave, the second counting none of it
    assert.deepStrictEqual(waits(cost(90, 0), { ...limits, requests: 10, tokens: 1000 }).input, 700)
    // over its output limit already, a request of no output is not held up by it
    const over = { ...limits, requests: 10, output: 20 }
    assert.deepStrictEqual(waits(cost(5, 0), over), { requests: 0, input: 0, output: 0, tokens: 0 })
    assert.deepStrictEqual(waits(cost(5, 1), over).output, 600)
    // the longest of them is the wait
    assert.strictEqual(SlidingWindowLog.longest({ requests: 1, input: 4, output: 3, tokens: 2 }), 4)
    // usage learnt from elsewhere may count tokens without a request
    assert.deepStrictEqual(
      logOf([{ at: 0, requests: 0, input: 0, output: 0, tokens: 90 }, ...entries.slice(1)]).waitFor(
        500,
        cost(10, 0),
        limits,
        1000
      ),
      { requests: 0, input: 0, output: 0, tokens: 500 }
    )
  })
})
