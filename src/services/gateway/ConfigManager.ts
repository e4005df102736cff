/**
 * Config manager: `GET /config-manager/api/v1/user/configs`, the user's group, local knowledge-base configs
 * and the LLMs each allows.
 *
 * @example
 * ```ts
 * import { ConfigManager, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the LLMs each local knowledge-base config allows
 * const program = Effect.gen(function*() {
 *   const configManager = yield* ConfigManager.ConfigManager
 *   const configs = yield* configManager.list()
 *   return configs.flatMap((config) => config.localKbConfigs ?? []).map((kb) =>
 *     `${kb.id}: ${(kb.allowed_llms ?? []).map((llm) => llm.name).join(", ")}`
 *   )
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ApiError } from "../../schemas/Errors.js"
import { type UserConfig, UserConfigList } from "../../schemas/Gateway.js"
import { Gateway } from "./Gateway.js"

/**
 * The config manager.
 *
 * @example
 * ```ts
 * import { ConfigManager, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(ConfigManager.ConfigManager, (configManager) => configManager.list()).pipe(
 *   Effect.map((configs) => configs[0]?.userGroupId)
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class ConfigManager
  extends Context.Tag("effect-aifs/gateway/ConfigManager")<ConfigManager, ConfigManager.Service>()
{}

/**
 * The types of the `ConfigManager` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace ConfigManager {
  /**
   * What `ConfigManager` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** The user's configs. */
    readonly list: () => Effect.Effect<ReadonlyArray<UserConfig>, ApiError>
  }
}

/**
 * The service path.
 *
 * @since 0.1.0
 * @category constants
 */
export const path = "/config-manager"

/**
 * Builds the service on the `Gateway` client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<ConfigManager.Service, never, Gateway> = Effect.gen(function*() {
  const gateway = yield* Gateway
  // the request's span is the transport's
  const list = Effect.fnUntraced(function*() {
    const { value } = yield* gateway.send(HttpClientRequest.get(`${path}/api/v1/user/configs`), UserConfigList, {
      span: { name: "ConfigManager.list" }
    })
    return value
  })
  return { list }
})

/**
 * The service, on a `Gateway` client.
 *
 * @example
 * ```ts
 * import { ConfigManager, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // the service on any `Gateway` client (here the one of `Testing.layerGatewayEmulator`)
 * const ConfigManagerLive = ConfigManager.layer.pipe(Layer.provide(Testing.layerGatewayEmulator()))
 *
 * const program = Effect.flatMap(ConfigManager.ConfigManager, (configManager) => configManager.list())
 *
 * Effect.runPromise(program.pipe(Effect.provide(ConfigManagerLive))).then((configs) => console.log(configs.length))
 * // => 1
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ConfigManager, never, Gateway> = Layer.effect(ConfigManager, make)
