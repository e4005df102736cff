/**
 * User manager. Its routes are not in the public docs: `me` calls the emulator's
 * `GET /user-manager/api/v1/users/me`; for anything else use `Gateway.request("user-manager", ...)`.
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ApiError } from "../../schemas/Errors.js"
import { GatewayUser } from "../../schemas/Gateway.js"
import { Gateway } from "./Gateway.js"

/**
 * The user manager.
 *
 * @since 0.1.0
 * @category tags
 */
export class UserManager extends Context.Tag("effect-aifs/gateway/UserManager")<UserManager, UserManager.Service>() {}

/**
 * The types of the `UserManager` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace UserManager {
  /**
   * What `UserManager` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** The logged-in user: id, name, roles, group (undocumented route). */
    readonly me: () => Effect.Effect<GatewayUser, ApiError>
  }
}

/**
 * The service path.
 *
 * @since 0.1.0
 * @category constants
 */
export const path = "/user-manager"

/**
 * Builds the service on the `Gateway` client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<UserManager.Service, never, Gateway> = Effect.gen(function*() {
  const gateway = yield* Gateway
  const me = Effect.fn("UserManager.me")(function*() {
    const { value } = yield* gateway.send(HttpClientRequest.get(`${path}/api/v1/users/me`), GatewayUser)
    return value
  })
  return { me }
})

/**
 * The service, on a `Gateway` client.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<UserManager, never, Gateway> = Layer.effect(UserManager, make)
