/**
 * Sliding-window-log arithmetic shared by the client's rate limiter and the emulator's limits: an entry sent
 * at `t` counts against every interval that contains `t`, until `t + window`.
 * @internal
 */

/** Requests and tokens per window. */
export interface Quota {
  readonly rpm: number
  readonly tpm: number
}

/** The presets of the service's seed tiers. */
export const tierQuotas = {
  basic: { rpm: 20, tpm: 18_750 },
  standard4000: { rpm: 600, tpm: 150_000 }
} as const satisfies Record<string, Quota>

/** One counted request (or usage learnt from elsewhere: `requests` 0 or more). */
export interface Entry {
  readonly at: number
  readonly requests: number
  readonly tokens: number
}

/** Drops the entries that left the window by `now` (entries are kept in time order). */
export const prune = <E extends Entry>(entries: Array<E>, now: number, windowMs: number): void => {
  let drop = 0
  while (drop < entries.length && entries[drop]!.at + windowMs <= now) drop++
  if (drop > 0) entries.splice(0, drop)
}

/**
 * How long until one more request of `tokens` fits, per dimension (0 when it fits now), given pruned
 * entries in time order.
 */
export const waitFor = (
  entries: ReadonlyArray<Entry>,
  now: number,
  tokens: number,
  limits: { readonly requests: number; readonly tokens: number; readonly windowMs: number }
): { readonly requestsWaitMs: number; readonly tokensWaitMs: number } => {
  let count = 0
  let used = 0
  for (const e of entries) {
    count += e.requests
    used += e.tokens
  }
  let requestsWaitMs = 0
  if (count + 1 > limits.requests) {
    // the entry whose expiry brings the count under the limit
    let excess = count + 1 - limits.requests
    for (const e of entries) {
      excess -= e.requests
      if (excess <= 0) {
        requestsWaitMs = e.at + limits.windowMs - now
        break
      }
    }
  }
  let tokensWaitMs = 0
  if (used + tokens > limits.tokens) {
    for (const e of entries) {
      used -= e.tokens
      if (used + tokens <= limits.tokens) {
        tokensWaitMs = e.at + limits.windowMs - now
        break
      }
    }
  }
  return { requestsWaitMs: Math.max(0, requestsWaitMs), tokensWaitMs: Math.max(0, tokensWaitMs) }
}
