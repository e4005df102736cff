/**
 * What an attempt's outcome does to its rate-limiter permit: the slot and tokens a failure gives back or keeps,
 * the usage an answer reports.
 * @internal
 */
import * as Effect from "effect/Effect"
import type { Permit } from "../../layers/RateLimiter.js"
import type { ApiError } from "../../schemas/Errors.js"

/**
 * Settles the permit of an attempt that failed with `error` other than a 429 (which the limiter measures: see
 * `Permit.throttled`). Never reached the server (no connection): the slot comes back. No answer (a dropped
 * connection, no answer in time): it stays counted, the server may hold it. Any other answer: counted, its tokens
 * come back.
 */
export const settleFailed = (permit: Permit, error: ApiError): Effect.Effect<void> =>
  (error._tag === "TransportError" && error.connected === false) ||
    (error._tag === "Timeout" && error.timeout === "connect")
    ? permit.cancel
    : error._tag === "TransportError" || error._tag === "Timeout"
    ? permit.answered
    : Effect.zipRight(permit.answered, permit.refund)

/** The `usage.total_tokens` of a decoded body or chunk, if it has one. */
export const usageTotal = (value: unknown): number | undefined => {
  if (typeof value !== "object" || value === null || !("usage" in value)) return undefined
  const usage = (value as { usage: unknown }).usage
  if (typeof usage !== "object" || usage === null || !("total_tokens" in usage)) return undefined
  const total = (usage as { total_tokens: unknown }).total_tokens
  return typeof total === "number" && total > 0 ? total : undefined
}

/** Tells the permit the usage a decoded body reports, if it reports one. */
export const reconcile = (permit: Permit | undefined, value: unknown): Effect.Effect<void> => {
  const total = permit === undefined ? undefined : usageTotal(value)
  return permit === undefined || total === undefined ? Effect.void : permit.reconcile(total)
}
