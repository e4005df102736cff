/**
 * The proactive rate limiter: per key and model, a request bucket and a token bucket over a sliding window,
 * so that requests wait on the client instead of collecting 429s. Limits come from the tier preset,
 * per-model overrides and, where the model sends them, the live `x-ratelimit-*` headers (re-learnt on every
 * response). Waiting callers are served in arrival order; an interrupted caller gives up its place.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Clock from "effect/Clock"
 * import * as Effect from "effect/Effect"
 *
 * // 2 requests per second for this model: the third request waits on the client instead of collecting a 429
 * const server = Testing.layerEmulator({
 *   rateLimiter: { window: "1 second", limits: { "Llama-3.3-70B-Instruct": { rpm: 2 } } }
 * })
 *
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   const start = yield* Clock.currentTimeMillis
 *   const ask = chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }] })
 *   yield* Effect.all([ask, ask, ask], { concurrency: "unbounded" })
 *   return `3 answers after ${(yield* Clock.currentTimeMillis) - start >= 1000 ? "more" : "less"} than a second`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => 3 answers after more than a second
 * ```
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Learning from "../internal/learning.js"
import * as SlidingWindowLog from "../internal/slidingWindow.js"
import { type LimiterUnavailable, RequestTooLarge } from "../schemas/Errors.js"
import type { ModelList } from "../schemas/Models.js"
import type { RateLimitInfo } from "../schemas/RateLimit.js"
import { ClientConfig, isPlan, type Plan, type Tier } from "./ClientConfig.js"
import * as ClientMetrics from "./ClientMetrics.js"
import { layerMemory, type LearntLimits, LimiterStore, type Usage } from "./LimiterStore.js"
import * as TokenEstimator from "./TokenEstimator.js"

/**
 * Requests and tokens per window.
 *
 * @since 0.1.0
 * @category models
 */
export type Quota = SlidingWindowLog.Quota

/**
 * The presets of the service's seed tiers.
 *
 * @since 0.1.0
 * @category models
 */
export const tiers: Readonly<Record<Tier, Quota>> = SlidingWindowLog.tierQuotas

/**
 * Where a current plan's limits start: the floor of the range API-FACTS gives for the current plans (300 requests and
 * 300,000 tokens a minute per model, up to 100,000 requests). Enforced from the first request, then learnt like
 * `auto`'s: raised carefully while callers wait without a 429, lowered at a 429 (a model with a "Dynamic Shared
 * Quota" may allow less). When a plan's own figures are published, its preset takes them.
 *
 * @since 0.3.0
 * @category models
 */
export const planFloor: Quota = { rpm: 300, tpm: 300_000 }

/**
 * Settings of the limiter.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The key's tier: `auto` (the default) when the plan is unknown, each bucket's limits learnt from the headers or
   * else from the 429s (see the README, "When you don't know your limits"); `basic` or `standard4000` for a preset;
   * a current plan (`essential`, `professional`, `agentic`) to start from `planFloor` and learn from there.
   */
  readonly tier?: Tier | Plan | "auto" | undefined
  /** Per-model limits over the preset, `*` for every model without its own (headers still win when a model sends them). */
  readonly limits?: Readonly<Record<string, Partial<Quota>>> | undefined
  /** Length of the server's window (default 60 s). */
  readonly window?: Duration.DurationInput | undefined
  /** Extra time an entry counts, for network jitter (default 200 ms); widened after an unpredicted 429. */
  readonly margin?: Duration.DurationInput | undefined
  /**
   * After a response, `keep` (default) leaves the reservation as it was unless the usage was higher;
   * `actual` lowers it to the usage. OpenAI-style servers charge `max_tokens` at admission, so giving the
   * difference back early would overrun them; a server that charges actual usage allows `actual`.
   */
  readonly reconcile?: "keep" | "actual" | undefined
  /** Output tokens reserved when a request sets no cap and the model's `max_output_length` is unknown (1024). */
  readonly defaultMaxOutputTokens?: number | undefined
  /** Output caps per model, when requests set none. */
  readonly maxOutputTokens?: Readonly<Record<string, number>> | undefined
  /**
   * When the local budget is exhausted, send to the queue endpoint instead of waiting (default false); the
   * configuration's `queueTimeout` bounds such a request.
   */
  readonly queueRouting?: boolean | undefined
}

/**
 * The two limits of a bucket.
 *
 * @since 0.3.0
 * @category models
 */
export type Dimension = "requests" | "tokens"

/**
 * How sure the limiter is of a learnt limit: `probing` while unknown, `measured` by one 429, `confirmed` by a
 * second measurement that agreed.
 *
 * @since 0.3.0
 * @category models
 */
export type Confidence = "probing" | "measured" | "confirmed"

/**
 * Where a limit comes from: the tier's preset, a plan's floor (`planFloor`, until learning moves it), the options'
 * per-model `limits`, the server's `x-ratelimit-limit-*` headers, learnt from the server's 429s (`tier: "auto"` or a
 * plan), or not known yet (`tier: "auto"`, probing).
 *
 * @since 0.3.0
 * @category models
 */
export type LimitSource = "preset" | "plan" | "configured" | "header" | "learnt" | "unknown"

/**
 * One limit of a bucket: its value (undefined while unknown), where it comes from and, when learnt, how sure the
 * limiter is of it (`measured` by one 429, `confirmed` by more, `probing` while unknown).
 *
 * @since 0.3.0
 * @category models
 */
export interface Limit {
  readonly value: number | undefined
  readonly source: LimitSource
  readonly confidence?: Confidence | undefined
}

/**
 * The state of one bucket, for dashboards and progress displays.
 *
 * @since 0.1.0
 * @category models
 */
export interface BucketState {
  /** A fingerprint of the key (never the key). */
  readonly key: string
  /** The model. */
  readonly model: string
  /** Requests per window (`Infinity` while unknown). */
  readonly limitRequests: number
  /** Tokens per window (`Infinity` while unknown). */
  readonly limitTokens: number
  /** Whether the limits come from the server's headers (else the preset or overrides). */
  readonly fromHeaders: boolean
  /** The request limit, its source and, when learnt, how sure it is. */
  readonly requests: Limit
  /** The token limit, its source and, when learnt, how sure it is. */
  readonly tokens: Limit
  /** Which limit made the last caller wait, if one did. */
  readonly binding: Dimension | undefined
  /** While nothing is known (`tier: "auto"`): the requests allowed in flight. */
  readonly probe: number | undefined
  /** Requests counted in the window (sent or reserved). */
  readonly usedRequests: number
  /** Tokens counted in the window. */
  readonly usedTokens: number
  /** Milliseconds until the oldest entry leaves the window. */
  readonly nextResetMs: number
  /** Callers waiting in line. */
  readonly waiting: number
  /** Milliseconds the bucket stays closed after a 429 the limiter did not predict. */
  readonly blockedMs: number
  /** The current safety margin in milliseconds. */
  readonly marginMs: number
}

/**
 * Makes an effect interruptible again inside an uninterruptible region.
 *
 * @since 0.3.0
 * @category models
 */
export type Restore = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * A reservation made for one request.
 *
 * @since 0.1.0
 * @category models
 */
export interface Permit {
  /** Tokens reserved. */
  readonly tokens: number
  /** The response's usage: raised when higher than reserved, lowered when configured to. */
  readonly reconcile: (actualTokens: number) => Effect.Effect<void>
  /**
   * The server answered: the entry now counts from this moment, by which the server has surely counted the
   * request (it counts arrival, which may be well after the request left this process).
   */
  readonly answered: Effect.Effect<void>
  /** The server answered with success: as `answered`, and a limiter that learns its limits takes it as evidence. */
  readonly succeeded: Effect.Effect<void>
  /** The server never counted the request (connection failed, 429): the request and tokens come back. */
  readonly cancel: Effect.Effect<void>
  /**
   * The server refused the request with a 429: it comes back (as with `cancel`), and a limiter that learns its
   * limits measures them. True when the limiter now paces the retry itself: it waits in `acquire` until the
   * window frees, so the retry need not wait for the server's time first.
   */
  readonly throttled: Effect.Effect<boolean>
  /** The server answered with an error: the request stays counted, the tokens come back. */
  readonly refund: Effect.Effect<void>
}

/**
 * The limiter.
 *
 * @example
 * ```ts
 * import { Chat, RateLimiter, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // what the limiter knows: limits (from headers where the model sends them), usage, callers waiting
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   yield* chat.create({ model: "gpt-4o", messages: [{ role: "user", content: "Hi" }] })
 *   const limiter = yield* RateLimiter.RateLimiter
 *   const buckets = yield* limiter.snapshot
 *   return buckets.map((b) => `${b.model}: ${b.usedRequests}/${b.limitRequests} requests, headers ${b.fromHeaders}`)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => [ 'gpt-4o: 1/600 requests, headers true' ]
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class RateLimiter extends Context.Tag("effect-aifs/RateLimiter")<RateLimiter, RateLimiter.Service>() {}

/**
 * A gate on the limiter's line, for a graceful stop: a transport built where one is provided reads `open` whenever
 * the limiter grants a request; once it is false, no request leaves the line (a request granted a place keeps it and
 * waits, and gives it back when it is interrupted), while those already sent finish. Without one, the line is always
 * open. `aifs batch` closes its gate at the first Ctrl-C or SIGTERM.
 *
 * @example
 * ```ts
 * import { RateLimiter, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the gate of this application's transport: provided where the client's layer is built
 * const line = { open: true }
 * export const program = Effect.gen(function*() {
 *   // ... on a stop signal: requests still waiting in the line stay there until they are interrupted
 *   line.open = false
 * }).pipe(Effect.provide(Testing.layerEmulator()), Effect.provideService(RateLimiter.Admitting, line))
 * ```
 *
 * @since 0.3.0
 * @category tags
 */
export class Admitting extends Context.Tag("effect-aifs/RateLimiter/Admitting")<Admitting, { open: boolean }>() {}

/**
 * The types of the `RateLimiter` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace RateLimiter {
  /**
   * What `RateLimiter` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Tokens to reserve for a JSON body sent to `path`, and the model it names. */
    readonly cost: (path: string, body: unknown) => { readonly model: string | undefined; readonly tokens: number }
    /**
     * Waits in line until the request fits, then counts it. Fails at once when it can never fit. `onGranted`
     * sees the permit as it is granted, before `acquire` returns: a caller that keeps it where its own guard
     * can see it loses nothing when an interruption lands between the grant and the return (see
     * `InferenceHttp`, which cancels such a permit).
     */
    readonly acquire: (
      request: { readonly key: string; readonly model: string; readonly tokens: number },
      onGranted?: (permit: Permit) => void
    ) => Effect.Effect<Permit, RequestTooLarge | LimiterUnavailable>
    /**
     * `acquire`, with `then` run on how it ended (the permit, a refusal or an interruption) in the same
     * uninterruptible step: nothing can land between a grant and `then`, and a caller waiting in line holds
     * its place and `then`, nothing more. `restore` makes what `then` runs interruptible again.
     */
    readonly acquireWith: <A, E, R>(
      request: { readonly key: string; readonly model: string; readonly tokens: number },
      then: (
        acquired: Exit.Exit<Permit, RequestTooLarge | LimiterUnavailable>,
        restore: Restore
      ) => Effect.Effect<A, E, R>
    ) => Effect.Effect<A, E, R>
    /** True when a request would have to wait now (for queue routing). */
    readonly wouldWait: (
      request: { readonly key: string; readonly model: string; readonly tokens: number }
    ) => Effect.Effect<boolean>
    /** Learns from a response's headers (limits, remaining) and status (a 429 closes the bucket until reset). */
    readonly learn: (key: string, model: string, info: RateLimitInfo, status: number) => Effect.Effect<void>
    /** Learns each model's `max_output_length` from the catalogue, for requests without an output cap. */
    readonly learnModels: (models: ModelList) => Effect.Effect<void>
    /** The state of every bucket now. */
    readonly snapshot: Effect.Effect<ReadonlyArray<BucketState>>
    /** The state of every bucket, after each change. */
    readonly changes: Stream.Stream<ReadonlyArray<BucketState>>
    /** False for `layerDisabled`: the transport then skips estimating costs altogether. */
    readonly enabled: boolean
    /** Whether exhausted budgets route to the queue. */
    readonly queueRouting: boolean
  }
}

interface Bucket {
  readonly id: string
  readonly key: string
  readonly model: string
  requests: number
  tokens: number
  requestsSource: LimitSource
  tokensSource: LimitSource
  /** What was learnt (`tier: "auto"`), else undefined. */
  learning: Learning.Learning | undefined
  /** Whether the store was asked for the limits learnt before (once, by the first caller). */
  recalled: boolean
  /** With `learning`: this limiter's permits not answered yet (tokens by admission number). */
  readonly inFlight: Map<number, number>
  admissions: number
  /** Which limit made the last caller wait. */
  binding: Learning.Dimension | undefined
  marginMs: number
  blockedUntil: number
  /**
   * Until when the store keeps this limiter's next request a place at the back of its line (taken with the last
   * admission while others waited), so that it waits without asking; 0 when it keeps none.
   */
  queuedUntil: number
  /** Whether the store keeps a place in its line for this limiter (given up when nobody here needs it any more). */
  placeInStore: boolean
  widenedAt: number
  waiting: number
  /** The usage the store reported with its last answer, and when (for observers, without asking it again). */
  usage: Usage
  usageAt: number
  /** Wakes the caller at the head of the line from its sleep when capacity comes back. */
  wake: Deferred.Deferred<void> | undefined
  /** How many times capacity came back (so that a release during a reservation is not missed). */
  releases: number
  /** Whether a caller is at the head of the line (its turn). */
  busy: boolean
  /**
   * Callers behind the head, in arrival order, from index `head` on (slots already handed on are cleared; the
   * front is dropped once it is most of the array, so that a hand-on is not an O(n) shift).
   */
  readonly line: Array<LineNode | undefined>
  head: number
}

/** What `acquireWith` runs on how an acquisition ended. */
type Then<A, E, R> = (
  acquired: Exit.Exit<Permit, RequestTooLarge | LimiterUnavailable>,
  restore: Restore
) => Effect.Effect<A, E, R>

/** A caller waiting for its turn. */
interface LineNode {
  state: "waiting" | "turn" | "gone"
  resume: ((effect: Effect.Effect<void>) => void) | undefined
}

/** The limit of a dimension not known yet: nothing is enforced (the store takes it as a number). */
const unlimited = Number.MAX_SAFE_INTEGER

/** Whether a limit from `source` is an estimate (learnt, or a plan's floor): measured at a 429, raised when calm. */
const estimated = (source: LimitSource): boolean => source === "learnt" || source === "plan"

/** Whether a limit from `source` follows what the bucket learns: an estimate, or one not known yet. */
const followsLearning = (source: LimitSource): boolean => source === "unknown" || estimated(source)

/** While nothing is known of a bucket's limits (`tier: "auto"`): its requests in flight are bounded instead. */
const probing = (bucket: Bucket): boolean =>
  bucket.learning !== undefined && bucket.requestsSource === "unknown" && bucket.tokensSource === "unknown"

/** A bucket closed by a 429 without a wait reopens after this long. */
const defaultBlockMs = 1000
/**
 * Each unpredicted 429 widens the margin by this much, up to `maxMarginMs`; each whole window without one
 * (after the first) narrows it by as much again, down to the configured margin.
 */
const marginStepMs = 250
const maxMarginMs = 5000

/**
 * Builds a limiter on a store and an estimator.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options = {}
): Effect.Effect<RateLimiter.Service, never, LimiterStore | TokenEstimator.TokenEstimator> =>
  Effect.gen(function*() {
    const store = yield* LimiterStore
    const estimator = yield* TokenEstimator.TokenEstimator
    const windowMs = Duration.toMillis(Duration.decode(options.window ?? Duration.minutes(1)))
    const baseMarginMs = Duration.toMillis(Duration.decode(options.margin ?? Duration.millis(200)))
    const tier = options.tier ?? "auto"
    const plan = isPlan(tier)
    // a plan's limits are learnt too, from its floor
    const auto = tier === "auto" || plan
    const preset = tier === "auto" || plan ? undefined : tiers[tier]
    // Stryker disable next-line StringLiteral: every mode but "actual" keeps the reservation, so the default's name is never compared
    const reconcileMode = options.reconcile ?? "keep"
    const maxOutput = new Map<string, number>(Object.entries(options.maxOutputTokens ?? {}))
    const learntMaxOutput = new Map<string, number>()
    const buckets = new Map<string, Bucket>()
    // this limiter's name in the store's lines (shared by every process on a shared store)
    const waiter = crypto.randomUUID()
    const states = yield* SubscriptionRef.make<ReadonlyArray<BucketState>>([])

    const bucketOf = (key: string, model: string): Bucket => {
      const id = `${key}\u0000${model}`
      let bucket = buckets.get(id)
      if (bucket === undefined) {
        // the model's own limits over those for every model (`*`)
        const override = options.limits === undefined
          ? undefined
          : { ...options.limits["*"], ...options.limits[model] }
        const sourceOf = (configured: number | undefined): LimitSource =>
          configured !== undefined ? "configured" : preset !== undefined ? "preset" : plan ? "plan" : "unknown"
        const learns = auto && (override?.rpm === undefined || override.tpm === undefined)
        bucket = {
          id,
          key,
          model,
          requests: override?.rpm ?? preset?.rpm ?? (plan ? planFloor.rpm : unlimited),
          tokens: override?.tpm ?? preset?.tpm ?? (plan ? planFloor.tpm : unlimited),
          requestsSource: sourceOf(override?.rpm),
          tokensSource: sourceOf(override?.tpm),
          // a limit configured for each dimension leaves nothing to learn
          learning: learns ? Learning.initial(0) : undefined,
          recalled: !learns,
          inFlight: new Map(),
          admissions: 0,
          binding: undefined,
          marginMs: baseMarginMs,
          blockedUntil: 0,
          queuedUntil: 0,
          placeInStore: false,
          widenedAt: Number.NEGATIVE_INFINITY,
          waiting: 0,
          usage: { requests: 0, tokens: 0, nextExpiryMs: 0 },
          usageAt: 0,
          wake: undefined,
          releases: 0,
          busy: false,
          // Stryker disable next-line ArrayDeclaration: a slot that is not a waiting node is skipped and cleared like a handed-on one
          line: [],
          head: 0
        }
        buckets.set(id, bucket)
      }
      return bucket
    }

    /** Narrows a widened margin by a step for each calm window since it was last widened (after the first). */
    const settleMargin = (bucket: Bucket, now: number): void => {
      if (bucket.marginMs <= baseMarginMs) return
      const calmWindows = Math.floor((now - bucket.widenedAt) / windowMs) - 1
      if (calmWindows <= 0) return
      bucket.marginMs = Math.max(baseMarginMs, bucket.marginMs - calmWindows * marginStepMs)
      bucket.widenedAt += calmWindows * windowMs
    }

    const limitOf = (bucket: Bucket, dimension: Learning.Dimension): Limit => {
      const source = dimension === "requests" ? bucket.requestsSource : bucket.tokensSource
      if (source === "unknown") return { value: undefined, source, confidence: "probing" }
      const value = dimension === "requests" ? bucket.requests : bucket.tokens
      return source === "learnt" && bucket.learning !== undefined
        ? { value, source, confidence: Learning.confidence(bucket.learning[dimension]) }
        : { value, source }
    }

    const stateOf = (bucket: Bucket, now: number): BucketState => {
      settleMargin(bucket, now)
      const { usage } = bucket
      const requests = limitOf(bucket, "requests")
      const tokens = limitOf(bucket, "tokens")
      return {
        key: bucket.key,
        model: bucket.model,
        limitRequests: requests.value ?? Number.POSITIVE_INFINITY,
        limitTokens: tokens.value ?? Number.POSITIVE_INFINITY,
        fromHeaders: requests.source === "header" || tokens.source === "header",
        requests,
        tokens,
        binding: bucket.binding,
        probe: probing(bucket) ? Math.floor(bucket.learning!.probe) : undefined,
        usedRequests: usage.requests,
        usedTokens: usage.tokens,
        nextResetMs: Math.max(0, usage.nextExpiryMs - (now - bucket.usageAt)),
        waiting: bucket.waiting,
        blockedMs: Math.max(0, bucket.blockedUntil - now),
        marginMs: bucket.marginMs
      }
    }

    const windowOf = (bucket: Bucket) => windowMs + bucket.marginMs

    /** Keeps the usage a store operation answered with at `now` (the state observers see). */
    const note = (bucket: Bucket, usage: Usage, now: number): void => {
      bucket.usage = usage
      bucket.usageAt = now
    }
    const noted = (bucket: Bucket) => (usage: Usage) =>
      Effect.clockWith((clock) => Effect.sync(() => note(bucket, usage, clock.unsafeCurrentTimeMillis())))

    /** The bucket's usage from the store now (the last known one when the store cannot answer). */
    const freshUsage = (bucket: Bucket) =>
      Effect.suspend(() => store.usage(bucket.id, windowOf(bucket))).pipe(
        Effect.tap(noted(bucket)),
        Effect.orElseSucceed(() => bucket.usage)
      )

    /**
     * A permit's settlement with the store: when the store cannot answer, the request is not failed for it
     * (it has been sent): the entry leaves the window on its own.
     */
    const settle = (
      bucket: Bucket,
      operation: Effect.Effect<Usage, LimiterUnavailable>,
      then?: (usage: Usage) => Effect.Effect<void>
    ) =>
      operation.pipe(
        Effect.tap(noted(bucket)),
        Effect.flatMap((usage) => then === undefined ? Effect.void : then(usage)),
        Effect.catchAll((error) => Effect.logWarning(`aifs: limiter store: ${error.message}`))
      )

    const snapshot = Effect.suspend(() =>
      Effect.forEach([...buckets.values()], (bucket) =>
        Effect.zipRight(
          freshUsage(bucket),
          Effect.map(Clock.currentTimeMillis, (now) => stateOf(bucket, now))
        ))
    )
    // published only while someone watches `changes` (a watcher starts from the states as they are then); only the
    // bucket that changed is recomputed: with thousands of callers waiting, every acquire publishes
    let watchers = 0
    const publish = (bucket: Bucket) =>
      // asked when it runs, not when it is built: a watcher may have come in between
      Effect.suspend(() =>
        // Stryker disable next-line ConditionalExpression: publishing while nobody watches is only slower, never seen
        watchers === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const state = stateOf(bucket, now)
          return SubscriptionRef.update(states, (all) => {
            const index = all.findIndex((s) => s.key === state.key && s.model === state.model)
            return index < 0 ? [...all, state] : all.map((s, i) => (i === index ? state : s))
          })
        })
      )

    /**
     * The limits a reservation of `tokens` is checked against. A learnt token limit is an estimate: a request above it
     * is not refused, it goes alone into a window without tokens (and what the server says is learnt).
     */
    const limitsOf = (bucket: Bucket, tokens: number) => ({
      requests: bucket.requests,
      tokens: estimated(bucket.tokensSource) ? Math.max(bucket.tokens, tokens) : bucket.tokens,
      windowMs: windowOf(bucket)
    })

    /** Whether a request of `tokens` can never fit a known token limit. */
    const neverFits = (bucket: Bucket, tokens: number) => !estimated(bucket.tokensSource) && tokens > bucket.tokens

    const tooLarge = (bucket: Bucket, tokens: number) =>
      new RequestTooLarge({
        message: `a request to ${bucket.model} needs about ${tokens} tokens, more than the ${bucket.tokens} ` +
          `the quota allows per window: lower max_tokens or shorten the input`,
        model: bucket.model,
        requested: tokens,
        limit: bucket.tokens
      })

    /**
     * Capacity came back (a reservation lowered to its usage, given back, or new limits): the caller at the
     * head of the line looks again now instead of sleeping until the next entry leaves the window.
     */
    const released = (bucket: Bucket) =>
      Effect.suspend(() => {
        // Stryker disable next-line UpdateOperator: the head only asks whether the count changed, not which way
        bucket.releases++
        const wake = bucket.wake
        bucket.wake = undefined
        return wake === undefined
          ? publish(bucket)
          : Effect.zipRight(Deferred.succeed(wake, undefined), publish(bucket))
      })

    /** Sets the limits that are learnt (not preset, configured or from headers) from what was learnt; true if one changed. */
    const applyLearnt = (bucket: Bucket): boolean => {
      const learning = bucket.learning!
      const before = { requests: bucket.requests, tokens: bucket.tokens }
      // a plan's floor stays the plan's until learning moves it
      const sourceAfter = (source: LimitSource, limit: number | undefined, floor: number): LimitSource =>
        limit === undefined ? "unknown" : source === "plan" && limit === floor ? "plan" : "learnt"
      if (followsLearning(bucket.requestsSource)) {
        bucket.requests = learning.requests.limit ?? unlimited
        bucket.requestsSource = sourceAfter(bucket.requestsSource, learning.requests.limit, planFloor.rpm)
      }
      if (followsLearning(bucket.tokensSource)) {
        bucket.tokens = learning.tokens.limit ?? unlimited
        bucket.tokensSource = sourceAfter(bucket.tokensSource, learning.tokens.limit, planFloor.tpm)
      }
      return bucket.requests !== before.requests || bucket.tokens !== before.tokens
    }

    /** What a bucket learnt, as the store keeps it. */
    const learntOf = (bucket: Bucket): LearntLimits => ({
      ...(bucket.requestsSource === "learnt" ? { requests: bucket.requests } : {}),
      ...(bucket.tokensSource === "learnt" ? { tokens: bucket.tokens } : {})
    })

    /** Whether observers see the same of two learnings besides their limits: the probe and how sure each limit is. */
    const sameToObservers = (a: Learning.Learning, b: Learning.Learning) =>
      Math.floor(a.probe) === Math.floor(b.probe) &&
      Learning.confidence(a.requests) === Learning.confidence(b.requests) &&
      Learning.confidence(a.tokens) === Learning.confidence(b.tokens)

    /** Takes `next` as what the bucket learnt: new limits are kept in the store and may let the head go. */
    const relearn = (bucket: Bucket, next: Learning.Learning) =>
      Effect.suspend(() => {
        const before = bucket.learning!
        bucket.learning = next
        // most answers change nothing observers see: no state is published for them (one per request otherwise)
        if (!applyLearnt(bucket)) {
          return next === before || sameToObservers(before, next)
            ? Effect.void
            : publish(bucket)
        }
        return Effect.zipRight(
          store.keepLearnt(bucket.id, learntOf(bucket)).pipe(
            Effect.catchAll((error) => Effect.logWarning(`aifs: limiter store: ${error.message}`))
          ),
          released(bucket)
        )
      })

    /** The limits learnt before (by another process on the store, or an earlier run), once per bucket. */
    const recall = (bucket: Bucket) =>
      Effect.suspend(() => {
        if (bucket.recalled) return Effect.void
        bucket.recalled = true
        return Effect.flatMap(Effect.orElseSucceed(store.learnt(bucket.id), () => undefined), (learnt) =>
          Effect.clockWith((clock) => {
            const now = clock.unsafeCurrentTimeMillis()
            // the probe's windows count from the first request
            bucket.learning = learnt !== undefined
              ? Learning.resumed(
                now,
                plan ? { requests: learnt.requests ?? planFloor.rpm, tokens: learnt.tokens ?? planFloor.tpm } : learnt,
                windowMs
              )
              : plan
              ? Learning.fromFloor(now, { requests: planFloor.rpm, tokens: planFloor.tpm })
              : Learning.initial(now)
            applyLearnt(bucket)
            return publish(bucket)
          }))
      })

    /**
     * A request admitted at `generation` answered while the store counted `usage`: the window held at least what
     * was not in flight (a success lifts a limit measured too low, see `Learning.held`).
     */
    const observe = (bucket: Bucket, generation: number, succeeded: boolean) => (usage: Usage) =>
      Effect.clockWith((clock) => {
        const count = { requests: usage.requests - bucket.inFlight.size, tokens: usage.tokens }
        for (const tokens of bucket.inFlight.values()) {
          count.tokens -= tokens
        }
        const answered = Learning.answered(bucket.learning!, clock.unsafeCurrentTimeMillis(), windowMs)
        return relearn(bucket, succeeded ? Learning.held(answered, count, generation) : answered)
      })

    /**
     * The server refused the request admitted as `seq` while the store counted `usage` (without it): the window
     * held that, less the requests sent after this one.
     */
    const measure = (bucket: Bucket, seq: number, tokens: number, generation: number) => (usage: Usage) =>
      Effect.clockWith((clock) => {
        let requests = usage.requests
        let spent = usage.tokens
        for (const [other, otherTokens] of bucket.inFlight) {
          if (other > seq) {
            requests--
            spent -= otherTokens
          }
        }
        const count = { requests: Math.max(0, requests), tokens: Math.max(0, spent) }
        const now = clock.unsafeCurrentTimeMillis()
        const learning = bucket.learning!
        // resumed from limits learnt before: the server may still count what the process before this one sent,
        // so the window is taken as full until that is surely gone, and nothing is measured
        if (now < learning.unseenUntil) {
          bucket.blockedUntil = Math.max(bucket.blockedUntil, learning.unseenUntil)
          return publish(bucket)
        }
        return relearn(bucket, Learning.refused(learning, count, tokens, generation, now))
      })

    /** Whether the limiter paces a bucket's retries itself: it learnt one of its limits. */
    const paces = (bucket: Bucket) =>
      bucket.learning !== undefined && (estimated(bucket.requestsSource) || estimated(bucket.tokensSource))

    const restampNow = store.restamp.now
    /**
     * A request's permit, counted in the store as `id`. Most requests settle once, by `succeeded`: the others are
     * built only when they run (a permit is made for every request).
     */
    const permit = (bucket: Bucket, id: number, tokens: number): Permit => {
      const seq = ++bucket.admissions
      const generation = bucket.learning?.generation ?? 0
      if (bucket.learning !== undefined) {
        bucket.inFlight.set(seq, tokens)
      }
      const cancel = Effect.suspend(() =>
        Effect.zipRight(
          settle(bucket, store.remove(bucket.id, id, windowOf(bucket))),
          Effect.suspend(() => {
            bucket.inFlight.delete(seq)
            return released(bucket)
          })
        )
      )
      const answeredWith = (succeeded: boolean) =>
        Effect.withFiberRuntime((fiber) => {
          if (!bucket.inFlight.delete(seq)) {
            // nothing learnt from it: only the store's count to settle, in this step when the store answers at once
            if (restampNow === undefined) return settle(bucket, store.restamp(bucket.id, id, windowOf(bucket)))
            const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
            note(bucket, restampNow(bucket.id, id, windowOf(bucket), now), now)
            return Effect.void
          }
          // while probing, the place in flight it leaves lets the head go
          return Effect.zipRight(
            settle(
              bucket,
              Effect.suspend(() => store.restamp(bucket.id, id, windowOf(bucket))),
              observe(bucket, generation, succeeded)
            ),
            probing(bucket) ? released(bucket) : Effect.void
          )
        })
      return {
        tokens,
        reconcile: (actual) =>
          actual > tokens
            ? Effect.zipRight(settle(bucket, store.adjust(bucket.id, id, actual, windowOf(bucket))), publish(bucket))
            : reconcileMode === "actual" && actual < tokens
            ? Effect.zipRight(settle(bucket, store.adjust(bucket.id, id, actual, windowOf(bucket))), released(bucket))
            : Effect.void,
        answered: Effect.suspend(() => answeredWith(false)),
        succeeded: answeredWith(true),
        cancel,
        throttled: Effect.suspend(() => {
          if (bucket.learning === undefined || !bucket.inFlight.delete(seq)) return Effect.as(cancel, false)
          const remove = Effect.suspend(() => store.remove(bucket.id, id, windowOf(bucket)))
          return settle(bucket, remove, measure(bucket, seq, tokens, generation)).pipe(
            Effect.zipRight(released(bucket)),
            Effect.zipRight(Effect.sync(() => paces(bucket)))
          )
        }),
        refund: Effect.suspend(() =>
          Effect.zipRight(settle(bucket, store.adjust(bucket.id, id, 0, windowOf(bucket))), released(bucket))
        )
      }
    }

    /**
     * The line of a bucket: the caller whose turn it is runs the admission loop in its own fiber; everyone
     * behind it is a node in `bucket.line`, suspended in one `Effect.async` until the turn is handed on to it
     * (a waiting caller holds a node and its suspended fiber, nothing more).
     */
    const handOn = (bucket: Bucket): void => {
      while (bucket.head < bucket.line.length) {
        const next = bucket.line[bucket.head]!
        bucket.line[bucket.head++] = undefined
        if (next.state === "waiting") {
          // Stryker disable next-line StringLiteral: only "waiting" is ever compared: any other state means the node holds or held the turn
          next.state = "turn"
          next.resume?.(Effect.void)
          next.resume = undefined
          // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator,ArithmeticOperator,BlockStatement: when the handed-on front is dropped changes memory only, never who goes next
          if (bucket.head > 1024 && bucket.head * 2 > bucket.line.length) {
            bucket.line.splice(0, bucket.head)
            bucket.head = 0
          }
          return
        }
      }
      bucket.line.length = 0
      bucket.head = 0
      bucket.busy = false
    }

    /**
     * A caller must wait while the window holds `usage`: notes which limit binds, and, for a learnt one, whether
     * calm windows at it call for a raise (true: the limits changed, look again).
     */
    const waitsOn = (bucket: Bucket, usage: Usage, tokens: number, now: number) =>
      Effect.suspend(() => {
        const binding: Learning.Dimension | undefined = usage.requests + 1 > bucket.requests
          ? "requests"
          : usage.tokens + tokens > bucket.tokens
          ? "tokens"
          : undefined
        if (binding === undefined) return Effect.succeed(false)
        bucket.binding = binding
        const source = binding === "requests" ? bucket.requestsSource : bucket.tokensSource
        if (bucket.learning === undefined || !estimated(source)) return Effect.succeed(false)
        const next = Learning.calm(bucket.learning, binding, now, windowMs)
        return next === bucket.learning ? Effect.succeed(false) : Effect.as(relearn(bucket, next), true)
      })

    /**
     * A request to an idle bucket (nobody in line, here or in the store's; nothing blocked; no probe; nobody
     * watching `changes`) admitted in one step, when the store answers at once; `undefined`: it takes the line.
     */
    const reserveNow = store.reserve.now
    const admitNow = (bucket: Bucket, tokens: number, now: number): Permit | undefined => {
      if (reserveNow === undefined || bucket.busy || !bucket.recalled || watchers > 0) return undefined
      if (bucket.blockedUntil > now || bucket.queuedUntil > now || probing(bucket)) return undefined
      settleMargin(bucket, now)
      const reservation = reserveNow(bucket.id, tokens, limitsOf(bucket, tokens), now)
      if (reservation === undefined) return undefined
      bucket.queuedUntil = 0
      note(bucket, reservation.usage, now)
      bucket.placeInStore = false
      return permit(bucket, reservation.id, tokens)
    }

    const acquireWith: RateLimiter.Service["acquireWith"] = (request, then) =>
      Effect.uninterruptibleMask((restore) => {
        const bucket = bucketOf(request.key, request.model)
        if (neverFits(bucket, request.tokens)) return then(Exit.fail(tooLarge(bucket, request.tokens)), restore)
        // Stryker disable next-line ConditionalExpression: the line admits an idle bucket's request as well, in more steps
        if (reserveNow === undefined || bucket.busy) return inLine(bucket, request, then, restore)
        // one step, nothing to interrupt between the store's count and `then`
        return Effect.withFiberRuntime((fiber) => {
          const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
          const granted = admitNow(bucket, request.tokens, now)
          if (granted === undefined) return inLine(bucket, request, then, restore)
          const labels = fiber.getFiberRef(FiberRef.currentMetricLabels)
          ClientMetrics.limiterAdmitted.unsafeUpdate(1, labels)
          ClientMetrics.limiterTokensReserved.unsafeUpdate(request.tokens, labels)
          return then(Exit.succeed(granted), restore)
        })
      })

    const acquire: RateLimiter.Service["acquire"] = (request, onGranted) =>
      acquireWith(request, (acquired) => {
        if (Exit.isSuccess(acquired)) onGranted?.(acquired.value)
        return acquired
      })

    /**
     * The admission loop of the caller whose turn it is, at the head of `bucket`'s line: only its sleeps can be
     * interrupted (`restore`), and an entry the store admitted always becomes the permit it returns.
     */
    const atHead = (
      bucket: Bucket,
      request: Parameters<RateLimiter.Service["acquire"]>[0],
      restore: Restore,
      arrived: number
    ) =>
      Effect.gen(function*() {
        yield* recall(bucket)
        yield* publish(bucket)
        while (true) {
          if (neverFits(bucket, request.tokens)) return yield* Effect.fail(tooLarge(bucket, request.tokens))
          const now = yield* Clock.currentTimeMillis
          settleMargin(bucket, now)
          // capacity that comes back while the store answers is not missed: the count tells
          const releases = bucket.releases
          const queuedUntil = bucket.queuedUntil
          bucket.queuedUntil = 0
          const reservation = bucket.blockedUntil > now
            ? { _tag: "Wait" as const, waitMs: bucket.blockedUntil - now }
            : queuedUntil > now
            ? { _tag: "Wait" as const, waitMs: queuedUntil - now }
            // probing: woken when a request in flight lands (the window's length bounds a wake-up lost)
            : probing(bucket) && bucket.inFlight.size >= Math.floor(bucket.learning!.probe)
            ? { _tag: "Wait" as const, waitMs: windowMs }
            : yield* store.reserve(
              bucket.id,
              request.tokens,
              limitsOf(bucket, request.tokens),
              waiter,
              bucket.waiting > 1
            )
          if (reservation._tag === "TooLarge") bucket.placeInStore = false
          if (reservation._tag !== "TooLarge" && "usage" in reservation) {
            yield* noted(bucket)(reservation.usage)
            bucket.placeInStore = reservation._tag === "Wait" || reservation.queuedMs !== undefined
          }
          if (reservation._tag === "Admitted") {
            if (reservation.queuedMs !== undefined) bucket.queuedUntil = now + reservation.queuedMs
            const granted = permit(bucket, reservation.id, request.tokens)
            yield* Metric.increment(ClientMetrics.limiterAdmitted)
            yield* Metric.incrementBy(ClientMetrics.limiterTokensReserved, request.tokens)
            // the wait counts from arrival: time in line behind others as well as time at the head
            if (now > arrived) yield* Metric.incrementBy(ClientMetrics.limiterWaitMillis, now - arrived)
            return granted
          }
          if (reservation._tag === "TooLarge") return yield* Effect.fail(tooLarge(bucket, request.tokens))
          if ("usage" in reservation && (yield* waitsOn(bucket, reservation.usage, request.tokens, now))) continue
          if (bucket.releases !== releases) continue
          // until the window frees enough, or sooner when a reservation shrinks or comes back
          const wake = yield* Deferred.make<void>()
          bucket.wake = wake
          yield* restore(Effect.raceAll([
            Effect.sleep(Duration.millis(reservation.waitMs)),
            Deferred.await(wake),
            store.released(bucket.id, waiter)
          ]))
          // Stryker disable next-line ConditionalExpression,EqualityOperator: a stale wake-up nobody awaits is harmless: the next sleeper sets its own, a release just completes it
          if (bucket.wake === wake) bucket.wake = undefined
        }
      })

    /**
     * A caller leaves `bucket`'s line: interrupted in it, its place is given up; otherwise the turn goes on to
     * whoever is next.
     */
    const leave = (bucket: Bucket, node: LineNode) =>
      Effect.suspend(() => {
        bucket.waiting--
        if (node.state === "waiting") {
          // Stryker disable next-line StringLiteral: only "waiting" is ever compared: a node in any other state is skipped
          node.state = "gone"
        } else handOn(bucket)
        node.resume = undefined
        // the place kept in the store's line is given up once nobody here needs it (the last caller
        // interrupted in line, or admitted with a place kept for a next request that will not come)
        if (bucket.waiting > 0 || !bucket.placeInStore) return publish(bucket)
        bucket.placeInStore = false
        bucket.queuedUntil = 0
        return Effect.zipRight(Effect.ignore(store.leave(bucket.id, waiter)), publish(bucket))
      })

    /**
     * The wait in the bucket's line, then the admission loop, then `then`: only the wait in line and the sleeps at
     * the head can be interrupted; the turn is always handed on.
     */
    const inLine = <A, E, R>(
      bucket: Bucket,
      request: Parameters<RateLimiter.Service["acquire"]>[0],
      then: Then<A, E, R>,
      restore: Restore
    ): Effect.Effect<A, E, R> =>
      // few frames stay on a waiting caller's fiber: thousands may wait at once
      Effect.clockWith((clock) => {
        const arrived = clock.unsafeCurrentTimeMillis()
        bucket.waiting++
        // Stryker disable next-line ObjectLiteral,StringLiteral: a node not in the line is only ever compared with "waiting"
        const node: LineNode = { state: "turn", resume: undefined }
        // built when the turn comes: a caller waiting in line holds no admission loop
        const turn = () =>
          Effect.matchCauseEffect(Effect.onExit(atHead(bucket, request, restore, arrived), () => leave(bucket, node)), {
            onFailure: (cause) => then(Exit.failCause(cause), restore),
            onSuccess: (permit) => then(Exit.succeed(permit), restore)
          })
        if (!bucket.busy) {
          bucket.busy = true
          return turn()
        }
        node.state = "waiting"
        bucket.line.push(node)
        // all a waiting caller's fiber holds of the limiter: one match and the suspension
        return Effect.matchCauseEffect(
          restore(Effect.async<void>((resume) => {
            if (node.state === "waiting") {
              node.resume = resume
            } else resume(Effect.void)
          })),
          {
            onFailure: (cause) => Effect.zipRight(leave(bucket, node), then(Exit.failCause(cause), restore)),
            onSuccess: turn
          }
        )
      })

    const wouldWait: RateLimiter.Service["wouldWait"] = (request) =>
      Effect.gen(function*() {
        const bucket = bucketOf(request.key, request.model)
        yield* recall(bucket)
        const now = yield* Clock.currentTimeMillis
        if (bucket.waiting > 0 || bucket.blockedUntil > now) {
          return true
        }
        settleMargin(bucket, now)
        const usage = yield* freshUsage(bucket)
        return usage.requests + 1 > bucket.requests || usage.tokens + request.tokens > bucket.tokens
      })

    /** What an answer's limits, remaining counts and status teach the bucket. */
    const learnFrom = (key: string, model: string, info: RateLimitInfo, status: number) =>
      Effect.gen(function*() {
        const bucket = bucketOf(key, model)
        const now = yield* Clock.currentTimeMillis
        // Stryker disable next-line ObjectLiteral: waking the head when the limits did not change only makes it look again and sleep to the same moment
        const before = { requests: bucket.requests, tokens: bucket.tokens }
        if (info.limitRequests !== undefined && info.limitRequests > 0) {
          bucket.requests = info.limitRequests
          bucket.requestsSource = "header"
        }
        if (info.limitTokens !== undefined && info.limitTokens > 0) {
          bucket.tokens = info.limitTokens
          bucket.tokensSource = "header"
        }
        const limitsChanged = bucket.requests !== before.requests || bucket.tokens !== before.tokens
        settleMargin(bucket, now)
        if (status === 429) {
          const wait = Option.match(info.serverWait, {
            onNone: () => defaultBlockMs,
            onSome: Duration.toMillis
          })
          bucket.blockedUntil = Math.max(bucket.blockedUntil, now + wait)
          // a burst of 429s is one misjudgement, not many: widen at most once per window
          if (now - bucket.widenedAt >= windowMs) {
            bucket.marginMs = Math.min(maxMarginMs, bucket.marginMs + marginStepMs)
            bucket.widenedAt = now
          }
        }
        // usage the server counts and this process did not send (another process on the key, or requests the
        // server received later than they were sent here): counted until the server's reset, so that they leave
        // the window when the server says its count drops
        const serverRequests = info.limitRequests !== undefined && info.remainingRequests !== undefined
          ? info.limitRequests - info.remainingRequests
          : 0
        const serverTokens = info.limitTokens !== undefined && info.remainingTokens !== undefined
          ? info.limitTokens - info.remainingTokens
          : 0
        const ageOf = (reset: Duration.Duration | undefined) =>
          Math.max(0, windowMs - (reset === undefined ? windowMs : Duration.toMillis(reset)))
        if (serverRequests > 0 || serverTokens > 0) {
          yield* settle(
            bucket,
            store.topUp(bucket.id, {
              requests: serverRequests,
              requestsAgeMs: ageOf(info.resetRequests),
              tokens: serverTokens,
              tokensAgeMs: ageOf(info.resetTokens)
            }, windowOf(bucket))
          )
        }
        // new limits may let the head of the line go sooner (or show it can never fit)
        yield* limitsChanged ? released(bucket) : publish(bucket)
      })

    const learn: RateLimiter.Service["learn"] = (key, model, info, status) =>
      // an answer with no limits and no 429 teaches nothing (the bucket is known from then on): the common case, in a step
      info.limitRequests === undefined && info.limitTokens === undefined && status !== 429
        ? Effect.sync(() => void bucketOf(key, model))
        : learnFrom(key, model, info, status)

    const learnModels: RateLimiter.Service["learnModels"] = (models) =>
      Effect.sync(() => {
        for (const model of models.data) {
          const max = model.meta_data?.max_output_length
          if (typeof max === "number" && max > 0) {
            learntMaxOutput.set(model.id, max)
          }
        }
      })

    const cost: RateLimiter.Service["cost"] = (path, body) => {
      const estimate = estimator.estimate(path, body)
      const model = estimate.model
      const output = !estimate.generates
        ? 0
        : estimate.maxOutputTokens ?? (model === undefined ? undefined : maxOutput.get(model)) ??
          (model === undefined ? undefined : learntMaxOutput.get(model)) ?? options.defaultMaxOutputTokens ?? 1024
      // whole tokens, rounded up (a max_tokens of 100.5 reserves 101): what a shared store can count
      return { model, tokens: Math.ceil(estimate.promptTokens + output) }
    }

    return {
      cost,
      acquire,
      acquireWith,
      wouldWait,
      learn,
      learnModels,
      snapshot,
      changes: Stream.unwrapScoped(
        Effect.zipRight(
          // Stryker disable next-line UpdateOperator,ArrowFunction: a count off upwards or below zero only publishes while nobody watches, slower and never seen
          Effect.acquireRelease(Effect.sync(() => watchers++), () => Effect.sync(() => watchers--)),
          Effect.clockWith((clock) =>
            Effect.as(
              SubscriptionRef.set(
                states,
                [...buckets.values()].map((b) => stateOf(b, clock.unsafeCurrentTimeMillis()))
              ),
              states.changes
            )
          )
        )
      ),
      enabled: true,
      queueRouting: options.queueRouting ?? false
    }
  })

/**
 * A limiter with the memory store and the default estimator.
 *
 * @example
 * ```ts
 * import { RateLimiter } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the limiter on its own: a permit per request, counted in the key's and model's bucket
 * const program = Effect.gen(function*() {
 *   const limiter = yield* RateLimiter.RateLimiter
 *   const permit = yield* limiter.acquire({ key: "my-key", model: "gpt-4o", tokens: 500 })
 *   yield* permit.answered
 *   const [bucket] = yield* limiter.snapshot
 *   if (bucket === undefined) return "no bucket"
 *   return `${bucket.usedRequests}/${bucket.limitRequests} requests, ${bucket.usedTokens} tokens`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(RateLimiter.layer({ tier: "basic" })))).then(console.log)
 * // => 1/20 requests, 500 tokens
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<RateLimiter> =>
  Layer.effect(RateLimiter, make(options)).pipe(Layer.provide(Layer.merge(layerMemory, TokenEstimator.layer)))

/**
 * A limiter on a store and estimator you provide (a shared store, a real tokenizer).
 *
 * @example
 * ```ts
 * import { LimiterStore, RateLimiter, TokenEstimator } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // the limiter on a store and an estimator you provide (a store shared between processes, a real tokenizer)
 * const LimiterLive = RateLimiter.layerWith({ tier: "standard4000", margin: "500 millis" }).pipe(
 *   Layer.provide(Layer.merge(LimiterStore.layerMemory, TokenEstimator.layer))
 * )
 *
 * const program = Effect.flatMap(RateLimiter.RateLimiter, (limiter) =>
 *   limiter.wouldWait({ key: "my-key", model: "gpt-4o", tokens: 1000 }))
 *
 * Effect.runPromise(program.pipe(Effect.provide(LimiterLive))).then(console.log)
 * // => false
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (
  options: Options = {}
): Layer.Layer<RateLimiter, never, LimiterStore | TokenEstimator.TokenEstimator> =>
  Layer.effect(RateLimiter, make(options))

/**
 * A limiter whose tier comes from the `ClientConfig` (`AIFS_TIER`).
 *
 * @example
 * ```ts
 * import { ClientConfig, RateLimiter } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // the tier from the configuration (AIFS_TIER with `ClientConfig.layerFromEnv`), the window from options
 * const LimiterLive = RateLimiter.layerFromClientConfig({ window: "10 seconds" }).pipe(
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-...", tier: "standard4000" }))
 * )
 *
 * const program = Effect.gen(function*() {
 *   const limiter = yield* RateLimiter.RateLimiter
 *   yield* limiter.acquire({ key: "my-key", model: "Llama-3.3-70B-Instruct", tokens: 10 })
 *   const [bucket] = yield* limiter.snapshot
 *   return bucket?.limitRequests
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(LimiterLive))).then(console.log)
 * // => 600
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromClientConfig = (options: Options = {}): Layer.Layer<RateLimiter, never, ClientConfig> =>
  layerFromClientConfigWith(options).pipe(Layer.provide(layerMemory))

/**
 * A limiter whose tier comes from the `ClientConfig`, on a store you provide (the default estimator).
 *
 * @example
 * ```ts
 * import { ClientConfig, LimiterStore, RateLimiter } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // the tier from the configuration, the store yours: `RedisLimiterStore.layer(url)` shares it between processes
 * const LimiterLive = RateLimiter.layerFromClientConfigWith().pipe(
 *   Layer.provide(LimiterStore.layerMemory),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-...", tier: "standard4000" }))
 * )
 *
 * const program = Effect.flatMap(RateLimiter.RateLimiter, (limiter) =>
 *   limiter.wouldWait({ key: "my-key", model: "gpt-4o", tokens: 1000 }))
 *
 * Effect.runPromise(program.pipe(Effect.provide(LimiterLive))).then(console.log)
 * // => false
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layerFromClientConfigWith = (
  options: Options = {}
): Layer.Layer<RateLimiter, never, ClientConfig | LimiterStore> =>
  Layer.unwrapEffect(
    Effect.map(ClientConfig, (config) =>
      layerWith({ tier: config.tier, ...options }).pipe(Layer.provide(TokenEstimator.layer)))
  )

const noPermit: Permit = {
  tokens: 0,
  reconcile: () => Effect.void,
  answered: Effect.void,
  succeeded: Effect.void,
  cancel: Effect.void,
  throttled: Effect.succeed(false),
  refund: Effect.void
}

/**
 * No proactive limiting: requests go out at once and only the retry policy reacts to 429s.
 *
 * @example
 * ```ts
 * import { Chat, ClientConfig, Inference, InferenceHttp, Node, RateLimiter } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // no proactive limiting: requests go out at once, and 429s are met by the retry policy alone
 * export const ClientLive: Layer.Layer<Chat.Chat | RateLimiter.RateLimiter> = Layer.merge(
 *   Inference.layer,
 *   RateLimiter.layerDisabled
 * ).pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDisabled: Layer.Layer<RateLimiter> = Layer.succeed(RateLimiter, {
  cost: () => ({ model: undefined, tokens: 0 }),
  acquire: () => Effect.succeed(noPermit),
  acquireWith: (_, then) => Effect.uninterruptibleMask((restore) => then(Exit.succeed(noPermit), restore)),
  wouldWait: () => Effect.succeed(false),
  learn: () => Effect.void,
  learnModels: () => Effect.void,
  snapshot: Effect.succeed([]),
  changes: Stream.make([]),
  enabled: false,
  queueRouting: false
})
