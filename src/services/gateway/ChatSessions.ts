/**
 * Chat session manager: list and create sessions (documented), get and delete one (the emulator's routes,
 * `GET`/`DELETE /chat-session-manager/api/v1/sessions/{sessionId}`).
 *
 * @example
 * ```ts
 * import { ChatSessions, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a session over the global knowledge base, then the user's sessions
 * const program = Effect.gen(function*() {
 *   const sessions = yield* ChatSessions.ChatSessions
 *   const session = yield* sessions.create({
 *     title: "Company handbook",
 *     config: { globalContext: true }
 *   })
 *   const all = yield* sessions.list()
 *   return `${session.sessionId} is one of ${all.length} session(s)`
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
import { segment } from "../../internal/pathSegment.js"
import type { ApiError } from "../../schemas/Errors.js"
import { ChatSession, ChatSessionList, type CreateSessionParams, Deleted } from "../../schemas/Gateway.js"
import { Gateway } from "./Gateway.js"

/**
 * The chat session manager.
 *
 * @example
 * ```ts
 * import { ChatSessions, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a session that is deleted again when the scope closes
 * const program = Effect.gen(function*() {
 *   const sessions = yield* ChatSessions.ChatSessions
 *   const session = yield* Effect.acquireRelease(
 *     sessions.create({ title: "Scratch", config: { globalContext: true, activeFiles: [] } }),
 *     (session) => Effect.ignore(sessions.delete(session.sessionId))
 *   )
 *   return (yield* sessions.get(session.sessionId)).title
 * }).pipe(Effect.scoped)
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * // => Scratch
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class ChatSessions
  extends Context.Tag("effect-aifs/gateway/ChatSessions")<ChatSessions, ChatSessions.Service>()
{}

/**
 * The types of the `ChatSessions` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace ChatSessions {
  /**
   * What `ChatSessions` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** The user's sessions. */
    readonly list: () => Effect.Effect<ReadonlyArray<ChatSession>, ApiError>
    /** Creates a session over files or the global knowledge base; answers at least its `sessionId`. */
    readonly create: (params: CreateSessionParams) => Effect.Effect<ChatSession, ApiError>
    /** One session with its history (undocumented route). */
    readonly get: (sessionId: string) => Effect.Effect<ChatSession, ApiError>
    /** Deletes a session (undocumented route). */
    readonly delete: (sessionId: string) => Effect.Effect<Deleted, ApiError>
  }
}

/**
 * The service path.
 *
 * @since 0.1.0
 * @category constants
 */
export const path = "/chat-session-manager"

/**
 * Builds the service on the `Gateway` client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<ChatSessions.Service, never, Gateway> = Effect.gen(function*() {
  const gateway = yield* Gateway
  const sessions = `${path}/api/v1/sessions/`
  // each request's span is the transport's
  const list = Effect.fnUntraced(function*() {
    return (yield* gateway.send(HttpClientRequest.get(sessions), ChatSessionList, {
      span: { name: "ChatSessions.list" }
    })).value
  })
  const create = Effect.fnUntraced(function*(params: CreateSessionParams) {
    const request = HttpClientRequest.post(sessions).pipe(HttpClientRequest.bodyUnsafeJson(params))
    // a retried create could make two sessions
    return (yield* gateway.send(request, ChatSession, { retry: false, span: { name: "ChatSessions.create" } })).value
  })
  const get = Effect.fnUntraced(function*(sessionId: string) {
    const request = HttpClientRequest.get(`${sessions}${yield* segment(sessionId)}`)
    return (yield* gateway.send(request, ChatSession, { span: { name: "ChatSessions.get" } })).value
  })
  const del = Effect.fnUntraced(function*(sessionId: string) {
    const request = HttpClientRequest.del(`${sessions}${yield* segment(sessionId)}`)
    return (yield* gateway.send(request, Deleted, { span: { name: "ChatSessions.delete" } })).value
  })
  return { list, create, get, delete: del }
})

/**
 * The service, on a `Gateway` client.
 *
 * @example
 * ```ts
 * import { ChatSessions, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // the service on any `Gateway` client (here the one of `Testing.layerGatewayEmulator`)
 * const ChatSessionsLive = ChatSessions.layer.pipe(Layer.provide(Testing.layerGatewayEmulator()))
 *
 * const program = Effect.flatMap(ChatSessions.ChatSessions, (sessions) => sessions.list())
 *
 * Effect.runPromise(program.pipe(Effect.provide(ChatSessionsLive))).then((all) => console.log(all.length))
 * // => 0
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ChatSessions, never, Gateway> = Layer.effect(ChatSessions, make)
