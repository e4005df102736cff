/**
 * The server's answer that a prompt does not fit its model's window, in each form servers give it, is a
 * `ContextLengthExceeded` with its status and words (never retried); other 4xx words, and a 5xx saying the same, are
 * not.
 */
import { assert, describe, it } from "@effect/vitest"
import { fromResponse, isContextExceeded } from "../../src/internal/errors.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"

const failed = (status: number, body: unknown) =>
  fromResponse({
    status,
    body: JSON.stringify(body),
    endpoint: "POST /v2/chat/completions",
    requestId: undefined,
    rateLimit: RateLimitInfo.empty(0)
  })

describe("a prompt over its model's window, as the server says it", () => {
  const said: ReadonlyArray<readonly [string, unknown]> = [
    ["the service's docs", { detail: "Context length exceeded: 140000 tokens, the maximum is 128000" }],
    ["OpenAI's message", { error: { message: "This model's maximum context length is 128000 tokens", type: "x" } }],
    ["OpenAI's code", {
      error: { message: "Too many tokens", type: "invalid_request_error", code: "context_length_exceeded" }
    }],
    ["a proxy's words", { detail: "The input exceeds the context window of the model" }],
    ["vLLM's words", { detail: "This model's maximum model length is 32768 tokens. However, you requested 40000" }]
  ]
  for (const [who, body] of said) {
    it(`${who}: ContextLengthExceeded with its status, never retried`, () => {
      for (const status of [400, 413, 422]) {
        const error = failed(status, body)
        assert.strictEqual(error._tag, "ContextLengthExceeded", `${status} ${JSON.stringify(body)}`)
        if (error._tag !== "ContextLengthExceeded") return
        assert.strictEqual(error.status, status)
        assert.isFalse(error.isRetryable)
        assert.strictEqual(error.endpoint, "POST /v2/chat/completions")
      }
    })
  }

  it("other words stay what their status says; a 5xx saying the same stays a ServerError (it may pass later)", () => {
    assert.strictEqual(failed(400, { detail: "temperature must be from 0 to 2" })._tag, "BadRequest")
    assert.strictEqual(failed(422, { detail: "the context is missing" })._tag, "UnprocessableEntity")
    assert.strictEqual(
      failed(400, { error: { message: "length exceeded", type: "x", code: "other" } })._tag,
      "BadRequest"
    )
    assert.strictEqual(failed(500, { detail: "Context length exceeded" })._tag, "ServerError")
    assert.strictEqual(failed(399, { detail: "Context length exceeded" })._tag, "DecodeError")
  })

  it("isContextExceeded reads the code, and each wording case-insensitively", () => {
    assert.isTrue(isContextExceeded({ message: "", code: "context_length_exceeded" }))
    assert.isFalse(isContextExceeded({ message: "", code: "context_length" }))
    for (
      const message of ["CONTEXT LENGTH EXCEEDED", "Maximum Context Length", "context window", "maximum model length"]
    ) {
      assert.isTrue(isContextExceeded({ message }), message)
    }
    assert.isFalse(isContextExceeded({ message: "context length" }))
  })
})
