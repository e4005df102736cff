/**
 * The gateway's transport (src/layers/GatewayHttp.ts) on the scripted transport and the `TestClock`: an absolute URL
 * is refused before anything is sent, a request marked `retry: false` is sent once, a request's own time limit
 * replaces the configured one (shorter or longer) and covers the body, and `layerDefaultRetry` takes its retries from the configuration.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as GatewayConfig from "../../src/layers/GatewayConfig.js"
import * as GatewayHttp from "../../src/layers/GatewayHttp.js"
import * as Testing from "../../src/layers/Testing.js"
import { GatewayHttpClient } from "../../src/services/gateway/GatewayHttpClient.js"
import { recorder } from "./helpers.js"

const Answer = Schema.Struct({ ok: Schema.Boolean })

/** The transport alone, with the default retry policy and `maxRetries` from the configuration. */
const transport = (handler: Testing.Handler, options: Partial<GatewayConfig.Options> = {}) =>
  GatewayHttp.layerDefaultRetry.pipe(
    Layer.provide(GatewayConfig.layer({ username: "u", password: "p", url: "http://gateway.test", ...options })),
    Layer.provide(Layer.succeed(HttpClient.HttpClient, Testing.httpClient(handler)))
  )

const get = (path: string, options: Parameters<GatewayHttpClient["Type"]["json"]>[2] = {}) =>
  Effect.flatMap(GatewayHttpClient, (client) => client.json(HttpClientRequest.get(path), Answer, options))

describe("the gateway's transport", () => {
  it.effect("an absolute URL is refused before anything is sent: a token reaches the gateway only", () =>
    Effect.gen(function*() {
      const server = yield* recorder(() => ({ body: { ok: true } }))
      const refused = yield* Effect.flip(
        get("https://elsewhere.example/steal", { token: Redacted.make("token-1") }).pipe(
          Effect.provide(transport(server.handler))
        )
      )
      assert.strictEqual(refused._tag, "TransportError")
      assert.strictEqual(
        refused.message,
        "gateway requests take a URL relative to the gateway; refusing to send credentials elsewhere"
      )
      assert.strictEqual(yield* server.count, 0)
      // a colon later in a relative URL names no scheme: sent, with the token, to the gateway
      const sent = yield* get("/files/a:b", { token: Redacted.make("token-1") }).pipe(
        Effect.provide(transport(server.handler))
      )
      assert.deepStrictEqual(sent.value, { ok: true })
      const request = yield* Queue.take(server.calls)
      assert.strictEqual(request.url.href, "http://gateway.test/files/a:b")
      assert.strictEqual(request.headers["authorization"], "Bearer token-1")
      assert.strictEqual(request.headers["accept"], "application/json")
      assert.match(request.headers["user-agent"] ?? "", /^effect-aifs\//)
    }))

  it.effect("a request marked retry: false is sent once; others as often as maxRetries of the configuration says", () =>
    Effect.gen(function*() {
      const unavailable = () => ({ status: 503, body: { detail: "busy" } })
      const once = yield* recorder(unavailable)
      const failed = yield* get("/x", { retry: false }).pipe(
        Effect.provide(transport(once.handler, { maxRetries: 3 })),
        Effect.flip
      )
      assert.strictEqual(failed._tag, "ServerError")
      assert.strictEqual(yield* once.count, 1)
      for (const maxRetries of [0, 2]) {
        const server = yield* recorder(unavailable)
        const fiber = yield* get("/x").pipe(Effect.provide(transport(server.handler, { maxRetries })), Effect.fork)
        yield* TestClock.adjust("10 minutes")
        yield* Fiber.await(fiber)
        assert.strictEqual(yield* server.count, maxRetries + 1, `maxRetries ${maxRetries}`)
      }
    }))

  it.effect("a request's own time limit replaces the configured one, from sending to the whole answer", () =>
    Effect.gen(function*() {
      const slow = yield* recorder(() => Effect.as(Effect.sleep("30 seconds"), { body: { ok: true } }))
      const layer = transport(slow.handler, { timeout: "1 minute", maxRetries: 0 })
      const own = yield* get("/x", { timeout: "10 seconds" }).pipe(Effect.provide(layer), Effect.flip, Effect.fork)
      yield* TestClock.adjust("10 seconds")
      const timedOut = yield* Fiber.join(own)
      assert.strictEqual(timedOut._tag, "Timeout")
      assert.strictEqual(timedOut.message, "no complete response within 10s")
      // the configured minute: the answer after 30 seconds arrives
      const configured = yield* get("/x").pipe(Effect.provide(layer), Effect.fork)
      yield* TestClock.adjust("30 seconds")
      assert.deepStrictEqual((yield* Fiber.join(configured)).value, { ok: true })
      const short = yield* get("/x").pipe(
        Effect.provide(transport(slow.handler, { timeout: "20 seconds", maxRetries: 0 })),
        Effect.flip,
        Effect.fork
      )
      yield* TestClock.adjust("20 seconds")
      assert.strictEqual((yield* Fiber.join(short)).message, "no complete response within 20s")
      // a request's own limit longer than the configured one: the answer after 30 seconds arrives
      const longer = yield* get("/x", { timeout: "2 minutes" }).pipe(
        Effect.provide(transport(slow.handler, { timeout: "20 seconds", maxRetries: 0 })),
        Effect.fork
      )
      yield* TestClock.adjust("30 seconds")
      assert.deepStrictEqual((yield* Fiber.join(longer)).value, { ok: true })
    }))

  it.effect("the time limit covers the body: headers at once and a body that never ends is a Timeout", () =>
    Effect.gen(function*() {
      // the status line and headers arrive at once; the body's one chunk never does
      const stalled = HttpClient.make((request) =>
        Effect.succeed(HttpClientResponse.fromWeb(
          request,
          new Response(new ReadableStream({ pull: () => new Promise<void>(() => {}) }), {
            headers: { "content-type": "application/json" }
          })
        ))
      )
      const layer = GatewayHttp.layerDefaultRetry.pipe(
        Layer.provide(GatewayConfig.layer({ username: "u", password: "p", url: "http://gateway.test", maxRetries: 0 })),
        Layer.provide(Layer.succeed(HttpClient.HttpClient, stalled))
      )
      const fiber = yield* get("/x", { timeout: "10 seconds" }).pipe(Effect.provide(layer), Effect.flip, Effect.fork)
      yield* TestClock.adjust("10 seconds")
      const timedOut = yield* Fiber.join(fiber)
      assert.strictEqual(timedOut._tag, "Timeout")
      assert.strictEqual(timedOut.message, "no complete response within 10s")
    }))

  it.effect("a time limit that is no duration is a defect naming the option, before the request or its refusal", () =>
    Effect.gen(function*() {
      const server = yield* recorder(() => ({ body: { ok: true } }))
      const layer = transport(server.handler)
      for (const path of ["/x", "https://elsewhere.example/x"]) {
        const exit = yield* get(path, { timeout: "soon" as never }).pipe(Effect.provide(layer), Effect.exit)
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), path)
        assert.include(Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "", "RequestOptions.timeout is not a duration")
      }
      assert.strictEqual(yield* server.count, 0)
    }))
})
