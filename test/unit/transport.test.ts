import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as InferenceHttp from "../../src/layers/InferenceHttp.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import { ChatCompletionChunk } from "../../src/schemas/Chat.js"
import type { ApiError, DecodeError } from "../../src/schemas/Errors.js"
import { ModelList } from "../../src/schemas/Models.js"
import * as Chat from "../../src/services/Chat.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import * as Models from "../../src/services/Models.js"
import { chatCompletionBody, defaultChatParams, listModels, modelListBody, recorder, sequence } from "./helpers.js"

const jsonCall = (client: InferenceHttpClient.Service) =>
  client.json(HttpClientRequest.get("/models"), ModelList, { span: { name: "Models.list", operation: "list" } })
const textCall = (client: InferenceHttpClient.Service) => client.text(HttpClientRequest.get("/files/f/content"))
const streamCall = (client: InferenceHttpClient.Service) =>
  Stream.runDrain(
    client.jsonStream(HttpClientRequest.post("/chat/completions"), ChatCompletionChunk, {
      span: { name: "Chat.createStream", operation: "chat" }
    })
  )

const http = <A, E>(f: (client: InferenceHttpClient.Service) => Effect.Effect<A, E>) =>
  Effect.flatMap(InferenceHttpClient, f)

describe("InferenceHttpClient (scripted transport)", () => {
  it.effect("resolves relative requests against the v2, v1 and queue bases", () =>
    Effect.gen(function*() {
      const rec = yield* recorder(() => ({ body: modelListBody }))
      const layer = Testing.layerHttp(rec.handler, { config: { baseUrl: "https://llm.example.com/v2" } })
      yield* http((c) => c.json(HttpClientRequest.get("/models"), ModelList)).pipe(Effect.provide(layer))
      yield* http((c) => c.json(HttpClientRequest.get("/vector_stores"), ModelList, { base: "v1" })).pipe(
        Effect.provide(layer)
      )
      yield* http((c) => c.json(HttpClientRequest.get("/models"), ModelList, { base: "queue" })).pipe(
        Effect.provide(layer)
      )
      const urls = [
        (yield* Queue.take(rec.calls)).url.href,
        (yield* Queue.take(rec.calls)).url.href,
        (yield* Queue.take(rec.calls)).url.href
      ]
      assert.deepStrictEqual(urls, [
        "https://llm.example.com/v2/models",
        "https://llm.example.com/v1/vector_stores",
        "https://llm.example.com/queue/models"
      ])
    }))

  it.effect("errors name the endpoint as sent: the base's path and the request's, a base at an origin's root included", () =>
    Effect.gen(function*() {
      const rec = yield* recorder(() => ({ status: 500, body: { error: { message: "down" } } }))
      const endpointOn = (config: Partial<ClientConfig.Options>, base: "v2" | "v1" | "queue") =>
        http((c) => c.json(HttpClientRequest.get("/models?limit=1"), ModelList, { base, retry: false })).pipe(
          Effect.flip,
          Effect.map((error) => error.endpoint),
          Effect.provide(Testing.layerHttp(rec.handler, { config }))
        )
      const root = {
        baseUrl: "https://llm.example.com",
        v1Url: "https://llm.example.com",
        queueUrl: "https://llm.example.com"
      }
      for (const base of ["v2", "v1", "queue"] as const) {
        assert.strictEqual(yield* endpointOn(root, base), "GET /models", base)
      }
      const paths = {
        baseUrl: "https://llm.example.com/v2/",
        v1Url: "https://llm.example.com/a/v1",
        queueUrl: "https://q.example.com/queue"
      }
      assert.strictEqual(yield* endpointOn(paths, "v2"), "GET /v2/models")
      assert.strictEqual(yield* endpointOn(paths, "v1"), "GET /a/v1/models")
      assert.strictEqual(yield* endpointOn(paths, "queue"), "GET /queue/models")
    }))

  it.effect("explicit v1 and queue URLs win over the derived ones", () =>
    Effect.gen(function*() {
      const rec = yield* recorder(() => ({ body: modelListBody }))
      const layer = Testing.layerHttp(rec.handler, {
        config: { v1Url: "http://vectors.test/api/v1", queueUrl: "http://queue.test/q" }
      })
      yield* http((c) => c.json(HttpClientRequest.get("/files"), ModelList, { base: "v1" })).pipe(Effect.provide(layer))
      yield* http((c) => c.json(HttpClientRequest.post("/chat/completions"), ModelList, { base: "queue" })).pipe(
        Effect.provide(layer)
      )
      assert.strictEqual((yield* Queue.take(rec.calls)).url.href, "http://vectors.test/api/v1/files")
      assert.strictEqual((yield* Queue.take(rec.calls)).url.href, "http://queue.test/q/chat/completions")
    }))

  it.effect("keeps the query string and sends the usual headers", () =>
    Effect.gen(function*() {
      const rec = yield* recorder(() => ({ body: modelListBody }))
      yield* http((c) =>
        c.json(HttpClientRequest.get("/models").pipe(HttpClientRequest.setUrlParam("limit", "3")), ModelList)
      ).pipe(Effect.provide(Testing.layerHttp(rec.handler)))
      const request = yield* Queue.take(rec.calls)
      assert.strictEqual(request.url.href, "http://aifs.test/v2/models?limit=3")
      assert.strictEqual(request.method, "GET")
      assert.strictEqual(request.headers["authorization"], "Bearer test-key")
      assert.strictEqual(request.headers["accept"], "application/json")
      assert.isUndefined(request.body)
    }))

  it.effect("withResponse returns status, request id and the parsed rate-limit headers", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({
        body: chatCompletionBody,
        headers: {
          "x-request-id": "req-abc",
          "x-ratelimit-limit-requests": "20",
          "x-ratelimit-limit-tokens": "18750",
          "x-ratelimit-remaining-requests": "19",
          "x-ratelimit-remaining-tokens": "18740",
          "x-ratelimit-reset-requests": "3s",
          "x-ratelimit-reset-tokens": "12ms"
        }
      })
      const result = yield* Effect.flatMap(Chat.Chat, (chat) => chat.createWithResponse(defaultChatParams)).pipe(
        Effect.provide(Testing.layerHttp(rec.handler))
      )
      assert.strictEqual(result.value.text, "Hello! How can I help you today?")
      assert.strictEqual(result.response.status, 200)
      assert.strictEqual(result.response.requestId, "req-abc")
      const info = result.response.rateLimit
      assert.strictEqual(info.limitRequests, 20)
      assert.strictEqual(info.limitTokens, 18750)
      assert.strictEqual(info.remainingRequests, 19)
      assert.strictEqual(info.remainingTokens, 18740)
      assert.strictEqual(Duration.toMillis(info.resetRequests!), 3_000)
      assert.strictEqual(Duration.toMillis(info.resetTokens!), 12)
      assert.strictEqual(result.response.headers["x-request-id"], "req-abc")
    }))

  it.effect("a response without rate-limit headers gives an empty RateLimitInfo", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ body: modelListBody })
      const result = yield* Effect.flatMap(Models.Models, (m) => m.listWithResponse()).pipe(
        Effect.provide(Testing.layerHttp(rec.handler))
      )
      assert.isFalse(result.response.rateLimit.hasLimitHeaders)
      assert.strictEqual(result.response.requestId, undefined)
    }))

  it.effect("a DecodeError says which schema the body did not match", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ body: { object: "list", data: "not a list" }, headers: { "x-request-id": "r-9" } })
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler))))
      assert.strictEqual(error._tag, "DecodeError")
      const decode = error as DecodeError
      assert.strictEqual(decode.status, 200)
      assert.strictEqual(decode.requestId, "r-9")
      assert.strictEqual(decode.endpoint, "GET /v2/models")
      assert.include(decode.excerpt, "not a list")
      assert.match(decode.message, /^response did not match ModelList/)
    }))

  it.effect("a non-JSON 200 body is a DecodeError with a bounded excerpt", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ body: "<html>" + "x".repeat(5_000) + "</html>" })
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler))))
      assert.strictEqual(error._tag, "DecodeError")
      assert.strictEqual(error.message, "response body is not JSON")
      assert.isAtMost((error as DecodeError).excerpt.length, 560)
    }))

  it.effect("sse streams raw events", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ sse: ["first", { a: 1 }], done: true })
      const events = yield* http((c) => Stream.runCollect(c.sse(HttpClientRequest.get("/events")))).pipe(
        Effect.provide(Testing.layerHttp(rec.handler))
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(events).map((e) => e.data), ["first", "{\"a\":1}", "[DONE]"])
      assert.strictEqual(Chunk.toReadonlyArray(events)[0]?.event, "message")
    }))

  it.effect("jsonStream with terminator null ends with the body", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ sse: [{ object: "list", data: [] }], done: false })
      const items = yield* http((c) =>
        Stream.runCollect(c.jsonStream(HttpClientRequest.get("/events"), ModelList, { terminator: null }))
      ).pipe(Effect.provide(Testing.layerHttp(rec.handler)))
      assert.strictEqual(Chunk.size(items), 1)
    }))

  it.effect("the client reports the configured interface version", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ body: modelListBody })
      const version = yield* http((c) => Effect.succeed(c.apiVersion)).pipe(
        Effect.provide(Testing.layerHttp(rec.handler, { config: { apiVersion: "1.0.0" } }))
      )
      assert.strictEqual(version, "1.0.0")
    }))
})

describe("the key never shows (an echoing server, every failure path)", () => {
  const key = "gen-SECRETCANARY0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ".slice(0, 52)
  // not key-shaped: only the configured secret tells the transport to hide it
  const password = "pass-CANARY-42"

  /** A raw client answering `respond`, which sees the request's authorization header to echo it back. */
  const echoing = (respond: (authorization: string) => Response | Error) =>
    HttpClient.make((request) => {
      const answer = respond(request.headers["authorization"] ?? "")
      return answer instanceof Error
        ? Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause: answer }))
        : Effect.succeed(HttpClientResponse.fromWeb(request, answer))
    })

  const html = (text: string) => new Response(text, { status: 200, headers: { "content-type": "text/html" } })
  const sse = (lines: string) => new Response(lines, { headers: { "content-type": "text/event-stream" } })

  const cases: ReadonlyArray<
    readonly [
      string,
      (auth: string) => Response | Error,
      (http: InferenceHttpClient.Service) => Effect.Effect<unknown, ApiError>
    ]
  > = [
    [
      "a 401 whose detail echoes the header",
      (auth) => Response.json({ detail: `bad ${auth}` }, { status: 401 }),
      jsonCall
    ],
    ["a 500 HTML page", (auth) => new Response(`<title>${auth}</title>`, { status: 500 }), jsonCall],
    ["a 200 that is not JSON", (auth) => html(`oops ${auth}`), jsonCall],
    ["a 200 that does not match its schema", (auth) => Response.json({ object: auth, data: auth }), jsonCall],
    ["a text body on a failed request", (auth) => new Response(`denied: ${auth}`, { status: 403 }), textCall],
    ["a stream answered with a page", (auth) => html(`<p>${auth}</p>`), streamCall],
    [
      "a stream whose content type echoes it",
      (auth) => new Response("x", { headers: { "content-type": `text/html; charset=${auth}` } }),
      streamCall
    ],
    ["an error event with JSON", (auth) => sse(`data: {"error":{"message":"bad ${auth}"}}\n\n`), streamCall],
    ["an error event in plain text", (auth) => sse(`event: error\ndata: bad ${auth}\n\n`), streamCall],
    ["a chunk that does not decode", (auth) => sse(`data: {"choices": "${auth}"}\n\n`), streamCall],
    ["a connection failure whose message holds it", (auth) => new Error(`socket closed after ${auth}`), jsonCall]
  ]

  for (const secret of [key, password]) {
    for (const [name, respond, call] of cases) {
      it.effect(`${name} (${secret === key ? "a key" : "another secret"}): not in the error, its logs or its spans`, () => {
        const logs: Array<string> = []
        const spans: Array<Tracer.Span> = []
        const logger = Logger.make(({ cause, message }) => {
          logs.push(`${Inspectable.format(message)} ${Cause.pretty(cause)}`)
        })
        return Effect.gen(function*() {
          const tracer = yield* Effect.tracer
          const recording = Tracer.make({
            span: (...args) => {
              const span = tracer.span(...args)
              spans.push(span)
              return span
            },
            context: tracer.context
          })
          const http = yield* InferenceHttpClient
          const exit = yield* Effect.exit(call(http)).pipe(
            Effect.withTracer(recording),
            Logger.withMinimumLogLevel(LogLevel.All)
          )
          assert.isTrue(Exit.isFailure(exit))
          if (Exit.isSuccess(exit)) return
          const error = Option.getOrUndefined(Cause.failureOption(exit.cause))
          const shown = [
            String(error),
            error?.message,
            JSON.stringify(error),
            Cause.pretty(exit.cause),
            ...logs,
            // the library's spans; the platform's http.client span records the response's headers as they came
            ...spans.filter((span) => !span.name.startsWith("http.client")).flatMap((span) => [
              span.name,
              JSON.stringify([...span.attributes]),
              span.status._tag === "Ended"
                ? Exit.isFailure(span.status.exit) ? Cause.pretty(span.status.exit.cause) : ""
                : ""
            ])
          ].join("\n")
          assert.notInclude(shown, secret)
          assert.notInclude(shown, JSON.stringify(secret).slice(1, -1))
          // the operation's span was there to be checked
          assert.isTrue(
            spans.some((span) => span.name === "Models.list" || span.name === "chat") || call === textCall
          )
        }).pipe(
          Effect.provide(Layer.mergeAll(
            Layer.scoped(InferenceHttpClient, InferenceHttp.make).pipe(Layer.provide(Layer.mergeAll(
              Layer.succeed(HttpClient.HttpClient, echoing(respond)),
              ClientConfig.layer({ apiKey: secret, baseUrl: "http://aifs.test/v2" }),
              RetryPolicy.layerDisabled
            ))),
            Logger.replace(Logger.defaultLogger, logger)
          ))
        )
      })
    }
  }
})
