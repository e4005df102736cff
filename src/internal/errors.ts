/**
 * The one place where failed responses, transport failures and stream error events become `ApiError`s.
 * @internal
 */
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  type ApiError,
  BadRequest,
  Conflict,
  ContextLengthExceeded,
  DecodeError,
  Forbidden,
  NotFound,
  QuotaExceeded,
  RateLimited,
  RequestTooLarge,
  ServerError,
  Timeout,
  TransportError,
  Unauthorized,
  UnprocessableEntity
} from "../schemas/Errors.js"
import type { RateLimitInfo } from "../schemas/RateLimit.js"
import { DetailErrorBody, OpenAIErrorBody, type ValidationIssue } from "../schemas/Shared.js"
import { parseGoDurationMillis } from "./duration.js"
import { capped } from "./headers.js"

/** The most of a body kept in an error (message or excerpt). */
export const maxExcerpt = 512

/** The start of a body, bounded, for `DecodeError.excerpt`. */
export const excerpt = (body: string, max = maxExcerpt): string =>
  body.length <= max ? body : `${body.slice(0, max)}... (${body.length - max} more characters)`

/** What an error body said, whichever form it came in. */
export interface ErrorBody {
  readonly message: string
  readonly code?: string | undefined
  readonly errorType?: string | undefined
  readonly issues?: ReadonlyArray<ValidationIssue> | undefined
}

const decodeDetail = Schema.decodeUnknownEither(DetailErrorBody)
const decodeOpenAI = Schema.decodeUnknownEither(OpenAIErrorBody)

const issueText = (issue: ValidationIssue): string =>
  issue.loc.length > 0 ? `${issue.loc.join(".")}: ${issue.msg}` : issue.msg

const htmlText = (html: string): string => {
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1]
  const text = title ?? html.replace(/<(script|style)[\s\S]*?<\/\1>/gi, " ").replace(/<[^>]+>/g, " ")
  return text.replace(/\s+/g, " ").trim()
}

const reasonPhrases: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout"
}

/** Parses any documented error body: `detail` string or list, `error` object, JSON `message`, text, HTML. */
export const parseErrorBody = (status: number, body: string): ErrorBody => {
  const fallback = `HTTP ${status}${reasonPhrases[status] ? ` ${reasonPhrases[status]}` : ""}`
  const trimmed = body.trim()
  if (trimmed === "") return { message: fallback }
  let json: unknown
  try {
    json = JSON.parse(trimmed)
  } catch {
    // not JSON: HTML or plain text below
  }
  if (json !== undefined) {
    const detail = decodeDetail(json)
    if (Either.isRight(detail)) {
      const d = detail.right.detail
      return typeof d === "string"
        ? { message: d || fallback }
        : { message: d.length > 0 ? d.map(issueText).join("; ") : fallback, issues: d }
    }
    const openai = decodeOpenAI(json)
    if (Either.isRight(openai)) {
      const e = openai.right.error
      return {
        message: e.message || fallback,
        code: e.code === undefined || e.code === null ? undefined : String(e.code),
        errorType: e.type ?? undefined
      }
    }
    if (typeof json === "object" && json !== null) {
      const record = json as Record<string, unknown>
      if (typeof record.message === "string" && record.message.trim() !== "") return { message: record.message }
      if (typeof record.error === "string" && record.error.trim() !== "") return { message: record.error }
    }
    return { message: `${fallback}: ${excerpt(trimmed, 200)}` }
  }
  if (/^\s*</.test(trimmed) && /<\/?[a-z][\s\S]*>/i.test(trimmed)) {
    const text = htmlText(trimmed)
    return { message: text === "" ? fallback : `${fallback}: ${excerpt(text, 200)}` }
  }
  return { message: excerpt(trimmed, 300) }
}

const retryHint =
  /(?:retry after|try again in)\s+(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)?\b/i
const retryHintGo = /(?:retry after|try again in)\s+((?:\d+(?:\.\d+)?(?:h|ms|m|s))+)/i

/** The wait a message asks for: "Please retry after 22 seconds", "Please try again in 6.5s", "in 1m30s". */
export const retryAfterFromMessage = (message: string): Duration.Duration | undefined => {
  const go = retryHintGo.exec(message)
  const goMillis = go === null ? Option.none() : parseGoDurationMillis(go[1]!)
  if (Option.isSome(goMillis)) return capped(goMillis.value)
  const match = retryHint.exec(message)
  if (match === null) return undefined
  const unit = match[2]?.toLowerCase() ?? "s"
  const factor = unit.startsWith("s") ? 1000 : unit === "ms" || unit.startsWith("milli") ? 1 : 60_000
  return capped(Number(match[1]) * factor)
}

const quotaWords = /insufficient.quota|quota|budget|billing|credit balance|payment required/i
const rateWords = /per.minute|per.min\b|\brpm\b|\btpm\b|rate.limit/i

/**
 * A body that says the prompt does not fit the model's window: the service's "Context length exceeded", OpenAI's
 * `context_length_exceeded` code and "maximum context length" message, vLLM's "longer than the maximum model length".
 */
export const isContextExceeded = (body: ErrorBody): boolean =>
  body.code === "context_length_exceeded" ||
  /context length exceeded|maximum context length|context window|maximum model length/i.test(body.message)

/** A body that says the project's monthly budget is spent (the service's words: "reached its monthly budget limit"). */
export const isBudgetSpent = (body: ErrorBody): boolean => /monthly budget|budget limit/i.test(body.message)

/** A 429 whose body says the quota, budget or billing is spent, not that the rate is too high right now. */
export const isQuotaExhausted = (body: ErrorBody): boolean =>
  body.code === "insufficient_quota" || body.errorType === "insufficient_quota" ||
  (quotaWords.test(body.message) && !rateWords.test(body.message))

/** Everything known about a failed response. */
export interface FailedResponse {
  readonly status: number
  readonly body: string
  readonly endpoint: string
  readonly requestId: string | undefined
  readonly rateLimit: RateLimitInfo
}

const definedFields = <A extends Record<string, unknown>>(fields: A): A =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as A

/** Maps a non-2xx response to its typed error. */
export const fromResponse = (response: FailedResponse): ApiError => {
  const { endpoint, rateLimit, requestId, status } = response
  const body = parseErrorBody(status, response.body)
  const fields = definedFields({
    message: body.message,
    status,
    endpoint,
    requestId,
    code: body.code,
    errorType: body.errorType,
    issues: body.issues,
    rateLimit
  })
  if (status === 402) return new QuotaExceeded(fields)
  if (status === 429) {
    if (isQuotaExhausted(body)) return new QuotaExceeded(fields)
    // larger than the whole quota: no wait can make it pass, so it must not be retried
    if (/request too large/i.test(body.message)) return new RequestTooLarge(fields)
    const retryAfter = Option.getOrUndefined(rateLimit.serverWait) ?? retryAfterFromMessage(body.message)
    return new RateLimited(retryAfter === undefined ? fields : { ...fields, retryAfter })
  }
  // a spent budget is the key's, whatever the status it comes with
  if (status === 403 && isBudgetSpent(body)) return new QuotaExceeded(fields)
  if (status >= 400 && status < 500 && isContextExceeded(body)) return new ContextLengthExceeded(fields)
  switch (status) {
    case 401:
      return new Unauthorized(fields)
    case 403:
      return new Forbidden(fields)
    case 404:
      return new NotFound(fields)
    case 409:
      return new Conflict(fields)
    case 422:
      return new UnprocessableEntity(fields)
  }
  if (status === 408) {
    return new Timeout({
      message: `server timed out the request: ${body.message}`,
      endpoint,
      timeout: "total",
      after: Duration.zero
    })
  }
  if (status >= 500) return new ServerError(fields)
  // 400, and the 4xx without a tag of their own (405, 413, 415, ...)
  if (status >= 400) return new BadRequest(fields)
  // 1xx/3xx that the transport did not resolve: the server answered with something we cannot use
  return new DecodeError(definedFields({
    message: `unexpected HTTP status ${status}`,
    endpoint,
    status,
    requestId,
    excerpt: excerpt(response.body)
  }))
}

/** Maps a platform client failure (before or while reading the body) to `TransportError`. */
export const fromHttpClientError = (error: HttpClientError.HttpClientError, endpoint: string): ApiError => {
  if (error._tag === "RequestError") {
    const reason = error.reason === "Transport" ? "connection failed" : `request could not be sent (${error.reason})`
    return new TransportError({ message: `${reason}${causeText(error.cause)}`, endpoint })
  }
  return new TransportError({
    message: `response body could not be read (${error.reason})${causeText(error.cause)}`,
    endpoint
  })
}

const causeText = (cause: unknown): string => {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code ?? (cause.cause as { code?: unknown } | undefined)?.code
    const inner = cause.cause instanceof Error ? cause.cause.message : undefined
    const parts = [cause.message, inner, typeof code === "string" ? code : undefined].filter(
      (p): p is string => p !== undefined && p !== ""
    )
    return parts.length > 0 ? `: ${[...new Set(parts)].join(", ")}` : ""
  }
  return ""
}

/** Maps the payload of an `error` event in a stream (`{"error": {...}}`) to its typed error. */
export const fromStreamError = (
  payload: unknown,
  context: { readonly endpoint: string; readonly requestId: string | undefined; readonly rateLimit: RateLimitInfo }
): ApiError => {
  const text = JSON.stringify(payload)
  const parsed = parseErrorBody(500, text)
  const code = parsed.code !== undefined && /^\d{3}$/.test(parsed.code) ? Number(parsed.code) : undefined
  const status = code ??
    (isQuotaExhausted(parsed) || parsed.errorType === "rate_limit_error" || parsed.code === "rate_limit_exceeded"
      ? 429
      : 500)
  return fromResponse({ status, body: text, ...context })
}

/**
 * A 429 whose retry the rate limiter paces itself (it learnt the window's limit and waits until it frees): the
 * retry policy need not wait first, so the error asks for no wait.
 */
export const pacedByLimiter = (error: RateLimited): RateLimited =>
  new RateLimited({
    message: error.message,
    endpoint: error.endpoint,
    requestId: error.requestId,
    code: error.code,
    errorType: error.errorType,
    issues: error.issues,
    rateLimit: error.rateLimit,
    status: error.status,
    retryAfter: Duration.zero
  })
