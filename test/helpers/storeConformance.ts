/**
 * What every `LimiterStore` promises (the memory store and the Redis store run the same suite), stated the slow and
 * obvious way: a list of entries and sums over the window, and a line of waiters. An entry counted at `t` counts
 * in every interval that contains `t`, until `t + windowMs`; a request is admitted exactly when it fits and no
 * waiter is ahead of it, never more than the limits in any interval of `windowMs`, and a wait is the earliest
 * moment it would fit (or the moment the waiter ahead is due).
 *
 * The store reads its time from Effect's `Clock` here (the Redis store's `clock: "effect"`), so that each step runs
 * at a moment the test chooses.
 */
import { assert } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as LimiterStore from "../../src/layers/LimiterStore.js"

const realClock = Clock.make()

/** A clock stopped at `now` (its sleeps are real: a store's time limit still runs). */
const clockAt = (now: number): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => now,
  unsafeCurrentTimeNanos: () => BigInt(now) * 1_000_000n,
  currentTimeMillis: Effect.succeed(now),
  currentTimeNanos: Effect.succeed(BigInt(now) * 1_000_000n),
  sleep: (duration) => realClock.sleep(Duration.decode(duration))
})

/** `effect` with the clock stopped at `now`. */
export const atTime = (now: number) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.withClock(effect, clockAt(now))

/** The store under test: a fresh one (or a fresh namespace of a shared one) per call. */
export type MakeStore = () => Promise<LimiterStore.LimiterStore.Service>

class Model {
  readonly entries: Array<{ id: number; at: number; requests: number; tokens: number }> = []
  readonly waiters: Array<{ id: string; comeBack: number }> = []
  constructor(readonly windowMs: number) {}

  /** The entries that count at `t`. */
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
  usage(t: number): LimiterStore.Usage {
    const alive = this.alive(t)
    return {
      ...this.countAt(t),
      nextExpiryMs: alive.length === 0 ? 0 : Math.min(...alive.map((e) => e.at)) + this.windowMs - t
    }
  }
  fitsAt(t: number, tokens: number, limits: LimiterStore.Limits) {
    const { requests, tokens: used } = this.countAt(t)
    return requests + 1 <= limits.requests && used + tokens <= limits.tokens
  }
  /** The earliest moment from `now` on at which one more request of `tokens` fits (the count only falls). */
  earliestFit(now: number, tokens: number, limits: LimiterStore.Limits) {
    const moments = [now, ...this.entries.map((e) => e.at + this.windowMs).filter((t) => t > now)].sort((a, b) => a - b)
    return moments.find((t) => this.fitsAt(t, tokens, limits))!
  }
  /** Waiters past their time and grace leave the front of the line. */
  dropLateWaiters(now: number) {
    while (this.waiters.length > 0 && this.waiters[0]!.comeBack + LimiterStore.waiterGraceMs < now) {
      this.waiters.shift()
    }
  }
}

type Op =
  | { readonly op: "advance"; readonly ms: number }
  | {
    readonly op: "reserve"
    readonly bucket: number
    readonly tokens: number
    readonly requests: number
    readonly waiter: number
    readonly more: boolean
  }
  | { readonly op: "adjust"; readonly bucket: number; readonly pick: number; readonly tokens: number }
  | { readonly op: "remove"; readonly bucket: number; readonly pick: number }
  | { readonly op: "restamp"; readonly bucket: number; readonly pick: number }
  | {
    readonly op: "topUp"
    readonly bucket: number
    readonly requests: number
    readonly requestsAge: number
    readonly tokens: number
    readonly tokensAge: number
  }
  | { readonly op: "usage"; readonly bucket: number }
  | { readonly op: "leave"; readonly bucket: number; readonly waiter: number }

const bucket = FastCheck.nat(1)
const pick = FastCheck.nat(40)
// 0: no waiter (the line is not consulted); 1-3: three limiters
const waiter = FastCheck.nat(3)
const ops = (windowMs: number) =>
  FastCheck.array(
    FastCheck.oneof(
      {
        arbitrary: FastCheck.record({
          op: FastCheck.constant("advance" as const),
          ms: FastCheck.oneof(FastCheck.nat(windowMs), FastCheck.nat(3 * LimiterStore.waiterGraceMs))
        }),
        weight: 3
      },
      {
        arbitrary: FastCheck.record({
          op: FastCheck.constant("reserve" as const),
          bucket,
          tokens: FastCheck.nat(120),
          requests: FastCheck.integer({ min: 1, max: 5 }),
          waiter,
          more: FastCheck.boolean()
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
      { arbitrary: FastCheck.record({ op: FastCheck.constant("restamp" as const), bucket, pick }), weight: 1 },
      {
        arbitrary: FastCheck.record({
          op: FastCheck.constant("topUp" as const),
          bucket,
          requests: FastCheck.nat(6),
          requestsAge: FastCheck.nat(windowMs),
          tokens: FastCheck.nat(150),
          tokensAge: FastCheck.nat(windowMs)
        }),
        weight: 1
      },
      { arbitrary: FastCheck.record({ op: FastCheck.constant("usage" as const), bucket }), weight: 1 },
      { arbitrary: FastCheck.record({ op: FastCheck.constant("leave" as const), bucket, waiter }), weight: 1 }
    ),
    { maxLength: 50 }
  ) as FastCheck.Arbitrary<ReadonlyArray<Op>>

/**
 * Every operation of the store against the model, in random scripts over two buckets and three waiters (and
 * callers that are no waiter): the answers, the ids (never reused), the usage after each operation.
 */
export const conformsToModel = (makeStore: MakeStore, numRuns: number) =>
  FastCheck.assert(
    FastCheck.asyncProperty(
      FastCheck.constantFrom(10, 100, 1000, 60_000).chain((windowMs) =>
        FastCheck.tuple(FastCheck.constant(windowMs), FastCheck.integer({ min: 0, max: 1_000_000 }), ops(windowMs))
      ),
      async ([windowMs, start, script]) => {
        const store = await makeStore()
        const models = [new Model(windowMs), new Model(windowMs)]
        const names = ["key\u0000a", "key\u0000b"]
        const waiters = [undefined, "w1", "w2", "w3"] as const
        // every id the store gave out, with its bucket: operations also aim at other buckets' ids
        const ids: Array<{ bucket: number; id: number }> = []
        let now = start
        const run = <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(now)(effect))
        for (const step of script) {
          if (step.op === "advance") {
            now += step.ms
            continue
          }
          const model = models[step.bucket]!
          const name = names[step.bucket]!
          const target = ids.length === 0 ? undefined : ids[("pick" in step ? step.pick : 0) % ids.length]!
          // an operation acts on the entry of its id in its own bucket, if any (ids are unique within a bucket): a
          // target is an id given out in either bucket
          model.dropLateWaiters(now)
          switch (step.op) {
            case "reserve": {
              const limits = { requests: step.requests, tokens: 100, windowMs }
              const who = waiters[step.waiter]
              const answer = await run(store.reserve(name, step.tokens, limits, who, step.more))
              const place = model.waiters.findIndex((w) => w.id === who)
              if (step.tokens > limits.tokens) {
                assert.deepStrictEqual(answer, { _tag: "TooLarge" })
                if (place >= 0) model.waiters.splice(place, 1)
                // the waiter first now is one still there
                model.dropLateWaiters(now)
                break
              }
              const first = model.waiters[0]
              const ahead = who !== undefined && first !== undefined && first.id !== who
              const fit = model.fitsAt(now, step.tokens, limits) ? 0 : model.earliestFit(now, step.tokens, limits) - now
              const waitMs = ahead ? Math.max(fit, first.comeBack + LimiterStore.waiterGraceMs + 1 - now) : fit
              if (waitMs === 0) {
                assert.strictEqual(answer._tag, "Admitted", `${JSON.stringify(step)} at ${now}`)
                if (answer._tag !== "Admitted") break
                assert.notInclude(
                  ids.filter((i) => i.bucket === step.bucket).map((i) => i.id),
                  answer.id,
                  "ids are never reused in a bucket"
                )
                ids.push({ bucket: step.bucket, id: answer.id })
                model.entries.push({ id: answer.id, at: now, requests: 1, tokens: step.tokens })
                if (place >= 0) model.waiters.splice(place, 1)
                // the waiter first now is one still there
                model.dropLateWaiters(now)
                // with more to send, a place at the back of the line when others wait, behind the first
                const next = model.waiters[0]
                if (step.more && who !== undefined && next !== undefined) {
                  const queuedMs = next.comeBack + LimiterStore.waiterGraceMs + 1 - now
                  assert.strictEqual(answer.queuedMs, queuedMs, "queued behind the first")
                  model.waiters.push({ id: who, comeBack: now + queuedMs })
                } else {
                  assert.isUndefined(answer.queuedMs, "no place kept")
                }
              } else {
                assert.deepStrictEqual({ ...answer, usage: undefined }, { _tag: "Wait", waitMs, usage: undefined })
                if (place >= 0) model.waiters[place]!.comeBack = now + waitMs
                else if (who !== undefined) model.waiters.push({ id: who, comeBack: now + waitMs })
              }
              assert.deepStrictEqual("usage" in answer ? answer.usage : undefined, model.usage(now), "usage after")
              break
            }
            case "adjust": {
              if (target === undefined) break
              const usage = await run(store.adjust(name, target.id, step.tokens, windowMs))
              const entry = model.alive(now).find((e) => e.id === target.id)
              if (entry !== undefined) entry.tokens = step.tokens
              assert.deepStrictEqual(usage, model.usage(now))
              break
            }
            case "remove": {
              if (target === undefined) break
              const usage = await run(store.remove(name, target.id, windowMs))
              const index = model.entries.findIndex((e) => e.id === target.id && e.at + windowMs > now)
              if (index >= 0) model.entries.splice(index, 1)
              assert.deepStrictEqual(usage, model.usage(now))
              break
            }
            case "restamp": {
              if (target === undefined) break
              const usage = await run(store.restamp(name, target.id, windowMs))
              // only an entry still counted moves, and only ever later
              const entry = model.alive(now).find((e) => e.id === target.id)
              if (entry !== undefined && entry.at < now) entry.at = now
              assert.deepStrictEqual(usage, model.usage(now))
              break
            }
            case "topUp": {
              const count = {
                requests: step.requests,
                requestsAgeMs: step.requestsAge,
                tokens: step.tokens,
                tokensAgeMs: step.tokensAge
              }
              const usage = await run(store.topUp(name, count, windowMs))
              const before = model.countAt(now)
              if (step.requests > before.requests) {
                model.entries.push({
                  // usage learnt from the server: no id any caller holds (NaN equals nothing)
                  id: Number.NaN,
                  at: now - step.requestsAge,
                  requests: step.requests - before.requests,
                  tokens: 0
                })
              }
              if (step.tokens > before.tokens) {
                model.entries.push({
                  // usage learnt from the server: no id any caller holds (NaN equals nothing)
                  id: Number.NaN,
                  at: now - step.tokensAge,
                  requests: 0,
                  tokens: step.tokens - before.tokens
                })
              }
              assert.deepStrictEqual(usage, model.usage(now))
              break
            }
            case "usage": {
              assert.deepStrictEqual(await run(store.usage(name, windowMs)), model.usage(now))
              break
            }
            case "leave": {
              const who = waiters[step.waiter]
              if (who === undefined) break
              await run(store.leave(name, who))
              const place = model.waiters.findIndex((w) => w.id === who)
              if (place >= 0) model.waiters.splice(place, 1)
              // the waiter first now is one still there
              model.dropLateWaiters(now)
            }
          }
        }
      }
    ),
    { numRuns }
  )

/** A wait is exact: one millisecond earlier the request still waits, at the end of the wait it is admitted. */
export const waitsAreExact = (makeStore: MakeStore, numRuns: number) =>
  FastCheck.assert(
    FastCheck.asyncProperty(
      FastCheck.array(FastCheck.record({ gap: FastCheck.nat(300), tokens: FastCheck.nat(50) }), {
        minLength: 1,
        maxLength: 30
      }),
      FastCheck.integer({ min: 1, max: 4 }),
      FastCheck.integer({ min: 50, max: 120 }),
      async (arrivals, requests, tokens) => {
        const store = await makeStore()
        const limits = { requests, tokens, windowMs: 1000 }
        const reserve = (now: number, tokens: number) =>
          Effect.runPromise(atTime(now)(store.reserve("b", tokens, limits, "w")))
        let now = 0
        const admitted: Array<{ at: number; tokens: number }> = []
        for (const arrival of arrivals) {
          now += arrival.gap
          const answer = await reserve(now, arrival.tokens)
          if (answer._tag === "Wait") {
            assert.isAbove(answer.waitMs, 0)
            if (answer.waitMs > 1) {
              assert.strictEqual(
                (await reserve(now + answer.waitMs - 1, arrival.tokens))._tag,
                "Wait"
              )
            }
            now += answer.waitMs
            assert.strictEqual((await reserve(now, arrival.tokens))._tag, "Admitted")
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
    { numRuns }
  )

/**
 * Capacity coming back is signalled to the waiter first in line, and to it alone: `released` completes when an entry
 * is removed or lowered, and when the waiter ahead of it is admitted or leaves (and not for an entry raised or
 * restamped, nor for a waiter behind the first). A wake-up that comes while its waiter is not listening is kept for
 * its next `released`, once.
 */
export const signalsReleases = async (makeStore: MakeStore) => {
  const store = await makeStore()
  const limits = { requests: 2, tokens: 100, windowMs: 60_000 }
  const at = (now: number) => <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(now)(effect))
  const nothing = () => Promise.resolve()
  /** Whether `released` completes for `waiter` while `action` runs (it is awaited from before the action). */
  const signalled = async (waiter: string, action: () => Promise<unknown>) => {
    const fiber = Effect.runFork(store.released("b", waiter))
    // the subscription of a shared store is in place before the action
    await Effect.runPromise(Effect.sleep("20 millis"))
    await action()
    const outcome = await Effect.runPromise(Effect.timeout(Fiber.join(fiber), "200 millis").pipe(Effect.option))
    await Effect.runPromise(Fiber.interrupt(fiber))
    return outcome._tag === "Some"
  }
  const first = await at(0)(store.reserve("b", 10, limits))
  const second = await at(0)(store.reserve("b", 10, limits))
  if (first._tag !== "Admitted" || second._tag !== "Admitted") throw new Error("both fit")
  // w0 told to wait, and woken before it ever listened: the wake-up waits for it
  assert.strictEqual((await at(1)(store.reserve("b", 10, limits, "w0")))._tag, "Wait")
  await at(1)(store.adjust("b", first.id, 5, limits.windowMs))
  await Effect.runPromise(Effect.sleep("50 millis"))
  assert.isTrue(await signalled("w0", nothing), "kept for a waiter that had not listened yet")
  await at(1)(store.leave("b", "w0"))
  assert.strictEqual((await at(1)(store.reserve("b", 10, limits, "w1")))._tag, "Wait")
  assert.isFalse(await signalled("w1", () => at(1)(store.adjust("b", first.id, 50, limits.windowMs))), "raised")
  assert.isFalse(await signalled("w1", () => at(1)(store.restamp("b", first.id, limits.windowMs))), "restamped")
  assert.isTrue(await signalled("w1", () => at(2)(store.adjust("b", first.id, 0, limits.windowMs))), "lowered")
  assert.isFalse(await signalled("w1", nothing), "a wake-up is used once")
  // w2 behind w1: capacity coming back is w1's to use, kept for it while it does not listen
  assert.strictEqual((await at(3)(store.reserve("b", 10, limits, "w2")))._tag, "Wait")
  assert.isFalse(await signalled("w2", () => at(4)(store.adjust("b", second.id, 0, limits.windowMs))), "not first")
  assert.isTrue(await signalled("w1", nothing), "kept for the first waiter")
  assert.isTrue(await signalled("w1", () => at(4)(store.remove("b", second.id, limits.windowMs))), "removed")
  assert.isTrue(
    await signalled(
      "w2",
      async () => assert.strictEqual((await at(5)(store.reserve("b", 10, limits, "w1")))._tag, "Admitted")
    ),
    "the waiter ahead admitted"
  )
  // w3 behind w2; w2 leaves: w3 is first now
  assert.strictEqual((await at(6)(store.reserve("b", 10, limits, "w3")))._tag, "Wait")
  assert.isFalse(
    await signalled(
      "w3",
      async () => assert.strictEqual((await at(6)(store.reserve("b", 10, limits, "w2")))._tag, "Wait")
    ),
    "a waiter ahead told to wait again"
  )
  assert.isTrue(await signalled("w3", () => at(7)(store.leave("b", "w2"))), "the waiter ahead left")
  assert.isFalse(await signalled("w3", () => at(8)(store.leave("b", "w3"))), "the last waiter leaves: nobody to tell")
}

/**
 * No process starves: limiters (waiters) that each want one request after another share a bucket, each coming back
 * exactly when told. Once told to wait, a waiter is admitted before any other is admitted twice (the line is first
 * come, first served, and an admitted waiter that wants more joins it at the back), and every one is served.
 */
export const servesInTurn = async (makeStore: MakeStore, waiters: ReadonlyArray<string>, admissions: number) => {
  const store = await makeStore()
  const limits = { requests: 2, tokens: 1_000, windowMs: 1_000 }
  const due = new Map(waiters.map((w) => [w, 0]))
  // per waiter in line: how many times each other waiter was admitted since it joined
  const passedBy = new Map<string, Map<string, number>>()
  const served = new Map(waiters.map((w) => [w, 0]))
  let total = 0
  for (let step = 0; step < 100 * admissions && total < admissions; step++) {
    const [who, at] = [...due].reduce((a, b) => (b[1] < a[1] ? b : a))
    const answer = await Effect.runPromise(atTime(at)(store.reserve("b", 10, limits, who)))
    if (answer._tag === "Admitted") {
      total++
      served.set(who, served.get(who)! + 1)
      passedBy.delete(who)
      for (const [waiting, counts] of passedBy) {
        const times = (counts.get(who) ?? 0) + 1
        counts.set(who, times)
        assert.isAtMost(times, 1, `${who} admitted twice while ${waiting} waited in line`)
      }
    } else {
      assert.strictEqual(answer._tag, "Wait")
      if (answer._tag === "Wait") due.set(who, at + answer.waitMs)
      if (!passedBy.has(who)) passedBy.set(who, new Map())
    }
  }
  assert.strictEqual(total, admissions)
  for (const [who, count] of served) assert.isAtLeast(count, Math.floor(admissions / waiters.length) - 1, who)
}

/**
 * A wait that needs many entries to leave (a store may read them a page at a time) is the moment the last of them
 * leaves: 300 entries of 3 tokens, one per millisecond; a request of `n` tokens waits for the first `k` to leave.
 */
export const waitsPastManyEntries = async (makeStore: MakeStore) => {
  const store = await makeStore()
  const limits = { requests: 1_000, tokens: 1_000, windowMs: 10_000 }
  for (let i = 0; i < 300; i++) {
    assert.strictEqual((await Effect.runPromise(atTime(i)(store.reserve("many", 3, limits))))._tag, "Admitted")
  }
  // at 500 ms, 900 tokens are counted: n tokens fit once ceil((900 + n - 1000) / 3) entries have left
  for (const n of [101, 250, 400, 700, 1_000]) {
    const answer = await Effect.runPromise(atTime(500)(store.reserve("many", n, limits)))
    const leaving = Math.ceil((900 + n - 1_000) / 3)
    assert.deepStrictEqual(answer._tag === "Wait" ? answer.waitMs : answer._tag, leaving - 1 + limits.windowMs - 500)
  }
  // the requests: with a limit of 300, the 301st waits for the oldest
  const full = await Effect.runPromise(atTime(600)(store.reserve("many", 0, { ...limits, requests: 300 })))
  assert.deepStrictEqual(full._tag === "Wait" ? full.waitMs : full._tag, limits.windowMs - 600)
  // and 100 tokens fit at once
  assert.strictEqual((await Effect.runPromise(atTime(600)(store.reserve("many", 100, limits))))._tag, "Admitted")
}
