/**
 * The shapes a request and its answer take on the way through the transport: what a service asks of it
 * (`RequestOptions`), what a response said besides its body (`ResponseMetadata`), one server-sent event. A leaf:
 * the request path in `internal/` and the public `InferenceHttpClient` both take them from here.
 * @internal
 */
import type * as Headers from "@effect/platform/Headers"
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import type { RateLimitInfo } from "../../schemas/RateLimit.js"

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
