/**
 * The transport and the limiter together: however a request ends (answered, refused, cut off, interrupted at any
 * point), the limiter counts exactly what the server may hold, never a permit nobody settles.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as InferenceHttp from "../../src/layers/InferenceHttp.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { limiterOn, memoryStoreWith } from "../helpers/stores.js"

const params = { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 10 }
const chat = () => HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(params))
/** As `Chat.create` and `Chat.createStream` send it: the limiter counts a request by its operation's parameters. */
const asChat = { model: "m", span: { name: "Chat.create", operation: "chat", params } } as const

/** The transport on a scripted server, with a limiter on `store`, retries as given. */
const stack = (
  handler: Testing.Handler,
  options: { store?: Layer.Layer<LimiterStore.LimiterStore>; retries?: number }
) => {
  const limiter = limiterOn(options.store ?? LimiterStore.layerMemory, {
    margin: 0,
    limits: { m: { rpm: 1000, tpm: 1_000_000 } }
  })
  return Layer.merge(
    Layer.scoped(InferenceHttpClient, InferenceHttp.make).pipe(Layer.provide(Layer.mergeAll(
      Layer.succeed(HttpClient.HttpClient, Testing.httpClient(handler)),
      ClientConfig.layer({ apiKey: "test-key", baseUrl: "http://aifs.test/v2" }),
      RetryPolicy.layer({ maxRetries: options.retries ?? 0, baseDelay: 0 }),
      limiter
    ))),
    limiter
  )
}

/** Requests the limiter counts now. */
const counted = Effect.map(
  Effect.flatMap(RateLimiter.RateLimiter, (limiter) => limiter.snapshot),
  (states) => states[0]?.budgets.requests.used ?? 0
)

describe("permit accounting between the transport and the limiter", () => {
  for (const status of [200, 500, 429]) {
    for (const kind of ["json", "stream", "stream, first event only"] as const) {
      it.effect(`interrupted at any point (${kind}, status ${status}): sent requests stay counted, unsent ones do not`, () => {
        let sent = 0
        const handler: Testing.Handler = () =>
          Effect.suspend(() => {
            sent++
            return Effect.as(
              Effect.yieldNow(),
              status === 200 ? { sse: [{ a: 1 }, { a: 2 }], body: {} } : { status, body: { error: { message: "no" } } }
            )
          })
        return Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          const run = kind === "json"
            ? http.json(chat(), Schema.Unknown, asChat)
            : kind === "stream"
            ? Stream.runDrain(http.sse(chat(), asChat))
            : Stream.runDrain(Stream.take(http.sse(chat(), asChat), 1))
          // an interruption after 0, 1, 2 ... 40 yields: every point from the limiter's line to the end
          for (let yields = 0; yields <= 40; yields++) {
            const before = yield* counted
            sent = 0
            const fiber = yield* Effect.fork(run)
            for (let i = 0; i < yields; i++) yield* Effect.yieldNow()
            yield* Fiber.interrupt(fiber)
            yield* Fiber.await(fiber)
            const delta = (yield* counted) - before
            // a 429 the server answered is given back; one interrupted on the wire stays counted
            if (status === 429) assert.isAtMost(delta, sent, `after ${yields} yields`)
            else assert.strictEqual(delta, sent, `after ${yields} yields`)
          }
        }).pipe(Effect.provide(stack(handler, { retries: 2 })))
      })
    }
  }

  it.effect("a settle in progress is not cut short by an interruption (a store that does I/O)", () => {
    const entered = Deferred.unsafeMake<void>(undefined as never)
    const gate = Deferred.unsafeMake<void>(undefined as never)
    const slowRemove = memoryStoreWith((inner) => ({
      remove: (...args) =>
        Effect.zipRight(
          Effect.zipRight(Deferred.succeed(entered, undefined), Deferred.await(gate)),
          inner.remove(...args)
        )
    }))
    return Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      // a 429 the server never counted: its slot is being given back when the caller is interrupted
      const fiber = yield* Effect.fork(http.json(chat(), Schema.Unknown, asChat))
      yield* Deferred.await(entered)
      // the interruption reaches the fiber while the store is still at work
      const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(interrupting)
      assert.strictEqual(yield* counted, 0)
    }).pipe(
      Effect.provide(stack(() => ({ status: 429, body: { error: { message: "slow down" } } }), { store: slowRemove }))
    )
  })

  it.effect("a per-request time limit that is not a duration fails before the request holds a permit", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const exit = yield* Effect.exit(http.json(chat(), Schema.Unknown, { ...asChat, timeout: "soon" as never }))
      assert.isTrue(Exit.isFailure(exit))
      // a defect that names the option: a programming error, not an ApiError to handle
      if (Exit.isFailure(exit)) assert.include(Cause.pretty(exit.cause), "RequestOptions.timeout is not a duration")
      assert.strictEqual(yield* counted, 0)
      const streamed = yield* Effect.exit(
        Stream.runDrain(http.sse(chat(), { ...asChat, idleTimeout: "later" as never }))
      )
      assert.isTrue(Exit.isFailure(streamed))
      if (Exit.isFailure(streamed)) {
        assert.include(Cause.pretty(streamed.cause), "RequestOptions.idleTimeout is not a duration")
      }
      assert.strictEqual(yield* counted, 0)
    }).pipe(Effect.provide(stack(() => ({ body: {} }), {}))))

  it.effect("a request that names no model, or has no JSON body, goes out without the limiter, first try or retry", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const limiter = yield* RateLimiter.RateLimiter
      const noModel = HttpClientRequest.post("/vector_stores").pipe(HttpClientRequest.bodyUnsafeJson({ name: "docs" }))
      const form = HttpClientRequest.post("/files").pipe(HttpClientRequest.bodyText("a,b", "text/csv"))
      for (const request of [noModel, form, HttpClientRequest.get("/models")]) {
        const exit = yield* Effect.exit(http.json(request, Schema.Unknown))
        // the server refuses once, then answers: the retry goes out without the limiter too
        assert.isTrue(Exit.isSuccess(exit), `${request.method} ${request.url}`)
      }
      assert.deepStrictEqual(yield* limiter.snapshot, [])
    }).pipe(Effect.provide(stack(refusedOnceEach(), { retries: 1 }))))
})

/** A server that answers each route's first request with a 500, then with an empty object. */
const refusedOnceEach = (): Testing.Handler => {
  const seen = new Set<string>()
  return (request) => {
    const first = !seen.has(request.path)
    seen.add(request.path)
    return first ? { status: 500, body: { error: { message: "try again" } } } : { body: {} }
  }
}
