/**
 * A `LimiterStore` on Redis (or Valkey, or Redis Cluster), so that every process on one key shares its budget:
 * the same exact sliding window as the memory store, each operation one atomic Lua script on the server's clock,
 * waiters served first come, first served across processes and woken when capacity comes back.
 *
 * When the server cannot be reached or answers too late, the store counts in the process's own memory (one
 * warning, the metric `aifs.limiter.store.fallbacks`) and goes back to Redis when it answers again; with
 * `onUnavailable: "fail"` a request fails with `LimiterUnavailable` instead. Either way no request is lost. While
 * the connection is down, no operation waits for the time limit, and a waiter asleep on a wait the server gave looks
 * again at once: every process goes on under its own limiter.
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
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as IORedis from "ioredis"
import { createHash } from "node:crypto"
import * as Link from "./internal/redisLink.js"
import * as Scripts from "./internal/redisScripts.js"
import * as Spend from "./internal/spend.js"
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
  /**
   * How long an operation may take before the server counts as unavailable (default 250 ms): the server's time, not
   * this process's (an answer that came while the process was busy, starting or decoding, is read before it is late).
   */
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

/** A script, run by its digest (loaded when the store starts and on every reconnection). */
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

const allScripts = Object.values(scripts).map((s) => s.lua)

const defaultTimeout = Duration.millis(250)

/**
 * How long the store waits at start for its first connection, its scripts and its subscription: the first round trips
 * of a connection, and the first operations of a process that starts, are slower than any later one, and are not the
 * operations' time limit's to judge.
 */
const startMs = 2_000

/**
 * Where a bucket's keys live: one hash tag per bucket (one Cluster slot). `v2`: the keys of the version before four
 * budgets (entries `requests:tokens`) are never read, by this version or theirs by it; they expire on their own.
 */
/** The keys' prefix when the options name none. */
const defaultPrefix = "aifs"

const tagOf = (prefix: string, bucket: string) => `{${prefix}:v2:${bucket}}`

/** Counts go to Redis as whole numbers (HINCRBY takes no fractions), rounded up: never less than was asked for. */
const whole = (n: number): number => Math.max(0, Math.ceil(n))

/** Budgets as the scripts take them: requests, input, output, combined. */
const budgetsOf = (b: LimiterStore.Budgets) => [whole(b.requests), whole(b.input), whole(b.output), whole(b.tokens)]

/** The usage at `from` in a script's answer: requests, input, output, combined, then the time to the next expiry. */
const usageFrom = (reply: ReadonlyArray<string | number>, from: number): LimiterStore.Usage => ({
  requests: Number(reply[from]),
  input: Number(reply[from + 1]),
  output: Number(reply[from + 2]),
  tokens: Number(reply[from + 3]),
  nextExpiryMs: Number(reply[from + 4])
})

const reservationFrom = (reply: ReadonlyArray<string | number>): LimiterStore.Reservation => {
  if (reply[0] === "TooLarge") return { _tag: "TooLarge" }
  if (reply[0] === "Wait") return { _tag: "Wait", waitMs: Number(reply[1]), usage: usageFrom(reply, 2) }
  const queuedMs = Number(reply[2])
  return {
    _tag: "Admitted",
    id: Number(reply[1]),
    usage: usageFrom(reply, 3),
    ...(queuedMs >= 0 ? { queuedMs } : {})
  }
}

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
 * ioredis's words for a connection that is down, in ours: an operation while it is down fails at once (its client
 * is not ready, or `enableOfflineQueue: false` names that option).
 */
const connectionDown = /^Stream isn't writeable|^Connection is closed/
const downInWords = "the connection is down (reconnecting)"

/** What a failure of the server says, without anything secret (ioredis's messages name no password). */
const describe = (cause: unknown): string => {
  const text = cause instanceof Error ? cause.message.split("\n")[0]! : String(cause)
  return connectionDown.test(text) ? downInWords : text.slice(0, 200)
}

/**
 * The store on a client, connected or connecting. The client stays the caller's (not closed here); a second
 * connection for the wake-ups (`duplicate`) lives as long as the scope. The store waits for the client's first connection (at most
 * two seconds, less when it fails) and loads its scripts before its first operation.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (
  client: Link.Client,
  options: Options & { readonly name?: string | undefined } = {}
): Effect.Effect<LimiterStore.LimiterStore.Service, never, Scope.Scope> =>
  Effect.gen(function*() {
    const prefix = options.prefix ?? defaultPrefix
    const name = options.name ?? "redis"
    // a server that does not take them only costs the first operations NOSCRIPT and a second round trip
    const load = () => Link.loadScripts(client, allScripts).catch(() => undefined)
    yield* Link.firstConnection(client, startMs)
    // a server restarted has lost them: loaded again on every reconnection (meanwhile NOSCRIPT sends the script)
    yield* Link.listen(client, ["ready"], () => void load())
    if (Link.isUp(client)) yield* Effect.promise(load).pipe(Effect.timeout(Duration.millis(startMs)), Effect.ignore)
    const subscriber = yield* Link.subscriberOf(client, `${tagOf(prefix, "*")}:released`, startMs)
    const redis = onRedis(client, subscriber, { ...options, prefix, name })
    if (options.onUnavailable === "fail") return redis
    const fallback = withFallback(redis, LimiterStore.makeMemory(), name, options.retryAfter)
    yield* Link.listen(client, ["close"], fallback.lost)
    return fallback.store
  })

type Subscriber = Effect.Effect.Success<ReturnType<typeof Link.subscriberOf>>

/** A bucket's keys (see internal/redisScripts.ts) and the channel of its wake-ups. */
const keysOf = (prefix: string, bucket: string) => {
  const tag = tagOf(prefix, bucket)
  return {
    keys: [`${tag}:log`, `${tag}:val`, `${tag}:line`, `${tag}:due`, `${tag}:seq`, `${tag}:sum`],
    channel: `${tag}:released`
  }
}

/** A script run by its digest; sent whole to a server that does not have it (restarted, flushed). */
const evaluate = async (
  client: Link.Client,
  s: Script,
  keys: ReadonlyArray<string>,
  args: ReadonlyArray<string | number>
) => {
  try {
    return await client.evalsha(s.sha, keys.length, ...keys, ...args) as Array<string | number>
  } catch (error) {
    if (error instanceof Error && error.message.startsWith("NOSCRIPT")) {
      return await client.eval(s.lua, keys.length, ...keys, ...args) as Array<string | number>
    }
    throw error
  }
}

/** The operations on the server: each one script (or one command), failing at once while the connection is down. */
const onRedis = (
  client: Link.Client,
  subscriber: Subscriber,
  options: Options & { readonly prefix: string; readonly name: string }
): Required<LimiterStore.LimiterStore.Service> => {
  const timeoutMs = Duration.toMillis(Duration.decode(options.timeout ?? defaultTimeout))
  const learntKey = (bucket: string) => `${tagOf(options.prefix, bucket)}:learnt`
  const spendKey = (key: string, month: string) => `${tagOf(options.prefix, `spend:${key}`)}:${month}`
  const unavailable = (operation: string, cause: unknown) =>
    new LimiterUnavailable({
      message: `the limiter store (${options.name}) failed to ${operation}: ${
        // a client of the caller's may time out on its own (its `commandTimeout`)
        cause instanceof Error && cause.message === "Command timed out"
          ? new Link.TimedOut(timeoutMs).message
          : describe(cause)}`
    })
  /** One round trip, timed; while the connection is down, nothing is sent (and nothing waits for a time limit). */
  const send = <A>(operation: string, f: () => Promise<A>) =>
    Link.isUp(client)
      ? Effect.tryPromise({ try: () => Link.within(f(), timeoutMs), catch: (cause) => unavailable(operation, cause) })
      : Effect.fail(unavailable(operation, new Error(downInWords)))
  /** Runs a script on the bucket, with the common arguments before `args`. */
  const run = (operation: string, s: Script, bucket: string, windowMs: number, args: ReadonlyArray<string | number>) =>
    Effect.clockWith((clock) => {
      const { channel, keys } = keysOf(options.prefix, bucket)
      const now = options.clock === "effect" ? String(clock.unsafeCurrentTimeMillis()) : ""
      const common = [now, windowMs, LimiterStore.waiterGraceMs, channel]
      return send(operation, () => evaluate(client, s, keys, [...common, ...args]))
    })
  const usageAfter = (
    operation: string,
    s: Script,
    bucket: string,
    windowMs: number,
    args: ReadonlyArray<string | number>
  ) => Effect.map(run(operation, s, bucket, windowMs, args), (reply) => usageFrom(reply, 0))

  return {
    reserve: (bucket, request, limits, waiter, more) => {
      if (waiter !== undefined) subscriber.expect(waiter)
      const limitsOf = [limits.requests, limits.input, limits.output, limits.tokens]
      const args = [...budgetsOf(request), ...limitsOf, waiter ?? "", more === true ? 1 : 0]
      return Effect.map(run("reserve", scripts.reserve, bucket, limits.windowMs, args), reservationFrom)
    },
    adjust: (bucket, id, tokens, windowMs) =>
      usageAfter("adjust", scripts.adjust, bucket, windowMs, [id, ...budgetsOf(tokens).slice(1)]),
    remove: (bucket, id, windowMs) => usageAfter("remove", scripts.remove, bucket, windowMs, [id]),
    restamp: (bucket, id, windowMs) => usageAfter("restamp", scripts.restamp, bucket, windowMs, [id]),
    topUp: (bucket, count, windowMs) =>
      usageAfter("count the server's usage", scripts.topUp, bucket, windowMs, [
        whole(count.requests),
        count.requestsAgeMs,
        whole(count.tokens),
        count.tokensAgeMs
      ]),
    usage: (bucket, windowMs) => usageAfter("read the usage", scripts.usage, bucket, windowMs, []),
    leave: (bucket, waiter) => Effect.asVoid(run("leave the line", scripts.leave, bucket, 0, [waiter])),
    released: (bucket, waiter) => subscriber.next(keysOf(options.prefix, bucket).channel, waiter),
    learnt: (bucket) =>
      Effect.map(
        send("read the learnt limits", () => client.get(learntKey(bucket))),
        (text) => text === null ? undefined : LimiterStore.decodeLearnt(text)
      ),
    keepLearnt: (bucket, limits) =>
      Effect.asVoid(
        send("keep the learnt limits", () =>
          client.set(learntKey(bucket), JSON.stringify(limits), "EX", LimiterStore.learntLifetimeSeconds))
      ),
    addSpend: (key, month, model, spent) =>
      Effect.asVoid(send("add the spend", () => {
        const hash = spendKey(key, month)
        const multi = client.multi()
        for (const field of spendFields) multi.hincrbyfloat(hash, `${model}\u0000${field}`, spent[field])
        return multi.expire(hash, spendLifetimeSeconds).exec()
      })),
    spendOf: (key, month) => Effect.map(send("read the spend", () => client.hgetall(spendKey(key, month))), spendFrom),
    ...windowsOn(client, options.prefix, send)
  }
}

/** A key's context windows on the server: one string key each, kept as long as learnt limits. */
const windowsOn = (
  client: Link.Client,
  prefix: string,
  send: <A>(operation: string, f: () => Promise<A>) => Effect.Effect<A, LimiterUnavailable>
): Required<Pick<LimiterStore.LimiterStore.Service, "windowsOf" | "keepWindows">> => {
  const windowsKey = (key: string) => `${tagOf(prefix, `windows:${key}`)}:windows`
  return {
    windowsOf: (key) =>
      Effect.map(
        send("read the context windows", () => client.get(windowsKey(key))),
        (text) => text === null ? undefined : LimiterStore.decodeWindows(text)
      ),
    keepWindows: (key, windows) =>
      Effect.asVoid(
        send("keep the context windows", () =>
          client.set(windowsKey(key), JSON.stringify(windows), "EX", LimiterStore.learntLifetimeSeconds))
      )
  }
}

/** What a key's month hash holds of each model. */
const spendFields = ["requests", "input", "output", "cached", "written", "cost"] as const

/** A month's spend is kept 40 days: long enough for its month's reports, gone before a year's keys pile up. */
const spendLifetimeSeconds = 40 * 24 * 3600

/** A key's month hash (`<model>\u0000<field>`: a number) as tallies by model; fields of no tally are left out. */
const spendFrom = (hash: Record<string, string>): Record<string, Spend.Tally> => {
  const models: Record<string, Record<string, number>> = {}
  for (const [name, value] of Object.entries(hash)) {
    const cut = name.lastIndexOf("\u0000")
    const field = name.slice(cut + 1)
    const amount = Number(value)
    if (cut < 0 || !(spendFields as ReadonlyArray<string>).includes(field) || !Number.isFinite(amount)) continue
    const model = name.slice(0, cut)
    models[model] = { ...models[model], [field]: amount }
  }
  return Object.fromEntries(Object.entries(models).map(([model, fields]) => [model, { ...Spend.empty, ...fields }]))
}

/**
 * What an outage owes the waiters the server told to wait (for capacity other processes hold, or behind their waiters
 * in its line): when the store turns to memory, each looks again at once, in memory, as a waiter memory told to wait
 * is woken by memory; it would otherwise sleep through the outage, in a line nobody serves. A waiter memory told to
 * wait is not woken by it (a wake-up for nothing, again and again while the outage lasts).
 */
const outageWakeUps = () => {
  // completed when the store turns to memory; a new one once the server answers again
  let turned = Deferred.unsafeMake<void>(FiberId.none)
  let isLost = false
  // the waiters whose last answer was the server's, by bucket and waiter
  const toldByServer = new Set<string>()
  return {
    lost: (): void => {
      isLost = true
      Deferred.unsafeDone(turned, Effect.void)
    },
    answered: (): void => {
      if (!isLost) return
      isLost = false
      turned = Deferred.unsafeMake<void>(FiberId.none)
    },
    told: (bucket: string, waiter: string | undefined, byServer: boolean) =>
      Effect.sync(() => {
        if (waiter === undefined) return
        if (byServer) toldByServer.add(`${bucket}\n${waiter}`)
        else toldByServer.delete(`${bucket}\n${waiter}`)
      }),
    next: (bucket: string, waiter: string): Effect.Effect<void> =>
      Effect.suspend(() => toldByServer.has(`${bucket}\n${waiter}`) ? Deferred.await(turned) : Effect.never)
  }
}

/**
 * Whether an operation goes to Redis or to memory: Redis until an operation fails (one warning, the metric), then
 * memory until `retryAfterMs` has passed, then Redis again, tried by one operation at a time (a server that hangs
 * makes that one wait for the time limit, never all of them).
 */
const fallbackSwitch = (name: string, retryAfterMs: number, outage: ReturnType<typeof outageWakeUps>) => {
  // while in memory: when to try the server again
  let downUntil: number | undefined
  // a try of the server is under way: the operations meanwhile go on in memory, none waits for its answer
  let trying = false
  const fallBack = (error: LimiterUnavailable) =>
    Effect.clockWith((clock) => {
      const first = downUntil === undefined
      downUntil = clock.unsafeCurrentTimeMillis() + retryAfterMs
      if (!first) return Effect.void
      outage.lost()
      return Effect.zipRight(
        Effect.logWarning(`aifs: ${error.message}; counting in this process's memory until it answers`),
        Metric.increment(ClientMetrics.limiterStoreFallbacks)
      )
    })
  const recovered = Effect.suspend(() => {
    outage.answered()
    if (downUntil === undefined) return Effect.void
    downUntil = undefined
    return Effect.logInfo(`aifs: the limiter store (${name}) answers again`)
  })
  const attempt = <A>(onRedis: Effect.Effect<A, LimiterUnavailable>, onMemory: Effect.Effect<A>): Effect.Effect<A> =>
    onRedis.pipe(
      Effect.tap(() => recovered),
      Effect.catchAll((error) => Effect.zipRight(fallBack(error), onMemory))
    )
  /** `onRedis`, or `onMemory` while the server is down. */
  return <A>(onRedis: Effect.Effect<A, LimiterUnavailable>, onMemory: Effect.Effect<A>): Effect.Effect<A> =>
    Effect.clockWith((clock) => {
      if (downUntil === undefined) return attempt(onRedis, onMemory)
      if (trying || clock.unsafeCurrentTimeMillis() < downUntil) return onMemory
      trying = true
      return Effect.ensuring(attempt(onRedis, onMemory), Effect.sync(() => trying = false))
    })
}

/**
 * Redis while it answers, this process's memory while it does not: ids of entries counted in memory are negative,
 * so that their settlement goes where they were counted. `lost` is to be called when the connection is lost (see
 * `outageWakeUps`).
 */
const withFallback = (
  redis: Required<LimiterStore.LimiterStore.Service>,
  memory: LimiterStore.LimiterStore.Infallible,
  name: string,
  retryAfter: Duration.DurationInput | undefined
): { readonly store: LimiterStore.LimiterStore.Service; readonly lost: () => void } => {
  const outage = outageWakeUps()
  const either = fallbackSwitch(name, Duration.toMillis(Duration.decode(retryAfter ?? Duration.seconds(1))), outage)
  /**
   * An entry's operation goes to the store that counted it; an entry counted on the server cannot be settled while
   * it is down (it leaves the window on its own).
   */
  const byId =
    (operation: "remove" | "restamp"): LimiterStore.LimiterStore.Service[typeof operation] => (bucket, id, windowMs) =>
      id < 0
        ? memory[operation](bucket, -id, windowMs)
        : either(redis[operation](bucket, id, windowMs), memory.usage(bucket, windowMs))
  const store: LimiterStore.LimiterStore.Service = {
    reserve: (bucket, request, limits, waiter, more) =>
      either(
        Effect.tap(redis.reserve(bucket, request, limits, waiter, more), () => outage.told(bucket, waiter, true)),
        Effect.map(
          Effect.tap(memory.reserve(bucket, request, limits, waiter, more), () => outage.told(bucket, waiter, false)),
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
    leave: (bucket, waiter) =>
      Effect.zipRight(
        outage.told(bucket, waiter, false),
        either(redis.leave(bucket, waiter), memory.leave(bucket, waiter))
      ),
    released: (bucket, waiter) =>
      Effect.raceAll([redis.released(bucket, waiter), memory.released(bucket, waiter), outage.next(bucket, waiter)]),
    learnt: (bucket) => either(redis.learnt(bucket), memory.learnt(bucket)),
    keepLearnt: (bucket, limits) =>
      Effect.zipRight(memory.keepLearnt(bucket, limits), either(redis.keepLearnt(bucket, limits), Effect.void)),
    // in an outage, what is spent is counted in memory (and the store misses it): the meter says so with the rest
    addSpend: (key, month, model, spent) =>
      either(redis.addSpend(key, month, model, spent), memory.addSpend(key, month, model, spent)),
    spendOf: (key, month) => either(redis.spendOf(key, month), memory.spendOf(key, month)),
    // the memory store keeps none: in an outage, a process lists the models for itself
    windowsOf: (key) => either(redis.windowsOf(key), Effect.succeed(undefined)),
    keepWindows: (key, windows) => either(redis.keepWindows(key, windows), Effect.void)
  }
  return { store, lost: outage.lost }
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
          // no commandTimeout: the store times each operation itself, without counting this process's own pauses
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
      // which store counts: every process on this URL and prefix shares the key's budgets
      Effect.zipRight(
        Effect.logInfo(`aifs: the rate limiter counts on Redis at ${name} (prefix ${options.prefix ?? defaultPrefix})`)
      ),
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
 * closes it. The store times each operation itself (`timeout`); a `commandTimeout` of the client's applies as well.
 *
 * @example
 * ```ts
 * import { RateLimiter, TokenEstimator } from "effect-aifs"
 * import * as RedisLimiterStore from "effect-aifs/redis"
 * import * as Layer from "effect/Layer"
 * import { Cluster } from "ioredis"
 *
 * // a Redis Cluster of your own: the keys of each bucket share a hash tag, so every script runs on one slot
 * const cluster = new Cluster([{ host: "redis-1.internal", port: 6379 }], { lazyConnect: true })
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
