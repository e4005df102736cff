import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Testing from "../../src/layers/Testing.js"
import type { DecodeError } from "../../src/schemas/Errors.js"
import { ModelList } from "../../src/schemas/Models.js"
import * as Chat from "../../src/services/Chat.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import * as Models from "../../src/services/Models.js"
import { chatCompletionBody, defaultChatParams, listModels, modelListBody, recorder, sequence } from "./helpers.js"

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
