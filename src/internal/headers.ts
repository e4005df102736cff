/**
 * Reads the rate-limit headers of a response into a `RateLimitInfo`.
 * @internal
 */
import type * as Headers from "@effect/platform/Headers"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import { RateLimitInfo } from "../schemas/RateLimit.js"
import { parseResetMillis, parseSecondsMillis } from "./duration.js"

type HeaderSource = Headers.Headers | Readonly<Record<string, string | undefined>>

const get = (headers: HeaderSource, name: string): string | undefined =>
  (headers as Readonly<Record<string, string | undefined>>)[name]

/** A non-negative integer count; `-1`, fractions, text such as "Dynamic Shared Quota" give `undefined`. */
export const parseCount = (value: string | undefined): number | undefined => {
  if (value === undefined) return undefined
  const text = value.trim()
  if (!/^\d+$/.test(text)) return undefined
  const n = Number(text)
  return Number.isSafeInteger(n) ? n : undefined
}

/**
 * The longest wait or reset a header is taken at (a day): a larger value (a hostile or broken server, or 300
 * digits) is read as this, so that no computation on it overflows; the retry budget then refuses to wait.
 */
export const maxHeaderMillis = 24 * 60 * 60 * 1000

/** A wait in milliseconds as a `Duration`, at most `maxHeaderMillis`. */
export const capped = (ms: number): Duration.Duration =>
  Duration.millis(Number.isFinite(ms) ? Math.min(ms, maxHeaderMillis) : maxHeaderMillis)

const toDuration = (millis: Option.Option<number>): Duration.Duration | undefined =>
  Option.match(millis, { onNone: () => undefined, onSome: capped })

/** `x-ratelimit-reset-*`: a Go duration or bare seconds. */
export const parseReset = (value: string | undefined): Duration.Duration | undefined =>
  value === undefined ? undefined : toDuration(parseResetMillis(value))

/**
 * A wait in milliseconds (`retry-after-ms`, or Azure's `x-ms-retry-after-ms`; the first well-formed of those given)
 * wins over `retry-after` (seconds, or an HTTP date relative to `now`).
 */
export const parseRetryAfter = (
  retryAfterMs: string | undefined | ReadonlyArray<string | undefined>,
  retryAfter: string | undefined,
  now: number
): Duration.Duration | undefined => {
  for (const value of typeof retryAfterMs === "object" ? retryAfterMs : [retryAfterMs]) {
    const text = value?.trim()
    if (text !== undefined && /^\d+(?:\.\d+)?$/.test(text)) return capped(Number(text))
  }
  if (retryAfter === undefined) return undefined
  const seconds = parseSecondsMillis(retryAfter)
  if (Option.isSome(seconds)) return capped(seconds.value)
  // an HTTP date needs a weekday or month name; plain numbers and durations were handled above
  if (!/[a-z]{3}/i.test(retryAfter)) return undefined
  const date = Date.parse(retryAfter)
  if (Number.isNaN(date)) return undefined
  return capped(Math.max(0, date - now))
}

/**
 * Parses every rate-limit header of a response. Missing or malformed values are left out, never fail.
 */
export const parseRateLimitInfo = (headers: HeaderSource, now: number): RateLimitInfo => {
  const fields: Record<string, unknown> = {
    limitRequests: parseCount(get(headers, "x-ratelimit-limit-requests")),
    limitTokens: parseCount(get(headers, "x-ratelimit-limit-tokens")),
    remainingRequests: parseCount(get(headers, "x-ratelimit-remaining-requests")),
    remainingTokens: parseCount(get(headers, "x-ratelimit-remaining-tokens")),
    resetRequests: parseReset(get(headers, "x-ratelimit-reset-requests")),
    resetTokens: parseReset(get(headers, "x-ratelimit-reset-tokens")),
    retryAfter: parseRetryAfter(
      [get(headers, "retry-after-ms"), get(headers, "x-ms-retry-after-ms")],
      get(headers, "retry-after"),
      now
    )
  }
  const present: Record<string, unknown> = {}
  for (const key in fields) {
    if (fields[key] !== undefined) present[key] = fields[key]
  }
  // every value was parsed above: no need to validate them again
  return new RateLimitInfo({ ...present, observedAt: now }, true)
}

const requestIdHeaders = ["x-request-id", "request-id", "x-correlation-id", "apim-request-id"]

/** The server's request id, from the first of the usual headers that is present. */
export const requestId = (headers: HeaderSource): string | undefined => {
  for (const name of requestIdHeaders) {
    const value = get(headers, name)
    if (value !== undefined && value !== "") return value
  }
  return undefined
}
