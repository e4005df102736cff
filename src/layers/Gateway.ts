/**
 * All retrieval-gateway services in one layer: `Auth` and the authenticated `Gateway` client, and the six
 * backend services on it, on a `GatewayHttpClient` or on a platform `HttpClient` plus `GatewayConfig`.
 *
 * @example
 * ```ts
 * import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
 * import { ConfigManager, Emulator, GatewayConfig, GatewayLayer } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * const program = Effect.flatMap(ConfigManager.ConfigManager, (configs) => configs.list()).pipe(
 *   Effect.map((list) => list.map((config) => config.userGroupId))
 * )
 *
 * // every gateway service on any platform `HttpClient` (here `fetch`), against a local emulator's gateway
 * const main = Effect.gen(function*() {
 *   const emulator = yield* Emulator.Emulator
 *   const GatewayLive = GatewayLayer.layerHttp.pipe(
 *     Layer.provide(FetchHttpClient.layer),
 *     Layer.provide(GatewayConfig.layer({ url: emulator.gatewayUrl, username: "demo", password: "demo-password" }))
 *   )
 *   return yield* program.pipe(Effect.provide(GatewayLive))
 * })
 *
 * Effect.runPromise(main.pipe(Effect.provide(Emulator.layer()))).then(console.log)
 * // => [ 'group-demo' ]
 * ```
 *
 * @since 0.1.0
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Auth from "../services/gateway/Auth.js"
import * as ChatSessions from "../services/gateway/ChatSessions.js"
import * as ConfigManager from "../services/gateway/ConfigManager.js"
import * as FileManager from "../services/gateway/FileManager.js"
import * as GatewayClient from "../services/gateway/Gateway.js"
import type { GatewayHttpClient } from "../services/gateway/GatewayHttpClient.js"
import * as IngestMaster from "../services/gateway/IngestMaster.js"
import * as QueryPipeline from "../services/gateway/QueryPipeline.js"
import * as UserManager from "../services/gateway/UserManager.js"
import { GatewayConfig } from "./GatewayConfig.js"
import * as GatewayHttp from "./GatewayHttp.js"

/**
 * Every gateway service this layer provides.
 *
 * @since 0.1.0
 * @category models
 */
export type Services =
  | Auth.Auth
  | GatewayClient.Gateway
  | ConfigManager.ConfigManager
  | UserManager.UserManager
  | FileManager.FileManager
  | IngestMaster.IngestMaster
  | ChatSessions.ChatSessions
  | QueryPipeline.QueryPipeline

const authFromConfig: Layer.Layer<Auth.Auth, never, GatewayHttpClient | GatewayConfig> = Layer.effect(
  Auth.Auth,
  Effect.flatMap(
    GatewayConfig,
    (config) => Auth.make({ username: config.username, password: config.password, refreshAhead: config.refreshAhead })
  )
)

const queryPipelineFromConfig: Layer.Layer<QueryPipeline.QueryPipeline, never, GatewayClient.Gateway | GatewayConfig> =
  Layer.effect(
    QueryPipeline.QueryPipeline,
    Effect.flatMap(GatewayConfig, (config) => QueryPipeline.make({ path: config.queryPipelinePath }))
  )

/**
 * The services, on a `GatewayHttpClient` you provide and the `GatewayConfig` (credentials, query-pipeline
 * path, refresh).
 *
 * @example
 * ```ts
 * import { GatewayConfig, GatewayHttp, GatewayLayer, Node, RetryPolicy } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the gateway services on a transport with a retry policy of your own
 * export const GatewayLive: Layer.Layer<GatewayLayer.Services> = GatewayLayer.layer.pipe(
 *   Layer.provide(GatewayHttp.layer),
 *   Layer.provide(RetryPolicy.layer({ maxRetries: 2 })),
 *   Layer.provide(GatewayConfig.layer({ username: "me", password: "..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Services, never, GatewayHttpClient | GatewayConfig> = Layer.mergeAll(
  ConfigManager.layer,
  UserManager.layer,
  FileManager.layer,
  IngestMaster.layer,
  ChatSessions.layer,
  queryPipelineFromConfig
).pipe(
  Layer.provideMerge(GatewayClient.layer),
  Layer.provideMerge(authFromConfig)
)

/**
 * The services and their transport (default retry policy), on a platform `HttpClient` and a `GatewayConfig`.
 *
 * @example
 * ```ts
 * import { GatewayConfig, GatewayLayer, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the same as `Node.layerGateway`: the services and their transport, on the undici client
 * export const GatewayLive: Layer.Layer<GatewayLayer.Services> = GatewayLayer.layerHttp.pipe(
 *   Layer.provide(Node.httpClient),
 *   Layer.provide(GatewayConfig.layer({ username: "me", password: "...", maxRetries: 2 }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHttp: Layer.Layer<Services | GatewayHttpClient, never, HttpClient.HttpClient | GatewayConfig> = layer
  .pipe(Layer.provideMerge(GatewayHttp.layerDefaultRetry))
