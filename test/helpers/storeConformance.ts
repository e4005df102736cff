/**
 * What every `LimiterStore` promises (the memory store and the Redis store run the same suite), stated the slow and
 * obvious way: a list of entries and sums over the window, and a line of waiters. An entry counted at `t` counts
 * in every interval that contains `t`, until `t + windowMs`, in each of its four budgets (requests, input, output
 * and combined tokens); a request is admitted exactly when it fits every budget it costs something of and no waiter
 * is ahead of it, never more than the limits in any interval of `windowMs`, and a wait is the earliest moment it
 * would fit (or the moment the waiter ahead is due).
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
import { cost, dimensions, none, tokenDimensions } from "../../src/internal/budgets.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"

type Budgets = LimiterStore.Budgets
type TokenBudget = (typeof tokenDimensions)[number]

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

/** A limit no request reaches. */
export const unlimited = Number.MAX_SAFE_INTEGER

/** Limits of `windowMs`: `unlimited` in every budget but those given. */
export const limitsOf = (windowMs: number, given: Partial<Budgets>): LimiterStore.Limits => ({
  requests: unlimited,
  input: unlimited,
  output: unlimited,
  tokens: unlimited,
  ...given,
  windowMs
})

/** A request costing `amount` of the token budgets given (and one request), nothing of the others. */
export const costing = (given: Partial<Record<TokenBudget, number>>): Budgets => ({ ...none, requests: 1, ...given })

/** Whether one request costing `request` can never fit `limits`: some budget of it is above its limit. */
const tooLarge = (request: Budgets, limits: LimiterStore.Limits) => dimensions.some((d) => request[d] > limits[d])

interface ModelEntry extends Budgets {
  id: number
  at: number
}

class Model {
  readonly entries: Array<ModelEntry> = []
  readonly waiters: Array<{ id: string; comeBack: number }> = []
  constructor(readonly windowMs: number) {}

  /** The entries that count at `t`. */
  alive(t: number) {
    return this.entries.filter((e) => e.at + this.windowMs > t)
  }
  countAt(t: number): Budgets {
    const alive = this.alive(t)
    const sum = (d: keyof Budgets) => alive.reduce((n, e) => n + e[d], 0)
    return { requests: sum("requests"), input: sum("input"), output: sum("output"), tokens: sum("tokens") }
  }
  usage(t: number): LimiterStore.Usage {
    const alive = this.alive(t)
    return {
      ...this.countAt(t),
      nextExpiryMs: alive.length === 0 ? 0 : Math.min(...alive.map((e) => e.at)) + this.windowMs - t
    }
  }
  /** Whether one more request of `request` fits at `t`: a budget it costs nothing of never stops it. */
  fitsAt(t: number, request: Budgets, limits: LimiterStore.Limits) {
    const used = this.countAt(t)
    return dimensions.every((d) => request[d] === 0 || used[d] + request[d] <= limits[d])
  }
  /** The earliest moment from `now` on at which one more request of `request` fits (the count only falls). */
  earliestFit(now: number, request: Budgets, limits: LimiterStore.Limits) {
    const moments = [now, ...this.entries.map((e) => e.at + this.windowMs).filter((t) => t > now)].sort((a, b) => a - b)
    return moments.find((t) => this.fitsAt(t, request, limits))!
  }
  /** Waiters past their time and grace leave the front of the line. */
  dropLateWaiters(now: number) {
    while (this.waiters.length > 0 && this.waiters[0]!.comeBack + LimiterStore.waiterGraceMs < now) {
      this.waiters.shift()
    }
  }
  /** `who` leaves the line (if in it); the waiter first now is one still there. */
  leave(who: string | undefined, now: number) {
    const place = this.waiters.findIndex((w) => w.id === who)
    if (place >= 0) this.waiters.splice(place, 1)
    this.dropLateWaiters(now)
  }
}

type Op =
  | { readonly op: "advance"; readonly ms: number }
  | {
    readonly op: "reserve"
    readonly bucket: number
    readonly request: Budgets
    readonly limits: Omit<LimiterStore.Limits, "windowMs">
    readonly waiter: number
    readonly more: boolean
  }
  | { readonly op: "adjust"; readonly bucket: number; readonly pick: number; readonly tokens: Budgets }
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
/** Token budgets of a request or an entry, each on its own (the combined one is not their sum: a store never adds). */
const tokens = (input: number, output: number, combined: number) =>
  FastCheck.record({
    requests: FastCheck.constant(1),
    input: FastCheck.nat(input),
    output: FastCheck.nat(output),
    tokens: FastCheck.nat(combined)
  })
const limits = FastCheck.record({
  requests: FastCheck.integer({ min: 1, max: 5 }),
  input: FastCheck.constantFrom(40, 100, unlimited),
  output: FastCheck.constantFrom(40, 100, unlimited),
  tokens: FastCheck.constantFrom(80, 150, unlimited)
})
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
          request: tokens(50, 50, 100),
          limits,
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
          tokens: tokens(60, 60, 150)
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

/** One random script's run: the store, a model per bucket, every id given out, and the time. */
interface Run {
  readonly store: LimiterStore.LimiterStore.Service
  readonly models: ReadonlyArray<Model>
  readonly windowMs: number
  /** Every id the store gave out, with its bucket: operations also aim at other buckets' ids. */
  readonly ids: Array<{ bucket: number; id: number }>
  now: number
}

const names = ["key\u0000a", "key\u0000b"]
const waiters = [undefined, "w1", "w2", "w3"] as const

const exec = <A>(run: Run, effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(run.now)(effect))

/** An admission, as the model sees it: a new id, the entry counted, the waiter out of line or queued at the back. */
const admitted = (run: Run, step: Extract<Op, { op: "reserve" }>, answer: LimiterStore.Reservation) => {
  const model = run.models[step.bucket]!
  const who = waiters[step.waiter]
  assert.strictEqual(answer._tag, "Admitted", `${JSON.stringify(step)} at ${run.now}`)
  if (answer._tag !== "Admitted") return
  const mine = run.ids.filter((i) => i.bucket === step.bucket).map((i) => i.id)
  assert.notInclude(mine, answer.id, "ids are never reused in a bucket")
  run.ids.push({ bucket: step.bucket, id: answer.id })
  model.entries.push({ ...step.request, id: answer.id, at: run.now })
  model.leave(who, run.now)
  // with more to send, a place at the back of the line when others wait, behind the first
  const next = model.waiters[0]
  if (step.more && who !== undefined && next !== undefined) {
    const queuedMs = next.comeBack + LimiterStore.waiterGraceMs + 1 - run.now
    assert.strictEqual(answer.queuedMs, queuedMs, "queued behind the first")
    model.waiters.push({ id: who, comeBack: run.now + queuedMs })
  } else {
    assert.isUndefined(answer.queuedMs, "no place kept")
  }
}

const reserveStep = async (run: Run, step: Extract<Op, { op: "reserve" }>) => {
  const model = run.models[step.bucket]!
  const limits = { ...step.limits, windowMs: run.windowMs }
  const who = waiters[step.waiter]
  const answer = await exec(run, run.store.reserve(names[step.bucket]!, step.request, limits, who, step.more))
  if (tooLarge(step.request, limits)) {
    assert.deepStrictEqual(answer, { _tag: "TooLarge" })
    return model.leave(who, run.now)
  }
  const first = model.waiters[0]
  const ahead = who !== undefined && first !== undefined && first.id !== who
  const fit = model.fitsAt(run.now, step.request, limits)
    ? 0
    : model.earliestFit(run.now, step.request, limits) - run.now
  const waitMs = ahead ? Math.max(fit, first.comeBack + LimiterStore.waiterGraceMs + 1 - run.now) : fit
  if (waitMs === 0) {
    admitted(run, step, answer)
  } else {
    assert.deepStrictEqual({ ...answer, usage: undefined }, { _tag: "Wait", waitMs, usage: undefined })
    const place = model.waiters.findIndex((w) => w.id === who)
    if (place >= 0) model.waiters[place]!.comeBack = run.now + waitMs
    else if (who !== undefined) model.waiters.push({ id: who, comeBack: run.now + waitMs })
  }
  assert.deepStrictEqual("usage" in answer ? answer.usage : undefined, model.usage(run.now), "usage after")
}

/** The entry of `id` in the model, if it still counts. */
const aliveEntry = (model: Model, id: number, now: number) => model.alive(now).find((e) => e.id === id)

const topUpStep = async (run: Run, step: Extract<Op, { op: "topUp" }>) => {
  const model = run.models[step.bucket]!
  const count = {
    requests: step.requests,
    requestsAgeMs: step.requestsAge,
    tokens: step.tokens,
    tokensAgeMs: step.tokensAge
  }
  const usage = await exec(run, run.store.topUp(names[step.bucket]!, count, run.windowMs))
  const before = model.countAt(run.now)
  // usage learnt from the server: no id any caller holds (NaN equals nothing); requests and combined tokens only
  const learnt = (ageMs: number, amounts: Partial<Budgets>) =>
    model.entries.push({ ...none, ...amounts, id: Number.NaN, at: run.now - ageMs })
  if (step.requests > before.requests) learnt(step.requestsAge, { requests: step.requests - before.requests })
  if (step.tokens > before.tokens) learnt(step.tokensAge, { tokens: step.tokens - before.tokens })
  assert.deepStrictEqual(usage, model.usage(run.now))
}

/** An operation on the entry of an id given out (in either bucket: it acts only on its own bucket's entry). */
const entryStep = async (run: Run, step: Extract<Op, { op: "adjust" | "remove" | "restamp" }>) => {
  if (run.ids.length === 0) return
  const model = run.models[step.bucket]!
  const name = names[step.bucket]!
  const { id } = run.ids[step.pick % run.ids.length]!
  const entry = aliveEntry(model, id, run.now)
  if (step.op === "adjust") {
    const usage = await exec(run, run.store.adjust(name, id, step.tokens, run.windowMs))
    // its token budgets set, its request still counted
    if (entry !== undefined) Object.assign(entry, { ...step.tokens, requests: entry.requests })
    return assert.deepStrictEqual(usage, model.usage(run.now))
  }
  if (step.op === "remove") {
    const usage = await exec(run, run.store.remove(name, id, run.windowMs))
    if (entry !== undefined) model.entries.splice(model.entries.indexOf(entry), 1)
    return assert.deepStrictEqual(usage, model.usage(run.now))
  }
  const usage = await exec(run, run.store.restamp(name, id, run.windowMs))
  // only an entry still counted moves, and only ever later
  if (entry !== undefined && entry.at < run.now) entry.at = run.now
  assert.deepStrictEqual(usage, model.usage(run.now))
}

const step = async (run: Run, op: Exclude<Op, { op: "advance" }>) => {
  const model = run.models[op.bucket]!
  model.dropLateWaiters(run.now)
  switch (op.op) {
    case "reserve":
      return reserveStep(run, op)
    case "adjust":
    case "remove":
    case "restamp":
      return entryStep(run, op)
    case "topUp":
      return topUpStep(run, op)
    case "usage":
      return assert.deepStrictEqual(
        await exec(run, run.store.usage(names[op.bucket]!, run.windowMs)),
        model.usage(run.now)
      )
    case "leave": {
      const who = waiters[op.waiter]
      if (who === undefined) return
      await exec(run, run.store.leave(names[op.bucket]!, who))
      model.leave(who, run.now)
    }
  }
}

/**
 * Every operation of the store against the model, in random scripts over two buckets and three waiters (and
 * callers that are no waiter), with limits and costs drawn per request in each budget: the answers, the ids (never
 * reused), the usage of each budget after each operation.
 */
export const conformsToModel = (makeStore: MakeStore, numRuns: number) =>
  FastCheck.assert(
    FastCheck.asyncProperty(
      FastCheck.constantFrom(10, 100, 1000, 60_000).chain((windowMs) =>
        FastCheck.tuple(FastCheck.constant(windowMs), FastCheck.integer({ min: 0, max: 1_000_000 }), ops(windowMs))
      ),
      async ([windowMs, start, script]) => {
        const models = [new Model(windowMs), new Model(windowMs)]
        const run: Run = { store: await makeStore(), models, windowMs, ids: [], now: start }
        for (const op of script) {
          if (op.op === "advance") run.now += op.ms
          else await step(run, op)
        }
      }
    ),
    { numRuns }
  )

/** Never more than `limits` in any interval of the window's length, in any budget. */
const neverOverLimits = (admitted: ReadonlyArray<Budgets & { at: number }>, limits: LimiterStore.Limits) => {
  for (const { at } of admitted) {
    const inWindow = admitted.filter((a) => a.at >= at && a.at < at + limits.windowMs)
    for (const d of dimensions) assert.isAtMost(inWindow.reduce((n, a) => n + a[d], 0), limits[d], d)
  }
}

/** A wait is exact: one millisecond earlier the request still waits, at the end of the wait it is admitted. */
export const waitsAreExact = (makeStore: MakeStore, numRuns: number) =>
  FastCheck.assert(
    FastCheck.asyncProperty(
      FastCheck.array(
        FastCheck.record({ gap: FastCheck.nat(300), input: FastCheck.nat(40), output: FastCheck.nat(40) }),
        { minLength: 1, maxLength: 30 }
      ),
      FastCheck.record({
        requests: FastCheck.integer({ min: 1, max: 4 }),
        input: FastCheck.integer({ min: 40, max: 100 }),
        output: FastCheck.integer({ min: 40, max: 100 }),
        tokens: FastCheck.integer({ min: 80, max: 160 })
      }),
      async (arrivals, given) => {
        const store = await makeStore()
        const limits = { ...given, windowMs: 1000 }
        const reserve = (now: number, request: Budgets) =>
          Effect.runPromise(atTime(now)(store.reserve("b", request, limits, "w")))
        let now = 0
        const admitted: Array<Budgets & { at: number }> = []
        for (const arrival of arrivals) {
          now += arrival.gap
          const request = cost(arrival.input, arrival.output)
          const answer = await reserve(now, request)
          if (answer._tag === "Wait") {
            assert.isAbove(answer.waitMs, 0)
            if (answer.waitMs > 1) assert.strictEqual((await reserve(now + answer.waitMs - 1, request))._tag, "Wait")
            now += answer.waitMs
            assert.strictEqual((await reserve(now, request))._tag, "Admitted")
          } else {
            assert.strictEqual(answer._tag, "Admitted")
          }
          admitted.push({ ...request, at: now })
        }
        neverOverLimits(admitted, limits)
      }
    ),
    { numRuns }
  )

/**
 * Each token budget binds on its own, checked against its own limit with its own count: a request above that limit
 * alone is too large; a second request that overruns it alone waits exactly until the first leaves (the others have
 * room); a request that costs nothing of it goes while it is over its limit; and a request that two budgets hold up
 * waits for the longer of the two, whichever budget that is.
 */
export const eachBudgetBinds = async (makeStore: MakeStore) => {
  const store = await makeStore()
  const windowMs = 1_000
  const at = (now: number) => <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(now)(effect))
  // distinct amounts and limits per budget, so that a budget checked with another's count or limit answers wrong
  const base = { input: 10, output: 20, tokens: 30 }
  for (const d of tokenDimensions) {
    const b = `binds-${d}`
    const limits = limitsOf(windowMs, { requests: 100, input: 1_000, output: 2_000, tokens: 3_000, [d]: 100 })
    assert.deepStrictEqual(
      await at(0)(store.reserve(b, costing({ ...base, [d]: 101 }), limits)),
      { _tag: "TooLarge" },
      d
    )
    const first = await at(0)(store.reserve(b, costing({ ...base, [d]: 60 }), limits))
    assert.deepStrictEqual(first._tag === "Admitted" ? first.usage : first, {
      requests: 1,
      ...base,
      [d]: 60,
      nextExpiryMs: windowMs
    }, `${d}: only the admitted request counts`)
    const second = await at(10)(store.reserve(b, costing({ ...base, [d]: 60 }), limits))
    assert.deepStrictEqual(second._tag === "Wait" ? second.waitMs : second._tag, windowMs - 10, `${d} binds`)
    if (first._tag !== "Admitted") continue
    // the entry raised above the limit: a request of none of it still goes, one of a single token waits
    await at(20)(store.adjust(b, first.id, costing({ ...base, [d]: 150 }), windowMs))
    const none = await at(20)(store.reserve(b, costing({ ...base, [d]: 0 }), limits))
    assert.strictEqual(none._tag, "Admitted", `${d}: a request that costs none of it never waits for it`)
    const one = await at(20)(store.reserve(b, costing({ ...base, [d]: 1 }), limits))
    assert.deepStrictEqual(one._tag === "Wait" ? one.waitMs : one._tag, windowMs - 20, `${d}: one token waits`)
  }
  for (const older of tokenDimensions) {
    for (const newer of tokenDimensions.filter((d) => d !== older)) {
      const b = `longest-${older}-${newer}`
      const limits = limitsOf(windowMs, { [older]: 100, [newer]: 100 })
      await at(0)(store.reserve(b, costing({ [older]: 80 }), limits))
      await at(100)(store.reserve(b, costing({ [newer]: 80 }), limits))
      const answer = await at(200)(store.reserve(b, costing({ [older]: 30, [newer]: 30 }), limits))
      const waitMs = answer._tag === "Wait" ? answer.waitMs : answer._tag
      assert.strictEqual(waitMs, windowMs - 100, `${older} then ${newer}: the longer wait, the newer entry's`)
    }
  }
}

/**
 * Capacity coming back is signalled to the waiter first in line, and to it alone: `released` completes when an entry
 * is removed or lowered in any budget, and when the waiter ahead of it is admitted or leaves (and not for an entry
 * raised or restamped, nor for a waiter behind the first). A wake-up that comes while its waiter is not listening is
 * kept for its next `released`, once.
 */
export const signalsReleases = async (makeStore: MakeStore) => {
  const store = await makeStore()
  const limits = limitsOf(60_000, { requests: 2, input: 100, output: 100, tokens: 100 })
  const ten = cost(10, 0)
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
  const first = await at(0)(store.reserve("b", ten, limits))
  const second = await at(0)(store.reserve("b", ten, limits))
  if (first._tag !== "Admitted" || second._tag !== "Admitted") throw new Error("both fit")
  const adjust = (now: number, id: number, input: number, output: number, tokens: number) => () =>
    at(now)(store.adjust("b", id, { requests: 0, input, output, tokens }, limits.windowMs))
  // w0 told to wait, and woken before it ever listened: the wake-up waits for it
  assert.strictEqual((await at(1)(store.reserve("b", ten, limits, "w0")))._tag, "Wait")
  await adjust(1, first.id, 5, 0, 5)()
  await Effect.runPromise(Effect.sleep("50 millis"))
  assert.isTrue(await signalled("w0", nothing), "kept for a waiter that had not listened yet")
  await at(1)(store.leave("b", "w0"))
  assert.strictEqual((await at(1)(store.reserve("b", ten, limits, "w1")))._tag, "Wait")
  assert.isFalse(await signalled("w1", adjust(1, first.id, 50, 0, 50)), "raised")
  assert.isFalse(await signalled("w1", () => at(1)(store.restamp("b", first.id, limits.windowMs))), "restamped")
  assert.isTrue(await signalled("w1", adjust(1, first.id, 60, 0, 40)), "combined lowered, input raised")
  assert.isFalse(await signalled("w1", adjust(1, first.id, 60, 5, 45)), "output and combined raised")
  assert.isTrue(await signalled("w1", adjust(1, first.id, 60, 0, 45)), "output lowered alone")
  assert.isTrue(await signalled("w1", adjust(2, first.id, 0, 0, 0)), "lowered")
  assert.isFalse(await signalled("w1", nothing), "a wake-up is used once")
  // w2 behind w1: capacity coming back is w1's to use, kept for it while it does not listen
  assert.strictEqual((await at(3)(store.reserve("b", ten, limits, "w2")))._tag, "Wait")
  assert.isFalse(await signalled("w2", adjust(4, second.id, 0, 0, 0)), "not first")
  assert.isTrue(await signalled("w1", nothing), "kept for the first waiter")
  assert.isTrue(await signalled("w1", () => at(4)(store.remove("b", second.id, limits.windowMs))), "removed")
  assert.isTrue(
    await signalled(
      "w2",
      async () => assert.strictEqual((await at(5)(store.reserve("b", ten, limits, "w1")))._tag, "Admitted")
    ),
    "the waiter ahead admitted"
  )
  // w3 behind w2; w2 leaves: w3 is first now
  assert.strictEqual((await at(6)(store.reserve("b", ten, limits, "w3")))._tag, "Wait")
  assert.isFalse(
    await signalled(
      "w3",
      async () => assert.strictEqual((await at(6)(store.reserve("b", ten, limits, "w2")))._tag, "Wait")
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
  const limits = limitsOf(1_000, { requests: 2, input: 1_000, output: 1_000, tokens: 1_000 })
  const due = new Map(waiters.map((w) => [w, 0]))
  // per waiter in line: how many times each other waiter was admitted since it joined
  const passedBy = new Map<string, Map<string, number>>()
  const served = new Map(waiters.map((w) => [w, 0]))
  let total = 0
  for (let step = 0; step < 100 * admissions && total < admissions; step++) {
    const [who, at] = [...due].reduce((a, b) => (b[1] < a[1] ? b : a))
    const answer = await Effect.runPromise(atTime(at)(store.reserve("b", cost(10, 0), limits, who)))
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
 * leaves, in each token budget: 300 entries of 3 tokens of it, one per millisecond; a request of `n` tokens waits for
 * the first `k` to leave.
 */
export const waitsPastManyEntries = async (makeStore: MakeStore) => {
  const store = await makeStore()
  const at = (now: number) => <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(atTime(now)(effect))
  for (const d of tokenDimensions) {
    const b = `many-${d}`
    const limits = limitsOf(10_000, { requests: 1_000, [d]: 1_000 })
    for (let i = 0; i < 300; i++) {
      assert.strictEqual((await at(i)(store.reserve(b, costing({ [d]: 3 }), limits)))._tag, "Admitted")
    }
    // at 500 ms, 900 tokens are counted: n tokens fit once ceil((900 + n - 1000) / 3) entries have left
    for (const n of [101, 250, 400, 700, 1_000]) {
      const answer = await at(500)(store.reserve(b, costing({ [d]: n }), limits))
      const leaving = Math.ceil((900 + n - 1_000) / 3)
      assert.deepStrictEqual(
        answer._tag === "Wait" ? answer.waitMs : answer._tag,
        leaving - 1 + limits.windowMs - 500,
        d
      )
    }
    // the requests: with a limit of 300, the 301st waits for the oldest
    const full = await at(600)(store.reserve(b, costing({}), { ...limits, requests: 300 }))
    assert.deepStrictEqual(full._tag === "Wait" ? full.waitMs : full._tag, limits.windowMs - 600)
    // and 100 tokens fit at once
    assert.strictEqual((await at(600)(store.reserve(b, costing({ [d]: 100 }), limits)))._tag, "Admitted")
  }
}
