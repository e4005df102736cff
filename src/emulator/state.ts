/**
 * The emulator's state: accepted keys and their tiers, the limit windows, counters for ids.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import { isPlan, planNames } from "../internal/plans.js"
import { type Chaos, ChaosState } from "./chaos.js"
import { type GatewayOptions, GatewayState } from "./gateway/state.js"
import { type Meter, meterOf, type Quota, SlidingWindow } from "./limits.js"
import { PromptCache } from "./promptCache.js"
import { costOf, pricesFor, Spend } from "./spend.js"
import { Store } from "./store.js"

/**
 * An accepted key and its tier.
 *
 * @since 0.1.0
 * @category models
 */
export interface KeySpec {
  /** The key, sent as `Authorization: Bearer <key>`. */
  readonly key: string
  /**
   * Its tier: a plan (`basic`, `standard1000` to `standard4000`, `essential`, `professional`, `agentic`, `test`: each
   * model metered by its row of the plan's table) or a name in `tiers`.
   */
  readonly tier: string
  /**
   * Its budget is spent: every model request is refused, never to pass again, with 402 (`Payment Required`) or
   * 429 with `insufficient_quota` (OpenAI's form). The client fails these with `QuotaExceeded`, never retried.
   */
  readonly exhausted?: 402 | 429 | undefined
  /**
   * The monthly budget of the key's project, in EUR. Each answered model request adds its usage tokens times the
   * model's prices on the key's plan (`defaultPrices`, 1 EUR per million tokens, where the plan's table has none);
   * once the spend reaches the budget, every model request of the key is refused with the service's 429
   * `{"detail": "Your project reached its monthly budget limit. ..."}` and no `retry-after`, until the next calendar
   * month (UTC) of the emulator's clock. A budget of 0 refuses from the first request. The key's successor after a
   * rotation shares the spend.
   */
  readonly monthlyBudget?: { readonly eur: number } | undefined
  /** The interface version this key is served under, over the emulator's own (see `Options.interfaceVersion`). */
  readonly interfaceVersion?: InterfaceVersion | undefined
}

/**
 * The service's interface versions: `1.0.0` serves fine-tuning and its queue answers `202` with a job handle at
 * once (the work goes on elsewhere); `1.1.0` has no fine-tuning routes and its queue waits for capacity, then
 * answers the result.
 *
 * @since 0.3.0
 * @category models
 */
export type InterfaceVersion = "1.0.0" | "1.1.0"

/**
 * How the emulator behaves.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Length of the rate-limit window (default 60 s; seconds in tests and the demo). */
  readonly window?: Duration.DurationInput | undefined
  /** Accepted keys (default: a development key per plan, see `developmentKeys`, and one per other tier in `tiers`). */
  readonly keys?: ReadonlyArray<KeySpec> | undefined
  /**
   * Flat quotas per tier: a custom tier's (`{ rpm: 5, tpm: 2_000 }`, optionally `itpm`/`otpm`), or a plan's name to
   * meter every model of that plan by one quota in place of its table. A key of a plan may use its plan's models only
   * (any other is "not found", 404); a key of a custom tier every model.
   */
  readonly tiers?: Readonly<Record<string, Quota>> | undefined
  /** Pause between stream chunks, to watch tokens arrive (default none). */
  readonly streamChunkDelay?: Duration.DurationInput | undefined
  /** Longest a queue request waits for capacity before a 429 (default 10 minutes). */
  readonly queueMaxWait?: Duration.DurationInput | undefined
  /** The retrieval gateway at `/gateway`: users, token lifetime, upload and ingestion timing. */
  readonly gateway?: GatewayOptions | undefined
  /** Largest upload in bytes; a bigger one gets 413 (default 100 MB). */
  readonly maxUploadBytes?: number | undefined
  /** Fault rules injected into requests, for fault tests (default none; `setChaos` replaces them). */
  readonly chaos?: Chaos | undefined
  /** Seed of the generator behind fault rates, so that a run with `rate` < 1 is reproducible (default 1). */
  readonly chaosSeed?: number | undefined
  /**
   * The interface version served (a key may carry its own). Unset: both at once, the queue of 1.1.0 (it waits)
   * and the fine-tuning of 1.0.0, so that every route can be tried on one emulator.
   */
  readonly interfaceVersion?: InterfaceVersion | undefined
}

/**
 * A development key of the real `gen-` + 48 characters form for a tier. Not a secret: printed on start.
 *
 * @since 0.1.0
 * @category keys
 */
export const developmentKey = (tier: string): string =>
  `gen-${`emulator${tier.replace(/[^A-Za-z0-9]/g, "")}devkey`.padEnd(48, "0").slice(0, 48)}`

/**
 * The default keys: one per plan (the legacy `basic` to `standard4000`, the current `essential` to `test`).
 *
 * @since 0.1.0
 * @category keys
 */
export const developmentKeys: ReadonlyArray<KeySpec> = planNames.map((tier) => ({
  key: developmentKey(tier),
  tier
}))

/** The keys accepted when none are given: the development keys, and one for each other tier given a quota. */
const defaultKeys = (tiers: Readonly<Record<string, Quota>> = {}): ReadonlyArray<KeySpec> => [
  ...developmentKeys,
  ...Object.keys(tiers).filter((tier) => !developmentKeys.some((k) => k.tier === tier)).map((tier) => ({
    key: developmentKey(tier),
    tier
  }))
]

/**
 * The mutable state of one emulator instance. Handlers touch it only inside synchronous sections, so no
 * two requests interleave in an update.
 *
 * @since 0.1.0
 * @category models
 */
export class EmulatorState {
  readonly windowMs: number
  /** Accepted keys, in the order given (a rotated key takes its predecessor's place). */
  keys: ReadonlyMap<string, KeySpec>
  /** The flat quotas given per tier (`Options.tiers`, `setQuota`). */
  tiers: Readonly<Record<string, Quota>>
  readonly streamChunkDelayMs: number
  readonly queueMaxWaitMs: number
  readonly interfaceVersion: InterfaceVersion | undefined
  readonly maxUploadBytes: number
  /** Per-key files, fine-tuning jobs and vector stores. */
  readonly store = new Store()
  /** The retrieval gateway served at `/gateway`. */
  readonly gateway: GatewayState
  /** Fault rules in force and request counters. */
  readonly chaos: ChaosState
  /** The prompt prefixes the Claude models' `cache_control` breakpoints wrote. */
  readonly promptCache = new PromptCache()
  private readonly windows = new Map<string, SlidingWindow>()
  /** What each key's project spent this month (a rotated key's successor shares its predecessor's). */
  private readonly spends = new Map<string, Spend>()
  private counter = 0

  /** The interface version a key is served under (undefined: both). */
  versionOf(key: KeySpec): InterfaceVersion | undefined {
    return key.interfaceVersion ?? this.interfaceVersion
  }

  constructor(options: Options = {}) {
    this.windowMs = Duration.toMillis(Duration.decode(options.window ?? Duration.minutes(1)))
    this.keys = new Map((options.keys ?? defaultKeys(options.tiers)).map((k) => [k.key, k]))
    this.tiers = { ...options.tiers }
    this.streamChunkDelayMs = Duration.toMillis(Duration.decode(options.streamChunkDelay ?? Duration.zero))
    this.queueMaxWaitMs = Duration.toMillis(Duration.decode(options.queueMaxWait ?? Duration.minutes(10)))
    this.interfaceVersion = options.interfaceVersion
    this.gateway = new GatewayState(options.gateway)
    this.maxUploadBytes = options.maxUploadBytes ?? 100 * 1024 * 1024
    this.chaos = new ChaosState(options.chaos, options.chaosSeed)
    for (const spec of this.keys.values()) {
      if (!this.knows(spec.tier)) throw new Error(`emulator: key tier "${spec.tier}" is no plan and has no quota`)
    }
  }

  /** Whether a tier names a plan or has a quota. */
  private knows(tier: string): boolean {
    return isPlan(tier) || Object.hasOwn(this.tiers, tier)
  }

  /** What meters a key's model now (a quota set since applies at once). */
  meter(key: KeySpec, model: string): Meter {
    return meterOf(key.tier, Object.hasOwn(this.tiers, key.tier) ? this.tiers[key.tier] : undefined, model)
  }

  /** The limit window of a key and model, created on first use. */
  window(key: KeySpec, model: string): SlidingWindow {
    const id = `${key.key}\u0000${model}`
    let window = this.windows.get(id)
    if (window === undefined) {
      window = new SlidingWindow(this.windowMs)
      this.windows.set(id, window)
    }
    return window
  }

  /**
   * Sets a tier's quota from now on (a plan upgraded or cut; on a plan's tier it meters every model in place of the
   * table); the windows keep what they counted.
   */
  setQuota(tier: string, quota: Quota): void {
    if (!this.knows(tier)) throw new Error(`emulator: tier "${tier}" is no plan and has no quota`)
    this.tiers = { ...this.tiers, [tier]: quota }
  }

  /** EUR a key's project has spent in the month of `now`. */
  spentOf(key: string, now: number): number {
    return this.spends.get(key)?.at(now) ?? 0
  }

  /** Whether a key's monthly budget is spent at `now`. */
  budgetReached(key: KeySpec, now: number): boolean {
    return key.monthlyBudget !== undefined && this.spentOf(key.key, now) >= key.monthlyBudget.eur
  }

  /** Adds what an answered request of `usage` tokens to `model` costs to the key's spend. */
  charge(key: KeySpec, model: string, usage: { readonly input: number; readonly output: number }, now: number): void {
    let spend = this.spends.get(key.key)
    if (spend === undefined) {
      spend = new Spend()
      this.spends.set(key.key, spend)
    }
    spend.add(now, costOf(pricesFor(key.tier, model), usage))
  }

  /**
   * Revokes `key` and accepts `successor` in its place, with the same tier and settings and the same files, jobs and
   * stores; its quota windows start empty. Requests already past authentication finish; any later one with the old
   * key gets 401. A key not accepted is a defect.
   */
  rotateKey(key: string, successor: string): KeySpec {
    const spec = this.keys.get(key)
    if (spec === undefined) throw new Error("emulator: no such key to rotate")
    if (this.keys.has(successor)) throw new Error("emulator: the new key is already accepted")
    const next = { ...spec, key: successor }
    this.keys = new Map([...this.keys].map(([k, v]) => k === key ? [successor, next] : [k, v]))
    this.store.share(key, successor)
    const spend = this.spends.get(key)
    if (spend !== undefined) this.spends.set(successor, spend)
    return next
  }

  /** A fresh sequence number, for ids. */
  next(): number {
    return ++this.counter
  }
}
