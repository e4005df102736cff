/**
 * Request and response helpers of the emulator: FastAPI-style error bodies, key checks, bounded body reading
 * and decoding that answers 400/413/422 with a `detail` (never a 500), and the rate-limit gate.
 *
 * @since 0.1.0
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { IncomingMessage } from "node:http"
import { type Amounts, cost, type Dimension, isCount, noun } from "../internal/budgets.js"
import { type CatalogueModel, findModel, visibleTo } from "./catalogue.js"
import { type Admission, describeLimit, formatGoDuration, type WindowStatus } from "./limits.js"
import { budgetReachedDetail } from "./spend.js"
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
 * The largest JSON body the emulator reads, in bytes (default 10 MiB): a bigger one gets 413 with a `detail`.
 * Provide another value to the emulator's layer to change it.
 *
 * @since 0.1.0
 * @category bodies
 */
export class JsonBodyLimit extends Context.Reference<JsonBodyLimit>()("effect-aifs/emulator/JsonBodyLimit", {
  defaultValue: (): number => 10 * 1024 * 1024
}) {}

/**
 * The deepest nesting of arrays and objects a JSON body may have: deeper input would exhaust the stack of the
 * handlers that walk it (tool parameter schemas), so it is refused with 422 before parsing.
 *
 * @since 0.1.0
 * @category bodies
 */
export const maxJsonDepth = 256

/**
 * More body bytes arrived than the limit allows.
 *
 * @since 0.1.0
 * @category errors
 */
export class BodyTooLarge extends Data.TaggedError("BodyTooLarge")<{ readonly limit: number }> {}

/**
 * The body could not be read (the client went away mid-body).
 *
 * @since 0.1.0
 * @category errors
 */
export class BodyUnreadable extends Data.TaggedError("BodyUnreadable")<{ readonly cause: unknown }> {}

/**
 * Reads the request body whole, failing with `BodyTooLarge` as soon as more than `limit` bytes have arrived.
 * Whatever arrives after that is discarded as it comes, neither buffered nor cut off: the connection stays
 * open and usable, so the client reads the 413 instead of a reset.
 *
 * @since 0.1.0
 * @category bodies
 */
export const readBody = (
  request: HttpServerRequest.HttpServerRequest,
  limit: number
): Effect.Effect<Uint8Array, BodyTooLarge | BodyUnreadable> => {
  const source = NodeHttpServerRequest.toIncomingMessage(request)
  if (!(source instanceof IncomingMessage)) {
    // not served by Node: the platform's stream, which may close the connection when it stops early
    return Stream.runFold(
      Stream.mapError(request.stream, (cause): BodyTooLarge | BodyUnreadable => new BodyUnreadable({ cause })),
      [] as Array<Uint8Array>,
      (chunks, chunk) => [...chunks, chunk]
    ).pipe(
      Effect.filterOrFail(
        (chunks) => chunks.reduce((n, c) => n + c.length, 0) <= limit,
        () => new BodyTooLarge({ limit })
      ),
      Effect.map((chunks) => Buffer.concat(chunks))
    )
  }
  if (source.readableEnded) return Effect.succeed(new Uint8Array(0))
  // the platform's own readers destroy the socket when they stop early; this one reads in flowing mode and
  // keeps reading (and dropping) to the end of the body after it has given up
  return Effect.async<Uint8Array, BodyTooLarge | BodyUnreadable>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    let settled = false
    const settle = (effect: Effect.Effect<Uint8Array, BodyTooLarge | BodyUnreadable>) => {
      if (settled) return
      settled = true
      resume(effect)
    }
    const onData = (chunk: Buffer) => {
      if (settled) return
      size += chunk.length
      if (size > limit) {
        chunks.length = 0
        settle(Effect.fail(new BodyTooLarge({ limit })))
      } else {
        chunks.push(chunk)
      }
    }
    const cleanUp = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
      source.off("close", onClose)
    }
    const onEnd = () => {
      cleanUp()
      settle(Effect.succeed(Buffer.concat(chunks)))
    }
    const onError = (cause: unknown) => {
      cleanUp()
      settle(Effect.fail(new BodyUnreadable({ cause })))
    }
    // a body cut off by the client ends in `error` or, in some Node versions, in `close` alone
    const onClose = () => onError(new Error("the connection closed before the end of the body"))
    source.on("data", onData)
    source.on("end", onEnd)
    source.on("error", onError)
    source.on("close", onClose)
    // interrupted (the client went away): stop collecting, let Node drop the rest
    return Effect.sync(() => {
      settled = true
      cleanUp()
      source.resume()
    })
  })
}

/**
 * The announced `content-length`, when there is a valid one.
 *
 * @since 0.1.0
 * @category bodies
 */
export const announcedLength = (request: HttpServerRequest.HttpServerRequest): number | undefined => {
  const raw = request.headers["content-length"]
  const n = raw === undefined ? Number.NaN : Number(raw)
  return isCount(n) ? n : undefined
}

const jsonInvalid = (msg: string) => reject(422, [{ type: "json_invalid", loc: ["body", 0], msg }])

/** The deepest nesting of `[`/`{` outside strings, stopping once past `max`. */
const nestingDepth = (text: string, max: number): number => {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) {
      inString = true
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > deepest) deepest = depth
      if (deepest > max) return deepest
    } else if (c === 0x7d || c === 0x5d) {
      depth--
    }
  }
  return deepest
}

const utf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * Reads a JSON body of at most `JsonBodyLimit` bytes: 413 past it (announced or as it streams in), 422
 * `json_invalid` when it is not UTF-8 JSON or nests deeper than `maxJsonDepth`.
 *
 * @since 0.1.0
 * @category bodies
 */
export const readJson: Effect.Effect<unknown, Reject, HttpServerRequest.HttpServerRequest> = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const limit = yield* JsonBodyLimit
  const tooLarge = reject(413, `Request body too large: the limit for JSON bodies is ${limit} bytes`)
  if ((announcedLength(request) ?? 0) > limit) return yield* tooLarge
  const bytes = yield* readBody(request, limit).pipe(
    Effect.catchTags({
      BodyTooLarge: () => tooLarge,
      BodyUnreadable: () => reject(400, "The request body could not be read")
    })
  )
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    return yield* jsonInvalid("JSON decode error: the body is not valid UTF-8")
  }
  if (nestingDepth(text, maxJsonDepth) > maxJsonDepth) {
    return yield* jsonInvalid(`JSON decode error: nested deeper than ${maxJsonDepth} levels`)
  }
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    return yield* jsonInvalid(`JSON decode error: ${error instanceof Error ? error.message : "invalid JSON"}`)
  }
})

/**
 * Reads and decodes a JSON body (see `readJson`). Not JSON: 422 `json_invalid`; wrong shape: 422 with a
 * FastAPI issue list; too large: 413.
 *
 * @since 0.1.0
 * @category bodies
 */
export const decodeBody = <A, I>(
  schema: Schema.Schema<A, I>
): Effect.Effect<A, Reject, HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const json = yield* readJson
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
 * The `x-ratelimit-*` headers of a window (sent by proprietary models only). The tokens headers speak of the count
 * `limits.headerTokens` picks (the combined tokens, or input and output together against their limits summed), and
 * are left out when no token budget is metered.
 *
 * @since 0.1.0
 * @category headers
 */
export const rateLimitHeaders = (
  status: WindowStatus,
  reset?: { readonly requestsMs: number; readonly tokensMs: number }
): Record<string, string> => ({
  "x-ratelimit-limit-requests": String(status.limitRequests),
  "x-ratelimit-remaining-requests": String(status.remainingRequests),
  "x-ratelimit-reset-requests": formatGoDuration(reset?.requestsMs ?? status.resetRequestsMs),
  ...(status.limitTokens === undefined ? {} : {
    "x-ratelimit-limit-tokens": String(status.limitTokens),
    "x-ratelimit-remaining-tokens": String(status.remainingTokens),
    "x-ratelimit-reset-tokens": formatGoDuration(reset?.tokensMs ?? status.resetTokensMs)
  })
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
 * The tokens a request counts: `input` from its prompt, `output` from the answer the emulator generates (what the
 * usage reports).
 *
 * @since 0.4.0
 * @category limits
 */
export interface RequestTokens {
  readonly input: number
  readonly output: number
}

/**
 * Counts a request of `tokens` against the key's window for `model` and its spend, or answers 429 / waits. Returns
 * the headers to send with the answer.
 *
 * @since 0.1.0
 * @category limits
 */
export const admit = (
  state: EmulatorState,
  key: KeySpec,
  model: CatalogueModel,
  tokens: RequestTokens,
  mode: LimitMode
): Effect.Effect<Record<string, string>, Reject> =>
  Effect.gen(function*() {
    if (key.exhausted !== undefined) return yield* quotaSpent(key.exhausted)
    if (state.budgetReached(key, yield* Clock.currentTimeMillis)) return yield* budgetReached
    // interface 1.0.0: the queue takes the work and answers its handle at once
    if (mode === "wait" && state.versionOf(key) === "1.0.0") return yield* acceptedInQueue(state)
    const window = state.window(key, model.id)
    const request = cost(tokens.input, tokens.output)
    const started = yield* Clock.currentTimeMillis
    // bounded: every round sleeps at least 1 ms, and the waits together fit queueMaxWaitMs; a window that claims
    // a zero wait while full cannot spin (under a TestClock nobody moves, the request blocks instead)
    while (true) {
      const now = yield* Clock.currentTimeMillis
      // read each round: a quota set while a queued request waits applies to it
      const meter = state.meter(key, model.id)
      const admission = window.check(now, request, meter.limits)
      if (admission._tag === "Admitted") {
        // a queued request may have waited while others spent the budget
        if (state.budgetReached(key, now)) return yield* budgetReached
        window.record(now, request)
        state.charge(key, model.id, tokens, now)
        // a shared quota has no number of the key's own to report
        return model.proprietary && meter.source !== "shared" ? rateLimitHeaders(window.status(now, meter.limits)) : {}
      }
      if (admission._tag === "TooLarge") return yield* tooLarge(state, model, admission.by, meter.limits, request)
      if (mode === "wait" && now - started + admission.waitMs <= state.queueMaxWaitMs) {
        yield* Effect.sleep(Math.max(1, admission.waitMs))
        continue
      }
      state.chaos.rateLimited++
      return yield* rateLimited(state, model, admission, meter.limits, window.status(now, meter.limits))
    }
  })

/** The `type` of an OpenAI-style 429 body per budget. */
const errorType: { readonly [D in Dimension]: string } = {
  requests: "requests",
  input: "input_tokens",
  output: "output_tokens",
  tokens: "tokens"
}

/** The 429 of a full window, naming the budget that refused and its limit, with that budget's wait. */
const rateLimited = (
  state: EmulatorState,
  model: CatalogueModel,
  admission: Extract<Admission, { readonly _tag: "Wait" }>,
  limits: Amounts,
  status: WindowStatus
) => {
  const retryAfter = String(Math.max(1, Math.ceil(admission.waitMs / 1000)))
  const limit = describeLimit(admission.by, limits)
  const per = formatGoDuration(state.windowMs)
  if (!model.proprietary) {
    return reject(429, `Rate limit exceeded: ${limit} per ${per} for model ${model.id}`, { "retry-after": retryAfter })
  }
  const { waits } = admission
  const headers = {
    ...rateLimitHeaders(status, {
      requestsMs: waits.requests,
      tokensMs: Math.max(waits.input, waits.output, waits.tokens)
    }),
    "retry-after": retryAfter
  }
  return Effect.fail(
    new Reject({
      response: HttpServerResponse.unsafeJson({
        error: {
          message: `Rate limit reached for ${model.id}: limit ${limit} per ${per}. ` +
            `Please retry after ${retryAfter} seconds.`,
          type: errorType[admission.by],
          code: "429"
        }
      }, { status: 429, headers })
    })
  )
}

/**
 * The queue's answer under interface 1.0.0: `202` with a job handle, sent in place of the result (a `Reject`
 * carries any answer that ends a handler early).
 */
const acceptedInQueue = (state: EmulatorState) =>
  Effect.fail(
    new Reject({
      response: HttpServerResponse.unsafeJson({
        id: `job-${state.next().toString(36).padStart(6, "0")}`,
        object: "queue.job",
        status: "queued"
      }, { status: 202 })
    })
  )

/** The refusal of a key whose budget is spent: 402, or OpenAI's 429 with `insufficient_quota`. */
const quotaSpent = (status: 402 | 429) =>
  status === 402
    ? reject(402, "Budget exhausted for this API key: no more requests until it is renewed")
    : Effect.fail(
      new Reject({
        response: HttpServerResponse.unsafeJson({
          error: {
            message: "You exceeded your current quota, please check your plan and billing details.",
            type: "insufficient_quota",
            code: "insufficient_quota"
          }
        }, { status: 429 })
      })
    )

/** The service's refusal once a project's monthly budget is spent: its own words, and no `retry-after`. */
const budgetReached = reject(429, budgetReachedDetail)

/** A request no wait can admit: it is larger than the limit of budget `by` (the words the client looks for). */
const tooLarge = (state: EmulatorState, model: CatalogueModel, by: Dimension, limits: Amounts, request: Amounts) => {
  const per = formatGoDuration(state.windowMs)
  const limit = describeLimit(by, limits)
  const requested = `${request[by]} ${noun[by]}`
  return model.proprietary
    ? Effect.fail(
      new Reject({
        response: HttpServerResponse.unsafeJson({
          error: {
            message: `Request too large for ${model.id}: limit ${limit} per ${per}, requested ${requested}.`,
            type: errorType[by],
            code: "rate_limit_exceeded"
          }
        }, { status: 429 })
      })
    )
    : reject(429, `Request too large for model ${model.id}: ${requested} exceed the limit of ${limit} per ${per}`)
}

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
 * The 404 of a model the key cannot use: unknown, or outside the key's plan (the docs' "model not found").
 *
 * @since 0.5.0
 * @category models
 */
export const modelNotFound = (id: string) => reject(404, `Model '${id}' not found`)

/**
 * Looks up a model for a route: 404 when unknown or outside the key's plan, 400 when it does not serve this kind of
 * request.
 *
 * @since 0.1.0
 * @category models
 */
export const requireModel = (
  id: string,
  kind: CatalogueModel["kind"],
  what: string,
  key: KeySpec
): Effect.Effect<CatalogueModel, Reject> =>
  visibleTo(key.tier, id) ? requireCatalogued(id, kind, what) : modelNotFound(id)

/**
 * Looks up a model by id alone, whatever the key's plan (the embedding models a vector store is configured with): 404
 * when unknown, 400 when it does not serve this kind of request.
 *
 * @since 0.5.0
 * @category models
 */
export const requireCatalogued = (
  id: string,
  kind: CatalogueModel["kind"],
  what: string
): Effect.Effect<CatalogueModel, Reject> => {
  const model = findModel(id)
  if (model === undefined) return modelNotFound(id)
  if (model.kind !== kind) return reject(400, `Model '${id}' does not support ${what}`)
  return Effect.succeed(model)
}

/**
 * 400 unless `value` (when sent) is a number from `min` to `max`, and an integer when `integer` is set: values
 * of the right type that no model accepts, as vLLM refuses them.
 *
 * @since 0.1.0
 * @category bodies
 */
export const checkRange = (
  name: string,
  value: number | null | undefined,
  range: { readonly min: number; readonly max?: number | undefined; readonly integer?: boolean | undefined }
): Effect.Effect<void, Reject> => {
  if (value === undefined || value === null) return Effect.void
  const max = range.max ?? Number.MAX_SAFE_INTEGER
  if ((range.integer !== true || Number.isInteger(value)) && value >= range.min && value <= max) return Effect.void
  const bounds = range.max === undefined ? `at least ${range.min}` : `from ${range.min} to ${range.max}`
  return reject(400, `${name} must be ${range.integer === true ? "an integer" : "a number"} ${bounds}, got ${value}`)
}

/**
 * Refuses (400) a request whose prompt and output cap exceed its model's context window (`max_sequence_length`, when
 * known), in the words of the model's server: vLLM's for the operator's own models, OpenAI's (with its
 * `context_length_exceeded` code) for the proprietary ones.
 *
 * @since 0.1.0
 * @category bodies
 */
export const fitsContext = (
  model: CatalogueModel,
  promptTokens: number,
  cap: number | null | undefined
): Effect.Effect<void, Reject> => {
  const window = model.meta.max_sequence_length ?? 0
  const requested = promptTokens + (cap ?? 0)
  if (window <= 0 || requested <= window) return Effect.void
  const message = `This model's maximum context length is ${window} tokens. However, you requested ${requested} ` +
    `tokens (${promptTokens} in the messages, ${cap ?? 0} in the completion). Please reduce the length of the ` +
    `messages or completion.`
  if (!model.proprietary) return reject(400, message)
  const error = { message, type: "invalid_request_error", param: "messages", code: "context_length_exceeded" }
  return Effect.fail(new Reject({ response: HttpServerResponse.unsafeJson({ error }, { status: 400 }) }))
}

/** No model has a context of a million tokens: a bigger budget is a mistake. */
const maxTokenBudget = 1_000_000

/**
 * The sampling fields a generation request may carry, checked for values no model accepts (400): token
 * budgets below 1 or over a million, a temperature outside 0..2, `top_p` outside 0..1, `n` below 1.
 *
 * @since 0.1.0
 * @category bodies
 */
export const checkSampling = (params: {
  readonly temperature?: number | null | undefined
  readonly top_p?: number | null | undefined
  readonly n?: number | null | undefined
  readonly max_tokens?: number | null | undefined
  readonly max_completion_tokens?: number | null | undefined
  readonly max_output_tokens?: number | null | undefined
}): Effect.Effect<void, Reject> =>
  Effect.all([
    checkRange("max_tokens", params.max_tokens, { min: 1, max: maxTokenBudget, integer: true }),
    checkRange("max_completion_tokens", params.max_completion_tokens, { min: 1, max: maxTokenBudget, integer: true }),
    checkRange("max_output_tokens", params.max_output_tokens, { min: 1, max: maxTokenBudget, integer: true }),
    checkRange("temperature", params.temperature, { min: 0, max: 2 }),
    checkRange("top_p", params.top_p, { min: 0, max: 1 }),
    checkRange("n", params.n, { min: 1, max: 128, integer: true })
  ], { discard: true })
