/**
 * Config manager: `GET /config-manager/api/v1/user/configs`, the user's group, local knowledge-base configs
 * and the LLMs each allows.
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
  const list = Effect.fn("ConfigManager.list")(function*() {
    const { value } = yield* gateway.send(HttpClientRequest.get(`${path}/api/v1/user/configs`), UserConfigList)
    return value
  })
  return { list }
})

/**
 * The service, on a `Gateway` client.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ConfigManager, never, Gateway> = Layer.effect(ConfigManager, make)
