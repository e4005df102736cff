/**
 * A `LimiterStore` on Redis (or Valkey, or Redis Cluster), so that every process on one key shares its budget:
 * the same exact sliding window as the memory store, each operation one atomic Lua script on the server's clock,
 * waiters served first come, first served across processes and woken when capacity comes back.
 *
 * When the server cannot be reached or answers too late, the store counts in the process's own memory (one
 * warning, the metric `aifs_limiter_store_fallbacks_total`) and goes back to Redis when it answers again; with
 * `onUnavailable: "fail"` a request fails with `LimiterUnavailable` instead. Either way no request is lost.
 *
 * Needs the optional peer `ioredis` (5.x).
 *
 * @example
 * ```ts
 * import { Chat, ClientConfig, Inference, Node } from "effect-aifs"
 * import * as RedisLimiterStore from "effect-aifs/redis"
 * import * as Layer from "effect/Layer"
 * import type { LimiterUnavailable } from "effect-aifs/schemas/Errors"
 *
 * // every process on this key (workers, replicas, a batch beside a web app) shares one budget through Redis
 * export const ClientLive: Layer.Layer<Chat.Chat, LimiterUnavailable> = Inference.layerHttpLimitedWith({
 *   window: "1 minute"
 * }).pipe(
 *   Layer.provide(RedisLimiterStore.layer("redis://127.0.0.1:6379", { prefix: "my-app" })),
 *   Layer.provide(Node.httpClient),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-...", tier: "basic" }))
 * )
 * ```
 *
 * @since 0.2.0
 */
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as IORedis from "ioredis"
import { createHash } from "node:crypto"
import * as Scripts from "./internal/redisScripts.js"
import * as ClientMetrics from "./layers/ClientMetrics.js"
import * as LimiterStore from "./layers/LimiterStore.js"
import { LimiterUnavailable } from "./schemas/Errors.js"

/**
 * Options of the Redis store.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /** Prefix of every key and channel (default `aifs`): one per application sharing a server. */
  readonly prefix?: string | undefined
  /** How long an operation may take before the server counts as unavailable (default 250 ms). */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * When the server is unavailable: `"memory"` (the default) counts in this process's memory until it answers
   * again; `"fail"` fails requests with `LimiterUnavailable`.
   */
  readonly onUnavailable?: "memory" | "fail" | undefined
  /** While counting in memory, how long until the server is tried again (default 1 second). */
  readonly retryAfter?: Duration.DurationInput | undefined
  /**
   * Whose time the scripts use: the server's (`TIME`, the default: processes with skewed clocks agree) or
   * Effect's `Clock` (tests on a `TestClock`).
   */
  readonly clock?: "server" | "effect" | undefined
}

/** A script, run by its digest (loaded once per server). */
interface Script {
  readonly lua: string
  readonly sha: string
}

const script = (lua: string): Script => ({ lua, sha: createHash("sha1").update(lua).digest("hex") })

const scripts = {
  reserve: script(Scripts.reserve),
  adjust: script(Scripts.adjust),
  remove: script(Scripts.remove),
  restamp: script(Scripts.restamp),
  topUp: script(Scripts.topUp),
  usage: script(Scripts.usage),
  leave: script(Scripts.leave)
}

type Client = IORedis.Redis | IORedis.Cluster

const isCluster = (client: Client): client is IORedis.Cluster => client.isCluster

const commandTimeoutOf = (client: Client): number | undefined =>
  isCluster(client) ? client.options.redisOptions?.commandTimeout : client.options.commandTimeout

const defaultTimeout = Duration.millis(250)

/** Counts go to Redis as whole numbers (HINCRBY takes no fractions), rounded up: never less than was asked for. */
const whole = (n: number): number => Math.max(0, Math.ceil(n))

// The optional peer, loaded only when a store connects by URL: an app that uses no Redis store never loads it,
// and its name in a variable keeps bundlers from insisting on finding it.
const ioredisName = "ioredis"
const loadIoredis = Effect.tryPromise({
  try: () => import(ioredisName) as Promise<typeof IORedis>,
  catch: () =>
    new LimiterUnavailable({
      message: "the Redis limiter store needs the optional peer ioredis 5 (npm install ioredis@5)"
    })
})

/** `redis://user:password@host:port/db` without its password. */
const redactUrl = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    // ioredis reads options (a password among them) from the query string too
    parsed.search = ""
    return parsed.toString()
  } catch {
    return "(not a URL)"
  }
}

/**
 * ioredis's words for a connection that is down, in ours: an operation while it is down fails at once
 * (`enableOfflineQueue: false`) with the name of that option.
 */
const connectionDown = /^Stream isn't writeable|^Connection is closed/

/** What a failure of the server says, without anything secret (ioredis's messages name no password). */
const describe = (cause: unknown): string => {
  const text = cause instanceof Error ? cause.message.split("\n")[0]! : String(cause)
  return connectionDown.test(text) ? "the connection is down (reconnecting)" : text.slice(0, 200)
}

/**
 * The store on a connected client. The client stays the caller's (not closed here); a second connection for
 * the wake-ups (`duplicate`) lives as long as the scope.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (
  client: Client,
  options: Options & { readonly name?: string | undefined } = {}
): Effect.Effect<LimiterStore.LimiterStore.Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    const prefix = options.prefix ?? "aifs"
    const timeout = Duration.decode(options.timeout ?? defaultTimeout)
    const retryAfterMs = Duration.toMillis(Duration.decode(options.retryAfter ?? Duration.seconds(1)))
    const failMode = options.onUnavailable === "fail"
    const name = options.name ?? "redis"
    const memory = LimiterStore.makeMemory()
    const subscriber = yield* subscriberOf(client, `{${prefix}:*}:released`, timeout)

    const keysOf = (bucket: string) => {
      const tag = `{${prefix}:${bucket}}`
      return {
        keys: [`${tag}:log`, `${tag}:val`, `${tag}:line`, `${tag}:due`, `${tag}:seq`, `${tag}:sum`],
        channel: `${tag}:released`
      }
    }

    // a client with a command timeout of its own (ours has the store's) times each operation without a fiber
    // and a timer of Effect's per operation, a third of an admission's cost on loopback
    const timedByClient = commandTimeoutOf(client) !== undefined
    const timedOut = `no answer within ${Duration.format(timeout)}`
    const unavailable = (operation: string, cause: unknown) =>
      new LimiterUnavailable({
        message: `the limiter store (${name}) failed to ${operation}: ${
          cause instanceof Error && cause.message === "Command timed out" ? timedOut : describe(cause)
        }`
      })

    const evaluate = (s: Script, keys: ReadonlyArray<string>, args: ReadonlyArray<string | number>) =>
      Effect.tryPromise({
        try: async () => {
          try {
            return await client.evalsha(s.sha, keys.length, ...keys, ...args) as Array<string | number>
          } catch (error) {
            if (error instanceof Error && error.message.startsWith("NOSCRIPT")) {
              return await client.eval(s.lua, keys.length, ...keys, ...args) as Array<string | number>
            }
            throw error
          }
        },
        catch: (cause) => cause
      })

    /** Runs a script on the bucket, with the common arguments before `args`. */
    const run = (
      operation: string,
      s: Script,
      bucket: string,
      windowMs: number,
      args: ReadonlyArray<string | number>
    ) =>
      Effect.clockWith((clock) => {
        const { channel, keys } = keysOf(bucket)
        const now = options.clock === "effect" ? String(clock.unsafeCurrentTimeMillis()) : ""
        const answer = evaluate(s, keys, [now, windowMs, LimiterStore.waiterGraceMs, channel, ...args])
        return (timedByClient ? answer : Effect.timeoutFail(answer, { duration: timeout, onTimeout: () => timedOut }))
          .pipe(Effect.mapError((cause) => unavailable(operation, cause)))
      })

    /** A single command, timed like a script. */
    const command = <A>(operation: string, f: () => Promise<A>) => {
      const answer = Effect.tryPromise({ try: f, catch: (cause) => cause })
      return (timedByClient ? answer : Effect.timeoutFail(answer, { duration: timeout, onTimeout: () => timedOut }))
        .pipe(Effect.mapError((cause) => unavailable(operation, cause)))
    }
    const learntKey = (bucket: string) => `{${prefix}:${bucket}}:learnt`

    const usageFrom = (reply: ReadonlyArray<string | number>, from: number): LimiterStore.Usage => ({
      requests: Number(reply[from]),
      tokens: Number(reply[from + 1]),
      nextExpiryMs: Number(reply[from + 2])
    })

    const redis: LimiterStore.LimiterStore.Service = {
      reserve: (bucket, tokens, limits, waiter, more) => {
        if (waiter !== undefined) subscriber.expect(waiter)
        return Effect.map(
          run("reserve", scripts.reserve, bucket, limits.windowMs, [
            whole(tokens),
            limits.requests,
            limits.tokens,
            waiter ?? "",
            more === true ? 1 : 0
          ]),
          (reply): LimiterStore.Reservation => {
            if (reply[0] === "TooLarge") return { _tag: "TooLarge" }
            if (reply[0] === "Wait") return { _tag: "Wait", waitMs: Number(reply[1]), usage: usageFrom(reply, 2) }
            const queuedMs = Number(reply[2])
            return {
              _tag: "Admitted",
              id: Number(reply[1]),
              usage: usageFrom(reply, 3),
              // Stryker disable next-line EqualityOperator: a kept place never asks a wait of 0: the waiter ahead is alive, so its time and grace are still to come
              ...(queuedMs >= 0 ? { queuedMs } : {})
            }
          }
        )
      },
      adjust: (bucket, id, tokens, windowMs) =>
        Effect.map(
          run("adjust", scripts.adjust, bucket, windowMs, [id, whole(tokens)]),
          (reply) => usageFrom(reply, 0)
        ),
      remove: (bucket, id, windowMs) =>
        Effect.map(run("remove", scripts.remove, bucket, windowMs, [id]), (reply) => usageFrom(reply, 0)),
      restamp: (bucket, id, windowMs) =>
        Effect.map(run("restamp", scripts.restamp, bucket, windowMs, [id]), (reply) => usageFrom(reply, 0)),
      topUp: (bucket, count, windowMs) =>
        Effect.map(
          run("count the server's usage", scripts.topUp, bucket, windowMs, [
            whole(count.requests),
            count.requestsAgeMs,
            whole(count.tokens),
            count.tokensAgeMs
          ]),
          (reply) => usageFrom(reply, 0)
        ),
      usage: (bucket, windowMs) =>
        Effect.map(run("read the usage", scripts.usage, bucket, windowMs, []), (reply) => usageFrom(reply, 0)),
      leave: (bucket, waiter) => Effect.asVoid(run("leave the line", scripts.leave, bucket, 0, [waiter])),
      released: (bucket, waiter) => subscriber.next(keysOf(bucket).channel, waiter),
      learnt: (bucket) =>
        Effect.map(
          command("read the learnt limits", () => client.get(learntKey(bucket))),
          (text) => text === null ? undefined : LimiterStore.decodeLearnt(text)
        ),
      keepLearnt: (bucket, limits) =>
        Effect.asVoid(command("keep the learnt limits", () =>
          client.set(learntKey(bucket), JSON.stringify(limits), "EX", LimiterStore.learntLifetimeSeconds)))
    }
    if (failMode) {
      return redis
    }
    return withFallback(redis, memory, name, retryAfterMs)
  })

/**
 * The wake-ups: one connection per store, subscribed once (before the first operation, to every bucket's channel
 * under the prefix), so that no wake-up goes out before anyone listens. A message names the waiter first in line;
 * one for a waiter of this store that is not listening (between its answer and its sleep) is kept for it, once.
 * A wake-up missed while the connection is down only costs the waiter its timed wait.
 */
const subscriberOf = (client: Client, pattern: string, timeout: Duration.Duration) =>
  Effect.gen(function*() {
    const connection = yield* Effect.acquireRelease(
      Effect.sync(() => {
        // connected now, and queueing while disconnected (the operations' client may do neither): a subscription
        // asked for while the server is away goes out when it returns, and ioredis subscribes again after a
        // reconnect. No ready check: its INFO, sent after a first SUBSCRIBE, is refused in subscriber mode and
        // resets the connection
        const options = { lazyConnect: false, enableOfflineQueue: true, enableReadyCheck: false }
        const duplicate = isCluster(client) ? client.duplicate([], options) : client.duplicate(options)
        // failures are seen by the operations; a subscriber that cannot connect only misses wake-ups
        // Stryker disable next-line ArrowFunction: a listener that does nothing, written either way
        duplicate.on("error", () => {})
        return duplicate
      }),
      (duplicate) => Effect.sync(() => duplicate.disconnect())
    )
    const waiting = new Map<string, Set<() => void>>()
    const kept = new Set<string>()
    // the waiters of this store: wake-ups of other processes' waiters are not kept
    const ours = new Set<string>()
    const keyOf = (channel: string, waiter: string) => `${channel}\n${waiter}`
    connection.on("pmessage", (_pattern: string, channel: string, waiter: string) => {
      const key = keyOf(channel, waiter)
      const resumes = waiting.get(key)
      if (resumes === undefined) {
        // Stryker disable next-line ConditionalExpression: keeping another process's wake-up costs memory, never a wrong wake-up (its waiter is never ours)
        if (ours.has(waiter)) kept.add(key)
        return
      }
      waiting.delete(key)
      for (const resume of resumes) resume()
    })
    // a server that is away now is subscribed to when it comes back
    yield* Effect.tryPromise(() => connection.psubscribe(pattern)).pipe(Effect.timeout(timeout), Effect.ignore)
    return {
      /** Makes `waiter` one of this store's (its wake-ups are kept for it). */
      expect: (waiter: string): void => {
        ours.add(waiter)
      },
      next: (channel: string, waiter: string): Effect.Effect<void> =>
        Effect.async<void>((resume) => {
          ours.add(waiter)
          const key = keyOf(channel, waiter)
          if (kept.delete(key)) return resume(Effect.void)
          const wake = () => resume(Effect.void)
          let resumes = waiting.get(key)
          if (resumes === undefined) {
            resumes = new Set()
            waiting.set(key, resumes)
          }
          resumes.add(wake)
          return Effect.sync(() => {
            resumes.delete(wake)
            // Stryker disable next-line ConditionalExpression,LogicalOperator: when an empty set is dropped changes memory only: a message finds no one either way
            if (resumes.size === 0 && waiting.get(key) === resumes) waiting.delete(key)
          })
        })
    }
  })

/**
 * Redis while it answers, this process's memory while it does not: ids of entries counted in memory are negative,
 * so that their settlement goes where they were counted.
 */
const withFallback = (
  redis: LimiterStore.LimiterStore.Service,
  memory: LimiterStore.LimiterStore.Infallible,
  name: string,
  retryAfterMs: number
): LimiterStore.LimiterStore.Service => {
  // while in memory: when to try the server again
  let downUntil: number | undefined
  const fallBack = (error: LimiterUnavailable) =>
    Effect.clockWith((clock) => {
      const first = downUntil === undefined
      downUntil = clock.unsafeCurrentTimeMillis() + retryAfterMs
      return first
        ? Effect.zipRight(
          Effect.logWarning(`aifs: ${error.message}; counting in this process's memory until it answers`),
          Metric.increment(ClientMetrics.limiterStoreFallbacks)
        )
        : Effect.void
    })
  const recovered = Effect.suspend(() => {
    if (downUntil === undefined) return Effect.void
    downUntil = undefined
    return Effect.logInfo(`aifs: the limiter store (${name}) answers again`)
  })
  /** `onRedis`, or `onMemory` while the server is down or when it fails. */
  const either = <A>(onRedis: Effect.Effect<A, LimiterUnavailable>, onMemory: Effect.Effect<A>): Effect.Effect<A> =>
    Effect.clockWith((clock) =>
      downUntil !== undefined && clock.unsafeCurrentTimeMillis() < downUntil
        ? onMemory
        : onRedis.pipe(
          Effect.tap(() => recovered),
          Effect.catchAll((error) => Effect.zipRight(fallBack(error), onMemory))
        )
    )
  /**
   * An entry's operation goes to the store that counted it; an entry counted on the server cannot be settled while
   * it is down (it leaves the window on its own).
   */
  const byId =
    (operation: "remove" | "restamp"): LimiterStore.LimiterStore.Service[typeof operation] => (bucket, id, windowMs) =>
      id < 0
        ? memory[operation](bucket, -id, windowMs)
        : either(redis[operation](bucket, id, windowMs), memory.usage(bucket, windowMs))
  return {
    reserve: (bucket, tokens, limits, waiter, more) =>
      either(
        redis.reserve(bucket, tokens, limits, waiter, more),
        Effect.map(
          memory.reserve(bucket, tokens, limits, waiter, more),
          (r) => r._tag === "Admitted" ? { ...r, id: -r.id } : r
        )
      ),
    adjust: (bucket, id, tokens, windowMs) =>
      id < 0
        ? memory.adjust(bucket, -id, tokens, windowMs)
        : either(redis.adjust(bucket, id, tokens, windowMs), memory.usage(bucket, windowMs)),
    remove: byId("remove"),
    restamp: byId("restamp"),
    topUp: (bucket, count, windowMs) =>
      either(redis.topUp(bucket, count, windowMs), memory.topUp(bucket, count, windowMs)),
    usage: (bucket, windowMs) => either(redis.usage(bucket, windowMs), memory.usage(bucket, windowMs)),
    leave: (bucket, waiter) => either(redis.leave(bucket, waiter), memory.leave(bucket, waiter)),
    released: (bucket, waiter) => Effect.raceFirst(redis.released(bucket, waiter), memory.released(bucket, waiter)),
    learnt: (bucket) => either(redis.learnt(bucket), memory.learnt(bucket)),
    keepLearnt: (bucket, limits) =>
      Effect.zipRight(memory.keepLearnt(bucket, limits), either(redis.keepLearnt(bucket, limits), Effect.void))
  }
}

/** Replies of a server that mean the URL's credentials are wrong: no retry can cure them. */
const credentialErrors = /^(WRONGPASS|NOAUTH|NOPERM)|invalid password|AUTH failed/i

/**
 * Connects a client of our own to `url`: a malformed URL or wrong credentials fail at once; a server that does
 * not answer fails in `"fail"` mode, and in `"memory"` mode the store starts in memory and keeps trying.
 */
const connect = (url: string, options: Options) =>
  Effect.gen(function*() {
    const name = redactUrl(url)
    const parsed = yield* Effect.try({
      try: () => new URL(url),
      catch: () => new LimiterUnavailable({ message: `the limiter store's URL is not a URL: ${name}` })
    })
    if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") {
      return yield* new LimiterUnavailable({
        message: `the limiter store's URL must start with redis:// or rediss://, not ${parsed.protocol}//`
      })
    }
    const { Redis } = yield* loadIoredis
    // ioredis rejects a failed connect with "Connection is closed": the reason is in the error event before it
    let lastError: unknown
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const redis = new Redis(url, {
          lazyConnect: true,
          // an operation while the connection is down fails at once (and the store counts in memory)
          enableOfflineQueue: false,
          maxRetriesPerRequest: 1,
          connectTimeout: 2_000,
          // a command that timed out was counted in memory: sent again after a reconnect it would count twice
          autoResendUnfulfilledCommands: false,
          commandTimeout: Duration.toMillis(Duration.decode(options.timeout ?? defaultTimeout)),
          retryStrategy: (times) => Math.min(100 * times, 2_000)
        })
        // failures are seen by the operations, which fall back or fail as configured
        redis.on("error", (error) => {
          lastError = error
        })
        return redis
      }),
      (redis) => Effect.sync(() => redis.disconnect())
    )
    yield* Effect.tryPromise({ try: () => client.connect(), catch: (cause) => cause }).pipe(
      Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("no answer within 5 seconds") }),
      Effect.catchAll((cause) => {
        const reason = describe(lastError ?? cause)
        const message = `the limiter store (${name}) refused the connection: ${reason}`
        if (credentialErrors.test(reason)) return new LimiterUnavailable({ message })
        if (options.onUnavailable === "fail") return new LimiterUnavailable({ message })
        return Effect.logWarning(`aifs: ${message}; counting in this process's memory until it answers`)
      })
    )
    // a database the URL names that the server refuses: ioredis says so only in an error event, connects, and
    // counts in database 0, where other processes on the right URL would not see it
    const refused = lastError === undefined ? undefined : describe(lastError)
    if (refused !== undefined && /DB index/i.test(refused)) {
      return yield* new LimiterUnavailable({
        message: `the limiter store (${name}) cannot use the database its URL names: ${refused}`
      })
    }
    return yield* make(client, { ...options, name })
  })

/**
 * The store on the Redis server at `url` (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS), on a
 * connection of its own closed with the layer. Fails with `LimiterUnavailable` when the URL is malformed, names a
 * database the server refuses, or its credentials are refused (the password never shown), or, with
 * `onUnavailable: "fail"`, when the server does not answer.
 *
 * @example
 * ```ts
 * import { RateLimiter, TokenEstimator } from "effect-aifs"
 * import * as RedisLimiterStore from "effect-aifs/redis"
 * import * as Layer from "effect/Layer"
 *
 * // the limiter on a store shared by every process on the key
 * export const LimiterLive: Layer.Layer<RateLimiter.RateLimiter, unknown> = RateLimiter.layerWith({ tier: "basic" }).pipe(
 *   Layer.provide(Layer.merge(RedisLimiterStore.layer("redis://127.0.0.1:6379", { prefix: "my-app" }), TokenEstimator.layer))
 * )
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (
  url: string | Redacted.Redacted<string>,
  options: Options = {}
): Layer.Layer<LimiterStore.LimiterStore, LimiterUnavailable> =>
  Layer.scoped(LimiterStore.LimiterStore, connect(Redacted.isRedacted(url) ? Redacted.value(url) : url, options))

/**
 * The store on a client you own (a `Redis` or a `Cluster` of ioredis, connected or connecting); the store never
 * closes it. Give the client a `commandTimeout` to time each operation without an Effect timeout per operation.
 *
 * @example
 * ```ts
 * import { RateLimiter, TokenEstimator } from "effect-aifs"
 * import * as RedisLimiterStore from "effect-aifs/redis"
 * import * as Layer from "effect/Layer"
 * import { Cluster } from "ioredis"
 *
 * // a Redis Cluster of your own: the keys of each bucket share a hash tag, so every script runs on one slot
 * const cluster = new Cluster([{ host: "redis-1.internal", port: 6379 }], {
 *   lazyConnect: true,
 *   redisOptions: { commandTimeout: 250 }
 * })
 *
 * export const LimiterLive: Layer.Layer<RateLimiter.RateLimiter> = RateLimiter.layerWith({ tier: "standard4000" }).pipe(
 *   Layer.provide(Layer.merge(RedisLimiterStore.layerFromClient(cluster, { prefix: "my-app" }), TokenEstimator.layer))
 * )
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layerFromClient = (
  client: IORedis.Redis | IORedis.Cluster,
  options: Options = {}
): Layer.Layer<LimiterStore.LimiterStore> => Layer.scoped(LimiterStore.LimiterStore, make(client, options))

/**
 * The store at the URL of a `Config` (for example `Config.redacted("AIFS_LIMITER_REDIS_URL")`).
 *
 * @example
 * ```ts
 * import { ClientConfig, Inference, Node } from "effect-aifs"
 * import * as RedisLimiterStore from "effect-aifs/redis"
 * import * as Config from "effect/Config"
 * import * as Layer from "effect/Layer"
 *
 * // your application's own variable for the shared store's URL, failing in requests rather than falling back
 * export const ClientLive = Inference.layerHttpLimitedWith().pipe(
 *   Layer.provide(RedisLimiterStore.layerConfig(Config.redacted("MY_APP_REDIS_URL"), { onUnavailable: "fail" })),
 *   Layer.provide(Node.httpClient),
 *   Layer.provide(ClientConfig.layerFromEnv)
 * )
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  url: Config.Config<Redacted.Redacted<string> | string>,
  options: Options = {}
): Layer.Layer<LimiterStore.LimiterStore, LimiterUnavailable | ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(url, (url) => layer(url, options)))
