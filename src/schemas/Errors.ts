/**
 * The typed errors of every operation. Each is a flat `Schema.TaggedError` with `isRetryable`; `ApiError`
 * is their union. Handle them by tag: `Effect.catchTag("RateLimited", ...)`.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   const answer = yield* chat.create({ model: "llama", messages: [{ role: "user", content: "Hi" }] })
 *   return answer.text
 * }).pipe(
 *   // every failure is an `ApiError`: pick the ones you can do something about by tag
 *   Effect.catchTags({
 *     NotFound: (error) => Effect.succeed(`unknown model (${error.message})`),
 *     RateLimited: (error) => Effect.succeed(`busy, retry later: ${error.message}`)
 *   })
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => unknown model (Model 'llama' not found)
 * ```
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
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Chat.Chat, (chat) =>
 *   chat.create({
 *     model: "Llama-3.3-70B-Instruct",
 *     temperature: 7,
 *     messages: [{ role: "user", content: "Hi" }]
 *   })).pipe(
 *     Effect.map((answer) => answer.text),
 *     Effect.catchTag("BadRequest", (error) => Effect.succeed(`fix the request: ${error.message}`))
 *   )
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => fix the request: temperature must be a number from 0 to 2, got 7
 * ```
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
 * @example
 * ```ts
 * import { Models, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a scripted server that refuses the key
 * const server = Testing.layerHttp(() => ({ status: 401, body: { detail: "Invalid API key" } }))
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.list()).pipe(
 *   Effect.map((list) => `${list.data.length} models`),
 *   Effect.catchTag("Unauthorized", (error) => Effect.succeed(`check AIFS_API_KEY (${error.message})`))
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => check AIFS_API_KEY (Invalid API key)
 * ```
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
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const ask = (model: string) =>
 *   Effect.flatMap(Chat.Chat, (chat) => chat.create({ model, messages: [{ role: "user", content: "Hi" }] }))
 *
 * // fall back to an open model when the key may not use a proprietary one
 * const program = ask("gpt-4.1").pipe(
 *   Effect.catchTag("Forbidden", () => ask("Llama-3.3-70B-Instruct")),
 *   Effect.map((answer) => answer.model)
 * )
 *
 * // a scripted server whose key may use open models only
 * const server = Testing.layerHttp((request) =>
 *   (request.body as { model: string }).model === "gpt-4.1"
 *     ? { status: 403, body: { detail: "This key may not use gpt-4.1" } }
 *     : {
 *       body: {
 *         id: "chatcmpl-1",
 *         model: "Llama-3.3-70B-Instruct",
 *         choices: [{ index: 0, message: { role: "assistant", content: "Hello" }, finish_reason: "stop" }]
 *       }
 *     }
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => Llama-3.3-70B-Instruct
 * ```
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
 * @example
 * ```ts
 * import { Models, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.retrieve("llama-3.3-70b-instruct")).pipe(
 *   Effect.map((model) => model.id),
 *   // model ids are case-sensitive
 *   Effect.catchTag("NotFound", (error) => Effect.succeed(`no such model: ${error.message}`))
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => no such model: Model 'llama-3.3-70b-instruct' not found
 * ```
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
 * @example
 * ```ts
 * import { FineTuning, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a scripted server where the job has already finished (fine-tuning lives on interface 1.0.0)
 * const server = Testing.layerHttp(
 *   () => ({ status: 409, body: { detail: "Job ftjob-1 has already finished" } }),
 *   { config: { apiVersion: "1.0.0" } }
 * )
 *
 * const program = Effect.flatMap(FineTuning.FineTuning, (fineTuning) => fineTuning.cancel("ftjob-1")).pipe(
 *   Effect.map((job) => `cancelled: ${job.status}`),
 *   Effect.catchTag("Conflict", (error) => Effect.succeed(`nothing to cancel: ${error.message}`))
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => nothing to cancel: Job ftjob-1 has already finished
 * ```
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
 * @example
 * ```ts
 * import { Embeddings, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a scripted server answering a FastAPI validation error
 * const server = Testing.layerHttp(() => ({
 *   status: 422,
 *   body: { detail: [{ loc: ["body", "input"], msg: "Field required", type: "missing" }] }
 * }))
 *
 * const program = Effect.flatMap(Embeddings.Embeddings, (embeddings) =>
 *   embeddings.create({ model: "text-embedding-bge-m3", input: "Hello" })).pipe(
 *     Effect.map((list) => `${list.data.length} vectors`),
 *     Effect.catchTag("UnprocessableEntity", (error) =>
 *       Effect.succeed((error.issues ?? []).map((issue) => `${issue.loc.join(".")}: ${issue.msg}`).join("; ")))
 *   )
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => body.input: Field required
 * ```
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
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Duration from "effect/Duration"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Chat.Chat, (chat) =>
 *   chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }] })).pipe(
 *     Effect.map((answer) => answer.text),
 *     // reached only when the retries gave up (here: none allowed)
 *     Effect.catchTag("RateLimited", (error) =>
 *       Effect.succeed(`busy: retry in ${error.retryAfter ? Duration.format(error.retryAfter) : "a while"}`))
 *   )
 *
 * // an emulator that answers every request with a 429
 * const server = Testing.layerEmulator({
 *   chaos: [{ fault: { kind: "status", status: 429 } }],
 *   client: { maxRetries: 0 }
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => busy: retry in 1s
 * ```
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
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a scripted proprietary model whose budget is spent
 * const server = Testing.layerHttp(() => ({
 *   status: 429,
 *   body: { error: { message: "You exceeded your current quota", type: "insufficient_quota" } }
 * }))
 *
 * const program = Effect.flatMap(Chat.Chat, (chat) =>
 *   chat.create({ model: "gpt-4o", messages: [{ role: "user", content: "Hi" }] })).pipe(
 *     Effect.map((answer) => answer.text),
 *     // not retried: waiting will not help
 *     Effect.catchTag("QuotaExceeded", (error) => Effect.succeed(`out of budget: ${error.message}`))
 *   )
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => out of budget: You exceeded your current quota
 * ```
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
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Chat.Chat, (chat) =>
 *   chat.create({ model: "Llama-3.3-70B-Instruct", max_tokens: 20_000, messages: [{ role: "user", content: "Hi" }] })
 * ).pipe(
 *     Effect.map((answer) => answer.text),
 *     // the client's rate limiter refuses it before sending: no wait could make it fit
 *     Effect.catchTag("RequestTooLarge", (error) =>
 *       Effect.succeed(`needs ${error.requested} tokens, the quota allows ${error.limit}`))
 *   )
 *
 * // on the basic plan, Llama-3.3-70B-Instruct may answer 5,000 output tokens a minute
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator({ tier: "basic" })))).then(console.log)
 * // => needs 20000 tokens, the quota allows 5000
 * ```
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
  /** The budget it can never fit: `input` tokens, `output` tokens, or combined `tokens`. */
  budget: Schema.optional(Schema.Literal("requests", "input", "output", "tokens")),
  /** What the request needs of that budget (its estimated input, its output cap, or their sum). */
  requested: Schema.optional(Schema.Number),
  /** What the quota allows of that budget per window. */
  limit: Schema.optional(Schema.Number)
}) {
  /** Never retried: lower `max_tokens` or shorten the input. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The prompt and the output asked for cannot fit the model's context window: refused before sending when the client
 * knows the window (the plan's table, `contextWindows` in the limiter's options, or a `/models` listing) and its
 * estimate of the prompt plus `max_tokens` exceeds it, or answered so by the server ("context length exceeded").
 * Never retried: shorten the prompt or lower `max_tokens`. The check is off with `contextCheck: false`.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Chat.Chat, (chat) =>
 *   chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }], max_tokens: 9000 })
 * ).pipe(
 *   Effect.map((answer) => answer.text),
 *   Effect.catchTag("ContextLengthExceeded", (error) => Effect.succeed(`${error.model}: ${error.window} tokens`))
 * )
 *
 * // a window of 8,192 tokens, told to the limiter
 * const client = Testing.layerEmulator({ rateLimiter: { contextWindows: { "Llama-3.3-70B-Instruct": 8192 } } })
 *
 * Effect.runPromise(program.pipe(Effect.provide(client))).then(console.log)
 * // => Llama-3.3-70B-Instruct: 8192 tokens
 * ```
 *
 * @since 0.5.0
 * @category errors
 */
export class ContextLengthExceeded extends Schema.TaggedError<ContextLengthExceeded>()("ContextLengthExceeded", {
  ...responseFields,
  /** 400 when the server said so; absent when the client refused it before sending. */
  status: Schema.optional(Schema.Number),
  /** The model. */
  model: Schema.optional(Schema.String),
  /** The model's context window, in tokens, when known. */
  window: Schema.optional(Schema.Number),
  /** The client's estimate of the prompt plus the output asked for, in tokens, when it refused before sending. */
  requested: Schema.optional(Schema.Number)
}) {
  /** Never retried: the same request overflows the same way. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The shared limiter store (Redis) could not be reached or answered too late, and the store was configured to
 * fail rather than fall back to the process's own memory (`onUnavailable: "fail"`). Nothing was sent.
 *
 * @example
 * ```ts
 * import { Errors } from "effect-aifs"
 *
 * const error = new Errors.LimiterUnavailable({ message: "the limiter store did not answer within 250 ms" })
 * console.log(error._tag, error.isRetryable)
 * // => LimiterUnavailable true
 * ```
 *
 * @since 0.2.0
 * @category errors
 */
export class LimiterUnavailable extends Schema.TaggedError<LimiterUnavailable>()("LimiterUnavailable", {
  /** What failed (the store's address without its password, the operation, the cause). */
  message: Schema.String,
  /** The request held back, as `METHOD /path`. */
  endpoint: Schema.optional(Schema.String)
}) {
  /** Retried with exponential back-off: the store may come back. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The monthly budget set for the client (`AIFS_BUDGET`, or `budget` in the limiter's options) is spent, or the
 * request would cross it (its estimate counts its prompt and its whole `max_tokens`): it was never sent. Not retried;
 * the next calendar month (UTC) starts again. The service's own budget refusal is `QuotaExceeded`.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Chat.Chat, (chat) =>
 *   chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }], max_tokens: 100 })
 * ).pipe(
 *   Effect.map((answer) => answer.text),
 *   Effect.catchTag("BudgetExceeded", (error) => Effect.succeed(`not sent: ${error.message}`))
 * )
 *
 * // a budget of a hundred-thousandth of a euro: less than one request costs
 * const client = Testing.layerEmulator({ tier: "basic", rateLimiter: { budget: 0.00001 } })
 *
 * Effect.runPromise(program.pipe(Effect.provide(client))).then(console.log)
 * // => not sent: Llama-3.3-70B-Instruct: this request (about 0.00038 EUR) would cross the monthly budget of 0.000010 EUR (0.00 EUR spent)
 * ```
 *
 * @since 0.5.0
 * @category errors
 */
export class BudgetExceeded extends Schema.TaggedError<BudgetExceeded>()("BudgetExceeded", {
  /** The budget, the spend and the request's estimate in words. */
  message: Schema.String,
  /** The budget a calendar month, in `currency`. */
  budget: Schema.Number,
  /** What the key spent this month (with what its requests in flight are estimated to cost), in `currency`. */
  spent: Schema.Number,
  /** What the refused request was estimated to cost, in `currency`. */
  estimate: Schema.Number,
  /** The currency of the plans' prices. */
  currency: Schema.String,
  /** The request's model. */
  model: Schema.optional(Schema.String),
  /** The request held back, as `METHOD /path`. */
  endpoint: Schema.optional(Schema.String)
}) {
  /** Never retried: the budget starts again next month. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * 5xx: the server or a proxy failed; 503 means the model is temporarily unavailable.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Chat.Chat, (chat) =>
 *   chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }] })).pipe(
 *     Effect.map((answer) => answer.text),
 *     Effect.catchTag("ServerError", (error) => Effect.succeed(`${error.status}: ${error.message}`))
 *   )
 *
 * // an emulator whose model is down, and a client that does not retry
 * const server = Testing.layerEmulator({
 *   chaos: [{ fault: { kind: "status", status: 503 } }],
 *   client: { maxRetries: 0 }
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => 503: Model temporarily unavailable, please try again later
 * ```
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
 * @example
 * ```ts
 * import { Models, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.list()).pipe(
 *   Effect.map((list) => `${list.data.length} models`),
 *   Effect.catchTag("TransportError", (error) => Effect.succeed(`no connection: ${error.message}`))
 * )
 *
 * // an emulator that drops every connection, and a client that does not retry
 * const server = Testing.layerEmulator({
 *   chaos: [{ fault: { kind: "resetBeforeBody" } }],
 *   client: { maxRetries: 0 }
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * ```
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
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Chat.Chat, (chat) =>
 *   chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }] })).pipe(
 *     Effect.map((answer) => answer.text),
 *     Effect.catchTag("Timeout", (error) => Effect.succeed(`${error.timeout}: ${error.message}`))
 *   )
 *
 * // an emulator that holds its answers for 2 seconds, and a client that waits 100 ms for one
 * const server = Testing.layerEmulator({
 *   chaos: [{ fault: { kind: "slowFirstByte", delay: "2 seconds" } }],
 *   client: { firstByteTimeout: "100 millis", maxRetries: 0 }
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => firstByte: no response within 100ms
 * ```
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
 * @example
 * ```ts
 * import { Models, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.list()).pipe(
 *   Effect.map((list) => `${list.data.length} models`),
 *   Effect.catchTag("DecodeError", (error) => Effect.succeed(`unexpected answer: ${error.excerpt}`))
 * )
 *
 * // a scripted server answering HTML where JSON was expected
 * const server = Testing.layerHttp(() => ({ body: "<html>Maintenance</html>" }))
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then(console.log)
 * // => unexpected answer: <html>Maintenance</html>
 * ```
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
 * @example
 * ```ts
 * import { FineTuning, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the client is configured for interface 1.1.0 (the default), which has no fine-tuning routes
 * const program = Effect.flatMap(FineTuning.FineTuning, (fineTuning) => fineTuning.list()).pipe(
 *   Effect.map((page) => `${page.data.length} jobs`),
 *   Effect.catchTag("Unsupported", (error) => Effect.succeed(`${error.operation} needs another interface version`))
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => FineTuning.list needs another interface version
 * ```
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
 * @example
 * ```ts
 * import { Errors } from "effect-aifs"
 *
 * // one message per kind of failure, e.g. for a user interface
 * const explain = (error: Errors.ApiError): string => {
 *   switch (error._tag) {
 *     case "RateLimited":
 *     case "QuotaExceeded":
 *       return "The service is busy or the budget is spent."
 *     case "Unauthorized":
 *     case "Forbidden":
 *       return "Check the API key."
 *     default:
 *       return error.isRetryable ? "A temporary failure: try again." : error.message
 *   }
 * }
 *
 * console.log(explain(new Errors.ServerError({ message: "Bad gateway", status: 502 })))
 * // => A temporary failure: try again.
 * ```
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
  | BudgetExceeded
  | ContextLengthExceeded
  | RequestTooLarge
  | LimiterUnavailable
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
  typeof BudgetExceeded,
  typeof ContextLengthExceeded,
  typeof RequestTooLarge,
  typeof LimiterUnavailable,
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
  BudgetExceeded,
  ContextLengthExceeded,
  RequestTooLarge,
  LimiterUnavailable,
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
