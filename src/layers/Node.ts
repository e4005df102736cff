/**
 * Everything wired for Node.js with the undici HTTP client: the one module of the library that names
 * `@effect/platform-node`.
 *
 * @since 0.1.0
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Undici from "@effect/platform-node/Undici"
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { GatewayHttpClient } from "../services/gateway/GatewayHttpClient.js"
import type { InferenceHttpClient } from "../services/InferenceHttpClient.js"
import * as ClientConfig from "./ClientConfig.js"
import * as Gateway from "./Gateway.js"
import * as GatewayConfig from "./GatewayConfig.js"
import * as Inference from "./Inference.js"
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

const withClientConfig = <E>(
  config: Layer.Layer<ClientConfig.ClientConfig, E>,
  options: LayerOptions = {}
): Layer.Layer<Services, E> =>
  Inference.layerHttpLimited(options.rateLimiter).pipe(
    Layer.provide(httpClientOf(ClientConfig.ClientConfig)),
    Layer.provideMerge(config)
  )

/**
 * Everything, from options.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ClientConfig.Options & LayerOptions): Layer.Layer<Services> =>
  withClientConfig(ClientConfig.layer(options), options)

/**
 * Everything, from `Config` values.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<ClientConfig.Options>,
  options: LayerOptions = {}
): Layer.Layer<Services, ConfigError.ConfigError> => withClientConfig(ClientConfig.layerConfig(config), options)

/**
 * Everything, from the `AIFS_*` environment variables (`AIFS_API_KEY` is required).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromEnv: Layer.Layer<Services, ConfigError.ConfigError> = withClientConfig(
  ClientConfig.layerFromEnv
)

/**
 * Everything from the environment, with limiter settings.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromEnvWith = (options: LayerOptions): Layer.Layer<Services, ConfigError.ConfigError> =>
  withClientConfig(ClientConfig.layerFromEnv, options)

/**
 * The undici HTTP client with the default connect timeout, for composing the layers yourself.
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
 * @since 0.1.0
 * @category layers
 */
export const layerGateway = (options: GatewayConfig.Options): Layer.Layer<GatewayServices> =>
  withGatewayConfig(GatewayConfig.layer(options))

/**
 * Every retrieval-gateway service, from `Config` values.
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
 * @since 0.1.0
 * @category layers
 */
export const layerGatewayFromEnv: Layer.Layer<GatewayServices, ConfigError.ConfigError> = withGatewayConfig(
  GatewayConfig.layerFromEnv
)
