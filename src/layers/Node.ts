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
import type { InferenceHttpClient } from "../services/InferenceHttpClient.js"
import * as ClientConfig from "./ClientConfig.js"
import * as Inference from "./Inference.js"

/**
 * What the Node layers provide: every inference service and the transport.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = Inference.Services | InferenceHttpClient | ClientConfig.ClientConfig

const withClientConfig = <E>(config: Layer.Layer<ClientConfig.ClientConfig, E>): Layer.Layer<Services, E> =>
  Inference.layerHttp.pipe(Layer.provideMerge(config), Layer.provide(NodeHttpClient.layerUndici))

/**
 * Everything, from options.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ClientConfig.Options): Layer.Layer<Services> =>
  withClientConfig(ClientConfig.layer(options))

/**
 * Everything, from `Config` values.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<ClientConfig.Options>
): Layer.Layer<Services, ConfigError.ConfigError> => withClientConfig(ClientConfig.layerConfig(config))

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
 * The undici HTTP client, for composing the layers yourself.
 *
 * @since 0.1.0
 * @category layers
 */
export const httpClient = NodeHttpClient.layerUndici
