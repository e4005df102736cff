/**
 * Configuration of the inference client: key, base URLs, interface version, tier, retries, timeouts.
 *
 * @example
 * ```ts
 * import { ClientConfig } from "effect-aifs"
 *
 * // everything but the key has a default; `/v1` and the queue base follow the origin of `baseUrl`
 * const config = ClientConfig.make({ apiKey: "gen-...", baseUrl: "http://localhost:8080/v2", timeout: "5 minutes" })
 *
 * console.log(config.v1Url, config.queueUrl, String(config.apiKey))
 * // => http://localhost:8080/v1 http://localhost:8080/queue <redacted>
 * ```
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { parseDurationInput } from "../internal/duration.js"
import * as Plans from "../internal/plans.js"

/**
 * The real service's `/v2` base.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseUrl = "https://llm-server.llmhub.t-systems.net/v2"

/**
 * Interface versions: `1.1.0` (queue endpoints wait, no fine-tuning) and `1.0.0` (fine-tuning endpoints).
 *
 * @since 0.1.0
 * @category models
 */
export type ApiVersion = "1.0.0" | "1.1.0"

/**
 * The service's plans: each has a table of limits per model (requests, input tokens and output tokens a minute) in
 * the service's own data, shipped with the package. `basic` and `standard1000` to `standard4000` are the legacy
 * plans; `essential`, `professional` and `agentic` the current ones; `test` a preview plan.
 *
 * @since 0.4.0
 * @category models
 */
export type Plan = Plans.Plan

/**
 * A key's tier: a plan, whose table gives each model's limits, or `auto`: the limits are learnt.
 *
 * @since 0.1.0
 * @category models
 */
export type Tier = Plan | "auto"

/**
 * The plans' names, as `AIFS_TIER` takes them.
 *
 * @since 0.3.0
 * @category models
 */
export const plans: ReadonlyArray<Plan> = Plans.planNames

/**
 * Whether a tier names a plan.
 *
 * @since 0.3.0
 * @category models
 */
export const isPlan: (tier: string | undefined) => tier is Plan = Plans.isPlan

/**
 * The resolved configuration.
 *
 * @example
 * ```ts
 * import { ClientConfig, Testing } from "effect-aifs"
 * import * as Duration from "effect/Duration"
 * import * as Effect from "effect/Effect"
 *
 * // the configuration in use, e.g. to log it at start-up (the key shows as <redacted>)
 * const program = Effect.gen(function*() {
 *   const config = yield* ClientConfig.ClientConfig
 *   yield* Effect.log(`AIFS at ${config.baseUrl}, tier ${config.tier}, key ${config.apiKey}`)
 *   return Duration.format(config.timeout)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => 10m
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class ClientConfig extends Context.Tag("effect-aifs/ClientConfig")<ClientConfig, ClientConfig.Service>() {}

/**
 * The types of the `ClientConfig` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace ClientConfig {
  /**
   * What `ClientConfig` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** The API key, never shown (`String(apiKey)` is `<redacted>`): as read when the configuration was made. */
    readonly apiKey: Redacted.Redacted<string>
    /**
     * Reads the key again: the transport runs it when the server refuses the key (401), once, and goes on with
     * the key it gives when that differs (a rotated key). Its failure leaves the 401 standing, its message added.
     * Set by `layer` when the key comes from an effect.
     */
    readonly reloadApiKey?: Effect.Effect<Redacted.Redacted<string>, unknown> | undefined
    /** Base of the standard endpoints, e.g. `https://host/v2`. */
    readonly baseUrl: string
    /** Base of vector stores and their files, e.g. `https://host/v1`. */
    readonly v1Url: string
    /** Base of the queue endpoints, e.g. `https://host/queue`. */
    readonly queueUrl: string
    /** Interface version. */
    readonly apiVersion: ApiVersion
    /** The key's plan (its table gives each model's limits), or `auto`: its limits are learnt. */
    readonly tier: Tier
    /** Retries after the first attempt. */
    readonly maxRetries: number
    /** Time limit of one attempt, from sending to the last byte of the body (for streams: the end). */
    readonly timeout: Duration.Duration
    /** Time limit to open the connection (TCP and TLS), applied by the Node HTTP client. */
    readonly connectTimeout: Duration.Duration
    /** Time limit from sending to the response's status line on `/v2` and `/v1`. */
    readonly firstByteTimeout: Duration.Duration
    /** Time limit to the first byte and in total on the queue, where a request waits for capacity. */
    readonly queueTimeout: Duration.Duration
    /** Longest silence between two chunks of a stream. */
    readonly streamIdleTimeout: Duration.Duration
  }
}

/**
 * An API key as given: `gen-` + 48 characters on the real service.
 *
 * @since 0.2.0
 * @category models
 */
export type ApiKey = Redacted.Redacted<string> | string

/**
 * What `make` and `layer` take; everything but the key has a default.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The API key. */
  readonly apiKey: ApiKey
  /** Base of the standard endpoints (default: the real service's `/v2`). */
  readonly baseUrl?: string | undefined
  /** Base of vector stores (default: `/v1` on the origin of `baseUrl`). */
  readonly v1Url?: string | undefined
  /** Base of the queue (default: `/queue` on the origin of `baseUrl`). */
  readonly queueUrl?: string | undefined
  /** Interface version (default `1.1.0`). */
  readonly apiVersion?: ApiVersion | undefined
  /**
   * The key's plan (`basic`, `standard1000`-`standard4000`, `essential`, `professional`, `agentic`): each model's
   * limits from the plan's table, those the table lacks learnt; or `auto` (the default): every limit learnt.
   */
  readonly tier?: Tier | undefined
  /** Retries after the first attempt (default 6). */
  readonly maxRetries?: number | undefined
  /** Time limit of one attempt, body or stream included (default 10 minutes: long generations are slow). */
  readonly timeout?: Duration.DurationInput | undefined
  /** Time limit to open a connection (default 10 seconds). */
  readonly connectTimeout?: Duration.DurationInput | undefined
  /**
   * Time limit to the response's status line (default 10 minutes: a non-streamed generation answers only
   * when it is done; a stream answers at once, so a shorter one catches a stuck server early).
   */
  readonly firstByteTimeout?: Duration.DurationInput | undefined
  /** Time limit to the first byte and in total on queue routes (default 30 minutes). */
  readonly queueTimeout?: Duration.DurationInput | undefined
  /** Longest silence between stream chunks (default 2 minutes). */
  readonly streamIdleTimeout?: Duration.DurationInput | undefined
}

/**
 * `Options` with a key that may come from an effect (a mounted secret file, a vault, a `Config`): read when the
 * layer is built, and again when the server refuses the key (see `ClientConfig.Service.reloadApiKey`).
 *
 * @since 0.2.0
 * @category models
 */
export interface OptionsWithKeySource<E = never, R = never> extends Omit<Options, "apiKey"> {
  /** The API key, or an effect that reads it. */
  readonly apiKey: ApiKey | Effect.Effect<ApiKey, E, R>
}

const redacted = (key: ApiKey): Redacted.Redacted<string> => Redacted.isRedacted(key) ? key : Redacted.make(key)

const trimSlash = (url: string): string => url.replace(/\/+$/, "")

const originOf = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return trimSlash(url)
  }
}

/**
 * Resolves options into a configuration, deriving the `/v1` and queue bases from the origin of `baseUrl`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): ClientConfig.Service => {
  const baseUrl = trimSlash(options.baseUrl ?? defaultBaseUrl)
  const origin = originOf(baseUrl)
  return {
    apiKey: redacted(options.apiKey),
    baseUrl,
    v1Url: trimSlash(options.v1Url ?? `${origin}/v1`),
    queueUrl: trimSlash(options.queueUrl ?? `${origin}/queue`),
    apiVersion: options.apiVersion ?? "1.1.0",
    tier: options.tier ?? "auto",
    maxRetries: options.maxRetries ?? 6,
    timeout: Duration.decode(options.timeout ?? Duration.minutes(10)),
    connectTimeout: Duration.decode(options.connectTimeout ?? Duration.seconds(10)),
    firstByteTimeout: Duration.decode(options.firstByteTimeout ?? Duration.minutes(10)),
    queueTimeout: Duration.decode(options.queueTimeout ?? Duration.minutes(30)),
    streamIdleTimeout: Duration.decode(options.streamIdleTimeout ?? Duration.minutes(2))
  }
}

/**
 * A configuration from plain options.
 *
 * @example
 * ```ts
 * import { ClientConfig } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const ConfigLive = ClientConfig.layer({
 *   apiKey: "gen-...",
 *   tier: "standard4000",
 *   maxRetries: 3,
 *   firstByteTimeout: "30 seconds"
 * })
 *
 * const program = Effect.map(ClientConfig.ClientConfig, (config) => `${config.tier}, ${config.maxRetries} retries`)
 *
 * Effect.runPromise(program.pipe(Effect.provide(ConfigLive))).then(console.log)
 * // => standard4000, 3 retries
 * ```
 *
 * @example
 * ```ts
 * import { ClientConfig } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import { readFile } from "node:fs/promises"
 *
 * // a key that is rotated: read from its mounted secret file now, and again when the server refuses it (401)
 * const ConfigLive = ClientConfig.layer({
 *   apiKey: Effect.tryPromise(() => readFile("/run/secrets/aifs-api-key", "utf8")).pipe(Effect.map((t) => t.trim()))
 * })
 *
 * export const program = Effect.map(ClientConfig.ClientConfig, (config) => config.reloadApiKey !== undefined).pipe(
 *   Effect.provide(ConfigLive)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E = never, R = never>(options: OptionsWithKeySource<E, R>): Layer.Layer<ClientConfig, E, R> => {
  const apiKey = options.apiKey
  if (!Effect.isEffect(apiKey)) return Layer.succeed(ClientConfig, make({ ...options, apiKey }))
  return Layer.effect(
    ClientConfig,
    Effect.gen(function*() {
      const context = yield* Effect.context<R>()
      // provided with its context: a configuration printed shows no part of the source (`Effect.succeed("gen-...")`)
      const read = Effect.map(Effect.provide(apiKey, context), redacted)
      return { ...make({ ...options, apiKey: yield* read }), reloadApiKey: read }
    })
  )
}

/**
 * A configuration read from `Config` values (any provider: environment, files, a map in tests).
 *
 * @example
 * ```ts
 * import { ClientConfig } from "effect-aifs"
 * import * as Config from "effect/Config"
 * import * as ConfigProvider from "effect/ConfigProvider"
 * import * as Effect from "effect/Effect"
 *
 * // your application's own variable names, and defaults of your own
 * const ConfigLive = ClientConfig.layerConfig({
 *   apiKey: Config.redacted("MY_APP_AIFS_KEY"),
 *   tier: Config.literal("basic", "standard4000")("MY_APP_AIFS_TIER").pipe(
 *     Config.withDefault("standard4000" as const)
 *   ),
 *   timeout: ClientConfig.duration("MY_APP_AIFS_TIMEOUT")
 * })
 *
 * const program = Effect.map(ClientConfig.ClientConfig, (config) => `${config.tier}, ${config.timeout}`)
 *
 * // the environment in production; a map here
 * const env = ConfigProvider.fromMap(new Map([["MY_APP_AIFS_KEY", "gen-..."], ["MY_APP_AIFS_TIMEOUT", "1m30s"]]))
 *
 * Effect.runPromise(program.pipe(Effect.provide(ConfigLive), Effect.withConfigProvider(env))).then(console.log)
 * // => standard4000, Duration(1m 30s)
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (config: Config.Config.Wrap<Options>): Layer.Layer<ClientConfig, ConfigError.ConfigError> =>
  Layer.effect(ClientConfig, Effect.map(Config.unwrap(config), make))

/**
 * A duration config that reads `30s`, `1m30s` (Go style), `30 seconds` or bare seconds.
 *
 * @since 0.1.0
 * @category config
 */
export const duration = (name: string): Config.Config<Duration.Duration> => durationWhere(name, () => true, "")

/**
 * A duration config above zero (a time limit or a window, where no time at all can never work), read as `duration`.
 *
 * @since 0.2.0
 * @category config
 */
export const positiveDuration = (name: string): Config.Config<Duration.Duration> =>
  durationWhere(name, Duration.greaterThan(Duration.zero), " above zero")

const durationWhere = (name: string, valid: (d: Duration.Duration) => boolean, what: string) =>
  Config.string(name).pipe(
    Config.mapOrFail((text) =>
      Option.match(Option.filter(parseDurationInput(text), valid), {
        onNone: () =>
          Either.left(
            ConfigError.InvalidData([], `Expected a duration${what} such as 30s, 1m30s or 30 seconds, got "${text}"`)
          ),
        onSome: Either.right
      })
    )
  )

/**
 * A URL config: an absolute `http://` or `https://` URL (a base URL that can never work fails before any request).
 *
 * @since 0.2.0
 * @category config
 */
export const httpUrl = (name: string): Config.Config<string> =>
  Config.string(name).pipe(Config.mapOrFail((text) => {
    // empty counts as unset (`AIFS_BASE_URL= aifs ...` is how a shell unsets it for one command)
    const trimmed = text.trim()
    if (trimmed === "") return Either.left(ConfigError.MissingData([], `${name} is empty`))
    const url = Option.liftThrowable((t: string) => new URL(t))(trimmed)
    return Option.isSome(url) && (url.value.protocol === "http:" || url.value.protocol === "https:")
      ? Either.right(trimmed)
      : Either.left(ConfigError.InvalidData([], `Expected an http(s) URL such as ${defaultBaseUrl}, got "${text}"`))
  }))

/**
 * The environment variables read by `layerFromEnv` besides the key: where a key comes from elsewhere (a file, as
 * `Node.layerFromEnv` reads `AIFS_API_KEY_FILE`), the rest of the configuration.
 *
 * @since 0.2.0
 * @category config
 */
export const settingsFromEnv: Config.Config<Omit<Options, "apiKey">> = Config.all({
  baseUrl: httpUrl("AIFS_BASE_URL").pipe(Config.withDefault(defaultBaseUrl)),
  v1Url: Config.option(httpUrl("AIFS_V1_URL")).pipe(Config.map(Option.getOrUndefined)),
  queueUrl: Config.option(httpUrl("AIFS_QUEUE_URL")).pipe(Config.map(Option.getOrUndefined)),
  apiVersion: Config.literal("1.1.0", "1.0.0")("AIFS_API_VERSION").pipe(Config.withDefault("1.1.0" as const)),
  tier: Config.literal(...Plans.planNames, "auto")("AIFS_TIER").pipe(
    Config.withDefault("auto" as const)
  ),
  maxRetries: Config.integer("AIFS_MAX_RETRIES").pipe(
    Config.validate({ message: "Expected a number of retries from 0 to 100", validation: (n) => n >= 0 && n <= 100 }),
    Config.withDefault(6)
  ),
  timeout: positiveDuration("AIFS_TIMEOUT").pipe(Config.withDefault(Duration.minutes(10))),
  connectTimeout: positiveDuration("AIFS_CONNECT_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10))),
  firstByteTimeout: positiveDuration("AIFS_FIRST_BYTE_TIMEOUT").pipe(Config.withDefault(Duration.minutes(10))),
  queueTimeout: positiveDuration("AIFS_QUEUE_TIMEOUT").pipe(Config.withDefault(Duration.minutes(30))),
  streamIdleTimeout: positiveDuration("AIFS_STREAM_IDLE_TIMEOUT").pipe(Config.withDefault(Duration.minutes(2)))
})

/** What a missing key says: where keys come from, the local emulator's included. */
const missingKey = "AIFS_API_KEY is not set: your project's key (gen-...) from the AI Foundation Services portal, "
  + "or against a local emulator (`npx aifs emulator`) one of the development keys it prints"

/**
 * The environment variables read by `layerFromEnv`: `AIFS_API_KEY` and `settingsFromEnv`.
 *
 * @since 0.1.0
 * @category config
 */
export const fromEnv: Config.Config<Options> = Config.zipWith(
  // read as text and made `Redacted` at once: `Config.redacted` hides the reason of a missing key as well
  // ("Missing data at AIFS_API_KEY: <redacted>"), and a missing key has no secret to hide
  Config.option(Config.string("AIFS_API_KEY")).pipe(
    Config.mapOrFail(Option.match({
      onNone: () => Either.left(ConfigError.MissingData(["AIFS_API_KEY"], missingKey)),
      onSome: (key) => Either.right(Redacted.make(key))
    })),
    Config.withDescription("API key of AI Foundation Services (gen-...); required for the real service")
  ),
  settingsFromEnv,
  (apiKey, settings): Options => ({ ...settings, apiKey })
)

/**
 * The configuration from `AIFS_*` environment variables. A missing `AIFS_API_KEY` is a `ConfigError`
 * naming it.
 *
 * @example
 * ```ts
 * import { ClientConfig } from "effect-aifs"
 * import * as ConfigProvider from "effect/ConfigProvider"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.map(ClientConfig.ClientConfig, (config) => `${config.baseUrl} (${config.apiVersion})`)
 *
 * // AIFS_API_KEY is required; AIFS_BASE_URL, AIFS_API_VERSION, AIFS_TIER, AIFS_MAX_RETRIES, AIFS_TIMEOUT,
 * // AIFS_CONNECT_TIMEOUT, AIFS_FIRST_BYTE_TIMEOUT, AIFS_QUEUE_TIMEOUT, AIFS_STREAM_IDLE_TIMEOUT... are not
 * const env = ConfigProvider.fromMap(new Map([["AIFS_API_KEY", "gen-..."], ["AIFS_API_VERSION", "1.0.0"]]))
 *
 * Effect.runPromise(program.pipe(Effect.provide(ClientConfig.layerFromEnv), Effect.withConfigProvider(env)))
 *   .then(console.log)
 * // => https://llm-server.llmhub.t-systems.net/v2 (1.0.0)
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromEnv: Layer.Layer<ClientConfig, ConfigError.ConfigError> = Layer.effect(
  ClientConfig,
  Effect.map(fromEnv, make)
)
