/**
 * Per-key, per-model RPM and TPM limits over a sliding window, counted exactly: a request sent at `t`
 * counts against every interval that contains `t`, until `t + window`.
 *
 * @since 0.1.0
 */
import * as SlidingWindowLog from "../internal/slidingWindow.js"

/**
 * A quota: requests and tokens per window.
 *
 * @since 0.1.0
 * @category models
 */
export type Quota = SlidingWindowLog.Quota

/**
 * The quota presets of the service's seed tiers.
 *
 * @since 0.1.0
 * @category models
 */
export const tierQuotas: Readonly<Record<string, Quota>> = SlidingWindowLog.tierQuotas

/**
 * What the window says about itself, for the `x-ratelimit-*` headers.
 *
 * @since 0.1.0
 * @category models
 */
export interface WindowStatus {
  readonly limitRequests: number
  readonly limitTokens: number
  readonly remainingRequests: number
  readonly remainingTokens: number
  /** Milliseconds until the request count next drops (0 when nothing is counted). */
  readonly resetRequestsMs: number
  /** Milliseconds until the token count next drops (0 when nothing is counted). */
  readonly resetTokensMs: number
}

/**
 * The decision for one request.
 *
 * @since 0.1.0
 * @category models
 */
export type Admission =
  | { readonly _tag: "Admitted" }
  | {
    readonly _tag: "Wait"
    /** Milliseconds until this request would be admitted. */
    readonly waitMs: number
    /** The limiting dimension. */
    readonly by: "requests" | "tokens"
    readonly requestsWaitMs: number
    readonly tokensWaitMs: number
  }
  | { readonly _tag: "TooLarge" }

/**
 * A sliding-window log for one key and model.
 *
 * @since 0.1.0
 * @category models
 */
export class SlidingWindow {
  private readonly entries = new SlidingWindowLog.Log<SlidingWindowLog.Entry>()

  constructor(public quota: Quota, readonly windowMs: number) {}

  /** Whether a request charging `tokens` may go now, and if not how long until it may. */
  check(now: number, tokens: number): Admission {
    if (tokens > this.quota.tpm) return { _tag: "TooLarge" }
    this.entries.prune(now, this.windowMs)
    const { requestsWaitMs, tokensWaitMs } = this.entries.waitFor(now, tokens, {
      requests: this.quota.rpm,
      tokens: this.quota.tpm,
      windowMs: this.windowMs
    })
    if (requestsWaitMs === 0 && tokensWaitMs === 0) return { _tag: "Admitted" }
    return {
      _tag: "Wait",
      waitMs: Math.max(requestsWaitMs, tokensWaitMs),
      by: requestsWaitMs >= tokensWaitMs ? "requests" : "tokens",
      requestsWaitMs,
      tokensWaitMs
    }
  }

  /** Counts a request sent at `now`. */
  record(now: number, tokens: number): void {
    this.entries.insert({ at: now, requests: 1, tokens })
  }

  /** The window's state at `now`. */
  status(now: number): WindowStatus {
    this.entries.prune(now, this.windowMs)
    const used = this.entries.tokens
    const oldest = this.entries.first()
    let oldestWithTokens: SlidingWindowLog.Entry | undefined
    for (const entry of this.entries) {
      if (entry.tokens > 0) {
        oldestWithTokens = entry
        break
      }
    }
    return {
      limitRequests: this.quota.rpm,
      limitTokens: this.quota.tpm,
      remainingRequests: Math.max(0, this.quota.rpm - this.entries.size),
      remainingTokens: Math.max(0, this.quota.tpm - used),
      resetRequestsMs: oldest ? oldest.at + this.windowMs - now : 0,
      resetTokensMs: oldestWithTokens ? oldestWithTokens.at + this.windowMs - now : 0
    }
  }
}

/**
 * Formats milliseconds as the upstream formats its reset headers: `12ms`, `3s`, `1.5s`, `6m0s`, `1h4m48s`.
 *
 * @since 0.1.0
 * @category headers
 */
export const formatGoDuration = (ms: number): string => {
  const total = Math.max(0, Math.round(ms))
  if (total < 1000) return `${total}ms`
  const hours = Math.floor(total / 3_600_000)
  const minutes = Math.floor((total % 3_600_000) / 60_000)
  const seconds = (total % 60_000) / 1000
  const s = `${Number.isInteger(seconds) ? seconds : seconds.toFixed(3).replace(/0+$/, "")}s`
  if (hours > 0) return `${hours}h${minutes}m${s}`
  if (minutes > 0) return `${minutes}m${s}`
  return s
}
