/**
 * The time limits of an attempt on the scripted transport and the `TestClock` (README, "Configuration"): each counts
 * from sending, never while the request waits in the rate limiter's line; each ends the attempt in a `Timeout`
 * naming it and its limit; a request's own limits override the configuration's; the queue root has its own.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import { RateLimiter as RateLimiterTag } from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import type { ApiError } from "../../src/schemas/Errors.js"
import { InferenceHttpClient, type RequestOptions } from "../../src/services/InferenceHttpClient.js"
import { chat, chatBody, chatOptions, stack, type StackOptions } from "./transportStack.js"

/** Polls `check` (a few hundred rounds, each a short live sleep) until it holds; fails naming `what` otherwise. */
const until = (what: string, check: Effect.Effect<boolean>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 500; i++) {
      if (yield* check) return
      yield* TestServices.provideLive(Effect.sleep("1 millis"))
    }
    assert.fail(`never: ${what}`)
  })

/** A timer on the `TestClock` ends `millis` from now. */
const timerIn = (millis: number) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const sleeps = yield* TestClock.sleeps()
    return [...sleeps].some((end) => end - now === millis)
  })

/** How an exit failed: its error's tag, and for a `Timeout` which limit and after how long. */
const describeFailure = (exit: Option.Option<Exit.Exit<unknown, ApiError>>) => {
  if (Option.isNone(exit)) return "still running"
  if (Exit.isSuccess(exit.value)) return "succeeded"
  const error = Option.getOrUndefined(Cause.failureOption(exit.value.cause))
  if (error === undefined) return "failed without an ApiError"
  return error._tag === "Timeout"
    ? `Timeout(${error.timeout}) after ${Duration.format(error.after)}: ${error.message} at ${error.endpoint}`
    : error._tag
}

const format = (seconds: number) => Duration.format(Duration.seconds(seconds))

/** A server that answers the status line `firstByteAfter` after it received the request, then holds the body. */
const slowServer = (firstByteAfter: Duration.DurationInput, sentAt: Array<number>) =>
  HttpClient.make((request) =>
    Effect.gen(function*() {
      sentAt.push(yield* Clock.currentTimeMillis)
      yield* Effect.sleep(firstByteAfter)
      // a body that never ends
      const body = new ReadableStream<Uint8Array>({ start: () => undefined })
      return HttpClientResponse.fromWeb(
        request,
        new Response(body, { headers: { "content-type": "application/json" } })
      )
    })
  )

/** A moment of a test, in milliseconds after sending, and what happens then (before the request's state is read). */
interface Checkpoint {
  readonly at: number
  readonly then?: Effect.Effect<void> | undefined
}

/**
 * One request (`run`) that first waits `waitMs` in the limiter's line (a chat request ahead of it holds the only
 * slot of a window that long), then meets `server`. Returns when it was sent (after its arrival) and how it stood
 * at each checkpoint.
 */
const afterWaiting = (
  waitMs: number,
  server: (sentAt: Array<number>) => HttpClient.HttpClient,
  run: (http: InferenceHttpClient.Service) => Effect.Effect<unknown, ApiError>,
  checkpoints: ReadonlyArray<Checkpoint | number>,
  stackOptions: StackOptions = {}
) => {
  const sentAt: Array<number> = []
  const inner = server(sentAt)
  // the first request is answered at once; it keeps the slot for the window
  let first = true
  const client = HttpClient.make((request) =>
    first ? (first = false, Testing.httpClient(() => ({ body: {} })).execute(request)) : inner.execute(request)
  )
  return Effect.gen(function*() {
    const http = yield* InferenceHttpClient
    const start = yield* Clock.currentTimeMillis
    yield* http.json(chat(), Schema.Unknown, chatOptions)
    const fiber = yield* Effect.fork(run(http))
    if (waitMs > 0) {
      yield* until("the request waits in the limiter", timerIn(waitMs))
      yield* TestClock.adjust(waitMs)
    }
    yield* until("the request is sent", Effect.sync(() => sentAt.length === 1))
    const states: Array<string> = []
    let now = 0
    for (const checkpoint of checkpoints) {
      const { at, then } = typeof checkpoint === "number" ? { at: checkpoint, then: undefined } : checkpoint
      // every timer of the attempt is set before the clock moves on
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      yield* TestClock.adjust(at - now)
      now = at
      if (then !== undefined) yield* then
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      states.push(describeFailure(yield* Fiber.poll(fiber)))
    }
    yield* Fiber.interrupt(fiber)
    return { sentAt: sentAt[0]! - start, states }
  }).pipe(Effect.provide(stack(client, {
    ...stackOptions,
    limiter: {
      limits: { m: { rpm: waitMs > 0 ? 1 : 1_000, tpm: 1_000_000 } },
      window: Duration.millis(Math.max(waitMs, 1)),
      ...stackOptions.limiter
    },
    config: { firstByteTimeout: "10 minutes", timeout: "10 minutes", ...stackOptions.config }
  })))
}

/** The chat request as `Chat.create` sends it (the limiter counts it), with `options` over its own. */
const json = (options: RequestOptions) => (http: InferenceHttpClient.Service) =>
  http.json(chat(), Schema.Unknown, { ...chatOptions, ...options })

describe("time limits count from sending, not from the wait in the limiter", () => {
  it.effect("Timeout(firstByte) fires exactly its limit after sending, however long the request waited", () =>
    Effect.gen(function*() {
      const cases = FastCheck.sample(
        FastCheck.record({
          waitMs: FastCheck.integer({ min: 0, max: 120_000 }),
          limit: FastCheck.integer({ min: 1, max: 60 })
        }),
        6
      )
      for (const { limit, waitMs } of [{ waitMs: 90_000, limit: 30 }, ...cases]) {
        const limitMs = limit * 1_000
        const { sentAt, states } = yield* afterWaiting(
          waitMs,
          (sent) => slowServer("1 hour", sent),
          json({ firstByteTimeout: `${limit} seconds` }),
          [limitMs - 1, limitMs]
        )
        assert.strictEqual(sentAt, waitMs, "sent when the limiter let it go")
        assert.deepStrictEqual(states, [
          "still running",
          `Timeout(firstByte) after ${format(limit)}: no response within ${format(limit)} at POST /v2/chat/completions`
        ], `waited ${waitMs} ms`)
      }
    }))

  it.effect("Timeout(total) fires exactly its limit after sending, the body still coming", () =>
    Effect.gen(function*() {
      const cases = FastCheck.sample(
        FastCheck.record({
          waitMs: FastCheck.integer({ min: 0, max: 120_000 }),
          limit: FastCheck.integer({ min: 2, max: 60 })
        }),
        6
      )
      for (const { limit, waitMs } of [{ waitMs: 90_000, limit: 30 }, ...cases]) {
        const limitMs = limit * 1_000
        // the status line comes a second after sending: the rest of the limit is for the body, which never ends
        const { states } = yield* afterWaiting(
          waitMs,
          (sent) => slowServer("1 second", sent),
          json({ timeout: `${limit} seconds` }),
          [limitMs - 1, limitMs]
        )
        assert.deepStrictEqual(states, [
          "still running",
          `Timeout(total) after ${format(limit)}: no complete response within ${
            format(limit)
          } at POST /v2/chat/completions`
        ], `waited ${waitMs} ms`)
      }
    }))
})

describe("which limit applies", () => {
  const hanging = (sent: Array<number>) => slowServer("1 hour", sent)

  it.effect("a first-byte limit no shorter than the total one is left to it: Timeout(total)", () =>
    Effect.gen(function*() {
      for (const firstByte of [20, 21, 600]) {
        const { states } = yield* afterWaiting(
          0,
          hanging,
          json({ firstByteTimeout: `${firstByte} seconds`, timeout: "20 seconds" }),
          [19_999, 20_000]
        )
        assert.deepStrictEqual(states, [
          "still running",
          "Timeout(total) after 20s: no complete response within 20s at POST /v2/chat/completions"
        ], `first byte ${firstByte} s`)
      }
    }))

  it.effect("the configured limits apply unless the request sets its own", () =>
    Effect.gen(function*() {
      const config = { firstByteTimeout: "7 seconds", timeout: "9 seconds" } as const
      const configured = yield* afterWaiting(0, hanging, json({}), [6_999, 7_000], { config })
      assert.deepStrictEqual(configured.states, [
        "still running",
        "Timeout(firstByte) after 7s: no response within 7s at POST /v2/chat/completions"
      ])
      const total = yield* afterWaiting(0, (sent) => slowServer(0, sent), json({}), [8_999, 9_000], { config })
      assert.strictEqual(
        total.states[1],
        "Timeout(total) after 9s: no complete response within 9s at POST /v2/chat/completions"
      )
      const own = yield* afterWaiting(0, hanging, json({ firstByteTimeout: "3 seconds" }), [2_999, 3_000], { config })
      assert.deepStrictEqual(own.states, [
        "still running",
        "Timeout(firstByte) after 3s: no response within 3s at POST /v2/chat/completions"
      ])
      const ownTotal = yield* afterWaiting(0, (sent) => slowServer(0, sent), json({ timeout: 4_000 }), [3_999, 4_000], {
        config
      })
      assert.deepStrictEqual(ownTotal.states, [
        "still running",
        "Timeout(total) after 4s: no complete response within 4s at POST /v2/chat/completions"
      ])
    }))

  it.effect("the queue root holds a request for capacity: both its limits are the queue's unless the request sets them", () =>
    Effect.gen(function*() {
      const config = { firstByteTimeout: "7 seconds", timeout: "9 seconds", queueTimeout: "30 seconds" } as const
      const onQueue = yield* afterWaiting(0, hanging, json({ base: "queue" }), [29_999, 30_000], { config })
      assert.deepStrictEqual(onQueue.states, [
        "still running",
        "Timeout(total) after 30s: no complete response within 30s at POST /queue/chat/completions"
      ])
      const own = yield* afterWaiting(0, hanging, json({ base: "queue", firstByteTimeout: "5 seconds" }), [
        4_999,
        5_000
      ], {
        config
      })
      assert.strictEqual(
        own.states[1],
        "Timeout(firstByte) after 5s: no response within 5s at POST /queue/chat/completions"
      )
      const ownTotal = yield* afterWaiting(0, hanging, json({ base: "queue", timeout: "6 seconds" }), [5_999, 6_000], {
        config
      })
      assert.strictEqual(
        ownTotal.states[1],
        "Timeout(total) after 6s: no complete response within 6s at POST /queue/chat/completions"
      )
    }))
})

const encoder = new TextEncoder()

/** A server whose event stream the test writes (`push`): the status line `firstByteAfter` after sending. */
const streamingServer = (firstByteAfter: Duration.DurationInput) => {
  const writers: Array<ReadableStreamDefaultController<Uint8Array>> = []
  return {
    server: (sentAt: Array<number>) =>
      HttpClient.make((request) =>
        Effect.gen(function*() {
          sentAt.push(yield* Clock.currentTimeMillis)
          yield* Effect.sleep(firstByteAfter)
          const body = new ReadableStream<Uint8Array>({ start: (writer) => void writers.push(writer) })
          return HttpClientResponse.fromWeb(
            request,
            new Response(body, { headers: { "content-type": "text/event-stream" } })
          )
        })
      ),
    push: (data: string) => Effect.sync(() => writers[0]!.enqueue(encoder.encode(`data: ${data}\n\n`)))
  }
}

describe("the limits of a stream", () => {
  const streamed = (options: RequestOptions) => (http: InferenceHttpClient.Service) =>
    Stream.runDrain(http.jsonStream(chat(), Schema.Unknown, { ...chatOptions, ...options }))

  it.effect("Timeout(idle) ends a stream silent for its idle limit, counted from its last event", () =>
    Effect.gen(function*() {
      for (const [options, idle] of [[{}, 10], [{ idleTimeout: "4 seconds" }, 4]] as const) {
        const { push, server } = streamingServer(0)
        const { states } = yield* afterWaiting(
          0,
          server,
          streamed(options),
          [{ at: 3_000, then: push("{\"a\":1}") }, 3_000 + idle * 1_000 - 1, 3_000 + idle * 1_000],
          { config: { streamIdleTimeout: "10 seconds" } }
        )
        assert.deepStrictEqual(states, [
          "still running",
          "still running",
          `Timeout(idle) after ${idle}s: stream idle for ${idle}s at POST /v2/chat/completions`
        ])
      }
    }))

  it.effect("Timeout(total) ends a stream whose events keep coming exactly its limit after sending", () =>
    Effect.gen(function*() {
      for (const waitMs of [0, 45_000]) {
        // the status line comes 4 s after sending, then an event a second
        const { push, server } = streamingServer("4 seconds")
        const events = [5_000, 6_000, 7_000, 8_000, 9_000].map((at) => ({ at, then: push("{\"a\":1}") }))
        const { states } = yield* afterWaiting(
          waitMs,
          server,
          streamed({ timeout: "10 seconds" }),
          [...events, 9_999, 10_000],
          { config: { streamIdleTimeout: "1 minute" } }
        )
        assert.deepStrictEqual(states.slice(-2), [
          "still running",
          "Timeout(total) after 10s: stream not finished within 10s at POST /v2/chat/completions"
        ], `waited ${waitMs} ms`)
      }
    }))
})

describe("a request routed to the queue (queueRouting)", () => {
  it.effect("goes at once when the limiter would make it wait, holds no permit, and has the queue's limits", () => {
    const sent: Array<{ readonly url: string; readonly at: number }> = []
    const client = HttpClient.make((request) =>
      Effect.gen(function*() {
        sent.push({ url: request.url, at: yield* Clock.currentTimeMillis })
        if (sent.length > 1) yield* Effect.never
        return HttpClientResponse.fromWeb(request, Response.json({}))
      })
    )
    return Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      yield* http.json(chat(), Schema.Unknown, chatOptions)
      // the window is spent: this one would wait a minute; its own limits were meant for /v2
      const fiber = yield* Effect.fork(
        http.json(chat(), Schema.Unknown, { ...chatOptions, timeout: "2 seconds", firstByteTimeout: "1 second" })
      )
      yield* until("the request is sent", Effect.sync(() => sent.length === 2))
      assert.deepStrictEqual(sent[1], { url: "http://aifs.test/queue/chat/completions", at: 0 })
      const limiter = yield* RateLimiterTag
      assert.strictEqual((yield* limiter.snapshot)[0]?.budgets.requests.used, 1, "the queued request holds no permit")
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      yield* TestClock.adjust("29999 millis")
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      assert.strictEqual(describeFailure(yield* Fiber.poll(fiber)), "still running")
      yield* TestClock.adjust("1 millis")
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      assert.strictEqual(
        describeFailure(yield* Fiber.poll(fiber)),
        "Timeout(total) after 30s: no complete response within 30s at POST /queue/chat/completions"
      )
    }).pipe(Effect.provide(stack(client, {
      limiter: { limits: { m: { rpm: 1, tpm: 1_000_000 } }, queueRouting: true },
      config: { queueTimeout: "30 seconds" }
    })))
  })

  it.effect("a request that fits goes to /v2 with its own limits, counted; other routes and bases are never routed", () =>
    Effect.gen(function*() {
      const urls: Array<string> = []
      const client = Testing.httpClient((request) => {
        urls.push(request.url.href)
        return { body: {} }
      })
      yield* Effect.gen(function*() {
        const http = yield* InferenceHttpClient
        yield* http.json(chat(), Schema.Unknown, chatOptions)
        const limiter = yield* RateLimiterTag
        assert.strictEqual((yield* limiter.snapshot)[0]?.budgets.requests.used, 1)
      }).pipe(Effect.provide(stack(client, { limiter: { queueRouting: true } })))
      // the window spent, a route the queue does not mirror, or another base: the request waits its turn
      for (
        const [path, base] of [["/rerank", "v2"], ["/chat/completions", "v1"], ["/chat/completions", "queue"]] as const
      ) {
        const request = HttpClientRequest.post(path).pipe(HttpClientRequest.bodyUnsafeJson(chatBody))
        yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          yield* http.json(request, Schema.Unknown, { base, model: "m" })
          const fiber = yield* Effect.fork(http.json(request, Schema.Unknown, { base, model: "m" }))
          yield* Effect.repeatN(Effect.yieldNow(), 20)
          const limiter = yield* RateLimiterTag
          assert.strictEqual((yield* limiter.snapshot)[0]?.waiting, 1, `${base} ${path} waits`)
          yield* Fiber.interrupt(fiber)
        }).pipe(Effect.provide(stack(client, {
          limiter: { limits: { m: { rpm: 1, tpm: 1_000_000 } }, queueRouting: true }
        })))
      }
      assert.deepStrictEqual(urls, [
        "http://aifs.test/v2/chat/completions",
        "http://aifs.test/v2/rerank",
        "http://aifs.test/v1/chat/completions",
        "http://aifs.test/queue/chat/completions"
      ])
    }))
})
