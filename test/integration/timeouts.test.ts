/**
 * The four time limits of an attempt (connect, first byte, idle between stream chunks, total), each ending
 * in a `Timeout` that names it, and interruption: an interrupted call closes its connection (the emulator
 * sees the abort), gives back its place in the limiter and leaves no socket open.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { createServer as createHttpServer } from "node:http"
import { type AddressInfo, createServer, type Socket } from "node:net"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as Node from "../../src/layers/Node.js"
import { RateLimiter } from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import { ChatCompletion } from "../../src/schemas/Chat.js"
import type { ApiError, Timeout } from "../../src/schemas/Errors.js"
import * as Batch from "../../src/services/Batch.js"
import * as Chat from "../../src/services/Chat.js"
import { InferenceHttpClient, type RequestOptions } from "../../src/services/InferenceHttpClient.js"
import * as Models from "../../src/services/Models.js"
import { ask, queuedChat, sleepsBetween, waitUntil } from "../helpers/emulator.js"

const model = "Llama-3.3-70B-Instruct"

const basic = (options: Testing.LayerEmulatorOptions = {}) =>
  Testing.layerEmulator({ tier: "basic", window: "10 seconds", rateLimiter: false, ...options })

/** Twenty requests: a basic key's whole window, so the next queued request waits for capacity. */
const fill = Effect.forEach(
  Array.from({ length: 20 }, (_, i) => i),
  (i) => queuedChat(ask(model, `filler ${i}`)),
  { concurrency: "unbounded", discard: true }
)

const expectTimeout = (error: ApiError, which: Timeout["timeout"], after: Duration.DurationInput) => {
  assert.strictEqual(error._tag, "Timeout", `expected a Timeout, got ${error._tag}: ${error.message}`)
  if (error._tag !== "Timeout") return
  assert.strictEqual(error.timeout, which)
  assert.isTrue(Duration.equals(error.after, Duration.decode(after)), `after ${Duration.format(error.after)}`)
  assert.include(error.message, Duration.format(Duration.decode(after)))
}

const stats = Effect.flatMap(Emulator.Emulator, (emulator) => emulator.stats)

/** The port a listening server is bound to. */
const portOf = (server: { address(): string | AddressInfo | null }): number => {
  const address = server.address()
  return typeof address === "object" && address !== null ? address.port : 0
}

/** A chat request on the queue root that the emulator holds for capacity (the window is full), with `options`. */
const heldOnQueue = (options: RequestOptions) =>
  Effect.gen(function*() {
    yield* fill
    const http = yield* InferenceHttpClient
    const request = HttpClientRequest.post("/chat/completions").pipe(
      HttpClientRequest.bodyUnsafeJson(ask(model, "held"))
    )
    const fiber = yield* Effect.fork(Effect.flip(http.json(request, ChatCompletion, { base: "queue", ...options })))
    yield* waitUntil("the queue holds the request", Effect.map(sleepsBetween(9_000, 10_000), (n) => n === 1))
    return fiber
  })

describe("time limits", () => {
  it.effect("first byte: a request the server holds ends in Timeout(firstByte), and the server sees it go", () =>
    Effect.gen(function*() {
      // the total limit stays the queue's 30 minutes; the status line must come within 3 s
      const fiber = yield* heldOnQueue({ firstByteTimeout: "3 seconds" })
      yield* TestClock.adjust("3 seconds")
      expectTimeout(yield* Fiber.join(fiber), "firstByte", "3 seconds")
      yield* waitUntil("the emulator sees the abort", Effect.map(stats, (s) => s.aborted === 1 && s.inFlight === 0))
    }).pipe(Effect.provide(basic({ client: { maxRetries: 0 } }))))

  it.effect("queue routes get the long queue limit, standard routes the short first-byte limit", () =>
    Effect.gen(function*() {
      yield* fill
      // the queue waits out the window (10 s) within its 30 s limit although first byte is limited to 2 s
      const fiber = yield* Effect.fork(queuedChat(ask(model, "waits")))
      yield* waitUntil("the queue holds the request", Effect.map(sleepsBetween(9_000, 10_000), (n) => n === 1))
      yield* TestClock.adjust("10 seconds")
      const { response } = yield* Fiber.join(fiber)
      assert.strictEqual(response.status, 200)
    }).pipe(Effect.provide(basic({ client: { maxRetries: 0, firstByteTimeout: "2 seconds" } }))))

  it.effect("total: a limit shorter than the wait for the first byte fires as Timeout(total)", () =>
    Effect.gen(function*() {
      // on the queue the first-byte limit is the queue's 30 minutes; this request allows 2 s in all
      const fiber = yield* heldOnQueue({ timeout: "2 seconds" })
      yield* TestClock.adjust("2 seconds")
      expectTimeout(yield* Fiber.join(fiber), "total", "2 seconds")
    }).pipe(Effect.provide(basic({ client: { maxRetries: 0 } }))))

  it.effect("idle: a stream silent for longer than the idle limit ends in Timeout(idle)", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const fiber = yield* Effect.fork(
        Effect.flip(Stream.runDrain(chat.createStream(ask(model, "slow stream", { max_tokens: 20 }))))
      )
      // the emulator pauses 5 s before each chunk; the client waits at most 2 s between chunks
      yield* waitUntil("the first chunk is due", Effect.map(sleepsBetween(4_000, 5_000), (n) => n === 1))
      yield* TestClock.adjust("5 seconds")
      yield* waitUntil("the next chunk is due", Effect.map(sleepsBetween(4_000, 5_000), (n) => n === 1))
      yield* TestClock.adjust("2 seconds")
      expectTimeout(yield* Fiber.join(fiber), "idle", "2 seconds")
      yield* waitUntil("the emulator sees the abort", Effect.map(stats, (s) => s.aborted === 1 && s.inFlight === 0))
    }).pipe(
      Effect.provide(
        basic({ streamChunkDelay: "5 seconds", client: { maxRetries: 0, streamIdleTimeout: "2 seconds" } })
      )
    ))

  it.effect("total: a stream whose chunks keep coming but never end in time ends in Timeout(total)", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const received: Array<unknown> = []
      const fiber = yield* Effect.fork(
        Effect.flip(
          Stream.runForEach(
            chat.createStream(ask(model, "long stream", { max_tokens: 200 })),
            (chunk) => Effect.sync(() => received.push(chunk))
          )
        )
      )
      // one chunk a second, idle limit 5 s: only the total limit (10 s) can end it
      for (let second = 0; second < 10; second++) {
        yield* waitUntil("the next chunk is due", Effect.map(sleepsBetween(1, 1_000), (n) => n >= 1))
        yield* TestClock.adjust("1 second")
      }
      expectTimeout(yield* Fiber.join(fiber), "total", "10 seconds")
      assert.isAtLeast(received.length, 5, "chunks arrived until the limit")
    }).pipe(
      Effect.provide(
        basic({
          streamChunkDelay: "1 second",
          client: { maxRetries: 0, streamIdleTimeout: "5 seconds", timeout: "10 seconds" }
        })
      )
    ))
})

describe("connect timeout", () => {
  it.live("a server that accepts the TCP connection but never finishes the TLS handshake: Timeout(connect)", () =>
    Effect.gen(function*() {
      // a silent TCP listener: the client's TLS handshake never completes
      const sockets = new Set<Socket>()
      const server = yield* Effect.acquireRelease(
        Effect.async<ReturnType<typeof createServer>>((resume) => {
          const server = createServer((socket) => {
            sockets.add(socket)
            socket.on("close", () => sockets.delete(socket))
          })
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) =>
          Effect.async<void>((resume) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => resume(Effect.void))
          })
      )
      const port = portOf(server)
      const error = yield* Effect.flip(Effect.flatMap(Models.Models, (models) => models.list())).pipe(
        Effect.provide(Node.layer({
          apiKey: "gen-test",
          baseUrl: `https://127.0.0.1:${port}/v2`,
          maxRetries: 0,
          connectTimeout: "150 millis",
          rateLimiter: false
        })),
        Effect.timeout("10 seconds")
      )
      expectTimeout(error, "connect", "150 millis")
      assert.strictEqual(error.endpoint, "GET /v2/models")
    }).pipe(Effect.scoped))
})

describe("interruption", () => {
  it.effect("an interrupted call closes its connection: the emulator sees the abort, no socket stays open", () =>
    Effect.gen(function*() {
      const calls = Effect.gen(function*() {
        yield* fill
        const fibers = yield* Effect.forEach(
          [1, 2, 3],
          (i) => Effect.fork(queuedChat(ask(model, `held ${i}`))),
          { concurrency: "unbounded" }
        )
        yield* waitUntil("the queue holds three", Effect.map(sleepsBetween(9_000, 10_000), (n) => n === 3))
        assert.strictEqual((yield* stats).inFlight, 3)
        yield* Fiber.interruptAll(fibers)
        // the server counts an abort only when the connection closes before the answer
        yield* waitUntil(
          "the emulator sees three aborts",
          Effect.map(stats, (s) => s.aborted === 3 && s.inFlight === 0)
        )
        assert.isAbove((yield* stats).connections, 0, "the fillers' connections are kept for reuse meanwhile")
      })
      const client = Layer.unwrapEffect(Effect.map(Emulator.Emulator, (emulator) =>
        Node.layer({
          apiKey: emulator.keyFor("basic")!,
          baseUrl: emulator.baseUrl,
          tier: "basic",
          maxRetries: 0,
          rateLimiter: false
        })))
      yield* calls.pipe(Effect.provide(client))
      // the client's layer is closed: none of its sockets is left open
      yield* waitUntil("every connection is closed", Effect.map(stats, (s) => s.connections === 0))
    }).pipe(Effect.provide(Emulator.layer({ window: "10 seconds" }))))

  it.effect("an interrupted stream closes its connection", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const fiber = yield* Effect.fork(
        Stream.runDrain(chat.createStream(ask(model, "slow stream", { max_tokens: 50 })))
      )
      yield* waitUntil("the stream is open", Effect.map(stats, (s) => s.inFlight === 1))
      yield* TestClock.adjust("3 seconds")
      yield* Fiber.interrupt(fiber)
      yield* waitUntil("the emulator sees the abort", Effect.map(stats, (s) => s.aborted === 1 && s.inFlight === 0))
    }).pipe(Effect.provide(basic({ streamChunkDelay: "1 second", client: { maxRetries: 0 } }))))

  it.effect("interrupting callers waiting in the limiter and in flight leaves nothing waiting or held", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const limiter = yield* RateLimiter
      // the basic quota admits 20 a window: 20 go out (the emulator holds their streams), 5 wait in line
      const fibers = yield* Effect.forEach(
        Array.from({ length: 25 }, (_, i) => i),
        (i) => Effect.fork(Stream.runDrain(chat.createStream(ask(model, `caller ${i}`, { max_tokens: 50 })))),
        { concurrency: "unbounded" }
      )
      yield* waitUntil(
        "20 in flight, 5 waiting",
        Effect.gen(function*() {
          const s = yield* stats
          const state = (yield* limiter.snapshot).find((m) => m.model === model)
          return s.inFlight === 20 && state?.waiting === 5
        })
      )
      yield* Fiber.interruptAll(fibers)
      yield* waitUntil("all aborted", Effect.map(stats, (s) => s.aborted === 20 && s.inFlight === 0))
      const state = (yield* limiter.snapshot).find((m) => m.model === model)
      assert.strictEqual(state?.waiting, 0, "no caller left waiting")
      // the twenty the server had received stay counted (it may hold them); the five that never left do not
      assert.strictEqual(state?.budgets.requests.used, 20)
    }).pipe(Effect.provide(
      Layer.fresh(basic({ streamChunkDelay: "1 second", client: { maxRetries: 0 }, rateLimiter: {} }))
    )))

  it.effect("an interrupted batch aborts what it has in flight and emits nothing half-done", () =>
    Effect.gen(function*() {
      const results: Array<Batch.ResultLine> = []
      const requests = Stream.fromIterable(Array.from({ length: 30 }, (_, i): Batch.BatchRequest => ({
        custom_id: `req-${i}`,
        endpoint: "chat",
        body: ask(model, `batch line ${i}`, { max_tokens: 5 })
      })))
      const fiber = yield* Effect.fork(
        Stream.runForEach(Batch.run(requests, { concurrency: 10 }), (line) => Effect.sync(() => results.push(line)))
      )
      // the first five answer at once, then the emulator takes a minute: ten requests are held in flight
      yield* waitUntil("ten held", Effect.map(stats, (s) => s.inFlight === 10 && s.received === 15))
      assert.strictEqual(results.length, 5)
      yield* Fiber.interrupt(fiber)
      yield* waitUntil("the emulator sees ten aborts", Effect.map(stats, (s) => s.aborted === 10 && s.inFlight === 0))
      assert.strictEqual(results.length, 5, "nothing is emitted for an interrupted request")
      assert.isTrue(results.every((line) => line.error === null && line.response?.status_code === 200))
    }).pipe(Effect.provide(basic({
      client: { maxRetries: 0 },
      chaos: [
        { fault: { kind: "latency", delay: "0 millis" }, times: 5 },
        { fault: { kind: "latency", delay: "1 minute" } }
      ]
    }))))
})

describe("a stream ends at its terminator or its error, not at the connection's end", () => {
  /** A server that sends `events` as SSE and then keeps the connection open until it stops. */
  const holdingServer = (events: ReadonlyArray<string>) =>
    Effect.acquireRelease(
      Effect.async<ReturnType<typeof createHttpServer>>((resume) => {
        const server = createHttpServer((request, response) => {
          request.resume()
          request.on("end", () => {
            response.writeHead(200, { "content-type": "text/event-stream" })
            response.write(events.map((data) => `data: ${data}\n\n`).join(""))
            // no end: the socket stays open, as behind some proxies
          })
        })
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
      }),
      (server) =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )

  const chunk = (content: string) =>
    JSON.stringify({
      id: "c",
      object: "chat.completion.chunk",
      created: 1,
      model,
      choices: [{ index: 0, delta: { content } }]
    })

  const streamFrom = (events: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const server = yield* holdingServer(events)
      const port = portOf(server)
      return yield* Effect.flatMap(
        Chat.Chat,
        (chat) => Effect.either(Chat.collect(chat.createStream(ask(model, "hi"))))
      ).pipe(
        Effect.provide(Node.layer({
          apiKey: "gen-test",
          baseUrl: `http://127.0.0.1:${port}/v2`,
          maxRetries: 0,
          streamIdleTimeout: "1 minute",
          rateLimiter: false
        })),
        // on the TestClock, which this test never moves, the idle limit cannot end the stream: it ends at
        // [DONE] or at the error event, or not at all (and waitUntil gives up with a message)
        Effect.fork,
        Effect.tap((fiber) => waitUntil("the stream ends on its own", Effect.map(Fiber.poll(fiber), Option.isSome))),
        Effect.flatMap(Fiber.join)
      )
    }).pipe(Effect.scoped)

  it.effect("[DONE] on a connection that stays open: the stream completes", () =>
    Effect.gen(function*() {
      const result = yield* streamFrom([chunk("Hello"), chunk(" world"), "[DONE]"])
      assert.isTrue(Either.isRight(result))
      if (Either.isRight(result)) assert.strictEqual(result.right.text, "Hello world")
    }))

  it.effect("an error event on a connection that stays open: its typed error, without waiting for the end", () =>
    Effect.gen(function*() {
      const result = yield* streamFrom([
        chunk("Hello"),
        JSON.stringify({ error: { message: "backend overloaded", code: 503 } })
      ])
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) assert.strictEqual(result.left._tag, "ServerError")
    }))
})

describe("what a failed attempt leaves in the limiter", () => {
  const used = Effect.flatMap(
    RateLimiter,
    (limiter) =>
      Effect.map(limiter.snapshot, (states) => states.find((s) => s.model === model)?.budgets.requests.used ?? 0)
  )

  it.effect("a connection dropped after sending stays counted (the server may hold the request)", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const error = yield* Effect.flip(chat.create(ask(model, "dropped")))
      assert.strictEqual(error._tag, "TransportError")
      if (error._tag === "TransportError") assert.notStrictEqual(error.connected, false)
      assert.strictEqual(yield* used, 1)
    }).pipe(Effect.provide(basic({
      client: { maxRetries: 0 },
      rateLimiter: {},
      chaos: [{ fault: { kind: "resetBeforeBody" }, times: 1 }]
    }))))

  it.live("a refused connection gives the slot back (the server never saw the request)", () =>
    Effect.gen(function*() {
      // a port that was free a moment ago: nothing listens there
      const port = yield* Effect.async<number>((resume) => {
        const probe = createServer()
        probe.listen(0, "127.0.0.1", () => {
          const port = portOf(probe)
          probe.close(() => resume(Effect.succeed(port)))
        })
      })
      const error = yield* Effect.gen(function*() {
        const chat = yield* Chat.Chat
        const failure = yield* Effect.flip(chat.create(ask(model, "refused")))
        assert.strictEqual(yield* used, 0)
        return failure
      }).pipe(
        Effect.provide(Node.layer({ apiKey: "gen-test", baseUrl: `http://127.0.0.1:${port}/v2`, maxRetries: 0 }))
      )
      assert.strictEqual(error._tag, "TransportError")
      if (error._tag === "TransportError") assert.strictEqual(error.connected, false)
    }))
})
