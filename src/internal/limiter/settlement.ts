/**
 * Permit settlement: what the outcome of a granted request does to its bucket's budgets. One table answers it
 * (`effectsOf`), one function reads an attempt's error as an outcome (`outcomeOf`), and the permit carries it out on
 * the store: the entry removed or counted from the answer, its tokens kept or given back, and what the limiter learns.
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type { ApiError } from "../../schemas/Errors.js"
import { type Amounts, isCount, type Limits, tokenDimensions } from "../budgets.js"
import type { Outcome, Permit, Usage } from "./types.js"

/** What an outcome does to the entry its request left in the window. */
export interface Effects {
  /** `remove`: the server never counted it; `restamp`: counted from now, by which the server surely counted it. */
  readonly entry: "remove" | "restamp"
  /** `kept`: its tokens stay counted as reserved; `refunded`: they come back (an error answer generated nothing). */
  readonly tokens: "kept" | "refunded"
  /** What it teaches a bucket that learns: the window held (a success), a refusal to weigh, or nothing. */
  readonly evidence: "held" | "refusal" | "none"
  /** Whether the key's budget is spent: every bucket of the key stops. */
  readonly stopsKey: boolean
}

const table: { readonly [O in Outcome]: Effects } = {
  unsent: { entry: "remove", tokens: "kept", evidence: "none", stopsKey: false },
  succeeded: { entry: "restamp", tokens: "kept", evidence: "held", stopsKey: false },
  failed: { entry: "restamp", tokens: "refunded", evidence: "none", stopsKey: false },
  unanswered: { entry: "restamp", tokens: "kept", evidence: "none", stopsKey: false },
  throttled: { entry: "remove", tokens: "kept", evidence: "refusal", stopsKey: false },
  spent: { entry: "remove", tokens: "kept", evidence: "none", stopsKey: true }
}

/** What `outcome` does to the budgets. */
export const effectsOf = (outcome: Outcome): Effects => table[outcome]

/**
 * The outcome of an attempt that failed with `error`. Never reached the server (no connection): `unsent`. No answer
 * (a dropped connection, no answer in time): `unanswered`, the server may hold it. A 429 on the window: `throttled`;
 * a spent budget or quota: `spent`. Any other answer: `failed`.
 */
export const outcomeOf = (error: ApiError): Outcome => {
  switch (error._tag) {
    case "TransportError":
      return error.connected === false ? "unsent" : "unanswered"
    case "Timeout":
      return error.timeout === "connect" ? "unsent" : "unanswered"
    case "RateLimited":
      return "throttled"
    case "QuotaExceeded":
      return "spent"
    default:
      return "failed"
  }
}

/** A count: a finite number, not negative (`Number.isFinite` is false for anything but a number). */
const count = (record: Record<string, unknown>, field: string): number | undefined => {
  const value = record[field]
  return isCount(value) ? value : undefined
}

/**
 * Of a usage's input, the tokens read from the prompt cache and those written to it, where reported: its details'
 * `cached_tokens` and `cache_write_tokens` (`prompt_tokens_details`, or the Responses API's `input_tokens_details`),
 * else an Anthropic-style proxy's `cache_read_input_tokens` and `cache_creation_input_tokens`.
 */
const cacheOf = (fields: Record<string, unknown>): { readonly cached?: number; readonly written?: number } => {
  const details = fields.prompt_tokens_details ?? fields.input_tokens_details
  const detailed = Predicate.isRecord(details) ? details : {}
  const cached = count(detailed, "cached_tokens") ?? count(fields, "cache_read_input_tokens")
  const written = count(detailed, "cache_write_tokens") ?? count(fields, "cache_creation_input_tokens")
  return {
    ...(cached === undefined ? {} : { cached }),
    ...(written === undefined ? {} : { written })
  }
}

/**
 * The usage a decoded body or chunk reports, if it reports one: `prompt_tokens` in (else `input_tokens`, as the
 * Responses API says), `completion_tokens` out (else `output_tokens`, else what the total leaves), and of the input
 * the tokens read from and written to the prompt cache where reported.
 */
export const usageOf = (value: unknown): Usage | undefined => {
  if (!Predicate.hasProperty(value, "usage") || !Predicate.isRecord(value.usage)) return undefined
  const fields = value.usage
  const input = count(fields, "prompt_tokens") ?? count(fields, "input_tokens")
  const total = count(fields, "total_tokens")
  const output = count(fields, "completion_tokens") ?? count(fields, "output_tokens") ??
    (total !== undefined && input !== undefined ? Math.max(0, total - input) : undefined)
  if (input === undefined && output === undefined) return undefined
  if ((input ?? 0) + (output ?? 0) === 0) return undefined
  return { input: input ?? 0, output: output ?? 0, ...cacheOf(fields) }
}

/**
 * The token budgets an entry reserved as `reserved` counts once its answer reported `usage`: raised where it used
 * more; lowered to the usage only in `actual` mode (servers that charge the reservation at admission would be
 * overrun by giving the difference back early). `undefined`: nothing changes.
 */
export const reconciled = (
  reserved: Amounts,
  usage: Usage,
  mode: "keep" | "actual"
): { readonly amounts: Amounts; readonly lowered: boolean } | undefined => {
  const settled = (d: "input" | "output") => mode === "actual" ? usage[d] : Math.max(reserved[d], usage[d])
  const input = settled("input")
  const output = settled("output")
  if (input === reserved.input && output === reserved.output) return undefined
  // the combined budget is always what the other two hold together
  const amounts = { ...reserved, input, output, tokens: input + output }
  return { amounts, lowered: tokenDimensions.some((d) => amounts[d] < reserved[d]) }
}

/** Share of a limit a window must hold for a 429 to read as that limit's (else noise, or another's usage). */
const nearShare = 0.9

/**
 * Whether a refusal came at a limit: with the refused request, the window held at least nine tenths of some
 * budget's known limit. A refusal well under every known limit is noise, or the usage of someone the limiter does
 * not see: no reason to close the bucket or widen its margin.
 */
export const atLimit = (limits: Limits, count: Amounts, request: Amounts): boolean =>
  (["requests", ...tokenDimensions] as const).some((d) => {
    // an unknown limit is no limit: nothing is near it
    const limit = limits[d].value ?? Number.POSITIVE_INFINITY
    return request[d] > 0 && count[d] + request[d] > limit * nearShare
  })

/** Tells the permit the usage a decoded body reports, if it reports one. */
export const reconcile = (permit: Permit | undefined, value: unknown): Effect.Effect<void> => {
  if (permit === undefined) return Effect.void
  const usage = usageOf(value)
  return usage === undefined ? Effect.void : permit.reconcile(usage)
}
