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
import type * as Headers from "@effect/platform/Headers"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type { ApiError } from "../schemas/Errors.js"
import type { RateLimitInfo } from "../schemas/RateLimit.js"

/**
 * Which base a request is sent to: `v2` (standard endpoints), `v1` (vector stores and their files) or
 * `queue` (the queue root).
 *
 * @since 0.1.0
 * @category models
 */
export type Base = "v2" | "v1" | "queue"

/**
 * Per-request options.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestOptions {
  /** The base to resolve the relative URL against (default `v2`). */
  readonly base?: Base | undefined
  /**
   * The model the request is for: rate limits are per model, and a request that names none is not limited. What it
   * costs the limiter is estimated from `span.params` (the operation's parameters), never from the body.
   */
  readonly model?: string | undefined
  /** Set to `false` for requests that must not be sent twice (or whose body is a one-shot stream). */
  readonly retry?: boolean | undefined
  /**
   * Time limit of one attempt, body or stream included, overriding the configured `timeout` (or
   * `queueTimeout` on the queue base).
   */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * Time limit to the response's status line, overriding the configured `firstByteTimeout` (or
   * `queueTimeout` on the queue base).
   */
  readonly firstByteTimeout?: Duration.DurationInput | undefined
  /** Longest silence between stream chunks, overriding the configured `streamIdleTimeout`. */
  readonly idleTimeout?: Duration.DurationInput | undefined
  /**
   * The operation's span, opened when the request leaves the rate limiter's line (a caller waiting there holds
   * no span). A model operation (`operation`: `chat`, `text_completion`, `embeddings`...) gets the OpenTelemetry
   * GenAI span `{operation} {model}`, kind client, with `gen_ai.request.*` read from `params` and the answer's
   * id, model, finish reasons and usage; any other gets a span named `name`. Both carry `aifs.operation`
   * (`name`), `aifs.limiter.wait_ms`, `aifs.route` and `error.type` on failure; the platform's HTTP client span
   * of each attempt is their child.
   */
  readonly span?: {
    readonly name: string
    readonly operation?: string | undefined
    readonly params?: object | undefined
    /** More attributes of the client's own (`aifs.*`), set when the span opens. */
    readonly attributes?: Readonly<Record<string, unknown>> | undefined
  } | undefined
}

/**
 * Options of a JSON event stream.
 *
 * @since 0.1.0
 * @category models
 */
export interface StreamOptions extends RequestOptions {
  /** The data line that ends the stream (default `[DONE]`); `undefined` when the stream just ends. */
  readonly terminator?: string | null | undefined
}

/**
 * What a response said besides its body.
 *
 * @since 0.1.0
 * @category models
 */
export class ResponseMetadata extends Data.Class<{
  /** HTTP status. */
  readonly status: number
  /** The server's request id, when it sent one. */
  readonly requestId: string | undefined
  /** The parsed rate-limit headers (empty on models that send none). */
  readonly rateLimit: RateLimitInfo
  /** All response headers. */
  readonly headers: Headers.Headers
}> {}

/**
 * A decoded body together with its response metadata.
 *
 * @since 0.1.0
 * @category models
 */
export interface WithResponse<A> {
  /** The decoded body. */
  readonly value: A
  /** Status, request id, rate-limit headers, headers. */
  readonly response: ResponseMetadata
}

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
 * One server-sent event.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServerSentEvent {
  /** Event name (`message` unless the server named it). */
  readonly event: string
  /** The data lines, joined. */
  readonly data: string
}

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
