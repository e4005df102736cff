/**
 * Sliding-window-log arithmetic shared by the client's rate limiter and the emulator's limits: an entry sent
 * at `t` counts against every interval that contains `t`, until `t + window`, in each of its budgets.
 * @internal
 */
import { type Amounts, type Dimension, none } from "./budgets.js"

/** One counted request (or usage learnt from elsewhere: `requests` 0 or more), and when it counts from. */
export interface Entry extends Amounts {
  readonly at: number
}

/** How long until one more request fits, per budget (0 where it fits now). */
export type Waits = Amounts

/**
 * The entries of one window in time order, with their running totals: adding, pruning and asking how long until
 * a request fits cost time in what changes, not in what the window holds (a key with high limits keeps tens of
 * thousands of entries). Entries leave from the front (an index moves; the array is compacted now and then).
 */
export class Log<E extends Entry> {
  private items: Array<E | undefined> = []
  private head = 0
  private sums: { [D in Dimension]: number } = { ...none }

  /** What the entries count, per budget. */
  get totals(): Amounts {
    return this.sums
  }

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

  private count(entry: Amounts, sign: 1 | -1): void {
    // spelt out: this runs twice for every request (in, then out), on the hot path of admission
    const sums = this.sums
    sums.requests += sign * entry.requests
    sums.input += sign * entry.input
    sums.output += sign * entry.output
    sums.tokens += sign * entry.tokens
  }

  /** Adds an entry at its place in time (entries mostly arrive in order: the search starts at the end). */
  insert(entry: E): void {
    let index = this.items.length
    while (index > this.head && this.items[index - 1]!.at > entry.at) index--
    if (index === this.items.length) this.items.push(entry)
    else this.items.splice(index, 0, entry)
    this.count(entry, 1)
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
    this.count(entry, -1)
    if (this.size === 0) this.clear()
    return true
  }

  /** Replaces an entry by `next` (the same place in time unless `next.at` moved it); false when it is not held. */
  replace(entry: E, next: E): boolean {
    if (!this.remove(entry)) return false
    this.insert(next)
    return true
  }

  /** Empties the log; its totals start again from zero (what rounding may have left in them is gone). */
  private clear(): void {
    this.items.length = 0
    this.head = 0
    this.sums = { ...none }
  }

  /** Drops the entries that left the window by `now`. */
  prune(now: number, windowMs: number): void {
    while (this.head < this.items.length && this.items[this.head]!.at + windowMs <= now) {
      const gone = this.items[this.head]!
      this.items[this.head++] = undefined
      this.count(gone, -1)
    }
    if (this.head === this.items.length) {
      this.clear()
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head)
      this.head = 0
    }
  }

  /**
   * How long until one more request of `request` fits under `limits`, per budget (0 where it fits now); the entries
   * pruned at `now`. Only a window that is full is walked, from the oldest entry to the one whose leaving makes room.
   */
  waitFor(now: number, request: Amounts, limits: Amounts, windowMs: number): Waits {
    const wait = (d: Dimension) =>
      request[d] > 0 && this.sums[d] + request[d] > limits[d]
        ? this.untilFreed(d, this.sums[d] + request[d] - limits[d], now, windowMs)
        : 0
    return { requests: wait("requests"), input: wait("input"), output: wait("output"), tokens: wait("tokens") }
  }

  /** Whether one more request of `request` fits under `limits` now (the entries pruned): `waitFor` all 0, at no cost. */
  fits(request: Amounts, limits: Amounts): boolean {
    const sums = this.sums
    const over = (d: Dimension) => request[d] > 0 && sums[d] + request[d] > limits[d]
    return !(over("requests") || over("input") || over("output") || over("tokens"))
  }

  /** How long until the oldest entries free `excess` of budget `d`. */
  private untilFreed(d: Dimension, excess: number, now: number, windowMs: number): number {
    for (let i = this.head; i < this.items.length; i++) {
      const entry = this.items[i]!
      excess -= entry[d]
      if (excess <= 0) return Math.max(0, entry.at + windowMs - now)
    }
    return 0
  }
}

/** The longest of the waits. */
export const longest = (waits: Waits): number => Math.max(waits.requests, waits.input, waits.output, waits.tokens)
