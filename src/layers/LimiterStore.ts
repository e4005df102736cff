/**
 * Where the rate limiter keeps its accounting: a sliding-window log per bucket (key and model). The memory
 * store serves one process; the Redis store (`effect-aifs/redis`) lets every process on a key share its budget.
 * Every operation reads the store's own clock, so the limiter passes only durations.
 *
 * Why not `@effect/experimental`'s `RateLimiterStore`: its algorithms are a fixed window and a token bucket.
 * Both let through up to twice the limit within one window's length (a burst at the end of one window or a
 * full bucket, then the next window or the refill), and a server that counts over a sliding window answers
 * that with 429s. A sliding-window log never admits more than the limit in any interval of the window's
 * length and allows the same long-run throughput.
 *
 * @example
 * ```ts
 * import { LimiterStore } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as TestClock from "effect/TestClock"
 * import * as TestContext from "effect/TestContext"
 *
 * // a sliding-window log: never more than the limit in any interval of the window's length, in every budget
 * const store = LimiterStore.makeMemory()
 * const limits = { requests: 2, input: 10_000, output: 5_000, tokens: 15_000, windowMs: 60_000 }
 * const request = { requests: 1, input: 100, output: 50, tokens: 150 }
 *
 * const program = Effect.gen(function*() {
 *   const first = yield* store.reserve("my-key:gpt-4o", request, limits)
 *   yield* TestClock.adjust("1 second")
 *   const second = yield* store.reserve("my-key:gpt-4o", request, limits)
 *   yield* TestClock.adjust("1 second")
 *   const third = yield* store.reserve("my-key:gpt-4o", request, limits)
 *   return [first._tag, second._tag, third._tag === "Wait" ? `wait ${third.waitMs} ms` : third._tag]
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(TestContext.TestContext))).then(console.log)
 * // => [ 'Admitted', 'Admitted', 'wait 58000 ms' ]
 * ```
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Store from "../internal/limiter/store.js"
import * as SlidingWindowLog from "../internal/slidingWindow.js"
import * as Spend from "../internal/spend.js"

/**
 * An amount of each budget: requests, input tokens, output tokens, and combined tokens (input and output together,
 * the budget the `x-ratelimit-*-tokens` headers speak of).
 *
 * @since 0.4.0
 * @category models
 */
export type Budgets = Store.Budgets

/**
 * The limits a reservation is checked against: each budget per window (`Number.MAX_SAFE_INTEGER` where none is
 * known), and how long an entry counts (`windowMs`: the window plus the safety margin).
 *
 * @since 0.1.0
 * @category models
 */
export type Limits = Store.Limits

/**
 * What a bucket holds right now: each budget counted in the window, and `nextExpiryMs` until the oldest entry
 * leaves it (0 when empty).
 *
 * @since 0.1.0
 * @category models
 */
export type Usage = Store.Usage

/**
 * The answer to a reservation, with the bucket's usage after it: `Admitted` (its entry's `id`), `Wait` (how long),
 * or `TooLarge`.
 *
 * @since 0.1.0
 * @category models
 */
export type Reservation = Store.Reservation

/**
 * What the server says it has counted in its window (from `x-ratelimit-*` headers), with how long ago the
 * oldest of it was counted for each dimension (the window less the server's reset).
 *
 * @since 0.2.0
 * @category models
 */
export type ServerCount = Store.ServerCount

/**
 * The limits learnt for a bucket whose limits nobody gave (`tier: "auto"`, or a model its plan's table lacks), kept in
 * the store once confirmed, so that every process on it, and the next run, starts from them.
 *
 * @since 0.3.0
 * @category models
 */
export type LearntLimits = Store.LearntLimits

/**
 * Context windows in tokens by model, as a key's `/models` listing gave them (`max_sequence_length`), kept so that
 * every process on the store, and the next run, need not list the models again.
 *
 * @since 0.5.0
 * @category models
 */
export type ContextWindows = Store.ContextWindows

const positive = Schema.Number.pipe(Schema.int(), Schema.positive())

const count = Schema.optional(positive)

/** Learnt limits as kept: whole positive numbers, each optional. */
const learntFields = { requests: count, input: count, output: count, tokens: count }

const LearntLimitsJson = Schema.parseJson(Schema.Struct(learntFields))

/**
 * Learnt limits from their JSON text (what a shared store keeps), or undefined when the text is not such limits.
 *
 * @since 0.3.0
 * @category learnt limits
 */
export const decodeLearnt = (text: string): LearntLimits | undefined =>
  Option.getOrUndefined(Schema.decodeUnknownOption(LearntLimitsJson)(text))

const ContextWindowsJson = Schema.parseJson(Schema.Record({ key: Schema.String, value: positive }))

/**
 * Context windows from their JSON text (what a shared store keeps), or undefined when the text is not such windows.
 *
 * @since 0.5.0
 * @category learnt limits
 */
export const decodeWindows = (text: string): ContextWindows | undefined =>
  Option.getOrUndefined(Schema.decodeUnknownOption(ContextWindowsJson)(text))

/**
 * How long a shared store keeps learnt limits that nobody confirms (30 days): a plan changes, a key is retired.
 *
 * @since 0.3.0
 * @category learnt limits
 */
export const learntLifetimeSeconds = 30 * 24 * 3600

/**
 * How long a waiter keeps its place in a bucket's line after the time it was told to come back: longer, and
 * the place goes to the next (its process died or left without saying so).
 *
 * @since 0.2.0
 * @category constants
 */
export const waiterGraceMs = 1_000

/**
 * The store.
 *
 * @example
 * ```ts
 * import { LimiterStore, RateLimiter, TokenEstimator } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // a store of your own (a shared one would talk to Redis): here the memory store, logging every wait
 * const LoggingStore = Layer.sync(LimiterStore.LimiterStore, () => {
 *   const memory = LimiterStore.makeMemory()
 *   return {
 *     ...memory,
 *     reserve: (bucket, tokens, limits, waiter) =>
 *       Effect.tap(memory.reserve(bucket, tokens, limits, waiter), (reservation) =>
 *         reservation._tag === "Wait" ? Effect.log(`${bucket}: wait ${reservation.waitMs} ms`) : Effect.void)
 *   }
 * })
 *
 * export const LimiterLive: Layer.Layer<RateLimiter.RateLimiter> = RateLimiter.layerWith({ tier: "basic" }).pipe(
 *   Layer.provide(Layer.merge(LoggingStore, TokenEstimator.layer))
 * )
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class LimiterStore extends Context.Tag("effect-aifs/LimiterStore")<LimiterStore, LimiterStore.Service>() {}

/**
 * The types of the `LimiterStore` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace LimiterStore {
  /**
   * What `LimiterStore` provides (each operation documented on it). Every operation is atomic and reads the store's
   * own clock (the memory store Effect's `Clock`, a shared store its server's), so processes with skewed clocks agree;
   * the limiter passes only durations. A shared store fails with `LimiterUnavailable` when it cannot answer (or falls
   * back to memory).
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service extends Store.Store {}

  /**
   * A store whose operations never fail (the memory store).
   *
   * @since 0.2.0
   * @category models
   */
  export type Infallible =
    & {
      readonly [K in keyof Service]: NonNullable<Service[K]> extends
        (...args: infer P) => Effect.Effect<infer A, infer _E> ? (...args: P) => Effect.Effect<A>
        : never
    }
    & {
      readonly reserve: { readonly now?: ReserveNow | undefined }
      readonly restamp: { readonly now?: RestampNow | undefined }
    }

  /**
   * `reserve` answered at once, for a store that keeps its count in this process and reads the caller's clock (`now`):
   * counts one request if it fits now and nobody waits, else `undefined` (ask `reserve`). The limiter admits a
   * request to an idle bucket in one step with it.
   *
   * @since 0.3.0
   * @category models
   */
  export type ReserveNow = Store.ReserveNow

  /**
   * `restamp` answered at once (`now` is the caller's time), for a store that keeps its count in this process, as
   * `reserve.now` is. The limiter settles an answered request in one step with it.
   *
   * @since 0.3.0
   * @category models
   */
  export type RestampNow = Store.RestampNow
}

interface Entry extends SlidingWindowLog.Entry {
  readonly id: number
}

interface Waiter {
  readonly id: string
  /** When it was told to come back. */
  comeBack: number
}

interface Bucket {
  readonly entries: SlidingWindowLog.Log<Entry>
  readonly waiters: Array<Waiter>
  /** The wake-ups of waiters by waiter: awaited by `released`, or kept for its next call. */
  readonly released: Map<string, Deferred.Deferred<void>>
}

const usageOf = (entries: SlidingWindowLog.Log<Entry>, now: number, windowMs: number): Usage => {
  const first = entries.first()
  return { ...entries.totals, nextExpiryMs: first === undefined ? 0 : first.at + windowMs - now }
}

/** Whether a request can never fit: one of its budgets is above the limit. */
const tooLarge = (request: Budgets, limits: Limits): boolean =>
  request.requests > limits.requests || request.input > limits.input || request.output > limits.output ||
  request.tokens > limits.tokens

/**
 * How long `waiter` waits: its own wait when it is first in line (or uses no line); behind another, until that one
 * is surely gone (its time and grace past: then its place is lost). It is woken sooner by `released` as soon as it is
 * first, so the long timer only matters when a wake-up is lost.
 */
const waitInLine = (waiters: ReadonlyArray<Waiter>, waiter: string | undefined, now: number, waitMs: number) => {
  const first = waiters[0]
  if (waiter === undefined || first === undefined || first.id === waiter) return waitMs
  return Math.max(waitMs, first.comeBack + waiterGraceMs + 1 - now)
}

/** Waiters past their time and grace, gone without saying so, leave the front of the line. */
const dropLate = (waiters: Array<Waiter>, now: number): void => {
  let gone = 0
  while (gone < waiters.length && waiters[gone]!.comeBack + waiterGraceMs < now) gone++
  if (gone > 0) waiters.splice(0, gone)
}

/** The memory store's state: its buckets, the limits kept, and the last id given out. */
interface Memory {
  readonly buckets: Map<string, Bucket>
  readonly learnt: Map<string, LearntLimits>
  /** By key and month (`key\u0000YYYY-MM`), what each model cost. */
  readonly spend: Map<string, Record<string, Spend.Tally>>
  nextId: number
}

const bucketOf = (memory: Memory, name: string): Bucket => {
  let bucket = memory.buckets.get(name)
  if (bucket === undefined) {
    bucket = { entries: new SlidingWindowLog.Log(), waiters: [], released: new Map() }
    memory.buckets.set(name, bucket)
  }
  return bucket
}

/** The bucket at `now`: entries out of the window and waiters gone late dropped. */
const prunedAt = (memory: Memory, name: string, windowMs: number, now: number): Bucket => {
  const bucket = bucketOf(memory, name)
  bucket.entries.prune(now, windowMs)
  dropLate(bucket.waiters, now)
  return bucket
}

/** The wake-up of `waiter`: awaited by `released`, or kept for its next call. */
const signalOf = (bucket: Bucket, waiter: string): Deferred.Deferred<void> => {
  let signal = bucket.released.get(waiter)
  if (signal === undefined) {
    signal = Deferred.unsafeMake<void>(FiberId.none)
    bucket.released.set(waiter, signal)
  }
  return signal
}

/** Wakes the waiter first in line: now if it awaits `released`, else at its next `released` (kept for it). */
const release = (bucket: Bucket): Effect.Effect<void> => {
  const first = bucket.waiters[0]
  return first === undefined ? Effect.void : Deferred.succeed(signalOf(bucket, first.id), undefined)
}

const entryOf = (bucket: Bucket, id: number) => bucket.entries.findLast((e) => e.id === id)

/** Counts one request costing `request` at `now`. */
const admit = (memory: Memory, { entries }: Bucket, request: Budgets, now: number, windowMs: number) => {
  const id = ++memory.nextId
  entries.insert({ ...request, id, at: now })
  return { _tag: "Admitted" as const, id, usage: usageOf(entries, now, windowMs) }
}

/** `reserve` on a pruned bucket at `now`: the answer, and whether the waiter first in line should look again. */
const reserveIn = (
  memory: Memory,
  bucket: Bucket,
  request: Budgets,
  limits: Limits,
  now: number,
  waiter?: string,
  more?: boolean
): [Reservation, boolean] => {
  const { entries, waiters } = bucket
  const place = waiter === undefined ? -1 : waiters.findIndex((w) => w.id === waiter)
  if (tooLarge(request, limits)) {
    if (place >= 0) waiters.splice(place, 1)
    dropLate(waiters, now)
    return [{ _tag: "TooLarge" }, place === 0]
  }
  const waitMs = waitInLine(
    waiters,
    waiter,
    now,
    SlidingWindowLog.longest(entries.waitFor(now, request, limits, limits.windowMs))
  )
  if (waitMs > 0) {
    if (place >= 0) waiters[place]!.comeBack = now + waitMs
    else if (waiter !== undefined) waiters.push({ id: waiter, comeBack: now + waitMs })
    return [{ _tag: "Wait", waitMs, usage: usageOf(entries, now, limits.windowMs) }, false]
  }
  if (place >= 0) waiters.splice(place, 1)
  // the waiter woken, or queued behind, is one still there
  dropLate(waiters, now)
  const admitted = admit(memory, bucket, request, now, limits.windowMs)
  if (!more || waiter === undefined || waiters[0] === undefined) return [admitted, place === 0]
  const queuedMs = waitInLine(waiters, waiter, now, 0)
  waiters.push({ id: waiter, comeBack: now + queuedMs })
  return [{ ...admitted, queuedMs }, place === 0]
}

/** `adjust` on a pruned bucket: the usage, and whether a budget went down (capacity came back). */
const adjustIn = (bucket: Bucket, id: number, tokens: Budgets, now: number, windowMs: number): [Usage, boolean] => {
  const entry = entryOf(bucket, id)
  if (entry === undefined) return [usageOf(bucket.entries, now, windowMs), false]
  const next = { ...entry, input: tokens.input, output: tokens.output, tokens: tokens.tokens }
  const lowered = next.input < entry.input || next.output < entry.output || next.tokens < entry.tokens
  bucket.entries.replace(entry, next)
  return [usageOf(bucket.entries, now, windowMs), lowered]
}

/** `topUp` on a pruned bucket: the requests and combined tokens the server counted beyond the log's, dated. */
const topUpIn = (memory: Memory, { entries }: Bucket, count: ServerCount, now: number, windowMs: number) => {
  const before = usageOf(entries, now, windowMs)
  const requests = count.requests - before.requests
  const tokens = count.tokens - before.tokens
  const at = (ageMs: number) => ({ id: ++memory.nextId, at: now - ageMs, input: 0, output: 0 })
  if (requests > 0) entries.insert({ ...at(count.requestsAgeMs), requests, tokens: 0 })
  if (tokens > 0) entries.insert({ ...at(count.tokensAgeMs), requests: 0, tokens })
  entries.prune(now, windowMs)
  return usageOf(entries, now, windowMs)
}

/** `reserve.now`: admits at once when the request fits and nobody waits, else changes nothing. */
const reserveNowIn = (memory: Memory): LimiterStore.ReserveNow => (name, request, limits, now) => {
  const bucket = prunedAt(memory, name, limits.windowMs, now)
  if (bucket.waiters.length > 0 || tooLarge(request, limits)) return undefined
  return bucket.entries.fits(request, limits) ? admit(memory, bucket, request, now, limits.windowMs) : undefined
}

/** `restamp.now`: the entry counted from `now` (never earlier than it was). */
const restampNowIn = (memory: Memory): LimiterStore.RestampNow => (name, id, windowMs, now) => {
  const bucket = prunedAt(memory, name, windowMs, now)
  const entry = entryOf(bucket, id)
  if (entry !== undefined && entry.at < now) bucket.entries.replace(entry, { ...entry, at: now })
  return usageOf(bucket.entries, now, windowMs)
}

/**
 * A store in this process's memory, on Effect's `Clock`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (): LimiterStore.Infallible => {
  const memory: Memory = { buckets: new Map(), learnt: new Map(), spend: new Map(), nextId: 0 }
  /** Runs `f` on the bucket, pruned, at the clock's now. */
  const at = <A>(name: string, windowMs: number, f: (bucket: Bucket, now: number) => A): Effect.Effect<A> =>
    Effect.clockWith((clock) =>
      Effect.sync(() => {
        const now = clock.unsafeCurrentTimeMillis()
        return f(prunedAt(memory, name, windowMs, now), now)
      })
    )
  /** `at`, then the waiter first in line woken when `f` says capacity came back. */
  const andRelease = <A>(name: string, windowMs: number, f: (bucket: Bucket, now: number) => [A, boolean]) =>
    Effect.flatMap(
      at(name, windowMs, (bucket, now) => [f(bucket, now), bucket] as const),
      ([[a, freed], bucket]) => freed ? Effect.as(release(bucket), a) : Effect.succeed(a)
    )
  const restampNow = restampNowIn(memory)
  return {
    reserve: Object.assign(
      (name: string, request: Budgets, limits: Limits, waiter?: string, more?: boolean) =>
        andRelease(
          name,
          limits.windowMs,
          (bucket, now) => reserveIn(memory, bucket, request, limits, now, waiter, more)
        ),
      { now: reserveNowIn(memory) }
    ),
    adjust: (name, id, tokens, windowMs) =>
      andRelease(name, windowMs, (bucket, now) => adjustIn(bucket, id, tokens, now, windowMs)),
    remove: (name, id, windowMs) =>
      andRelease(name, windowMs, (bucket, now): [Usage, boolean] => {
        const entry = entryOf(bucket, id)
        const removed = entry !== undefined && bucket.entries.remove(entry)
        return [usageOf(bucket.entries, now, windowMs), removed]
      }),
    restamp: Object.assign(
      (name: string, id: number, windowMs: number) =>
        Effect.clockWith((clock) => Effect.sync(() => restampNow(name, id, windowMs, clock.unsafeCurrentTimeMillis()))),
      { now: restampNow }
    ),
    topUp: (name, count, windowMs) =>
      at(name, windowMs, (bucket, now) => topUpIn(memory, bucket, count, now, windowMs)),
    usage: (name, windowMs) => at(name, windowMs, ({ entries }, now) => usageOf(entries, now, windowMs)),
    leave: (name, waiter) =>
      Effect.clockWith((clock) =>
        Effect.suspend(() => {
          const bucket = bucketOf(memory, name)
          const place = bucket.waiters.findIndex((w) => w.id === waiter)
          if (place >= 0) bucket.waiters.splice(place, 1)
          dropLate(bucket.waiters, clock.unsafeCurrentTimeMillis())
          return place === 0 ? release(bucket) : Effect.void
        })
      ),
    released: (name, waiter) =>
      Effect.suspend(() => {
        const bucket = bucketOf(memory, name)
        const signal = signalOf(bucket, waiter)
        // a wake-up is used once
        return Effect.zipLeft(
          Deferred.await(signal),
          Effect.sync(() => bucket.released.get(waiter) === signal && bucket.released.delete(waiter))
        )
      }),
    learnt: (name) => Effect.sync(() => memory.learnt.get(name)),
    keepLearnt: (name, limits) => Effect.sync(() => void memory.learnt.set(name, limits)),
    addSpend: (key, month, model, spent) =>
      Effect.sync(() => {
        const models = memory.spend.get(`${key}\u0000${month}`) ?? {}
        models[model] = Spend.add(models[model] ?? Spend.empty, spent)
        memory.spend.set(`${key}\u0000${month}`, models)
      }),
    spendOf: (key, month) => Effect.sync(() => ({ ...memory.spend.get(`${key}\u0000${month}`) }))
  }
}

/**
 * The memory store.
 *
 * @example
 * ```ts
 * import { LimiterStore, RateLimiter, TokenEstimator } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // what `RateLimiter.layer` is made of: the memory store (one process) and the default estimator
 * export const LimiterLive: Layer.Layer<RateLimiter.RateLimiter> = RateLimiter.layerWith({ tier: "basic" }).pipe(
 *   Layer.provide(Layer.merge(LimiterStore.layerMemory, TokenEstimator.layer))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<LimiterStore> = Layer.sync(LimiterStore, makeMemory)

const CachedModel = Schema.Struct({
  ...learntFields,
  /** When it was learnt, in epoch milliseconds. */
  learntAt: Schema.Number
})

/** Version 2 keeps each budget; a file of version 1 (requests and one token limit) is not read. */
const CacheFile = Schema.parseJson(Schema.Struct({
  version: Schema.Literal(2),
  models: Schema.Record({ key: Schema.String, value: CachedModel })
}))

type CacheFile = typeof CacheFile.Type

const earlierVersion = /^\s*\{\s*"version"\s*:\s*1\s*,/

/** What a cached memory store works with: the file system, its directory, the files read, its memory store. */
interface Cache {
  readonly fs: FileSystem.FileSystem
  readonly path: Path.Path
  readonly directory: string
  readonly memory: LimiterStore.Infallible
  readonly files: Map<string, CacheFile["models"]>
  readonly writing: Effect.Semaphore
  readonly warned: Set<string>
  /** The spend files (by key and month) read into memory. */
  readonly spendRead: Set<string>
  /** The context windows read or kept, by key. */
  readonly windows: Map<string, Store.ContextWindows>
}

const warnOnce = (cache: Cache, file: string, what: string, topic = "learnt limits") =>
  Effect.suspend(() => {
    if (cache.warned.has(file)) return Effect.void
    cache.warned.add(file)
    return Effect.logWarning(`aifs: ${topic}: ${what}`)
  })

/** The bucket's model, and its key's file (named by the key's fingerprint). */
const where = (cache: Cache, bucket: string) => {
  const cut = bucket.indexOf("\u0000")
  const name = `limits-${bucket.slice(0, cut).replace(/[^A-Za-z0-9_-]/g, "")}.json`
  return { model: bucket.slice(cut + 1), file: cache.path.join(cache.directory, name) }
}

/** The key's file, read once: missing is empty; unreadable or not such limits is empty, with a warning. */
const load = (cache: Cache, file: string): Effect.Effect<CacheFile["models"]> =>
  Effect.suspend(() => {
    const cached = cache.files.get(file)
    if (cached !== undefined) return Effect.succeed(cached)
    return cache.fs.readFileString(file).pipe(
      // a file of an earlier version held limits learnt by rules since mended: replaced, not warned about
      Effect.flatMap((text) =>
        earlierVersion.test(text) ? Effect.succeed({ models: {} }) : Schema.decode(CacheFile)(text)
      ),
      Effect.map((content) => content.models),
      Effect.catchAll((error) =>
        error._tag === "SystemError" && error.reason === "NotFound"
          ? Effect.succeed<CacheFile["models"]>({})
          : Effect.as(
            warnOnce(
              cache,
              file,
              error._tag === "ParseError"
                ? `ignoring ${file}: it is not a file of learnt limits`
                : `cannot read ${file}: ${error.message}`
            ),
            {}
          )
      ),
      Effect.tap((models) => Effect.sync(() => cache.files.set(file, models)))
    )
  })

/** The limits kept for the bucket: in memory, else in its key's file while younger than the store's lifetime. */
const learntIn = (cache: Cache, bucket: string) =>
  Effect.gen(function*() {
    const known = yield* cache.memory.learnt(bucket)
    if (known !== undefined) return known
    const { file, model } = where(cache, bucket)
    const entry = (yield* load(cache, file))[model]
    const now = yield* Clock.currentTimeMillis
    if (entry === undefined || now - entry.learntAt > learntLifetimeSeconds * 1000) return undefined
    const { learntAt: _, ...limits } = entry
    yield* cache.memory.keepLearnt(bucket, limits)
    return limits
  })

/** Keeps the bucket's limits in memory and in its key's file (a whole file or none; a failure costs one warning). */
const keepIn = (cache: Cache, bucket: string, limits: LearntLimits) =>
  Effect.gen(function*() {
    yield* cache.memory.keepLearnt(bucket, limits)
    const { file, model } = where(cache, bucket)
    const learntAt = yield* Clock.currentTimeMillis
    const models = { ...(yield* load(cache, file)), [model]: { ...limits, learntAt } }
    cache.files.set(file, models)
    yield* writeWhole(cache, file, JSON.stringify({ version: 2, models } satisfies CacheFile, null, 2))
  })

/** Writes `text` as the whole of `file`: aside, then renamed over the old one (a failure costs one warning). */
const writeWhole = (cache: Cache, file: string, text: string, topic?: string) =>
  Effect.suspend(() => {
    const { fs } = cache
    const aside = `${file}.${crypto.randomUUID()}.tmp`
    return fs.makeDirectory(cache.directory, { recursive: true }).pipe(
      Effect.zipRight(fs.writeFileString(aside, text)),
      Effect.zipRight(fs.rename(aside, file)),
      Effect.catchAll((error) =>
        Effect.zipRight(
          Effect.ignore(fs.remove(aside)),
          warnOnce(cache, `${file} (write)`, `cannot keep them in ${file}: ${error.message}`, topic)
        )
      ),
      cache.writing.withPermits(1)
    )
  })

/** The context windows of a key's listing, as kept: when, and each model's. */
const WindowsFile = Schema.parseJson(Schema.Struct({
  version: Schema.Literal(1),
  keptAt: Schema.Number,
  models: Schema.Record({ key: Schema.String, value: positive })
}))

/** The key's windows file (named by the key's fingerprint, never the key). */
const windowsFile = (cache: Cache, key: string) =>
  cache.path.join(cache.directory, `windows-${key.replace(/[^A-Za-z0-9_-]/g, "")}.json`)

/**
 * The windows kept for the key: in memory, else in its file while younger than the store's lifetime (missing:
 * none; a file that is no such windows: none, with one warning).
 */
const windowsIn = (cache: Cache, key: string): Effect.Effect<Store.ContextWindows | undefined> =>
  Effect.suspend(() => {
    const known = cache.windows.get(key)
    if (known !== undefined) return Effect.succeed(known)
    const file = windowsFile(cache, key)
    return cache.fs.readFileString(file).pipe(
      Effect.flatMap(Schema.decode(WindowsFile)),
      Effect.flatMap(({ keptAt, models }) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          if (now - keptAt > learntLifetimeSeconds * 1000) return undefined
          cache.windows.set(key, models)
          return models
        })
      ),
      Effect.catchAll((error) =>
        error._tag === "SystemError" && error.reason === "NotFound"
          ? Effect.succeed(undefined)
          : Effect.as(
            warnOnce(
              cache,
              file,
              error._tag === "ParseError"
                ? `ignoring ${file}: it is not a file of context windows`
                : `cannot read ${file}: ${error.message}`,
              "context windows"
            ),
            undefined
          )
      )
    )
  })

/** Keeps the key's windows in memory and as its whole file. */
const keepWindowsIn = (cache: Cache, key: string, models: Store.ContextWindows) =>
  Effect.flatMap(Clock.currentTimeMillis, (keptAt) => {
    cache.windows.set(key, models)
    const text = JSON.stringify({ version: 1, keptAt, models } satisfies typeof WindowsFile.Type, null, 2)
    return writeWhole(cache, windowsFile(cache, key), text, "context windows")
  })

/** One answered request's spend, as a line of a key's month file. */
const SpendLine = Schema.parseJson(Schema.Struct({
  model: Schema.String,
  requests: Schema.Number,
  input: Schema.Number,
  output: Schema.Number,
  cached: Schema.Number,
  // lines written before cache writes were counted have none
  written: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  cost: Schema.Number
}))

/** The key's spend file of the month (named by the key's fingerprint, never the key). */
const spendFile = (cache: Cache, key: string, month: string) =>
  cache.path.join(cache.directory, `spend-${key.replace(/[^A-Za-z0-9_-]/g, "")}-${month}.jsonl`)

/** The key's month file added into memory, once (missing: nothing spent; a line that is no spend is skipped). */
const readSpend = (cache: Cache, key: string, month: string): Effect.Effect<void> =>
  Effect.suspend(() => {
    const file = spendFile(cache, key, month)
    if (cache.spendRead.has(file)) return Effect.void
    cache.spendRead.add(file)
    return cache.fs.readFileString(file).pipe(
      Effect.flatMap((text) =>
        Effect.forEach(text.split("\n").filter((line) => line.trim() !== ""), (line) =>
          Schema.decode(SpendLine)(line).pipe(
            Effect.flatMap(({ model, ...spent }) =>
              cache.memory.addSpend(key, month, model, spent)
            ),
            Effect.catchAll(() => warnOnce(cache, file, `skipping a line of ${file} that is no spend`, "spend"))
          ), { discard: true })
      ),
      Effect.catchAll((error) =>
        error._tag === "SystemError" && error.reason === "NotFound"
          ? Effect.void
          : warnOnce(cache, file, `cannot read ${file}: ${error.message}`, "spend")
      )
    )
  })

/** Adds a request's spend in memory and as a line appended to the key's month file (a failure costs one warning). */
const addSpendIn = (cache: Cache, key: string, month: string, model: string, spent: Spend.Tally) =>
  Effect.gen(function*() {
    yield* readSpend(cache, key, month)
    yield* cache.memory.addSpend(key, month, model, spent)
    const file = spendFile(cache, key, month)
    yield* cache.fs.makeDirectory(cache.directory, { recursive: true }).pipe(
      Effect.zipRight(cache.fs.writeFileString(file, `${JSON.stringify({ model, ...spent })}\n`, { flag: "a" })),
      Effect.catchAll((error) =>
        warnOnce(cache, `${file} (write)`, `cannot keep it in ${file}: ${error.message}`, "spend")
      )
    )
  })

/**
 * The memory store, with the limits it learns kept in a small file per key in `directory` (`limits-<fingerprint>.json`,
 * named by the key's fingerprint, never the key), so that the next run starts from them. Limits older than the
 * store's lifetime (30 days) are not used; a file that cannot be read as such limits is ignored with one warning
 * (and replaced when something new is learnt); a file that cannot be written costs one warning, never a request.
 *
 * @example
 * ```ts
 * import { LimiterStore, RateLimiter, TokenEstimator } from "effect-aifs"
 * import * as NodeContext from "@effect/platform-node/NodeContext"
 * import * as Layer from "effect/Layer"
 *
 * // limits learnt on a key whose plan is unknown (tier "auto"), kept for the next run in a directory of your own
 * export const LimiterLive: Layer.Layer<RateLimiter.RateLimiter> = RateLimiter.layerWith({ tier: "auto" }).pipe(
 *   Layer.provide(Layer.merge(LimiterStore.layerMemoryCached("/var/cache/my-app"), TokenEstimator.layer)),
 *   Layer.provide(NodeContext.layer)
 * )
 * ```
 *
 * @since 0.3.0
 * @category layers
 */
export const layerMemoryCached = (
  directory: string
): Layer.Layer<LimiterStore, never, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(
    LimiterStore,
    Effect.gen(function*() {
      const cache: Cache = {
        fs: yield* FileSystem.FileSystem,
        path: yield* Path.Path,
        directory,
        memory: makeMemory(),
        files: new Map(),
        writing: yield* Effect.makeSemaphore(1),
        warned: new Set(),
        spendRead: new Set(),
        windows: new Map()
      }
      return {
        ...cache.memory,
        learnt: (bucket) => learntIn(cache, bucket),
        keepLearnt: (bucket, limits) => keepIn(cache, bucket, limits),
        addSpend: (key, month, model, spent) => addSpendIn(cache, key, month, model, spent),
        spendOf: (key, month) => Effect.zipRight(readSpend(cache, key, month), cache.memory.spendOf(key, month)),
        windowsOf: (key) => windowsIn(cache, key),
        keepWindows: (key, windows) => keepWindowsIn(cache, key, windows)
      } satisfies LimiterStore.Infallible
    })
  )
