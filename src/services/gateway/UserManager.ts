/**
 * User manager. Its routes are not in the public docs: `me` calls the emulator's
 * `GET /user-manager/api/v1/users/me`; for anything else use `Gateway.request("user-manager", ...)`.
 *
 * @example
 * ```ts
 * import { Testing, UserManager } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const users = yield* UserManager.UserManager
 *   const me = yield* users.me()
 *   return `${me.username} (${me.roles?.join(", ")})`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * // => demo (CHAT_USER)
 * ```
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
 * @example
 * ```ts
 * import { Testing, UserManager } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a user without the `CHAT_USER` role is refused
 * const program = Effect.flatMap(UserManager.UserManager, (users) => users.me()).pipe(
 *   Effect.map((me) => `${me.username} may chat`),
 *   Effect.catchTag("Forbidden", (error) => Effect.succeed(`refused: ${error.message}`))
 * )
 *
 * const asViewer = Testing.layerGatewayEmulator({ username: "viewer" })
 *
 * Effect.runPromise(program.pipe(Effect.provide(asViewer))).then(console.log)
 * // => refused: The user lacks the CHAT_USER role
 * ```
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
  // the request's span is the transport's
  const me = Effect.fnUntraced(function*() {
    const { value } = yield* gateway.send(HttpClientRequest.get(`${path}/api/v1/users/me`), GatewayUser, {
      span: { name: "UserManager.me" }
    })
    return value
  })
  return { me }
})

/**
 * The service, on a `Gateway` client.
 *
 * @example
 * ```ts
 * import { Testing, UserManager } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // the service on any `Gateway` client (here the one of `Testing.layerGatewayEmulator`)
 * const UserManagerLive = UserManager.layer.pipe(Layer.provide(Testing.layerGatewayEmulator()))
 *
 * const program = Effect.flatMap(UserManager.UserManager, (users) => users.me())
 *
 * Effect.runPromise(program.pipe(Effect.provide(UserManagerLive))).then((me) => console.log(me.username))
 * // => demo
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<UserManager, never, Gateway> = Layer.effect(UserManager, make)
