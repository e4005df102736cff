/**
 * A server's 429 "Request too large" (larger than the whole quota: no wait can cure it) becomes `RequestTooLarge`,
 * never retried, where the classification lives (`fromResponse` and `fromStreamError` in src/internal/errors.ts),
 * whatever its capitalisation ("Request too large for model ...", as the service writes it), the words around it
 * and the body it comes in (FastAPI `detail`, OpenAI `error`, a bare `message`, plain text, an error event); a 429
 * without those words stays `RateLimited`. Until now only the integration suite (limits.test.ts) saw it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { fromResponse, fromStreamError } from "../../src/internal/errors.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"

const context = { endpoint: "POST /v2/chat/completions", requestId: undefined, rateLimit: RateLimitInfo.empty(0) }

/** "request too large", each letter in either case. */
const phrase = FastCheck.array(FastCheck.boolean(), { minLength: 17, maxLength: 17 }).map((upper) =>
  [..."request too large"].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join("")
)

/** Words around it that say nothing of quotas or budgets (those make a 429 a `QuotaExceeded`). */
const words = FastCheck.string({
  unit: FastCheck.constantFrom(..."abcdefghijkmnoprstuvwxyz0123456789 :,./-"),
  maxLength: 40
})

/** The message in each body form a server sends it in. */
const bodies = (message: string): ReadonlyArray<string> => [
  JSON.stringify({ detail: message }),
  JSON.stringify({ error: { message, type: "requests", code: "rate_limit_exceeded" } }),
  JSON.stringify({ message }),
  message
]

describe("a 429 \"Request too large\"", () => {
  it("is RequestTooLarge, not retried, in any capitalisation and body", () => {
    FastCheck.assert(
      FastCheck.property(words, phrase, words, (before, said, after) => {
        const message = `${before}${said}${after}`
        for (const body of bodies(message)) {
          const error = fromResponse({ ...context, status: 429, body })
          assert.strictEqual(error._tag, "RequestTooLarge", body)
          assert.isFalse(error.isRetryable, body)
          assert.include(error.message, said, body)
        }
        const event = fromStreamError({ error: { message, type: "rate_limit_error", code: 429 } }, context)
        assert.strictEqual(event._tag, "RequestTooLarge", message)
      }),
      { numRuns: 300 }
    )
  })

  it("as the service writes it, and a 429 without those words stays RateLimited", () => {
    const service = "Request too large for model Llama-3.3-70B-Instruct: 13801 input tokens exceed the limit"
    for (const body of bodies(service)) {
      assert.strictEqual(fromResponse({ ...context, status: 429, body })._tag, "RequestTooLarge")
    }
    FastCheck.assert(
      FastCheck.property(words, (message) => {
        FastCheck.pre(!/request too large/i.test(message))
        for (const body of bodies(message)) {
          const error = fromResponse({ ...context, status: 429, body })
          assert.strictEqual(error._tag, "RateLimited", body)
          assert.isTrue(error.isRetryable, body)
        }
      }),
      { numRuns: 200 }
    )
  })
})
