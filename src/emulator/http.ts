/**
 * Request and response helpers of the emulator: FastAPI-style error bodies, key checks, body decoding that
 * answers 400/422 with a `detail` (never a 500), and the rate-limit gate.
 *
 * @since 0.1.0
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { type CatalogueModel, findModel } from "./catalogue.js"
import { formatGoDuration, type WindowStatus } from "./limits.js"
import type { EmulatorState, KeySpec } from "./state.js"

/**
 * A request the emulator answers with an error response.
 *
 * @since 0.1.0
 * @category errors
 */
export class Reject extends Data.TaggedError("Reject")<{ readonly response: HttpServerResponse.HttpServerResponse }> {}

/**
 * `{"detail": message}` with a status: the service's primary error form.
 *
 * @since 0.1.0
 * @category responses
 */
export const detail = (
  status: number,
  message: string | ReadonlyArray<unknown>,
  headers: Record<string, string> = {}
): HttpServerResponse.HttpServerResponse => HttpServerResponse.unsafeJson({ detail: message }, { status, headers })

/**
 * Fails the handler with `{"detail": message}`.
 *
 * @since 0.1.0
 * @category responses
 */
export const reject = (status: number, message: string | ReadonlyArray<unknown>, headers?: Record<string, string>) =>
  Effect.fail(new Reject({ response: detail(status, message, headers) }))

/**
 * Resolves the bearer key: 401 `{"detail": ...}` when it is missing or unknown.
 *
 * @since 0.1.0
 * @category auth
 */
export const authenticate = (
  state: EmulatorState
): Effect.Effect<KeySpec, Reject, HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const header = request.headers["authorization"] ?? request.headers["api-key"]
    if (header === undefined) return reject(401, "Not authenticated")
    const token = header.replace(/^bearer\s+/i, "").trim()
    const spec = state.keys.get(token)
    return spec === undefined ? reject(401, "Incorrect API key provided") : Effect.succeed(spec)
  })

/**
 * Reads and decodes a JSON body. Not JSON: 422 `json_invalid`; wrong shape: 422 with a FastAPI issue list.
 *
 * @since 0.1.0
 * @category bodies
 */
export const decodeBody = <A, I>(
  schema: Schema.Schema<A, I>
): Effect.Effect<A, Reject, HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const text = yield* request.text.pipe(
      Effect.catchAll(() => reject(400, "The request body could not be read"))
    )
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (error) {
      return yield* reject(422, [{
        type: "json_invalid",
        loc: ["body", 0],
        msg: `JSON decode error: ${error instanceof Error ? error.message : "invalid JSON"}`
      }])
    }
    return yield* Schema.decodeUnknown(schema)(json, { errors: "all", onExcessProperty: "ignore" }).pipe(
      Effect.catchAll((error) =>
        reject(
          422,
          ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => ({
            type: issue._tag === "Missing" ? "missing" : "value_error",
            loc: ["body", ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))],
            msg: issue._tag === "Missing" ? "Field required" : issue.message
          }))
        )
      )
    )
  })

/**
 * The `x-ratelimit-*` headers of a window (sent by proprietary models only).
 *
 * @since 0.1.0
 * @category headers
 */
export const rateLimitHeaders = (
  status: WindowStatus,
  reset?: { readonly requestsMs: number; readonly tokensMs: number }
): Record<string, string> => ({
  "x-ratelimit-limit-requests": String(status.limitRequests),
  "x-ratelimit-limit-tokens": String(status.limitTokens),
  "x-ratelimit-remaining-requests": String(status.remainingRequests),
  "x-ratelimit-remaining-tokens": String(status.remainingTokens),
  "x-ratelimit-reset-requests": formatGoDuration(reset?.requestsMs ?? status.resetRequestsMs),
  "x-ratelimit-reset-tokens": formatGoDuration(reset?.tokensMs ?? status.resetTokensMs)
})

/**
 * How a route meets a full window: `reject` answers 429 (standard endpoints), `wait` holds the request
 * until there is capacity (queue endpoints).
 *
 * @since 0.1.0
 * @category limits
 */
export type LimitMode = "reject" | "wait"

/**
 * Counts a request of `tokens` against the key's window for `model`, or answers 429 / waits. Returns the
 * headers to send with the answer.
 *
 * @since 0.1.0
 * @category limits
 */
export const admit = (
  state: EmulatorState,
  key: KeySpec,
  model: CatalogueModel,
  tokens: number,
  mode: LimitMode
): Effect.Effect<Record<string, string>, Reject> =>
  Effect.gen(function*() {
    const window = state.window(key, model.id)
    const started = yield* Clock.currentTimeMillis
    while (true) {
      const now = yield* Clock.currentTimeMillis
      const admission = window.check(now, tokens)
      if (admission._tag === "Admitted") {
        window.record(now, tokens)
        return model.proprietary ? rateLimitHeaders(window.status(now)) : {}
      }
      if (admission._tag === "TooLarge") {
        return yield* tooLarge(model, window.quota.tpm, tokens)
      }
      if (mode === "wait" && now - started + admission.waitMs <= state.queueMaxWaitMs) {
        yield* Effect.sleep(admission.waitMs)
        continue
      }
      const retryAfter = String(Math.max(1, Math.ceil(admission.waitMs / 1000)))
      const limit = admission.by === "requests" ? `${window.quota.rpm} requests` : `${window.quota.tpm} tokens`
      const per = formatGoDuration(state.windowMs)
      if (model.proprietary) {
        const headers = {
          ...rateLimitHeaders(window.status(now), {
            requestsMs: admission.requestsWaitMs,
            tokensMs: admission.tokensWaitMs
          }),
          "retry-after": retryAfter
        }
        return yield* Effect.fail(
          new Reject({
            response: HttpServerResponse.unsafeJson({
              error: {
                message: `Rate limit reached for ${model.id}: limit ${limit} per ${per}. ` +
                  `Please retry after ${retryAfter} seconds.`,
                type: admission.by,
                code: "429"
              }
            }, { status: 429, headers })
          })
        )
      }
      return yield* reject(429, `Rate limit exceeded: ${limit} per ${per} for model ${model.id}`, {
        "retry-after": retryAfter
      })
    }
  })

const tooLarge = (model: CatalogueModel, limit: number, requested: number) =>
  model.proprietary
    ? Effect.fail(
      new Reject({
        response: HttpServerResponse.unsafeJson({
          error: {
            message: `Request too large for ${model.id}: limit ${limit} tokens per window, requested ${requested}.`,
            type: "tokens",
            code: "rate_limit_exceeded"
          }
        }, { status: 429 })
      })
    )
    : reject(429, `Request too large for model ${model.id}: ${requested} tokens exceed the limit of ${limit}`)

/**
 * A server-sent event stream of JSON payloads ending with `data: [DONE]`, paced by `delayMs` when set.
 *
 * @since 0.1.0
 * @category responses
 */
export const sseResponse = (
  payloads: ReadonlyArray<unknown>,
  headers: Record<string, string>,
  delayMs: number
): HttpServerResponse.HttpServerResponse => {
  const lines = Stream.fromIterable([...payloads.map((p) => `data: ${JSON.stringify(p)}\n\n`), "data: [DONE]\n\n"])
  const paced = delayMs > 0 ? Stream.tap(lines, () => Effect.sleep(delayMs)) : lines
  return HttpServerResponse.stream(Stream.encodeText(paced), {
    contentType: "text/event-stream",
    headers: { ...headers, "cache-control": "no-cache" }
  })
}

/**
 * Looks up a model for a route: 404 when unknown, 400 when it does not serve this kind of request.
 *
 * @since 0.1.0
 * @category models
 */
export const requireModel = (
  id: string,
  kind: CatalogueModel["kind"],
  what: string
): Effect.Effect<CatalogueModel, Reject> => {
  const model = findModel(id)
  if (model === undefined) return reject(404, `Model '${id}' not found`)
  if (model.kind !== kind) return reject(400, `Model '${id}' does not support ${what}`)
  return Effect.succeed(model)
}
