/**
 * Where the rate limiter keeps its accounting: a sliding-window log per bucket (key and model). The memory
 * store serves one process; the interface is small enough for a shared store (a Redis sorted set per bucket
 * with a script for `reserve`) to let several processes share one key's budget.
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
 *
 * // a sliding-window log: never more than the limit in any interval of the window's length
 * const store = LimiterStore.makeMemory()
 * const limits = { requests: 2, tokens: 10_000, windowMs: 60_000 }
 *
 * const program = Effect.gen(function*() {
 *   const first = yield* store.reserve("my-key:gpt-4o", 0, 100, limits)
 *   const second = yield* store.reserve("my-key:gpt-4o", 1_000, 100, limits)
 *   const third = yield* store.reserve("my-key:gpt-4o", 2_000, 100, limits)
 *   return [first._tag, second._tag, third._tag === "Wait" ? `wait ${third.waitMs} ms` : third._tag]
 * })
 *
 * Effect.runPromise(program).then(console.log)
 * // => [ 'Admitted', 'Admitted', 'wait 58000 ms' ]
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SlidingWindowLog from "../internal/slidingWindow.js"

/**
 * The limits a reservation is checked against.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  /** Requests per window. */
  readonly requests: number
  /** Tokens per window. */
  readonly tokens: number
  /** How long an entry counts, in milliseconds (the window plus the safety margin). */
  readonly windowMs: number
}

/**
 * The answer to a reservation.
 *
 * @since 0.1.0
 * @category models
 */
export type Reservation =
  | { readonly _tag: "Admitted"; readonly id: number }
  | { readonly _tag: "Wait"; readonly waitMs: number }
  | { readonly _tag: "TooLarge" }

/**
 * What a bucket holds right now.
 *
 * @since 0.1.0
 * @category models
 */
export interface Usage {
  /** Requests counted in the window. */
  readonly requests: number
  /** Tokens counted in the window. */
  readonly tokens: number
  /** Milliseconds until the oldest entry leaves the window (0 when empty). */
  readonly nextExpiryMs: number
}

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
 *     reserve: (bucket, now, tokens, limits) =>
 *       Effect.tap(memory.reserve(bucket, now, tokens, limits), (reservation) =>
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
   * What `LimiterStore` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Atomically: if one request of `tokens` fits in the bucket at `now`, counts it; else says how long to wait. */
    readonly reserve: (bucket: string, now: number, tokens: number, limits: Limits) => Effect.Effect<Reservation>
    /** Sets the tokens of a counted entry (reconciling with the real usage). */
    readonly adjust: (bucket: string, id: number, tokens: number) => Effect.Effect<void>
    /** Removes a counted entry (the server never counted that request). */
    readonly remove: (bucket: string, id: number) => Effect.Effect<void>
    /**
     * Moves a counted entry to `at` (no earlier than where it is): the time the server answered, by which it
     * has surely counted the request, so the entry leaves the window no sooner than the server's does.
     */
    readonly restamp: (bucket: string, id: number, at: number) => Effect.Effect<void>
    /** Counts usage the server reports that this process did not send (another process on the same key). */
    readonly add: (bucket: string, at: number, requests: number, tokens: number) => Effect.Effect<void>
    /** The bucket's usage at `now`. */
    readonly usage: (bucket: string, now: number, windowMs: number) => Effect.Effect<Usage>
  }
}

interface Entry extends SlidingWindowLog.Entry {
  readonly id: number
  tokens: number
}

// kept in time order: entries are pruned from the front
const insertInOrder = (entries: Array<Entry>, entry: Entry): void => {
  let index = entries.length
  while (index > 0 && entries[index - 1]!.at > entry.at) index--
  entries.splice(index, 0, entry)
}

/**
 * A store in this process's memory.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (): LimiterStore.Service => {
  const buckets = new Map<string, Array<Entry>>()
  let nextId = 0
  const entriesOf = (bucket: string): Array<Entry> => {
    let entries = buckets.get(bucket)
    if (entries === undefined) {
      entries = []
      buckets.set(bucket, entries)
    }
    return entries
  }
  return {
    reserve: (bucket, now, tokens, limits) =>
      Effect.sync((): Reservation => {
        if (tokens > limits.tokens) return { _tag: "TooLarge" }
        const entries = entriesOf(bucket)
        SlidingWindowLog.prune(entries, now, limits.windowMs)
        const { requestsWaitMs, tokensWaitMs } = SlidingWindowLog.waitFor(entries, now, tokens, limits)
        const waitMs = Math.max(requestsWaitMs, tokensWaitMs)
        if (waitMs > 0) return { _tag: "Wait", waitMs }
        const id = ++nextId
        entries.push({ id, at: now, requests: 1, tokens })
        return { _tag: "Admitted", id }
      }),
    adjust: (bucket, id, tokens) =>
      Effect.sync(() => {
        const entry = buckets.get(bucket)?.find((e) => e.id === id)
        if (entry !== undefined) entry.tokens = tokens
      }),
    remove: (bucket, id) =>
      Effect.sync(() => {
        const entries = buckets.get(bucket)
        // Stryker disable next-line UnaryOperator: the index only stands in when the bucket has no entries, and that is checked first
        const index = entries?.findIndex((e) => e.id === id) ?? -1
        if (entries !== undefined && index >= 0) entries.splice(index, 1)
      }),
    restamp: (bucket, id, at) =>
      Effect.sync(() => {
        const entries = buckets.get(bucket)
        // Stryker disable next-line UnaryOperator: the index only stands in when the bucket has no entries, and that is checked first
        const index = entries?.findIndex((e) => e.id === id) ?? -1
        if (entries === undefined || index < 0 || entries[index]!.at >= at) return
        const [entry] = entries.splice(index, 1)
        insertInOrder(entries, { ...entry!, at })
      }),
    add: (bucket, at, requests, tokens) =>
      Effect.sync(() => insertInOrder(entriesOf(bucket), { id: ++nextId, at, requests, tokens })),
    usage: (bucket, now, windowMs) =>
      Effect.sync((): Usage => {
        const entries = entriesOf(bucket)
        SlidingWindowLog.prune(entries, now, windowMs)
        let requests = 0
        let tokens = 0
        for (const e of entries) {
          requests += e.requests
          tokens += e.tokens
        }
        return { requests, tokens, nextExpiryMs: entries.length > 0 ? entries[0]!.at + windowMs - now : 0 }
      })
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
