/**
 * What one attempt reads off the wire (src/internal/transport.ts): which statuses are a success, how much of an
 * error body is read and what a connection that fails while it is read leaves, how a failed connection's cause is
 * searched for its code, what a response-stage failure counts in the limiter, how a decode failure names its
 * schema and how a request's endpoint is named.
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Decode from "../../src/internal/request/decode.js"
import * as Wire from "../../src/internal/request/wire.js"
import * as Transport from "../../src/internal/transport.js"
import { type ApiError, BadRequest, NotFound } from "../../src/schemas/Errors.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { answering, chat, chatOptions, counted, plain, stack } from "./transportStack.js"

/** A body that arrives as `chunks`, then fails as a dropped connection would (or ends, with `end`). */
const chunked = (chunks: ReadonlyArray<string>, end: "drop" | "close" = "close") => {
  const encoder = new TextEncoder()
  let next = 0
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < chunks.length) controller.enqueue(encoder.encode(chunks[next++]))
      else if (end === "drop") controller.error(new Error("other side closed"))
      else controller.close()
    }
  })
}

/** The error `effect` failed with (the test fails when it did not). */
const failureOf = <A>(effect: Effect.Effect<A, ApiError>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    assert.isDefined(failure, "the request should have failed with an ApiError")
    return failure!
  })

const getUnknown = Effect.flatMap(
  InferenceHttpClient,
  (http) => http.json(HttpClientRequest.get("/models"), Schema.Unknown)
)

/** A JSON error body of exactly `length` characters whose message is `message`. */
const paddedError = (message: string, length: number) => {
  const head = `{"error":{"message":"${message}"},"pad":"`
  return head + "x".repeat(length - head.length - 2) + "\"}"
}

describe("which statuses are a success", () => {
  it.effect("only 2xx: a 1xx or 3xx status that reaches the transport is an error with its status, never decoded", () =>
    Effect.gen(function*() {
      for (const status of [100, 101, 199, 300, 301, 304, 399]) {
        const response = () => {
          // Response refuses statuses below 200: a platform client could still hand one over
          const web = new Response(status === 304 ? null : "{}", { status: status < 200 ? 200 : status })
          if (status < 200) Object.defineProperty(web, "status", { value: status })
          return web
        }
        const error = yield* failureOf(getUnknown.pipe(Effect.provide(plain(answering(response)))))
        assert.strictEqual("status" in error ? error.status : undefined, status, `status ${status}`)
      }
      for (const status of [200, 201, 202, 299]) {
        const outcome = yield* getUnknown.pipe(
          Effect.provide(plain(answering(() => new Response("{\"ok\":true}", { status })))),
          Effect.match({ onFailure: (error) => error._tag, onSuccess: ({ value }) => JSON.stringify(value) })
        )
        assert.strictEqual(outcome, "{\"ok\":true}", `status ${status}`)
      }
    }))
})

describe("error bodies are read up to 64 KiB", () => {
  const limit = 64 * 1024

  it.effect("a body of exactly 64 KiB whose connection then drops still gives its message (the rest is not read)", () =>
    Effect.gen(function*() {
      for (const pieces of [1, 2, 64]) {
        const body = paddedError("overloaded", limit)
        const size = limit / pieces
        const chunks = Array.from({ length: pieces }, (_, i) => body.slice(i * size, (i + 1) * size))
        const error = yield* failureOf(
          getUnknown.pipe(
            Effect.provide(
              plain(
                answering(() =>
                  new Response(chunked(chunks, "drop"), {
                    status: 500,
                    headers: { "content-type": "application/json" }
                  })
                )
              )
            )
          )
        )
        assert.strictEqual(error._tag, "ServerError", `${pieces} pieces`)
        assert.strictEqual(error.message, "overloaded", `${pieces} pieces`)
      }
    }))

  it.effect("a body that fails before 64 KiB gives no excerpt of it: the error is the status's own", () =>
    Effect.gen(function*() {
      const error = yield* failureOf(
        getUnknown.pipe(
          Effect.provide(
            plain(
              answering(() =>
                new Response(chunked(["{\"error\":{\"message\":\"overloaded\"}}"], "drop"), { status: 500 })
              )
            )
          )
        )
      )
      assert.strictEqual(error._tag, "ServerError")
      assert.notStrictEqual(error.message, "overloaded")
    }))

  it.effect("a longer body is cut at 64 KiB however it arrives: one chunk or many give the same error", () =>
    Effect.gen(function*() {
      // a JSON body of 100 KiB: cut, it is no longer JSON
      const body = paddedError("overloaded", 100 * 1024)
      const errorOf = (chunks: ReadonlyArray<string>) =>
        failureOf(
          getUnknown.pipe(Effect.provide(plain(answering(() =>
            new Response(chunked(chunks), { status: 500, headers: { "content-type": "application/json" } })
          ))))
        )
      const whole = yield* errorOf([body])
      const pieces = yield* errorOf(Array.from({ length: 100 }, (_, i) => body.slice(i * 1024, (i + 1) * 1024)))
      assert.deepStrictEqual([whole._tag, whole.message], [pieces._tag, pieces.message])
      assert.notStrictEqual(whole.message, "overloaded")
    }))

  it.effect("readBounded keeps the first 64 KiB of a longer body, whatever the chunks", () =>
    Effect.gen(function*() {
      const body = "a".repeat(limit - 10) + "b".repeat(30)
      for (const chunks of [[body], [body.slice(0, 100), body.slice(100)], [body.slice(0, limit), body.slice(limit)]]) {
        const response = HttpClientResponse.fromWeb(
          HttpClientRequest.get("http://aifs.test/x"),
          new Response(chunked(chunks))
        )
        const text = yield* Transport.readBounded(response)
        assert.strictEqual(text.length, limit)
        assert.strictEqual(text, body.slice(0, limit))
      }
    }))
})

/** An error as Node reports a failed socket operation: a `code`, wrapped `depth` times (as undici does). */
const systemError = (code: string, depth: number): Error => {
  let error: Error = Object.assign(new Error(`${code} 127.0.0.1:443`), { code })
  for (let i = 0; i < depth; i++) error = new Error("fetch failed", { cause: error })
  return error
}

describe("a failed connection's cause is searched for its code", () => {
  /** One chat request through a limiter on a client failing with `error`: the error and what stays counted. */
  const through = (fail: (request: HttpClientRequest.HttpClientRequest) => HttpClientError.HttpClientError) =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const error = yield* failureOf(http.json(chat(), Schema.Unknown, chatOptions))
      return { error, ...(yield* counted) }
    }).pipe(Effect.provide(stack(HttpClient.make((request) => Effect.fail(fail(request))))))

  const requestError = (cause: unknown) => (request: HttpClientRequest.HttpClientRequest) =>
    new HttpClientError.RequestError({ request, reason: "Transport", cause })

  it.effect("up to three causes deep: a code wrapped four times is not looked at (the request may have been sent)", () =>
    Effect.gen(function*() {
      const deep = yield* through(requestError(systemError("ECONNREFUSED", 4)))
      assert.strictEqual(deep.error._tag, "TransportError")
      assert.notStrictEqual(deep.error._tag === "TransportError" && deep.error.connected, false)
      assert.deepInclude(deep, { requests: 1, tokens: deep.reserved })
      const timeout = yield* through(requestError(systemError("UND_ERR_CONNECT_TIMEOUT", 4)))
      assert.strictEqual(timeout.error._tag, "TransportError")
    }))

  it.effect("a chain of causes that loops ends the search: a TransportError, counted as possibly sent", () =>
    Effect.gen(function*() {
      const looping = new Error("fetch failed")
      const inner = new Error("socket hang up", { cause: looping })
      Object.assign(looping, { cause: inner })
      const after = yield* through(requestError(looping))
      assert.strictEqual(after.error._tag, "TransportError")
      assert.deepInclude(after, { requests: 1, tokens: after.reserved })
    }))

  it.effect("a code that is not a string (a number, an object) is no match", () =>
    Effect.gen(function*() {
      for (const code of [111, { code: "ECONNREFUSED" }, ["ECONNREFUSED"]]) {
        const after = yield* through(requestError(Object.assign(new Error("refused"), { code })))
        assert.notStrictEqual(after.error._tag === "TransportError" && after.error.connected, false)
        assert.deepInclude(after, { requests: 1 }, JSON.stringify(code))
      }
    }))

  it.effect("a failure after the response began (the platform's ResponseError) was connected, whatever its cause says", () =>
    Effect.gen(function*() {
      for (const code of ["ECONNREFUSED", "UND_ERR_CONNECT_TIMEOUT"]) {
        const after = yield* through((request) =>
          new HttpClientError.ResponseError({
            request,
            response: HttpClientResponse.fromWeb(request, new Response(null)),
            reason: "Decode",
            cause: systemError(code, 1)
          })
        )
        assert.strictEqual(after.error._tag, "TransportError", code)
        assert.notStrictEqual(after.error._tag === "TransportError" && after.error.connected, false, code)
        // the server answered: the slot and the tokens stay counted
        assert.deepInclude(after, { requests: 1, tokens: after.reserved }, code)
      }
    }))
})

describe("a decode failure names the schema", () => {
  const failing = <A, I>(schema: Schema.Schema<A, I>) =>
    failureOf(
      Effect.flatMap(InferenceHttpClient, (http) => http.json(HttpClientRequest.get("/models"), schema)).pipe(
        Effect.provide(plain(answering(() => Response.json({ id: 7 }))))
      )
    )

  it.effect("by its identifier, else its title, else as 'its schema'", () =>
    Effect.gen(function*() {
      const fields = { id: Schema.String }
      const named = yield* failing(Schema.Struct(fields).annotations({ identifier: "Thing", title: "A thing" }))
      assert.match(named.message, /^response did not match Thing: /)
      const titled = yield* failing(Schema.Struct(fields).annotations({ title: "A thing" }))
      assert.match(titled.message, /^response did not match A thing: /)
      const anonymous = yield* failing(Schema.Struct(fields))
      assert.match(anonymous.message, /^response did not match its schema: /)
    }))

  it.effect("a value nested too deeply to check is a DecodeError saying so", () =>
    Effect.gen(function*() {
      interface Tree {
        readonly children: ReadonlyArray<Tree>
      }
      const Tree: Schema.Schema<Tree> = Schema.Struct({
        children: Schema.Array(Schema.suspend((): Schema.Schema<Tree> => Tree))
      })
      const depth = 20_000
      // the innermost child is not a tree: the decoder goes all the way down, and so would its error's formatter
      const body = "{\"children\":[".repeat(depth) + "7" + "]}".repeat(depth)
      const decode = Decode.decoder(Tree, "GET /tree", (text) => text)
      const result = decode.text(body, {
        status: 200,
        requestId: undefined,
        rateLimit: RateLimitInfo.empty(0),
        headers: Headers.empty
      })
      assert.isTrue(result._tag === "Left")
      if (result._tag === "Left") {
        assert.strictEqual(result.left.message, "response did not match its schema: nested too deeply to check")
      }
    }))
})

describe("an error names its request as METHOD /path", () => {
  it("without host or query; a URL that does not parse, up to its query", () => {
    assert.strictEqual(
      Transport.endpointOf(HttpClientRequest.get("https://llm.example/v2/models?after=x")),
      "GET /v2/models"
    )
    assert.strictEqual(
      Transport.endpointOf(HttpClientRequest.post("/chat/completions?key=secret")),
      "POST /chat/completions"
    )
    assert.strictEqual(
      Transport.endpointOf(HttpClientRequest.get("http://[bad/files?token=t")),
      "GET http://[bad/files"
    )
    assert.strictEqual(Transport.endpointOf(HttpClientRequest.get("/models")), "GET /models")
  })
})

describe("a 404 on a base URL without /v2", () => {
  const notFound = new NotFound({ message: "Not Found", status: 404, endpoint: "GET /models" })
  const other = new BadRequest({ message: "Bad", status: 400, endpoint: "GET /models" })

  it("names the URL and asks about /v2 when the base URL's path does not end in /v2", () => {
    const hint = Wire.notFoundHint("http://127.0.0.1:8080")
    const hinted = hint(notFound, "http://127.0.0.1:8080/models")
    assert.strictEqual(hinted._tag, "NotFound")
    assert.strictEqual(
      hinted.message,
      "Not Found at http://127.0.0.1:8080/models: does the base URL (http://127.0.0.1:8080) end in /v2?"
    )
    assert.strictEqual((hinted as NotFound).status, 404)
    assert.strictEqual(hinted.endpoint, "GET /models")
    // another error, or a request to another base (v1, the queue), is left as it is
    assert.strictEqual(hint(other, "http://127.0.0.1:8080/models"), other)
    assert.strictEqual(hint(notFound, "http://other:9/v1/vector_stores"), notFound)
  })

  it("leaves the service's own 404 alone when the base URL ends in /v2 (with or without a slash)", () => {
    for (const base of ["https://host/v2", "https://host/v2/"]) {
      assert.strictEqual(Wire.notFoundHint(base)(notFound, `${base}/models`), notFound, base)
    }
    assert.notStrictEqual(Wire.notFoundHint("https://host/v2x")(notFound, "https://host/v2x/models"), notFound)
  })
})
