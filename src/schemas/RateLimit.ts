/**
 * The rate-limit state a response reports through its headers, parsed into numbers and durations.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Duration from "effect/Duration"
 * import * as Effect from "effect/Effect"
 * import * as Option from "effect/Option"
 *
 * // the headers of one response, parsed: proprietary models send them, open-source ones do not
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   const request = { model: "gpt-4o", messages: [{ role: "user" as const, content: "Hi" }] }
 *   const { response } = yield* chat.createWithResponse(request)
 *   const info = response.rateLimit
 *   const wait = Option.match(info.serverWait, { onNone: () => "none", onSome: Duration.format })
 *   return `${info.remainingRequests}/${info.limitRequests} requests left, wait ${wait}`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * What one response said about the key's quota. Every field is optional: the operator's own open-source
 * models send no `x-ratelimit-*` headers at all, proprietary models send all six, and `retry-after` may come
 * with a 429 from either.
 *
 * @since 0.1.0
 * @category schemas
 */
export class RateLimitInfo extends Schema.Class<RateLimitInfo>("RateLimitInfo")({
  /** `x-ratelimit-limit-requests`: requests allowed per window. */
  limitRequests: Schema.optional(Schema.Number),
  /** `x-ratelimit-limit-tokens`: tokens allowed per window. */
  limitTokens: Schema.optional(Schema.Number),
  /** `x-ratelimit-remaining-requests`: requests left in the current window. */
  remainingRequests: Schema.optional(Schema.Number),
  /** `x-ratelimit-remaining-tokens`: tokens left in the current window. */
  remainingTokens: Schema.optional(Schema.Number),
  /** `x-ratelimit-reset-requests`: time until the request budget resets. */
  resetRequests: Schema.optional(Schema.DurationFromSelf),
  /** `x-ratelimit-reset-tokens`: time until the token budget resets. */
  resetTokens: Schema.optional(Schema.DurationFromSelf),
  /** `retry-after-ms` (or Azure's `x-ms-retry-after-ms`) or `retry-after` (seconds or an HTTP date), from `observedAt`. */
  retryAfter: Schema.optional(Schema.DurationFromSelf),
  /** When the headers were read, in epoch milliseconds from the `Clock`. */
  observedAt: Schema.Number
}) {
  /**
   * An empty record: no rate-limit headers were present.
   *
   * @since 0.1.0
   */
  static empty(observedAt: number): RateLimitInfo {
    return new RateLimitInfo({ observedAt }, true)
  }

  /**
   * True when the response carried any of the `x-ratelimit-*` headers (proprietary models).
   *
   * @since 0.1.0
   */
  get hasLimitHeaders(): boolean {
    return this.limitRequests !== undefined || this.limitTokens !== undefined ||
      this.remainingRequests !== undefined || this.remainingTokens !== undefined ||
      this.resetRequests !== undefined || this.resetTokens !== undefined
  }

  /**
   * The wait the server asked for. When `remaining-requests` or `remaining-tokens` is 0, the budget that ran out
   * is known: its reset (with `retry-after`, the later of the two); a budget with room left does not hold the
   * retry back (after `remaining-requests: 0`, `reset-requests: 3s`, `reset-tokens: 1m0s` the wait is 3 s, not a
   * minute). When neither says so, the latest of `retry-after` and both resets. None when no header was sent.
   *
   * @since 0.1.0
   */
  get serverWait(): Option.Option<Duration.Duration> {
    const exhausted = [
      this.remainingRequests === 0 ? this.resetRequests : undefined,
      this.remainingTokens === 0 ? this.resetTokens : undefined
    ].filter((d): d is Duration.Duration => d !== undefined)
    const waits = exhausted.length > 0
      ? [this.retryAfter, ...exhausted]
      : [this.retryAfter, this.resetRequests, this.resetTokens]
    const known = waits.filter((d): d is Duration.Duration => d !== undefined)
    return known.length === 0 ? Option.none() : Option.some(known.reduce(Duration.max))
  }
}
