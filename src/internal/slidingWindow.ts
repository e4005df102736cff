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

/**
 * The entries of one window in time order, with their running totals: adding, pruning and asking how long until
 * a request fits cost time in what changes, not in what the window holds (a key with high limits keeps tens of
 * thousands of entries). Entries leave from the front (an index moves; the array is compacted now and then).
 */
export class Log<E extends Entry> {
  private items: Array<E | undefined> = []
  private head = 0
  /** Requests counted by the entries. */
  requests = 0
  /** Tokens counted by the entries. */
  tokens = 0

  /** How many entries the window holds. */
  get size(): number {
    return this.items.length - this.head
  }

  /** The oldest entry. */
  first(): E | undefined {
    return this.items[this.head]
  }

  /** The entries, oldest first. */
  *[Symbol.iterator](): IterableIterator<E> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i]!
  }

  /** Adds an entry at its place in time (entries mostly arrive in order: the search starts at the end). */
  insert(entry: E): void {
    let index = this.items.length
    while (index > this.head && this.items[index - 1]!.at > entry.at) index--
    if (index === this.items.length) this.items.push(entry)
    else this.items.splice(index, 0, entry)
    this.requests += entry.requests
    this.tokens += entry.tokens
  }

  /** The newest entry that `matches` (searched from the end: what is settled was mostly sent lately). */
  findLast(matches: (entry: E) => boolean): E | undefined {
    for (let i = this.items.length - 1; i >= this.head; i--) {
      if (matches(this.items[i]!)) return this.items[i]
    }
    return undefined
  }

  /** Removes an entry; false when the window does not hold it. */
  remove(entry: E): boolean {
    const index = this.items.lastIndexOf(entry)
    if (index < this.head) return false
    this.items.splice(index, 1)
    this.requests -= entry.requests
    this.tokens -= entry.tokens
    if (this.size === 0) this.clear()
    return true
  }

  /** Empties the log; its totals start again from zero (what rounding may have left in them is gone). */
  private clear(): void {
    this.items.length = 0
    this.head = 0
    this.requests = 0
    this.tokens = 0
  }

  /** Sets the tokens an entry counts. */
  setTokens(entry: E & { tokens: number }, tokens: number): void {
    this.tokens += tokens - entry.tokens
    entry.tokens = tokens
  }

  /** Drops the entries that left the window by `now`. */
  prune(now: number, windowMs: number): void {
    while (this.head < this.items.length && this.items[this.head]!.at + windowMs <= now) {
      const gone = this.items[this.head]!
      this.items[this.head++] = undefined
      this.requests -= gone.requests
      this.tokens -= gone.tokens
    }
    if (this.head === this.items.length) {
      this.clear()
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head)
      this.head = 0
    }
  }

  /**
   * How long until one more request of `tokens` fits, per dimension (0 when it fits now); the entries pruned at
   * `now`. Only a window that is full is walked, from the oldest entry to the one whose leaving makes room.
   */
  waitFor(
    now: number,
    tokens: number,
    limits: { readonly requests: number; readonly tokens: number; readonly windowMs: number }
  ): { readonly requestsWaitMs: number; readonly tokensWaitMs: number } {
    return {
      requestsWaitMs: this.requests + 1 > limits.requests
        ? this.untilFreed((e) => e.requests, this.requests + 1 - limits.requests, now, limits.windowMs)
        : 0,
      tokensWaitMs: this.tokens + tokens > limits.tokens
        ? this.untilFreed((e) => e.tokens, this.tokens + tokens - limits.tokens, now, limits.windowMs)
        : 0
    }
  }

  /** How long until the oldest entries free `excess` of what `count` counts. */
  private untilFreed(count: (entry: E) => number, excess: number, now: number, windowMs: number): number {
    for (let i = this.head; i < this.items.length; i++) {
      const entry = this.items[i]!
      excess -= count(entry)
      if (excess <= 0) return Math.max(0, entry.at + windowMs - now)
    }
    return 0
  }
}
