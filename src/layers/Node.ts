/**
 * Everything wired for Node.js with the undici HTTP client: the one module of the library that names
 * `@effect/platform-node`.
 *
 * @since 0.1.0
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
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

const withClientConfig = <E>(
  config: Layer.Layer<ClientConfig.ClientConfig, E>,
  options: LayerOptions = {}
): Layer.Layer<Services, E> =>
  Inference.layerHttpLimited(options.rateLimiter).pipe(
    Layer.provideMerge(config),
    Layer.provide(NodeHttpClient.layerUndici)
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
 * The undici HTTP client, for composing the layers yourself.
 *
 * @since 0.1.0
 * @category layers
 */
export const httpClient = NodeHttpClient.layerUndici

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
  Gateway.layerHttp.pipe(Layer.provideMerge(config), Layer.provide(NodeHttpClient.layerUndici))

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
