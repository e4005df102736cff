/**
 * The memory `LimiterStore` and the sliding-window arithmetic under it, against the rule they promise: an entry
 * counted at `t` counts in every interval that contains `t`, until `t + windowMs`; a request is admitted exactly when
 * it fits, never more than the limits in any interval of `windowMs`, and a wait is the earliest moment it would fit.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as SlidingWindowLog from "../../src/internal/slidingWindow.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"

const run = Effect.runSync

/** What the store promises, stated the slow and obvious way: a list of entries and sums over the window. */
class Model {
  readonly entries: Array<{ id: number; at: number; requests: number; tokens: number }> = []
  constructor(readonly windowMs: number) {}

  /** The entries that count at `t` (every entry is at or before any moment asked about). */
  alive(t: number) {
    return this.entries.filter((e) => e.at + this.windowMs > t)
  }
  countAt(t: number) {
    const alive = this.alive(t)
    return {
      requests: alive.reduce((n, e) => n + e.requests, 0),
      tokens: alive.reduce((n, e) => n + e.tokens, 0)
    }
  }
  fitsAt(t: number, tokens: number, limits: LimiterStore.Limits) {
    const { requests, tokens: used } = this.countAt(t)
    return requests + 1 <= limits.requests && used + tokens <= limits.tokens
  }
  /** The earliest moment from `now` on at which one more request of `tokens` fits (the count only falls with time). */
  earliestFit(now: number, tokens: number, limits: LimiterStore.Limits) {
    const moments = [now, ...this.entries.map((e) => e.at + this.windowMs).filter((t) => t > now)].sort((a, b) => a - b)
    return moments.find((t) => this.fitsAt(t, tokens, limits))
  }
}

type Op =
  | { readonly op: "advance"; readonly ms: number }
  | { readonly op: "reserve"; readonly bucket: number; readonly tokens: number; readonly requests: number }
  | { readonly op: "adjust"; readonly bucket: number; readonly pick: number; readonly tokens: number }
  | { readonly op: "remove"; readonly bucket: number; readonly pick: number }
  | { readonly op: "restamp"; readonly bucket: number; readonly pick: number; readonly back: number }
  | {
    readonly op: "add"
    readonly bucket: number
    readonly back: number
    readonly requests: number
    readonly tokens: number
  }
  | { readonly op: "usage"; readonly bucket: number }

const bucket = FastCheck.nat(1)
const pick = FastCheck.nat(40)
const ops = (windowMs: number) =>
  FastCheck.array(
    FastCheck.oneof(
      {
        arbitrary: FastCheck.record({ op: FastCheck.constant("advance" as const), ms: FastCheck.nat(windowMs) }),
        weight: 3
      },
      {
        arbitrary: FastCheck.record({
          op: FastCheck.constant("reserve" as const),
          bucket,
          tokens: FastCheck.nat(120),
          requests: FastCheck.integer({ min: 1, max: 5 })
        }),
        weight: 6
      },
      {
        arbitrary: FastCheck.record({
          op: FastCheck.constant("adjust" as const),
          bucket,
          pick,
          tokens: FastCheck.nat(150)
        }),
        weight: 1
      },
      { arbitrary: FastCheck.record({ op: FastCheck.constant("remove" as const), bucket, pick }), weight: 1 },
      {
        arbitrary: FastCheck.record({
          op: FastCheck.constant("restamp" as const),
          bucket,
          pick,
          back: FastCheck.oneof(FastCheck.constant(0), FastCheck.nat(2 * windowMs))
        }),
        weight: 1
      },
      {
        arbitrary: FastCheck.record({
          op: FastCheck.constant("add" as const),
          bucket,
          back: FastCheck.nat(2 * windowMs),
          requests: FastCheck.nat(2),
          tokens: FastCheck.nat(60)
        }),
        weight: 1
      },
      { arbitrary: FastCheck.record({ op: FastCheck.constant("usage" as const), bucket }), weight: 1 }
    ),
    { maxLength: 60 }
  ) as FastCheck.Arbitrary<ReadonlyArray<Op>>

describe("LimiterStore.makeMemory", () => {
  it("answers every operation as the sliding-window rule says: admitted exactly when it fits, waits to the earliest fit", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.constantFrom(1, 10, 100, 1000).chain((windowMs) =>
          FastCheck.tuple(FastCheck.constant(windowMs), FastCheck.integer({ min: 0, max: 1_000_000 }), ops(windowMs))
        ),
        ([windowMs, start, script]) => {
          const store = LimiterStore.makeMemory()
          const models = [new Model(windowMs), new Model(windowMs)]
          const names = ["key\u0000a", "key\u0000b"]
          // every id the store gave out, with its bucket: operations also aim at other buckets' ids
          const ids: Array<{ bucket: number; id: number }> = []
          let now = start
          for (const step of script) {
            if (step.op === "advance") {
              now += step.ms
              continue
            }
            const model = models[step.bucket]!
            const name = names[step.bucket]!
            const target = ids.length === 0 ? undefined : ids[("pick" in step ? step.pick : 0) % ids.length]!
            switch (step.op) {
              case "reserve": {
                const limits = { requests: step.requests, tokens: 100, windowMs }
                const expected: { readonly _tag: string; readonly waitMs?: number } = step.tokens > limits.tokens
                  ? { _tag: "TooLarge" }
                  : model.fitsAt(now, step.tokens, limits)
                  ? { _tag: "Admitted" }
                  : { _tag: "Wait", waitMs: model.earliestFit(now, step.tokens, limits)! - now }
                const answer = run(store.reserve(name, now, step.tokens, limits))
                if (answer._tag === "Admitted") {
                  assert.notInclude(ids.map((i) => i.id), answer.id, "ids are never reused")
                  ids.push({ bucket: step.bucket, id: answer.id })
                  model.entries.push({ id: answer.id, at: now, requests: 1, tokens: step.tokens })
                  assert.deepStrictEqual({ _tag: answer._tag }, expected)
                } else {
                  assert.deepStrictEqual<{ readonly _tag: string; readonly waitMs?: number }>(answer, expected)
                }
                break
              }
              case "adjust": {
                if (target === undefined) break
                run(store.adjust(name, target.id, step.tokens))
                const entry = model.entries.find((e) => e.id === target.id)
                if (target.bucket === step.bucket && entry !== undefined) entry.tokens = step.tokens
                break
              }
              case "remove": {
                if (target === undefined) break
                run(store.remove(name, target.id))
                const index = model.entries.findIndex((e) => e.id === target.id)
                if (target.bucket === step.bucket && index >= 0) model.entries.splice(index, 1)
                break
              }
              case "restamp": {
                if (target === undefined) break
                const at = now - step.back
                const entry = model.alive(now).find((e) => e.id === target.id)
                // an entry that has left the window is not moved back into it (a request is answered within it)
                if (target.bucket === step.bucket && entry === undefined) break
                run(store.restamp(name, target.id, at))
                // only ever later: the answer is the latest the server can have counted the request
                if (target.bucket === step.bucket && entry !== undefined && entry.at < at) entry.at = at
                break
              }
              case "add": {
                run(store.add(name, now - step.back, step.requests, step.tokens))
                model.entries.push({ id: -1, at: now - step.back, requests: step.requests, tokens: step.tokens })
                break
              }
              case "usage": {
                const { requests, tokens } = model.countAt(now)
                const alive = model.alive(now)
                assert.deepStrictEqual(run(store.usage(name, now, windowMs)), {
                  requests,
                  tokens,
                  nextExpiryMs: alive.length === 0 ? 0 : Math.min(...alive.map((e) => e.at)) + windowMs - now
                })
              }
            }
          }
        }
      ),
      { numRuns: 300 }
    )
  })

  it("a wait is exact: one millisecond earlier the request still waits, at the end of the wait it is admitted", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.record({ gap: FastCheck.nat(300), tokens: FastCheck.nat(50) }), {
          minLength: 1,
          maxLength: 30
        }),
        FastCheck.integer({ min: 1, max: 4 }),
        FastCheck.integer({ min: 50, max: 120 }),
        (arrivals, requests, tokens) => {
          const store = LimiterStore.makeMemory()
          const limits = { requests, tokens, windowMs: 1000 }
          let now = 0
          const admitted: Array<{ at: number; tokens: number }> = []
          for (const arrival of arrivals) {
            now += arrival.gap
            const answer = run(store.reserve("b", now, arrival.tokens, limits))
            if (answer._tag === "Wait") {
              assert.isAbove(answer.waitMs, 0)
              if (answer.waitMs > 1) {
                assert.strictEqual(
                  run(store.reserve("b", now + answer.waitMs - 1, arrival.tokens, limits))._tag,
                  "Wait"
                )
              }
              now += answer.waitMs
              const later = run(store.reserve("b", now, arrival.tokens, limits))
              assert.strictEqual(later._tag, "Admitted")
            } else {
              assert.strictEqual(answer._tag, "Admitted")
            }
            admitted.push({ at: now, tokens: arrival.tokens })
          }
          // and never more than the limits in any interval of the window's length
          for (const { at } of admitted) {
            const inWindow = admitted.filter((a) => a.at >= at && a.at < at + limits.windowMs)
            assert.isAtMost(inWindow.length, limits.requests)
            assert.isAtMost(inWindow.reduce((n, a) => n + a.tokens, 0), limits.tokens)
          }
        }
      ),
      { numRuns: 100 }
    )
  })

  it("a request of more tokens than the whole quota is refused at once and counts nothing", () => {
    const store = LimiterStore.makeMemory()
    const limits = { requests: 5, tokens: 100, windowMs: 1000 }
    assert.deepStrictEqual(run(store.reserve("b", 0, 101, limits)), { _tag: "TooLarge" })
    assert.deepStrictEqual(run(store.usage("b", 0, 1000)), { requests: 0, tokens: 0, nextExpiryMs: 0 })
    // exactly the quota fits
    assert.strictEqual(run(store.reserve("b", 0, 100, limits))._tag, "Admitted")
  })
})

describe("the sliding-window arithmetic", () => {
  it("prune drops exactly the entries whose window has ended, keeping the order of the rest", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.nat(100), { maxLength: 20 }).map((ats) => [...ats].sort((a, b) => a - b)),
        FastCheck.nat(150),
        FastCheck.integer({ min: 1, max: 50 }),
        (ats, now, windowMs) => {
          const entries = ats.map((at) => ({ at, requests: 1, tokens: 1 }))
          SlidingWindowLog.prune(entries, now, windowMs)
          assert.deepStrictEqual(entries.map((e) => e.at), ats.filter((at) => at + windowMs > now))
        }
      ),
      { numRuns: 200 }
    )
  })

  it("waitFor says per dimension how long until one more request fits", () => {
    const entries = [
      { at: 0, requests: 1, tokens: 40 },
      { at: 100, requests: 1, tokens: 30 },
      { at: 200, requests: 1, tokens: 20 }
    ]
    const limits = { requests: 3, tokens: 100, windowMs: 1000 }
    // the requests are full until the first entry leaves; 10 tokens fit now, 20 once the first leaves
    assert.deepStrictEqual(SlidingWindowLog.waitFor(entries, 500, 10, limits), { requestsWaitMs: 500, tokensWaitMs: 0 })
    assert.deepStrictEqual(SlidingWindowLog.waitFor(entries, 500, 20, limits), {
      requestsWaitMs: 500,
      tokensWaitMs: 500
    })
    // 60 tokens need the first two to leave
    assert.deepStrictEqual(SlidingWindowLog.waitFor(entries, 500, 60, { ...limits, requests: 10 }), {
      requestsWaitMs: 0,
      tokensWaitMs: 600
    })
    // usage learnt from elsewhere may count tokens without a request
    assert.deepStrictEqual(
      SlidingWindowLog.waitFor([{ at: 0, requests: 0, tokens: 90 }, ...entries.slice(1)], 500, 10, limits),
      { requestsWaitMs: 0, tokensWaitMs: 500 }
    )
  })
})
