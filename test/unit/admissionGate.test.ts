/**
 * The gate on the limiter's line (`RateLimiter.Admitting`): once closed, a request waiting in the line is not sent
 * when the window frees (nor routed to the queue), and gives its place back when it is interrupted; while open, the
 * same request goes as soon as the window frees.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as InferenceHttp from "../../src/layers/InferenceHttp.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { limiterOn } from "../helpers/stores.js"

const params = { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 10 }
const chat = HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(params))
/** As `Chat.create` sends it: the limiter counts a request by its operation's model and parameters. */
const asChat = { model: "m", span: { name: "Chat.create", operation: "chat", params } } as const

/** The transport on a server that counts what it gets, a limiter of one request a minute, and a gate on its line. */
const stack = (sent: Array<string>, line: { open: boolean }, queueRouting = false) => {
  const limiter = limiterOn(LimiterStore.layerMemory, { margin: 0, queueRouting, limits: { m: { rpm: 1, tpm: 1e6 } } })
  const http = Testing.httpClient((request) => {
    sent.push(String(request.url))
    return { body: {} }
  })
  return Layer.merge(
    Layer.scoped(InferenceHttpClient, InferenceHttp.make).pipe(Layer.provide(Layer.mergeAll(
      Layer.succeed(HttpClient.HttpClient, http),
      ClientConfig.layer({ apiKey: "test-key", baseUrl: "http://aifs.test/v2" }),
      RetryPolicy.layer({ maxRetries: 0, baseDelay: 0 }),
      limiter,
      Layer.succeed(RateLimiter.Admitting, line)
    ))),
    limiter
  )
}

const usedRequests = Effect.map(
  Effect.flatMap(RateLimiter.RateLimiter, (limiter) => limiter.snapshot),
  (states) => states[0]?.budgets.requests.used ?? 0
)

describe("the gate on the limiter's line", () => {
  it.effect("open: the waiting request goes when the window frees", () =>
    Effect.gen(function*() {
      const sent: Array<string> = []
      yield* Effect.gen(function*() {
        const http = yield* InferenceHttpClient
        yield* http.json(chat, Schema.Unknown, asChat)
        const second = yield* Effect.fork(http.json(chat, Schema.Unknown, asChat))
        for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
        assert.strictEqual(sent.length, 1)
        yield* TestClock.adjust("61 seconds")
        yield* Fiber.join(second)
        assert.strictEqual(sent.length, 2)
      }).pipe(Effect.provide(stack(sent, { open: true })))
    }))

  it.effect("closed: the waiting request is not sent when the window frees, and gives back the place it is granted", () =>
    Effect.gen(function*() {
      const sent: Array<string> = []
      const line = { open: true }
      yield* Effect.gen(function*() {
        const http = yield* InferenceHttpClient
        yield* http.json(chat, Schema.Unknown, asChat)
        const second = yield* Effect.fork(http.json(chat, Schema.Unknown, asChat))
        for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
        line.open = false
        yield* TestClock.adjust("61 seconds")
        for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
        assert.strictEqual(sent.length, 1)
        assert.isNull(second.unsafePoll())
        // granted a place when the window freed, it gave it back at once (another process may use it)
        assert.strictEqual(yield* usedRequests, 0)
        yield* Fiber.interrupt(second)
        assert.strictEqual(yield* usedRequests, 0)
        assert.strictEqual(sent.length, 1)
      }).pipe(Effect.provide(stack(sent, line)))
    }))

  it.effect("closed, with queue routing: a request that would wait is not sent to the queue either", () =>
    Effect.gen(function*() {
      const sent: Array<string> = []
      const line = { open: true }
      yield* Effect.gen(function*() {
        const http = yield* InferenceHttpClient
        yield* http.json(chat, Schema.Unknown, asChat)
        line.open = false
        const second = yield* Effect.fork(http.json(chat, Schema.Unknown, asChat))
        yield* TestClock.adjust("61 seconds")
        for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
        assert.isNull(second.unsafePoll())
        assert.deepStrictEqual(sent, ["http://aifs.test/v2/chat/completions"])
      }).pipe(Effect.provide(stack(sent, line, true)))
    }))
})
