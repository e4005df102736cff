/**
 * Everything wired for Node.js with the undici HTTP client: the one module of the library that names
 * `@effect/platform-node`.
 *
 * @example
 * ```ts
 * import { Chat, Node } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   const answer = yield* chat.create({
 *     model: "Llama-3.3-70B-Instruct",
 *     messages: [{ role: "user", content: "Hello!" }]
 *   })
 *   return answer.text
 * })
 *
 * // every inference service, the rate limiter and the undici HTTP client, configured from AIFS_* variables:
 * // run it with `NodeRuntime.runMain(main)` and AIFS_API_KEY=gen-... in the environment
 * export const main = program.pipe(Effect.provide(Node.layerFromEnv))
 * ```
 *
 * @since 0.1.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Undici from "@effect/platform-node/Undici"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { homedir } from "node:os"
import { keyFilePath, keyFromFile } from "../internal/keyFile.js"
import { parseLimits } from "../internal/limitsSpec.js"
import * as RedisLimiterStore from "../redis.js"
import type { GatewayHttpClient } from "../services/gateway/GatewayHttpClient.js"
import type { InferenceHttpClient } from "../services/InferenceHttpClient.js"
import * as ClientConfig from "./ClientConfig.js"
import * as Gateway from "./Gateway.js"
import * as GatewayConfig from "./GatewayConfig.js"
import * as Inference from "./Inference.js"
import * as LimiterStore from "./LimiterStore.js"
import type * as RateLimiter from "./RateLimiter.js"

/**
 * What the Node layers provide: every inference service, the transport, its configuration and its
 * proactive rate limiter.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = Inference.Services | InferenceHttpClient | ClientConfig.ClientConfig | RateLimiter.RateLimiter

/**
 * Options of the Node layers besides the client configuration.
 *
 * @since 0.1.0
 * @category models
 */
export interface LayerOptions {
  /**
   * Settings of the proactive rate limiter (its tier comes from the configuration; set `window` to the
   * server's window when it is not a minute), or `false` for none.
   */
  readonly rateLimiter?: RateLimiter.Options | false | undefined
  /**
   * Where learnt limits and spend are kept without Redis when `AIFS_CACHE_DIR` is unset (default: nowhere; the `aifs`
   * command gives {@link userCacheDirectory}). `AIFS_CACHE_DIR` wins, and an empty one keeps nothing.
   */
  readonly cacheDirectory?: string | undefined
}

/**
 * Options of the Node HTTP client.
 *
 * @since 0.1.0
 * @category models
 */
export interface HttpClientOptions {
  /** Time limit to open a connection, TCP and TLS handshakes included (default 10 seconds). */
  readonly connectTimeout?: Duration.DurationInput | undefined
}

/**
 * The undici HTTP client with its own connection pool, closed with the layer. A connection not open within
 * `connectTimeout` fails the attempt, which the transports report as `Timeout` (`connect`).
 *
 * @example
 * ```ts
 * import { ClientConfig, Inference, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // composing the layers yourself: the services on the undici client, with a short connect timeout
 * export const ClientLive: Layer.Layer<Inference.Services> = Inference.layerHttp.pipe(
 *   Layer.provide(Node.layerHttpClient({ connectTimeout: "3 seconds" })),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHttpClient = (options: HttpClientOptions = {}): Layer.Layer<HttpClient.HttpClient> =>
  NodeHttpClient.layerUndiciWithoutDispatcher.pipe(
    Layer.provide(Layer.scoped(
      NodeHttpClient.Dispatcher,
      Effect.acquireRelease(
        Effect.sync(() =>
          new Undici.Agent({
            connect: { timeout: Duration.toMillis(Duration.decode(options.connectTimeout ?? Duration.seconds(10))) }
          })
        ),
        (agent) => Effect.promise(() => agent.destroy())
      )
    ))
  )

/** The HTTP client with the connect timeout of the configuration in the context. */
const httpClientOf = <I, S extends { readonly connectTimeout: Duration.Duration }>(
  tag: Context.Tag<I, S>
): Layer.Layer<HttpClient.HttpClient, never, I> =>
  Layer.unwrapEffect(Effect.map(tag, (config) => layerHttpClient({ connectTimeout: config.connectTimeout })))

const withClientConfig = <E, R>(
  config: Layer.Layer<ClientConfig.ClientConfig, E, R>,
  options: LayerOptions = {}
): Layer.Layer<Services, E, R> =>
  Inference.layerHttpLimited(options.rateLimiter).pipe(
    Layer.provide(httpClientOf(ClientConfig.ClientConfig)),
    Layer.provideMerge(config)
  )

/**
 * The user's cache directory of this package: `$XDG_CACHE_HOME/effect-aifs`, else `~/.cache/effect-aifs`. The `aifs`
 * command keeps learnt limits and spend there unless `AIFS_CACHE_DIR` says otherwise; a library writes nothing under
 * the user's home unless asked to (`AIFS_CACHE_DIR`).
 *
 * @since 0.2.0
 * @category config
 */
export const userCacheDirectory: Config.Config<string> = Config.option(Config.string("XDG_CACHE_HOME")).pipe(
  Config.map((xdg) =>
    `${Option.getOrElse(Option.filter(xdg, (dir) => dir !== ""), () => `${homedir()}/.cache`)}/effect-aifs`
  )
)

/**
 * The limiter's environment: `AIFS_LIMITS` (custom limits per model, `*=300/300000/150000,gpt-4.1=100/30000`:
 * requests/input/output, or requests/tokens, per window; `*` for every model without its own),
 * `AIFS_LIMITER_REDIS_URL` (a Redis server shared by every process on the key; unset or empty: this process's memory),
 * `AIFS_LIMITER_REDIS_PREFIX` (default `aifs`), `AIFS_LIMITER_WINDOW` (the server's window, default a minute),
 * `AIFS_CACHE_DIR` (where limits learnt and spend are kept without Redis, between runs; unset or empty: not kept; the
 * `aifs` command's default is {@link userCacheDirectory}), and `AIFS_BUDGET` (the most the key may spend a calendar
 * month, in EUR: a warning at 80%, `BudgetExceeded` from 100%).
 *
 * @since 0.2.0
 * @category config
 */
export const limiterFromEnv = Config.all({
  limits: Config.option(
    Config.string("AIFS_LIMITS").pipe(
      Config.mapOrFail((text) => Either.mapLeft(parseLimits(text), (why) => ConfigError.InvalidData([], why)))
    )
  ),
  redisUrl: Config.option(Config.redacted("AIFS_LIMITER_REDIS_URL")).pipe(
    Config.map(Option.filter((url) => Redacted.value(url).trim() !== ""))
  ),
  redisPrefix: Config.string("AIFS_LIMITER_REDIS_PREFIX").pipe(Config.withDefault("aifs")),
  window: Config.option(ClientConfig.positiveDuration("AIFS_LIMITER_WINDOW")),
  budget: Config.option(
    Config.number("AIFS_BUDGET").pipe(
      Config.validate({ message: "Expected an amount of EUR a month, 0 or more", validation: (n) => n >= 0 })
    )
  ),
  cacheDir: Config.string("AIFS_CACHE_DIR").pipe(Config.withDefault(""))
})

/**
 * The client's configuration from the environment: the key from `AIFS_API_KEY`, or from the file `AIFS_API_KEY_FILE`
 * names (src/internal/keyFile.ts), read again when the server refuses the key (a rotated secret).
 */
const clientConfigFromEnv: Layer.Layer<ClientConfig.ClientConfig, ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.gen(function*() {
    const file = yield* keyFilePath
    if (Option.isNone(file)) return ClientConfig.layerFromEnv
    const settings = yield* ClientConfig.settingsFromEnv
    return ClientConfig.layer({
      ...settings,
      apiKey: keyFromFile(file.value).pipe(Effect.provide(NodeFileSystem.layer))
    })
  })
)

/**
 * The layers from the environment: the client's configuration, and the limiter's (a store that cannot be used, a
 * malformed URL or refused credentials, is a `ConfigError` naming `AIFS_LIMITER_REDIS_URL`).
 */
const fromEnv = (options: LayerOptions): Layer.Layer<Services, ConfigError.ConfigError> =>
  Layer.unwrapEffect(
    Effect.map(Effect.zip(limiterFromEnv, Config.option(Config.string("AIFS_CACHE_DIR"))), ([env, own]) => {
      if (options.rateLimiter === false) return withClientConfig(clientConfigFromEnv, options)
      const rateLimiter = {
        ...Option.match(env.window, { onNone: () => ({}), onSome: (window) => ({ window }) }),
        ...Option.match(env.budget, { onNone: () => ({}), onSome: (budget) => ({ budget }) }),
        ...options.rateLimiter,
        // AIFS_LIMITS, under the limits given in code
        limits: { ...Option.getOrUndefined(env.limits), ...options.rateLimiter?.limits }
      }
      // set (even empty) it wins; unset, the caller's default
      const cacheDir = Option.isSome(own) ? env.cacheDir : options.cacheDirectory ?? ""
      const store = Option.match(env.redisUrl, {
        onNone: () =>
          cacheDir.trim() === ""
            ? LimiterStore.layerMemory
            : LimiterStore.layerMemoryCached(cacheDir).pipe(
              Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer))
            ),
        onSome: (url) =>
          RedisLimiterStore.layer(url, { prefix: env.redisPrefix }).pipe(
            Layer.mapError((error) => ConfigError.InvalidData(["AIFS_LIMITER_REDIS_URL"], error.message))
          )
      })
      return Inference.layerHttpLimitedWith(rateLimiter).pipe(
        Layer.provide(store),
        Layer.provide(httpClientOf(ClientConfig.ClientConfig)),
        Layer.provideMerge(clientConfigFromEnv)
      )
    })
  )

/**
 * Everything, from options.
 *
 * @example
 * ```ts
 * import { Emulator, Models, Node } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.list()).pipe(
 *   Effect.map((list) => `${list.data.length} models`)
 * )
 *
 * // options in code: here a local emulator's URL and development key, and a limiter window of its own
 * const main = Effect.gen(function*() {
 *   const emulator = yield* Emulator.Emulator
 *   const ClientLive = Node.layer({
 *     apiKey: Emulator.keyOf("standard4000"),
 *     baseUrl: emulator.baseUrl,
 *     tier: "standard4000",
 *     rateLimiter: { window: "1 minute" }
 *   })
 *   return yield* program.pipe(Effect.provide(ClientLive))
 * })
 *
 * Effect.runPromise(main.pipe(Effect.provide(Emulator.layer()))).then(console.log)
 * // => 38 models
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E = never, R = never>(
  options: ClientConfig.OptionsWithKeySource<E, R> & LayerOptions
): Layer.Layer<Services, E, R> => withClientConfig(ClientConfig.layer(options), options)

/**
 * Everything, from `Config` values.
 *
 * @example
 * ```ts
 * import { ClientConfig, Node, RateLimiter } from "effect-aifs"
 * import * as Config from "effect/Config"
 * import * as ConfigProvider from "effect/ConfigProvider"
 * import * as Effect from "effect/Effect"
 *
 * // your own variable names, and no proactive limiter (429s are met by the retries alone)
 * const ClientLive = Node.layerConfig(
 *   { apiKey: Config.redacted("MY_APP_AIFS_KEY"), baseUrl: Config.string("MY_APP_AIFS_URL") },
 *   { rateLimiter: false }
 * )
 *
 * // building the layer sends nothing: read back what it configured
 * const program = Effect.gen(function*() {
 *   const config = yield* ClientConfig.ClientConfig
 *   const limiter = yield* RateLimiter.RateLimiter
 *   return `${config.baseUrl}, limiter ${limiter.enabled ? "on" : "off"}`
 * })
 *
 * const env = ConfigProvider.fromMap(
 *   new Map([["MY_APP_AIFS_KEY", "gen-..."], ["MY_APP_AIFS_URL", "https://llm.example/v2"]])
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(ClientLive), Effect.withConfigProvider(env))).then(console.log)
 * // => https://llm.example/v2, limiter off
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<ClientConfig.Options>,
  options: LayerOptions = {}
): Layer.Layer<Services, ConfigError.ConfigError> => withClientConfig(ClientConfig.layerConfig(config), options)

/**
 * Everything, from the `AIFS_*` environment variables. The key: `AIFS_API_KEY`, or `AIFS_API_KEY_FILE`, a file read
 * again when the server refuses the key (a rotated secret). With `AIFS_LIMITER_REDIS_URL`
 * the rate limiter counts on that Redis server, with every process on the key (see `limiterFromEnv`).
 *
 * @example
 * ```ts
 * import { Emulator, Models, Node } from "effect-aifs"
 * import * as ConfigProvider from "effect/ConfigProvider"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.retrieve("gpt-oss-120b"))
 *
 * // AIFS_API_KEY, AIFS_BASE_URL, AIFS_TIER... from the environment; here pointed at a local emulator
 * const main = Effect.gen(function*() {
 *   const emulator = yield* Emulator.Emulator
 *   const env = ConfigProvider.fromMap(
 *     new Map([["AIFS_API_KEY", Emulator.keyOf("basic")], ["AIFS_BASE_URL", emulator.baseUrl]])
 *   )
 *   return yield* program.pipe(Effect.provide(Node.layerFromEnv), Effect.withConfigProvider(env))
 * })
 *
 * Effect.runPromise(main.pipe(Effect.provide(Emulator.layer()))).then((model) => console.log(model.id))
 * // => gpt-oss-120b
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromEnv: Layer.Layer<Services, ConfigError.ConfigError> = fromEnv({})

/**
 * Everything from the environment, with limiter settings.
 *
 * @example
 * ```ts
 * import { Node, RateLimiter } from "effect-aifs"
 * import * as ConfigProvider from "effect/ConfigProvider"
 * import * as Effect from "effect/Effect"
 *
 * // from the environment, and requests that would wait for the local budget go to the queue instead
 * const ClientLive = Node.layerFromEnvWith({ rateLimiter: { queueRouting: true } })
 *
 * const program = Effect.map(RateLimiter.RateLimiter, (limiter) => limiter.queueRouting)
 *
 * const env = ConfigProvider.fromMap(new Map([["AIFS_API_KEY", "gen-..."]]))
 *
 * Effect.runPromise(program.pipe(Effect.provide(ClientLive), Effect.withConfigProvider(env))).then(console.log)
 * // => true
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromEnvWith = (options: LayerOptions): Layer.Layer<Services, ConfigError.ConfigError> =>
  fromEnv(options)

/**
 * The undici HTTP client with the default connect timeout, for composing the layers yourself.
 *
 * @example
 * ```ts
 * import { GatewayConfig, GatewayLayer, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the gateway services with the default retry policy, on the undici client
 * export const GatewayLive: Layer.Layer<GatewayLayer.Services> = GatewayLayer.layerHttp.pipe(
 *   Layer.provide(Node.httpClient),
 *   Layer.provide(GatewayConfig.layer({ username: "me", password: "..." }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const httpClient: Layer.Layer<HttpClient.HttpClient> = layerHttpClient()

/**
 * What the Node gateway layers provide: every gateway service, its transport and its configuration.
 *
 * @since 0.1.0
 * @category models
 */
export type GatewayServices = Gateway.Services | GatewayHttpClient | GatewayConfig.GatewayConfig

const withGatewayConfig = <E>(
  config: Layer.Layer<GatewayConfig.GatewayConfig, E>
): Layer.Layer<GatewayServices, E> =>
  Gateway.layerHttp.pipe(Layer.provide(httpClientOf(GatewayConfig.GatewayConfig)), Layer.provideMerge(config))

/**
 * Every retrieval-gateway service, from options. Separate from the inference layers: the gateway client
 * never sees the inference key.
 *
 * @example
 * ```ts
 * import { Emulator, Node, Rag } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // ask the global knowledge base: the gateway's URL and credentials, here a local emulator's
 * const main = Effect.gen(function*() {
 *   const emulator = yield* Emulator.Emulator
 *   const GatewayLive = Node.layerGateway({ url: emulator.gatewayUrl, username: "demo", password: "demo-password" })
 *   const answer = yield* Effect.flatMap(Rag.openSession({ global: true }), (session) =>
 *     Rag.ask(session, "What are the opening hours?")).pipe(Effect.provide(GatewayLive))
 *   return answer.text
 * })
 *
 * Effect.runPromise(main.pipe(Effect.provide(Emulator.layer()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerGateway = (options: GatewayConfig.Options): Layer.Layer<GatewayServices> =>
  withGatewayConfig(GatewayConfig.layer(options))

/**
 * Every retrieval-gateway service, from `Config` values.
 *
 * @example
 * ```ts
 * import { GatewayConfig, Node } from "effect-aifs"
 * import * as Config from "effect/Config"
 * import * as ConfigProvider from "effect/ConfigProvider"
 * import * as Effect from "effect/Effect"
 *
 * // your own variable names; building the layer sends nothing (the login happens on the first call)
 * const GatewayLive = Node.layerGatewayConfig({
 *   username: Config.string("RAG_USER"),
 *   password: Config.redacted("RAG_PASSWORD"),
 *   queryPipelinePath: Config.string("RAG_PIPELINE").pipe(Config.withDefault("query-pipelines"))
 * })
 *
 * const program = Effect.map(GatewayConfig.GatewayConfig, (config) => `${config.username}: ${config.url}`)
 *
 * const env = ConfigProvider.fromMap(new Map([["RAG_USER", "me"], ["RAG_PASSWORD", "..."]]))
 *
 * Effect.runPromise(program.pipe(Effect.provide(GatewayLive), Effect.withConfigProvider(env))).then(console.log)
 * // => me: https://api-gateway.ai.t-systems.net
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerGatewayConfig = (
  config: Config.Config.Wrap<GatewayConfig.Options>
): Layer.Layer<GatewayServices, ConfigError.ConfigError> => withGatewayConfig(GatewayConfig.layerConfig(config))

/**
 * Every retrieval-gateway service, from the `AIFS_GATEWAY_*` environment variables.
 *
 * @example
 * ```ts
 * import { Node, Rag } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const outcomes = yield* Rag.ingest([{ name: "faq.md", content: "# FAQ\n\nOpening hours: 9 to 5." }])
 *   const session = yield* Rag.openSession({ files: outcomes })
 *   return (yield* Rag.ask(session, "When are you open?")).text
 * })
 *
 * // AIFS_GATEWAY_USERNAME and AIFS_GATEWAY_PASSWORD (and AIFS_GATEWAY_URL...) from the environment:
 * // run it with `NodeRuntime.runMain(main)`
 * export const main = program.pipe(Effect.provide(Node.layerGatewayFromEnv))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerGatewayFromEnv: Layer.Layer<GatewayServices, ConfigError.ConfigError> = withGatewayConfig(
  GatewayConfig.layerFromEnv
)
