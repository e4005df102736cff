/**
 * The contract of a limiter store (`LimiterStore`): what the limiter asks of the memory store and of a shared one, and
 * what they answer. A leaf: the limiter's parts in `internal/limiter/` and the public `LimiterStore` take it from here.
 * @internal
 */
import type * as Effect from "effect/Effect"
import type { LimiterUnavailable } from "../../schemas/Errors.js"
import type { Amounts } from "../budgets.js"
import type { Tally } from "../spend.js"

/**
 * An amount of each budget: requests, input tokens, output tokens, and combined tokens (input and output together,
 * the budget the `x-ratelimit-*-tokens` headers speak of).
 *
 * @since 0.4.0
 * @category models
 */
export type Budgets = Amounts

/**
 * The limits a reservation is checked against: each budget per window (`Number.MAX_SAFE_INTEGER` where none is
 * known), and how long an entry counts.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits extends Budgets {
  /** How long an entry counts, in milliseconds (the window plus the safety margin). */
  readonly windowMs: number
}

/**
 * What a bucket holds right now: each budget counted in the window.
 *
 * @since 0.1.0
 * @category models
 */
export interface Usage extends Budgets {
  /** Milliseconds until the oldest entry leaves the window (0 when empty). */
  readonly nextExpiryMs: number
}

/**
 * The answer to a reservation, with the bucket's usage after it.
 *
 * @since 0.1.0
 * @category models
 */
export type Reservation =
  | {
    readonly _tag: "Admitted"
    readonly id: number
    readonly usage: Usage
    /**
     * With `more`, when others wait: the waiter's next request has a place at the back of the line already, and
     * waits this long (or until woken as first) before it asks.
     */
    readonly queuedMs?: number | undefined
  }
  | { readonly _tag: "Wait"; readonly waitMs: number; readonly usage: Usage }
  | { readonly _tag: "TooLarge" }

/**
 * What the server says it has counted in its window (from `x-ratelimit-*` headers), with how long ago the
 * oldest of it was counted for each dimension (the window less the server's reset).
 *
 * @since 0.2.0
 * @category models
 */
export interface ServerCount {
  readonly requests: number
  readonly requestsAgeMs: number
  readonly tokens: number
  readonly tokensAgeMs: number
}

/**
 * The limits learnt for a bucket whose limits nobody gave (`tier: "auto"`, or a model its plan's table lacks), kept in
 * the store once confirmed, so that every process on it, and the next run, starts from them.
 *
 * @since 0.3.0
 * @category models
 */
export type LearntLimits = { readonly [D in keyof Budgets]?: number | undefined }

/**
 * What `LimiterStore` provides. Every operation is atomic and reads the store's own clock (the memory store
 * Effect's `Clock`, a shared store its server's), so processes with skewed clocks agree; the limiter passes
 * only durations. A shared store fails with `LimiterUnavailable` when it cannot answer (or falls back to memory).
 *
 * @since 0.1.0
 * @category models
 */
export interface Store {
  /**
   * If one request costing `request` fits every budget of the bucket now, and no other waiter is ahead of `waiter`
   * in the bucket's line, counts it; else says how long to wait and keeps `waiter`'s place in the line (first come,
   * first served across every process on the store). Without `waiter`, the line is not consulted. With `more` (the
   * waiter has another request to send after this one), an admitted waiter keeps a place at the back of the line
   * when others wait, so that its next request need not ask only to be told to queue.
   */
  readonly reserve:
    & ((
      bucket: string,
      request: Budgets,
      limits: Limits,
      waiter?: string,
      more?: boolean
    ) => Effect.Effect<Reservation, LimiterUnavailable>)
    & { readonly now?: ReserveNow | undefined }
  /** Sets the token budgets of a counted entry (reconciling with the real usage); its request stays counted. */
  readonly adjust: (
    bucket: string,
    id: number,
    tokens: Budgets,
    windowMs: number
  ) => Effect.Effect<Usage, LimiterUnavailable>
  /** Removes a counted entry (the server never counted that request). */
  readonly remove: (bucket: string, id: number, windowMs: number) => Effect.Effect<Usage, LimiterUnavailable>
  /**
   * Moves a counted entry to now (never earlier than where it is): the time the server answered, by which it
   * has surely counted the request, so the entry leaves the window no sooner than the server's does.
   */
  readonly restamp:
    & ((bucket: string, id: number, windowMs: number) => Effect.Effect<Usage, LimiterUnavailable>)
    & { readonly now?: RestampNow | undefined }
  /**
   * Counts what the server counted beyond the store's count (another client on the key, requests the server
   * received late): raises the window's requests and combined tokens to at least the server's, the added usage
   * dated as long ago as the server's oldest.
   */
  readonly topUp: (bucket: string, count: ServerCount, windowMs: number) => Effect.Effect<Usage, LimiterUnavailable>
  /** The bucket's usage now. */
  readonly usage: (bucket: string, windowMs: number) => Effect.Effect<Usage, LimiterUnavailable>
  /** Gives up `waiter`'s place in the bucket's line. */
  readonly leave: (bucket: string, waiter: string) => Effect.Effect<void, LimiterUnavailable>
  /**
   * Completes when capacity comes back in the bucket for `waiter`, first in its line (an entry removed or
   * lowered, or the waiter ahead of it admitted, refused or gone), so that it looks again before its wait is over.
   * Only the first waiter is woken: everyone behind it would be told to wait again.
   */
  readonly released: (bucket: string, waiter: string) => Effect.Effect<void>
  /** The limits learnt for the bucket (by any process on the store), if any. */
  readonly learnt: (bucket: string) => Effect.Effect<LearntLimits | undefined, LimiterUnavailable>
  /** Keeps the limits learnt for the bucket, for every process on the store and the next run. */
  readonly keepLearnt: (bucket: string, limits: LearntLimits) => Effect.Effect<void, LimiterUnavailable>
  /** Adds what a key (its fingerprint) spent on a model in a month (`YYYY-MM`), for every process and the next run. */
  readonly addSpend: (
    key: string,
    month: string,
    model: string,
    spent: Tally
  ) => Effect.Effect<void, LimiterUnavailable>
  /** What the key spent in the month, by model (by every process on the store, and earlier runs). */
  readonly spendOf: (key: string, month: string) => Effect.Effect<Readonly<Record<string, Tally>>, LimiterUnavailable>
  /**
   * The context windows a key's (its fingerprint's) `/models` listing gave, by model, as kept by `keepWindows` within
   * the last 30 days; `undefined` when none are kept. Optional: a store without it keeps no windows, and each process
   * lists the models once for itself.
   */
  readonly windowsOf?: (key: string) => Effect.Effect<ContextWindows | undefined, LimiterUnavailable>
  /** Keeps the context windows a key's listing gave (all of them: what was kept before is replaced). */
  readonly keepWindows?: (key: string, windows: ContextWindows) => Effect.Effect<void, LimiterUnavailable>
}

/**
 * Context windows in tokens, by model: what a `/models` listing gave as `max_sequence_length` (an empty record: a
 * listing that gave none).
 *
 * @since 0.5.0
 * @category models
 */
export type ContextWindows = Readonly<Record<string, number>>

/**
 * `reserve` answered at once, for a store that keeps its count in this process and reads the caller's clock (`now`
 * is the caller's time): counts one request of `request` if it fits now and nobody waits in the bucket's line, else
 * changes nothing and returns `undefined` (ask `reserve`). It is a property of the `reserve` function it answers
 * for (`reserve.now`): a store that wraps another's `reserve` leaves it behind. The limiter admits a request to an
 * idle bucket in one step with it.
 *
 * @since 0.3.0
 * @category models
 */
export type ReserveNow = (
  bucket: string,
  request: Budgets,
  limits: Limits,
  now: number
) => Extract<Reservation, { readonly _tag: "Admitted" }> | undefined

/**
 * `restamp` answered at once (`now` is the caller's time), for a store that keeps its count in this process, as
 * `reserve.now` is: a property of the `restamp` function it answers for (`restamp.now`), left behind by a store
 * that wraps another's `restamp`. The limiter settles an answered request in one step with it.
 *
 * @since 0.3.0
 * @category models
 */
export type RestampNow = (bucket: string, id: number, windowMs: number, now: number) => Usage
