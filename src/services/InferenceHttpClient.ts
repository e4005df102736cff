/**
 * The transport every inference service sends through: base resolution, authentication, rate-limit headers,
 * error mapping and retries happen here, once. Services hand it relative requests and schemas.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // every operation has a `...WithResponse` variant: the value, and what the response said besides it
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   const { response, value } = yield* chat.createWithResponse({
 *     model: "gpt-4o",
 *     messages: [{ role: "user", content: "Hi" }]
 *   })
 *   return `${value.model}: ${response.rateLimit.remainingRequests} requests left, request ${response.requestId}`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type * as Types from "../internal/request/types.js"
import type { ApiError } from "../schemas/Errors.js"

/**
 * Which base a request is sent to: `v2` (standard endpoints), `v1` (vector stores and their files) or
 * `queue` (the queue root).
 *
 * @since 0.1.0
 * @category models
 */
export type Base = Types.Base

/**
 * Per-request options: the base, the model (rate limits are per model), retries, time limits and the operation's
 * span (see each field).
 *
 * @since 0.1.0
 * @category models
 */
export type RequestOptions = Types.RequestOptions

/**
 * Options of a JSON event stream: `RequestOptions` and the data line that ends the stream.
 *
 * @since 0.1.0
 * @category models
 */
export type StreamOptions = Types.StreamOptions

export {
  /**
   * What a response said besides its body: status, request id, the parsed rate-limit headers, all headers.
   *
   * @since 0.1.0
   * @category models
   */
  ResponseMetadata
} from "../internal/request/types.js"

/**
 * A decoded body together with its response metadata.
 *
 * @since 0.1.0
 * @category models
 */
export type WithResponse<A> = Types.WithResponse<A>

const valueOf = <A>(withResponse: WithResponse<A>): A => withResponse.value

/**
 * The value alone, without the response metadata (each service's `create` from its `createWithResponse`).
 *
 * @since 0.1.0
 * @category utils
 */
export const withoutResponse = <A, E, R>(self: Effect.Effect<WithResponse<A>, E, R>): Effect.Effect<A, E, R> =>
  Effect.map(self, valueOf)

/**
 * One server-sent event: its name and its data lines, joined.
 *
 * @since 0.1.0
 * @category models
 */
export type ServerSentEvent = Types.ServerSentEvent

/**
 * The inference transport.
 *
 * @example
 * ```ts
 * import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
 * import { InferenceHttpClient, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 *
 * // a route without a service of its own: the same base, key, rate limiting, retries and typed errors
 * const ModelIds = Schema.Struct({ data: Schema.Array(Schema.Struct({ id: Schema.String })) })
 *
 * const program = Effect.gen(function*() {
 *   const http = yield* InferenceHttpClient.InferenceHttpClient
 *   const { response, value } = yield* http.json(HttpClientRequest.get("/models"), ModelIds)
 *   return `${value.data.length} models (HTTP ${response.status})`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class InferenceHttpClient
  extends Context.Tag("effect-aifs/InferenceHttpClient")<InferenceHttpClient, InferenceHttpClient.Service>()
{}

/**
 * The types of the `InferenceHttpClient` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace InferenceHttpClient {
  /**
   * What `InferenceHttpClient` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** The interface version the client was configured for. */
    readonly apiVersion: "1.0.0" | "1.1.0"
    /**
     * Sends a request (relative URL) and decodes its JSON body, with retries.
     */
    readonly json: <A, I>(
      request: HttpClientRequest.HttpClientRequest,
      schema: Schema.Schema<A, I>,
      options?: RequestOptions
    ) => Effect.Effect<WithResponse<A>, ApiError>
    /**
     * Sends a request and returns its body as text (subtitle and plain-text formats), with retries.
     */
    readonly text: (
      request: HttpClientRequest.HttpClientRequest,
      options?: RequestOptions
    ) => Effect.Effect<WithResponse<string>, ApiError>
    /**
     * Sends a request and streams its server-sent events. Establishing the stream is retried; once events
     * flow, a failure ends the stream with a typed error (re-sending would repeat output).
     */
    readonly sse: (
      request: HttpClientRequest.HttpClientRequest,
      options?: RequestOptions
    ) => Stream.Stream<ServerSentEvent, ApiError>
    /**
     * Streams server-sent events whose data are JSON, decoded with `schema`. `error` payloads become typed
     * failures after the events before them; a stream that ends before its terminator fails with
     * `TransportError`.
     */
    readonly jsonStream: <A, I>(
      request: HttpClientRequest.HttpClientRequest,
      schema: Schema.Schema<A, I>,
      options?: StreamOptions
    ) => Stream.Stream<A, ApiError>
  }
}
