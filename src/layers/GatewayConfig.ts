/**
 * Configuration of the retrieval gateway client: its own URL, user and password (never the inference key),
 * the query pipeline's service path, token refresh, retries and timeouts.
 *
 * @example
 * ```ts
 * import { GatewayConfig } from "effect-aifs"
 *
 * // the gateway has its own URL and credentials: it never sees the inference key
 * const config = GatewayConfig.make({ username: "me", password: "...", queryPipelinePath: "query-pipelines" })
 *
 * console.log(config.url, config.queryPipelinePath, String(config.password))
 * // => https://api-gateway.ai.t-systems.net query-pipelines <redacted>
 * ```
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { duration, httpUrl, positiveDuration } from "./ClientConfig.js"

/**
 * The real gateway.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultUrl = "https://api-gateway.ai.t-systems.net"

/**
 * The query pipeline's service path as the API reference names it; the guides say `query-pipelines`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultQueryPipelinePath = "query-pipeline"

/**
 * The resolved configuration.
 *
 * @example
 * ```ts
 * import { GatewayConfig, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.map(GatewayConfig.GatewayConfig, (config) => `${config.username} at ${config.url}`)
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class GatewayConfig extends Context.Tag("effect-aifs/GatewayConfig")<GatewayConfig, GatewayConfig.Service>() {}

/**
 * The types of the `GatewayConfig` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace GatewayConfig {
  /**
   * What `GatewayConfig` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** The gateway's base URL, without a trailing slash. */
    readonly url: string
    /** The gateway user. */
    readonly username: string
    /** The user's password, never shown. */
    readonly password: Redacted.Redacted<string>
    /** Service path of the query pipeline (`query-pipeline` or `query-pipelines`). */
    readonly queryPipelinePath: string
    /** How long before its expiry a token is replaced (at most a fifth of its lifetime). */
    readonly refreshAhead: Duration.Duration
    /** Retries after the first attempt. */
    readonly maxRetries: number
    /** Time limit of one attempt. */
    readonly timeout: Duration.Duration
    /** Time limit to open a connection, applied by the Node HTTP client. */
    readonly connectTimeout: Duration.Duration
  }
}

/**
 * What `make` and `layer` take; everything but the credentials has a default.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The gateway's base URL (default: the real gateway). */
  readonly url?: string | undefined
  /** The gateway user. */
  readonly username: string
  /** The password. */
  readonly password: Redacted.Redacted<string> | string
  /** Service path of the query pipeline (default `query-pipeline`). */
  readonly queryPipelinePath?: string | undefined
  /** How long before expiry to replace a token (default 60 s). */
  readonly refreshAhead?: Duration.DurationInput | undefined
  /** Retries after the first attempt (default 4). */
  readonly maxRetries?: number | undefined
  /** Time limit of one attempt (default 2 minutes). */
  readonly timeout?: Duration.DurationInput | undefined
  /** Time limit to open a connection (default 10 seconds). */
  readonly connectTimeout?: Duration.DurationInput | undefined
}

const trim = (text: string): string => text.replace(/\/+$/, "").replace(/^\/+/, "")

/**
 * Resolves options into a configuration.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): GatewayConfig.Service => ({
  url: (options.url ?? defaultUrl).replace(/\/+$/, ""),
  username: options.username,
  password: Redacted.isRedacted(options.password) ? options.password : Redacted.make(options.password),
  queryPipelinePath: trim(options.queryPipelinePath ?? defaultQueryPipelinePath),
  refreshAhead: Duration.decode(options.refreshAhead ?? Duration.seconds(60)),
  maxRetries: options.maxRetries ?? 4,
  timeout: Duration.decode(options.timeout ?? Duration.minutes(2)),
  connectTimeout: Duration.decode(options.connectTimeout ?? Duration.seconds(10))
})

/**
 * A configuration from plain options.
 *
 * @example
 * ```ts
 * import { GatewayConfig } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Redacted from "effect/Redacted"
 *
 * const ConfigLive = GatewayConfig.layer({
 *   username: "me",
 *   password: Redacted.make("..."),
 *   refreshAhead: "2 minutes",
 *   timeout: "30 seconds"
 * })
 *
 * const program = Effect.map(GatewayConfig.GatewayConfig, (config) => config.maxRetries)
 *
 * Effect.runPromise(program.pipe(Effect.provide(ConfigLive))).then(console.log)
 * // => 4
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<GatewayConfig> => Layer.succeed(GatewayConfig, make(options))

/**
 * A configuration read from `Config` values.
 *
 * @example
 * ```ts
 * import { GatewayConfig } from "effect-aifs"
 * import * as Config from "effect/Config"
 * import * as ConfigProvider from "effect/ConfigProvider"
 * import * as Effect from "effect/Effect"
 *
 * // your application's own variable names
 * const ConfigLive = GatewayConfig.layerConfig({
 *   username: Config.string("RAG_USER"),
 *   password: Config.redacted("RAG_PASSWORD")
 * })
 *
 * const program = Effect.map(GatewayConfig.GatewayConfig, (config) => config.username)
 *
 * const env = ConfigProvider.fromMap(new Map([["RAG_USER", "me"], ["RAG_PASSWORD", "..."]]))
 *
 * Effect.runPromise(program.pipe(Effect.provide(ConfigLive), Effect.withConfigProvider(env))).then(console.log)
 * // => me
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<GatewayConfig, ConfigError.ConfigError> =>
  Layer.effect(GatewayConfig, Effect.map(Config.unwrap(config), make))

/**
 * The environment variables read by `layerFromEnv`.
 *
 * @since 0.1.0
 * @category config
 */
export const fromEnv: Config.Config<Options> = Config.all({
  url: httpUrl("AIFS_GATEWAY_URL").pipe(
    Config.withDefault(defaultUrl),
    Config.withDescription("Base URL of the retrieval gateway")
  ),
  username: Config.string("AIFS_GATEWAY_USERNAME").pipe(Config.withDescription("Gateway user name")),
  password: Config.redacted("AIFS_GATEWAY_PASSWORD").pipe(Config.withDescription("Gateway password")),
  queryPipelinePath: Config.string("AIFS_GATEWAY_QUERY_PIPELINE").pipe(Config.withDefault(defaultQueryPipelinePath)),
  refreshAhead: duration("AIFS_GATEWAY_REFRESH_AHEAD").pipe(Config.withDefault(Duration.seconds(60))),
  maxRetries: Config.integer("AIFS_GATEWAY_MAX_RETRIES").pipe(
    Config.validate({ message: "Expected a number of retries from 0 to 100", validation: (n) => n >= 0 && n <= 100 }),
    Config.withDefault(4)
  ),
  timeout: positiveDuration("AIFS_GATEWAY_TIMEOUT").pipe(Config.withDefault(Duration.minutes(2))),
  connectTimeout: positiveDuration("AIFS_GATEWAY_CONNECT_TIMEOUT").pipe(Config.withDefault(Duration.seconds(10)))
})

/**
 * The configuration from `AIFS_GATEWAY_*` environment variables (user name and password are required).
 *
 * @example
 * ```ts
 * import { GatewayConfig } from "effect-aifs"
 * import * as ConfigProvider from "effect/ConfigProvider"
 * import * as Effect from "effect/Effect"
 *
 * // AIFS_GATEWAY_USERNAME and AIFS_GATEWAY_PASSWORD are required; AIFS_GATEWAY_URL,
 * // AIFS_GATEWAY_QUERY_PIPELINE, AIFS_GATEWAY_TIMEOUT... are not
 * const env = ConfigProvider.fromMap(new Map([["AIFS_GATEWAY_USERNAME", "me"], ["AIFS_GATEWAY_PASSWORD", "..."]]))
 *
 * const program = Effect.map(GatewayConfig.GatewayConfig, (config) => config.url)
 *
 * Effect.runPromise(program.pipe(Effect.provide(GatewayConfig.layerFromEnv), Effect.withConfigProvider(env)))
 *   .then(console.log)
 * // => https://api-gateway.ai.t-systems.net
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromEnv: Layer.Layer<GatewayConfig, ConfigError.ConfigError> = Layer.effect(
  GatewayConfig,
  Effect.map(fromEnv, make)
)
