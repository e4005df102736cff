import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import {
  excerpt,
  fromHttpClientError,
  fromResponse,
  fromStreamError,
  isQuotaExhausted,
  parseErrorBody,
  retryAfterFromMessage
} from "../../src/internal/errors.js"
import { parseRateLimitInfo } from "../../src/internal/headers.js"
import * as Testing from "../../src/layers/Testing.js"
import {
  type ApiError,
  BadRequest,
  DecodeError,
  isApiError,
  QuotaExceeded,
  RateLimited,
  ServerError,
  Timeout
} from "../../src/schemas/Errors.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"
import { listModels, sequence } from "./helpers.js"

const failed = (status: number, body: string, headers: Record<string, string> = {}): ApiError =>
  fromResponse({
    status,
    body,
    endpoint: "POST /v2/chat/completions",
    requestId: headers["x-request-id"],
    rateLimit: parseRateLimitInfo(headers, 0)
  })

const statusTags: ReadonlyArray<readonly [number, ApiError["_tag"]]> = [
  [400, "BadRequest"],
  [401, "Unauthorized"],
  [402, "QuotaExceeded"],
  [403, "Forbidden"],
  [404, "NotFound"],
  [405, "BadRequest"],
  [409, "Conflict"],
  [413, "BadRequest"],
  [422, "UnprocessableEntity"],
  [429, "RateLimited"],
  [500, "ServerError"],
  [502, "ServerError"],
  [503, "ServerError"],
  [504, "ServerError"]
]

const retryable = new Set<ApiError["_tag"]>(["RateLimited", "ServerError", "Timeout", "TransportError"])

const rateLimitBody = JSON.stringify({
  error: {
    message: "Rate limit reached for requests. Please retry after 22 seconds.",
    type: "requests",
    code: "429"
  }
})

describe("parseErrorBody", () => {
  it("reads {\"detail\": \"...\"}", () => {
    assert.deepStrictEqual(parseErrorBody(401, "{\"detail\": \"Incorrect API key provided\"}"), {
      message: "Incorrect API key provided"
    })
  })

  it("reads a FastAPI validation list into issues and a message naming each loc", () => {
    const body = JSON.stringify({
      detail: [
        { loc: ["body", "messages", 0, "content"], msg: "field required", type: "value_error.missing" },
        { loc: ["body", "temperature"], msg: "ensure this value is less than or equal to 2", type: "value_error" }
      ]
    })
    const parsed = parseErrorBody(422, body)
    assert.strictEqual(
      parsed.message,
      "body.messages.0.content: field required; body.temperature: ensure this value is less than or equal to 2"
    )
    assert.strictEqual(parsed.issues?.length, 2)
    assert.deepStrictEqual(parsed.issues?.[0]?.loc, ["body", "messages", 0, "content"])
    assert.strictEqual(parsed.issues?.[1]?.type, "value_error")
  })

  it("reads an OpenAI error object with a string code", () => {
    const parsed = parseErrorBody(429, rateLimitBody)
    assert.strictEqual(parsed.message, "Rate limit reached for requests. Please retry after 22 seconds.")
    assert.strictEqual(parsed.code, "429")
    assert.strictEqual(parsed.errorType, "requests")
  })

  it("reads an OpenAI error object with a numeric code", () => {
    const parsed = parseErrorBody(429, JSON.stringify({ error: { message: "Too many", type: null, code: 429 } }))
    assert.strictEqual(parsed.message, "Too many")
    assert.strictEqual(parsed.code, "429")
    assert.strictEqual(parsed.errorType, undefined)
  })

  it("reads an OpenAI error object without code or type", () => {
    const parsed = parseErrorBody(500, JSON.stringify({ error: { message: "boom" } }))
    assert.deepStrictEqual(parsed, { message: "boom", code: undefined, errorType: undefined })
  })

  it("reads {\"message\": \"...\"} and {\"error\": \"...\"}", () => {
    assert.strictEqual(parseErrorBody(500, "{\"message\": \"internal\"}").message, "internal")
    assert.strictEqual(parseErrorBody(500, "{\"error\": \"internal\"}").message, "internal")
  })

  it("keeps other JSON bodies as an excerpt after the status", () => {
    assert.strictEqual(parseErrorBody(500, "{\"foo\": 1}").message, "HTTP 500 Internal Server Error: {\"foo\": 1}")
  })

  it("keeps plain text as is", () => {
    assert.deepStrictEqual(parseErrorBody(502, "upstream connect error or disconnect/reset before headers\n"), {
      message: "upstream connect error or disconnect/reset before headers"
    })
  })

  it("reads the title of an HTML page", () => {
    const html = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>" +
      "</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    assert.strictEqual(parseErrorBody(502, html).message, "HTTP 502 Bad Gateway: 502 Bad Gateway")
  })

  it("reads the text of an HTML page without title", () => {
    const html = "<html><body><script>var x = 1</script><h1>Service   Unavailable</h1><p>try later</p></body></html>"
    assert.strictEqual(parseErrorBody(503, html).message, "HTTP 503 Service Unavailable: Service Unavailable try later")
  })

  it("an empty body gives the status and its reason phrase", () => {
    assert.deepStrictEqual(parseErrorBody(404, ""), { message: "HTTP 404 Not Found" })
    assert.deepStrictEqual(parseErrorBody(503, "  \n"), { message: "HTTP 503 Service Unavailable" })
    assert.deepStrictEqual(parseErrorBody(499, ""), { message: "HTTP 499" })
  })

  it("an empty detail or error message falls back to the status", () => {
    assert.strictEqual(parseErrorBody(400, "{\"detail\": \"\"}").message, "HTTP 400 Bad Request")
    assert.strictEqual(parseErrorBody(422, "{\"detail\": []}").message, "HTTP 422 Unprocessable Entity")
    assert.strictEqual(
      parseErrorBody(500, "{\"error\": {\"message\": \"\"}}").message,
      "HTTP 500 Internal Server Error"
    )
  })

  it("bounds a long plain-text body", () => {
    const parsed = parseErrorBody(500, "x".repeat(10_000))
    assert.isBelow(parsed.message.length, 400)
  })

  it("excerpt bounds the text and says how much was dropped", () => {
    assert.strictEqual(excerpt("abc", 5), "abc")
    assert.strictEqual(excerpt("abcde", 5), "abcde", "exactly the bound is kept whole")
    assert.strictEqual(excerpt("abcdefgh", 5), "abcde... (3 more characters)")
  })

  it("a validation issue without a location is its message alone", () => {
    const body = JSON.stringify({ detail: [{ loc: [], msg: "bad input", type: "value_error" }] })
    assert.strictEqual(parseErrorBody(422, body).message, "bad input")
  })

  it("an OpenAI-style body with a null code has no code", () => {
    const parsed = parseErrorBody(500, JSON.stringify({ error: { message: "boom", code: null, type: "server" } }))
    assert.deepStrictEqual(parsed, { message: "boom", code: undefined, errorType: "server" })
  })

  it("JSON that is not an object (null, a number) is shown after the status", () => {
    assert.strictEqual(parseErrorBody(500, "null").message, "HTTP 500 Internal Server Error: null")
    assert.strictEqual(parseErrorBody(502, "42").message, "HTTP 502 Bad Gateway: 42")
  })

  it("a blank message or error field does not count as a message", () => {
    assert.strictEqual(
      parseErrorBody(500, JSON.stringify({ message: "   " })).message,
      "HTTP 500 Internal Server Error: {\"message\":\"   \"}"
    )
    assert.strictEqual(
      parseErrorBody(500, JSON.stringify({ error: "  " })).message,
      "HTTP 500 Internal Server Error: {\"error\":\"  \"}"
    )
  })

  it("HTML: the title (whatever its attributes), else the text with tags as spaces, else the status alone", () => {
    assert.strictEqual(
      parseErrorBody(503, "<html><head><title lang=\"en\">Sign in</title></head></html>").message,
      "HTTP 503 Service Unavailable: Sign in"
    )
    assert.strictEqual(
      parseErrorBody(503, "<div class=\"error\"><p>Service</p><p>down</p>").message,
      "HTTP 503 Service Unavailable: Service down"
    )
    assert.strictEqual(parseErrorBody(502, "<p>Upstream gone").message, "HTTP 502 Bad Gateway: Upstream gone")
    assert.strictEqual(parseErrorBody(503, "<html><body></body></html>").message, "HTTP 503 Service Unavailable")
  })

  it("text that holds a tag but does not start with one is plain text", () => {
    assert.strictEqual(parseErrorBody(500, "Oops<b>bad</b>").message, "Oops<b>bad</b>")
    assert.strictEqual(parseErrorBody(500, "a < b and c > d").message, "a < b and c > d")
  })
})

describe("retryAfterFromMessage", () => {
  it.each([
    ["Please retry after 22 seconds.", 22_000],
    ["Rate limit reached. Please try again in 6.5s. Visit ...", 6_500],
    ["Please try again in 1m30s.", 90_000],
    ["Please try again in 7m12s.", 432_000],
    ["Please try again in 250ms", 250],
    ["Retry after 2 minutes", 120_000],
    ["please retry after 3", 3_000],
    ["retry after 5 ms", 5],
    ["retry after 5 milliseconds", 5],
    ["retry after 2 min", 120_000],
    ["retry after 2 m", 120_000],
    ["retry after 3 secs", 3_000],
    ["Try again in 1.5 s", 1_500]
  ])("%j asks for %d ms", (message, expected) => {
    const wait = retryAfterFromMessage(message)
    assert.isDefined(wait)
    assert.strictEqual(Duration.toMillis(wait!), expected)
  })

  it("a message without a wait gives undefined", () => {
    assert.strictEqual(retryAfterFromMessage("Too many requests"), undefined)
  })
})

describe("isQuotaExhausted", () => {
  it.each([
    [{ message: "whatever", code: "insufficient_quota" }],
    [{ message: "whatever", errorType: "insufficient_quota" }],
    [{ message: "You exceeded your current quota, please check your plan and billing details." }],
    [{ message: "Budget has been exceeded! Current cost: 10.02, Max budget: 10.0" }],
    [{ message: "Your credit balance is too low" }]
  ])("%j is quota", (body) => {
    assert.isTrue(isQuotaExhausted(body))
  })

  it.each([
    [{ message: "Rate limit reached for requests. Please retry after 22 seconds.", code: "429" }],
    [{ message: "Too Many Requests" }],
    [{
      message: "Rate limit reached on requests per day (RPD). Add a payment method at https://example.com/billing"
    }],
    [{ message: "Requests exceed the tokens per min (TPM) quota" }]
  ])("%j is a rate limit", (body) => {
    assert.isFalse(isQuotaExhausted(body))
  })
})

describe("fromResponse", () => {
  it.each(statusTags)("status %d is %s", (status, tag) => {
    const error = failed(status, "{\"detail\": \"something\"}", { "x-request-id": "req-42" })
    assert.strictEqual(error._tag, tag)
    assert.strictEqual(error.message, "something")
    assert.strictEqual(error.isRetryable, retryable.has(tag))
    assert.isTrue(isApiError(error))
    if ("status" in error) assert.strictEqual(error.status, status)
    if ("requestId" in error) assert.strictEqual(error.requestId, "req-42")
    assert.strictEqual(error.endpoint, "POST /v2/chat/completions")
  })

  it("501 is a ServerError that is not retried", () => {
    const error = failed(501, "")
    assert.instanceOf(error, ServerError)
    assert.isFalse(error.isRetryable)
  })

  it("408 is a Timeout", () => {
    const error = failed(408, "timed out")
    assert.instanceOf(error, Timeout)
    assert.isTrue(error.isRetryable)
  })

  it("an unexpected 3xx is a DecodeError with an excerpt", () => {
    const error = failed(302, "moved")
    assert.instanceOf(error, DecodeError)
    assert.strictEqual((error as DecodeError).excerpt, "moved")
  })

  it("a validation list becomes issues on UnprocessableEntity", () => {
    const error = failed(422, JSON.stringify({ detail: [{ loc: ["body", "model"], msg: "field required" }] }))
    assert.strictEqual(error._tag, "UnprocessableEntity")
    if (error._tag !== "UnprocessableEntity") return
    assert.strictEqual(error.message, "body.model: field required")
    assert.deepStrictEqual(error.issues, [{ loc: ["body", "model"], msg: "field required" }])
  })

  it("a 429 whose message asks for 22 seconds is RateLimited with retryAfter 22 s", () => {
    const error = failed(429, rateLimitBody)
    assert.instanceOf(error, RateLimited)
    const rl = error as RateLimited
    assert.strictEqual(rl.code, "429")
    assert.strictEqual(rl.errorType, "requests")
    assert.strictEqual(Duration.toMillis(rl.retryAfter!), 22_000)
  })

  it("the headers' wait wins over the message's", () => {
    const error = failed(429, rateLimitBody, { "retry-after": "2" }) as RateLimited
    assert.strictEqual(Duration.toMillis(error.retryAfter!), 2_000)
    const later = failed(429, rateLimitBody, {
      "x-ratelimit-reset-requests": "3s",
      "x-ratelimit-reset-tokens": "5s"
    }) as RateLimited
    assert.strictEqual(Duration.toMillis(later.retryAfter!), 5_000)
    assert.strictEqual(Duration.toMillis(later.rateLimit!.resetRequests!), 3_000)
  })

  it("a 429 without any wait has no retryAfter", () => {
    const error = failed(429, "{\"detail\": \"Too many requests\"}") as RateLimited
    assert.instanceOf(error, RateLimited)
    assert.strictEqual(error.retryAfter, undefined)
  })

  it.each([
    [JSON.stringify({ error: { message: "quota gone", type: "insufficient_quota", code: "insufficient_quota" } })],
    [JSON.stringify({
      error: {
        message: "You exceeded your current quota, please check your plan and billing details.",
        type: null,
        code: null
      }
    })],
    [JSON.stringify({
      error: {
        message: "Budget has been exceeded! Current cost: 10.02, Max budget: 10.0",
        type: "budget_exceeded",
        param: null,
        code: "400"
      }
    })],
    ["{\"detail\": \"Budget has been exceeded\"}"]
  ])("a 429 saying the quota is spent is QuotaExceeded: %s", (body) => {
    const error = failed(429, body)
    assert.instanceOf(error, QuotaExceeded)
    assert.isFalse(error.isRetryable)
    assert.strictEqual((error as QuotaExceeded).status, 429)
  })

  it("402 is QuotaExceeded whatever the body", () => {
    assert.instanceOf(failed(402, ""), QuotaExceeded)
    assert.strictEqual(failed(402, "").message, "HTTP 402 Payment Required")
  })

  it("the rate-limit headers travel with the error", () => {
    const error = failed(500, "", { "x-ratelimit-remaining-requests": "0" }) as ServerError
    assert.strictEqual(error.rateLimit?.remainingRequests, 0)
  })
})

describe("fromHttpClientError", () => {
  const request = HttpClientRequest.post("http://aifs.test/v2/chat/completions")
  const endpoint = "POST /v2/chat/completions"
  const sendError = (reason: "Transport" | "Encode" | "InvalidUrl", cause?: unknown) =>
    fromHttpClientError(new HttpClientError.RequestError({ request, reason, cause }), endpoint)
  const withCode = (message: string, code: string) => Object.assign(new Error(message), { code })

  it("a failed connection names the cause, its inner cause and its code, each once", () => {
    const refused = withCode("connect ECONNREFUSED 127.0.0.1:1", "ECONNREFUSED")
    const error = sendError("Transport", refused)
    assert.strictEqual(error._tag, "TransportError")
    assert.strictEqual(error.message, "connection failed: connect ECONNREFUSED 127.0.0.1:1, ECONNREFUSED")
    assert.strictEqual(error.endpoint, endpoint)
    // fetch and undici wrap the socket's error: its message and code come from the inner cause
    const wrapped = new Error("fetch failed", { cause: withCode("getaddrinfo ENOTFOUND aifs.test", "ENOTFOUND") })
    assert.strictEqual(
      sendError("Transport", wrapped).message,
      "connection failed: fetch failed, getaddrinfo ENOTFOUND aifs.test, ENOTFOUND"
    )
    // the same text twice is said once; a code that is not text is left out
    const same = new Error("socket hang up", { cause: new Error("socket hang up") })
    assert.strictEqual(sendError("Transport", same).message, "connection failed: socket hang up")
    assert.strictEqual(
      sendError("Transport", withCode("reset", 104 as unknown as string)).message,
      "connection failed: reset"
    )
  })

  it("no cause, a cause that is not an Error, or one without text adds nothing", () => {
    assert.strictEqual(sendError("Transport").message, "connection failed")
    assert.strictEqual(sendError("Transport", "a string").message, "connection failed")
    assert.strictEqual(sendError("Transport", new Error("")).message, "connection failed")
  })

  it("a request that could not be encoded or had a bad URL says so with its reason", () => {
    assert.strictEqual(sendError("Encode").message, "request could not be sent (Encode)")
    assert.strictEqual(
      sendError("InvalidUrl", new Error("bad url")).message,
      "request could not be sent (InvalidUrl): bad url"
    )
  })

  it("a body that could not be read is a TransportError with the reason", () => {
    const response = HttpClientResponse.fromWeb(request, new Response("x"))
    const error = fromHttpClientError(
      new HttpClientError.ResponseError({ request, response, reason: "Decode", cause: new Error("terminated") }),
      endpoint
    )
    assert.strictEqual(error._tag, "TransportError")
    assert.strictEqual(error.message, "response body could not be read (Decode): terminated")
  })
})

describe("fromStreamError", () => {
  const context = { endpoint: "POST /v2/chat/completions", requestId: "req-1", rateLimit: RateLimitInfo.empty(0) }

  it("code \"429\" is RateLimited with the message's wait", () => {
    const error = fromStreamError(JSON.parse(rateLimitBody), context)
    assert.instanceOf(error, RateLimited)
    assert.strictEqual(Duration.toMillis((error as RateLimited).retryAfter!), 22_000)
    assert.strictEqual((error as RateLimited).requestId, "req-1")
  })

  it("type rate_limit_error or code rate_limit_exceeded is RateLimited", () => {
    assert.instanceOf(fromStreamError({ error: { message: "slow", type: "rate_limit_error" } }, context), RateLimited)
    assert.instanceOf(
      fromStreamError({ error: { message: "slow", code: "rate_limit_exceeded" } }, context),
      RateLimited
    )
  })

  it("a numeric status code maps as that status", () => {
    assert.strictEqual(fromStreamError({ error: { message: "bad", code: 400 } }, context)._tag, "BadRequest")
    assert.strictEqual(fromStreamError({ error: { message: "down", code: "503" } }, context)._tag, "ServerError")
  })

  it("a code of more or fewer than three digits is not a status", () => {
    for (const code of ["5030", "40", "a503", "503a"]) {
      const error = fromStreamError({ error: { message: "odd", code } }, context)
      assert.strictEqual(error._tag, "ServerError", code)
      assert.strictEqual((error as ServerError).status, 500, code)
    }
  })

  it("anything else is a ServerError", () => {
    const error = fromStreamError({ error: { message: "upstream overloaded", type: "server_error" } }, context)
    assert.instanceOf(error, ServerError)
    assert.strictEqual(error.message, "upstream overloaded")
  })

  it("an insufficient_quota event is QuotaExceeded", () => {
    const error = fromStreamError({ error: { message: "no", code: "insufficient_quota" } }, context)
    assert.instanceOf(error, QuotaExceeded)
  })
})

describe("error mapping through the transport", () => {
  const noRetry = { retry: { maxRetries: 0 } }

  for (const [status, tag] of statusTags) {
    it.effect(`status ${status} is ${tag}`, () =>
      Effect.gen(function*() {
        const rec = yield* sequence({
          status,
          headers: { "x-request-id": `req-${status}` },
          body: { detail: `failed with ${status}` }
        })
        const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, noRetry))))
        assert.strictEqual(error._tag, tag)
        assert.strictEqual(error.message, `failed with ${status}`)
        assert.strictEqual(error.endpoint, "GET /v2/models")
        if ("status" in error) assert.strictEqual(error.status, status)
        if ("requestId" in error) assert.strictEqual(error.requestId, `req-${status}`)
        assert.strictEqual(yield* rec.count, 1)
      }))
  }

  const bodies: ReadonlyArray<readonly [string, number, unknown, string]> = [
    ["detail string", 401, { detail: "Incorrect API key provided" }, "Incorrect API key provided"],
    [
      "detail list",
      422,
      { detail: [{ loc: ["body", "messages"], msg: "field required", type: "missing" }] },
      "body.messages: field required"
    ],
    [
      "error object, string code",
      400,
      { error: { message: "Invalid model", type: "invalid_request_error", code: "400" } },
      "Invalid model"
    ],
    ["error object, numeric code", 400, { error: { message: "Invalid model", code: 400 } }, "Invalid model"],
    ["plain text", 503, "model temporarily unavailable", "model temporarily unavailable"],
    [
      "HTML page",
      502,
      "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>",
      "HTTP 502 Bad Gateway: 502 Bad Gateway"
    ],
    ["empty body", 404, undefined, "HTTP 404 Not Found"]
  ]

  for (const [name, status, body, message] of bodies) {
    it.effect(`${name} body gives the message`, () =>
      Effect.gen(function*() {
        const rec = yield* sequence({ status, body })
        const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, noRetry))))
        assert.strictEqual(error.message, message)
      }))
  }

  it.effect("the error object's code is kept as a string", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 400, body: { error: { message: "bad", type: "invalid", code: 400 } } })
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, noRetry))))
      assert.instanceOf(error, BadRequest)
      assert.strictEqual((error as BadRequest).code, "400")
      assert.strictEqual((error as BadRequest).errorType, "invalid")
    }))

  it.effect("a 429 with \"Please retry after 22 seconds\" is RateLimited with retryAfter 22 s", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 429, body: JSON.parse(rateLimitBody), headers: { "x-request-id": "r-1" } })
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, noRetry))))
      assert.instanceOf(error, RateLimited)
      const rl = error as RateLimited
      assert.strictEqual(Duration.toMillis(rl.retryAfter!), 22_000)
      assert.strictEqual(rl.code, "429")
      assert.strictEqual(rl.requestId, "r-1")
    }))

  it.effect("a 429 with insufficient_quota is QuotaExceeded", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({
        status: 429,
        body: {
          error: {
            message: "You exceeded your current quota, please check your plan and billing details.",
            type: "insufficient_quota",
            code: "insufficient_quota"
          }
        }
      })
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler))))
      assert.instanceOf(error, QuotaExceeded)
      assert.strictEqual(yield* rec.count, 1)
    }))

  it.effect("a 429 with a LiteLLM budget message is QuotaExceeded", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({
        status: 429,
        body: {
          error: { message: "Budget has been exceeded! Current cost: 3.1, Max budget: 3.0", type: "budget_exceeded" }
        }
      })
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler))))
      assert.instanceOf(error, QuotaExceeded)
      assert.strictEqual(yield* rec.count, 1)
    }))

  it.effect("the rate-limit headers of a failed response are on the error", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({
        status: 429,
        headers: {
          "X-RateLimit-Remaining-Requests": "0",
          "X-RateLimit-Reset-Requests": "3s",
          "Retry-After": "7"
        },
        body: { detail: "Too many requests" }
      })
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, noRetry))))
      assert.instanceOf(error, RateLimited)
      const rl = error as RateLimited
      assert.strictEqual(rl.rateLimit?.remainingRequests, 0)
      assert.strictEqual(Duration.toMillis(rl.rateLimit!.resetRequests!), 3_000)
      assert.strictEqual(Duration.toMillis(rl.retryAfter!), 7_000)
    }))
})
