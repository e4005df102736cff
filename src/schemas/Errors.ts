/**
 * The typed errors of every operation. Each is a flat `Schema.TaggedError` with `isRetryable`; `ApiError`
 * is their union. Handle them by tag: `Effect.catchTag("RateLimited", ...)`.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { RateLimitInfo } from "./RateLimit.js"
import { ValidationIssue } from "./Shared.js"

/** Fields every error that came from an HTTP response carries. */
const responseFields = {
  /** The message of the server's error body, or a description of the failure. */
  message: Schema.String,
  /** The request, as `METHOD /path`, without host or query. */
  endpoint: Schema.optional(Schema.String),
  /** The server's request id (`x-request-id`), when it sent one. */
  requestId: Schema.optional(Schema.String),
  /** The `code` of an OpenAI-style error body, as a string. */
  code: Schema.optional(Schema.String),
  /** The `type` of an OpenAI-style error body. */
  errorType: Schema.optional(Schema.String),
  /** The validation issues of a FastAPI `{"detail": [...]}` body. */
  issues: Schema.optional(Schema.Array(ValidationIssue)),
  /** The rate-limit headers of the failed response. */
  rateLimit: Schema.optional(RateLimitInfo)
}

const statusFields = { ...responseFields, status: Schema.Number }

/**
 * 400 (and 4xx without a tag of their own, and a 429 "Request too large" that no wait can cure): the request
 * cannot succeed as it is.
 *
 * @since 0.1.0
 * @category errors
 */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", statusFields) {
  /** Never retried: the same request fails the same way. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * 401: the API key is missing, wrong or revoked.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", statusFields) {
  /** Never retried. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * 403: the key may not use this model or route.
 *
 * @since 0.1.0
 * @category errors
 */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", statusFields) {
  /** Never retried. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * 404: unknown path, model or object. Model ids are case-sensitive.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", statusFields) {
  /** Never retried. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * 409: the request conflicts with the current state (a duplicate name, a finished job).
 *
 * @since 0.1.0
 * @category errors
 */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", statusFields) {
  /** Never retried. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * 422: the body failed the server's validation; `issues` lists where.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnprocessableEntity extends Schema.TaggedError<UnprocessableEntity>()(
  "UnprocessableEntity",
  statusFields
) {
  /** Never retried. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * 429: too many requests or tokens for the key's quota right now. `retryAfter` is how long the server asked
 * to wait (from `retry-after`, the reset headers, or the message); retried by the `RetryPolicy` when that
 * fits in its budget.
 *
 * @since 0.1.0
 * @category errors
 */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  ...responseFields,
  /** 429, or absent when the client decided locally that the wait is too long. */
  status: Schema.optional(Schema.Number),
  /** The wait the server asked for before the next attempt. */
  retryAfter: Schema.optional(Schema.DurationFromSelf)
}) {
  /** Retried after the server's wait. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * 429 or 402 whose body says the quota, budget or billing limit is spent: waiting will not help.
 *
 * @since 0.1.0
 * @category errors
 */
export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", statusFields) {
  /** Never retried. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The request needs more tokens than the key's whole quota per window allows: no wait can make it pass.
 * Raised by the client's rate limiter before sending, or from a server's 429 "Request too large".
 *
 * @since 0.1.0
 * @category errors
 */
export class RequestTooLarge extends Schema.TaggedError<RequestTooLarge>()("RequestTooLarge", {
  ...responseFields,
  /** 429 when the server said so; absent when the client's limiter refused it before sending. */
  status: Schema.optional(Schema.Number),
  /** The model. */
  model: Schema.optional(Schema.String),
  /** Tokens the request needs (estimated input plus the output cap). */
  requested: Schema.optional(Schema.Number),
  /** Tokens the quota allows per window. */
  limit: Schema.optional(Schema.Number)
}) {
  /** Never retried: lower `max_tokens` or shorten the input. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * 5xx: the server or a proxy failed; 503 means the model is temporarily unavailable.
 *
 * @since 0.1.0
 * @category errors
 */
export class ServerError extends Schema.TaggedError<ServerError>()("ServerError", statusFields) {
  /** Retried with exponential back-off, except 501 (not implemented). */
  get isRetryable(): boolean {
    return this.status !== 501
  }
}

/**
 * The connection failed: refused, reset, DNS, TLS, or dropped mid-body.
 *
 * @since 0.1.0
 * @category errors
 */
export class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  /** What failed, without secrets. */
  message: Schema.String,
  /** The request, as `METHOD /path`. */
  endpoint: Schema.optional(Schema.String),
  /** False when no connection was made (refused, unresolvable, unreachable): the server never saw the request. */
  connected: Schema.optional(Schema.Boolean)
}) {
  /** Retried with exponential back-off. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * A time limit fired. `timeout` names which one: `total` (a whole attempt), `idle` (between stream chunks),
 * `connect` or `firstByte`.
 *
 * @since 0.1.0
 * @category errors
 */
export class Timeout extends Schema.TaggedError<Timeout>()("Timeout", {
  /** Which time limit fired, and after how long. */
  message: Schema.String,
  /** The request, as `METHOD /path`. */
  endpoint: Schema.optional(Schema.String),
  /** Which limit fired. */
  timeout: Schema.Literal("connect", "firstByte", "idle", "total"),
  /** The limit that was exceeded. */
  after: Schema.DurationFromSelf
}) {
  /** Retried with exponential back-off. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The body did not match its schema (or was not JSON). `excerpt` holds the start of the body, bounded.
 *
 * @since 0.1.0
 * @category errors
 */
export class DecodeError extends Schema.TaggedError<DecodeError>()("DecodeError", {
  /** What did not match. */
  message: Schema.String,
  /** The request, as `METHOD /path`. */
  endpoint: Schema.optional(Schema.String),
  /** HTTP status of the response. */
  status: Schema.optional(Schema.Number),
  /** The server's request id. */
  requestId: Schema.optional(Schema.String),
  /** The first bytes of the body (at most 512 characters). */
  excerpt: Schema.String
}) {
  /** Never retried: the server answered, with something unexpected. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The operation is not available under the configured interface version (fine-tuning under `1.1.0`) and the
 * caller did not opt in. Raised by the client before sending.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unsupported extends Schema.TaggedError<Unsupported>()("Unsupported", {
  /** What is unsupported and how to opt in. */
  message: Schema.String,
  /** The operation, e.g. `FineTuning.create`. */
  operation: Schema.String,
  /** The request it would have sent, as `METHOD /path`. */
  endpoint: Schema.optional(Schema.String),
  /** The configured interface version. */
  apiVersion: Schema.String
}) {
  /** Never retried: the configuration decides, not the server. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Every error an operation of this library can fail with.
 *
 * @since 0.1.0
 * @category errors
 */
export type ApiError =
  | BadRequest
  | Unauthorized
  | Forbidden
  | NotFound
  | Conflict
  | UnprocessableEntity
  | RateLimited
  | QuotaExceeded
  | RequestTooLarge
  | ServerError
  | TransportError
  | Timeout
  | DecodeError
  | Unsupported

/**
 * The schema of `ApiError`, for persisting or sending errors (batch output lines).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ApiError: Schema.Union<[
  typeof BadRequest,
  typeof Unauthorized,
  typeof Forbidden,
  typeof NotFound,
  typeof Conflict,
  typeof UnprocessableEntity,
  typeof RateLimited,
  typeof QuotaExceeded,
  typeof RequestTooLarge,
  typeof ServerError,
  typeof TransportError,
  typeof Timeout,
  typeof DecodeError,
  typeof Unsupported
]> = Schema.Union(
  BadRequest,
  Unauthorized,
  Forbidden,
  NotFound,
  Conflict,
  UnprocessableEntity,
  RateLimited,
  QuotaExceeded,
  RequestTooLarge,
  ServerError,
  TransportError,
  Timeout,
  DecodeError,
  Unsupported
)

/**
 * True for the errors of this library (any tag of `ApiError`).
 *
 * @since 0.1.0
 * @category guards
 */
export const isApiError = (u: unknown): u is ApiError => Schema.is(ApiError)(u)
