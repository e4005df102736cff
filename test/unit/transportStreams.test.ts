/**
 * What the transport makes of an event stream and of a text body (src/layers/InferenceHttp.ts): which responses are
 * an event stream, what a 200 that is not one reports, how error events, blank events, terminators padded with
 * spaces and chunks that are not JSON end or pass, which usage settles a stream's reservation, and what the limiter
 * counts a request by (the operation's model and parameters, never its body).
 */
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import type { ApiError } from "../../src/schemas/Errors.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { recorder } from "./helpers.js"
import { answering, chat, chatBody, chatOptions, counted, plain, stack } from "./transportStack.js"

const encoder = new TextEncoder()

/** A 200 carrying `body` (bytes: no content type unless `headers` gives one). */
const ok = (body: string, headers: Record<string, string> = {}) =>
  new Response(encoder.encode(body), { status: 200, headers })

/** The values of a JSON stream over `response`, and how it ended: "done" or the error's tag and message. */
const streamOver = (response: () => Response) =>
  Effect.gen(function*() {
    const http = yield* InferenceHttpClient
    const values: Array<unknown> = []
    const exit = yield* Effect.exit(
      Stream.runForEach(
        http.jsonStream(HttpClientRequest.post("/chat/completions"), Schema.Unknown),
        (value) => Effect.sync(() => values.push(value))
      )
    )
    return { values, end: ending(exit) }
  }).pipe(Effect.provide(plain(answering(response))))

const ending = (exit: Exit.Exit<unknown, ApiError>): string => {
  if (Exit.isSuccess(exit)) return "done"
  const error = Option.getOrUndefined(Cause.failureOption(exit.cause))
  return error === undefined ? `no ApiError: ${Cause.pretty(exit.cause)}` : `${error._tag}: ${error.message}`
}

const eventStream = { "content-type": "text/event-stream" }

describe("text", () => {
  it.effect("gives the body as it came, having asked for text or anything", () =>
    Effect.gen(function*() {
      const rec = yield* recorder(() => ({ body: "line one\nline two\n", headers: { "x-request-id": "r-7" } }))
      const result = yield* Effect.flatMap(
        InferenceHttpClient,
        (http) => http.text(HttpClientRequest.get("/files/f/content"))
      ).pipe(Effect.provide(Testing.layerHttp(rec.handler)))
      assert.strictEqual(result.value, "line one\nline two\n")
      assert.strictEqual(result.response.status, 200)
      assert.strictEqual(result.response.requestId, "r-7")
      const request = yield* Queue.take(rec.calls)
      assert.strictEqual(request.headers["accept"], "text/plain, */*")
      assert.strictEqual(request.url.href, "http://aifs.test/v2/files/f/content")
    }))
})

describe("which answers are an event stream", () => {
  it.effect("one without a content type, or with text/event-stream in any case and with parameters", () =>
    Effect.gen(function*() {
      for (const headers of [{}, { "content-type": "Text/Event-Stream; charset=utf-8" }, eventStream]) {
        const { end, values } = yield* streamOver(() => ok("data: {\"a\":1}\n\ndata: [DONE]\n\n", headers))
        assert.deepStrictEqual({ values, end }, { values: [{ a: 1 }], end: "done" }, JSON.stringify(headers))
      }
    }))

  it.effect("a 200 of another type is a DecodeError naming the type (up to 100 characters) with its request id and body", () =>
    Effect.gen(function*() {
      const type = "text/html; profile=" + "p".repeat(200)
      const http = yield* InferenceHttpClient
      const error = yield* Effect.flip(Stream.runDrain(http.jsonStream(chat(), Schema.Unknown)))
      assert.strictEqual(error._tag, "DecodeError")
      if (error._tag !== "DecodeError") return
      assert.strictEqual(error.message, `expected an event stream, got ${type.slice(0, 100)}`)
      assert.strictEqual(error.requestId, "req-html")
      assert.strictEqual(error.status, 200)
      assert.strictEqual(error.excerpt, "<p>maintenance</p>")
    }).pipe(
      Effect.provide(plain(answering(() =>
        ok("<p>maintenance</p>", {
          "content-type": "text/html; profile=" + "p".repeat(200),
          "x-request-id": "req-html"
        })
      )))
    ))

  it.effect("a 200 of another type without a request id has none; a body that fails as it is read, an empty excerpt", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const error = yield* Effect.flip(Stream.runDrain(http.jsonStream(chat(), Schema.Unknown)))
      assert.strictEqual(error._tag, "DecodeError")
      if (error._tag !== "DecodeError") return
      assert.strictEqual(error.message, "expected an event stream, got text/html")
      assert.notProperty(error, "requestId")
      assert.strictEqual(error.excerpt, "")
    }).pipe(Effect.provide(plain(answering(() => {
      let pulls = 0
      return new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            if (pulls++ === 0) controller.enqueue(encoder.encode("<p>half"))
            else controller.error(new Error("other side closed"))
          }
        }),
        { headers: { "content-type": "text/html" } }
      )
    })))))
})

describe("the events of a JSON stream", () => {
  it.effect("an error event ends the stream with its error, whatever its data: plain text, or JSON without an error", () =>
    Effect.gen(function*() {
      const plainText = yield* streamOver(() =>
        ok("data: {\"a\":1}\n\nevent: error\ndata: upstream overloaded\n\ndata: {\"a\":2}\n\n", eventStream)
      )
      assert.deepStrictEqual(plainText, { values: [{ a: 1 }], end: "ServerError: upstream overloaded" })
      const json = yield* streamOver(() =>
        ok("data: {\"a\":1}\n\nevent: error\ndata: {\"message\":\"model unloaded\"}\n\ndata: [DONE]\n\n", eventStream)
      )
      assert.deepStrictEqual(json.values, [{ a: 1 }])
      assert.match(json.end, /^ServerError: /)
    }))

  it.effect("data that is not JSON ends the stream with a DecodeError saying so", () =>
    Effect.gen(function*() {
      const { end, values } = yield* streamOver(() => ok("data: {\"a\":1}\n\ndata: {oops\n\n", eventStream))
      assert.deepStrictEqual({ values, end }, { values: [{ a: 1 }], end: "DecodeError: response body is not JSON" })
    }))

  it.effect("blank events (keep-alives, spaces) are skipped; a terminator padded with spaces ends the stream", () =>
    Effect.gen(function*() {
      const { end, values } = yield* streamOver(() =>
        ok(
          "data: {\"a\":1}\n\ndata:\n\ndata:    \n\ndata: {\"a\":2}\n\ndata:  [DONE]  \n\ndata: {\"a\":3}\n\n",
          eventStream
        )
      )
      assert.deepStrictEqual({ values, end }, { values: [{ a: 1 }, { a: 2 }], end: "done" })
    }))

  it.effect("a chunk with an error that is null, or with choices beside an error, is a value", () =>
    Effect.gen(function*() {
      const chunks = [{ error: null, a: 1 }, { error: { message: "partial" }, choices: [] }]
      const { end, values } = yield* streamOver(() =>
        ok(chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("") + "data: [DONE]\n\n", eventStream)
      )
      assert.deepStrictEqual({ values, end }, { values: chunks, end: "done" })
    }))

  it.effect("chunks that are not objects (numbers, strings, null) pass as values, under a limiter too", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const values = yield* Stream.runCollect(http.jsonStream(chat(), Schema.Unknown, chatOptions))
      assert.deepStrictEqual(Chunk.toReadonlyArray(values), [7, "x", null, { usage: 3 }, { usage: null }])
      const after = yield* counted
      assert.deepInclude(after, { requests: 1, tokens: after.reserved })
    }).pipe(Effect.provide(stack(
      Testing.httpClient(() => ({ sse: [7, "\"x\"", "null", { usage: 3 }, { usage: null }] })),
      { limiter: { reconcile: "actual" } }
    ))))
})

describe("the time limits of a stream", () => {
  it.effect("a consumer that takes longer than the total limit gets no more bytes: its next pull is Timeout(total)", () => {
    // a server that never stops: one event per read, as many as asked for
    let sent = 0
    const endless = () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull: (controller) => controller.enqueue(encoder.encode(`data: {"n":${sent++}}\n\n`))
        }),
        { status: 200, headers: eventStream }
      )
    return Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const values: Array<unknown> = []
      const exit = yield* Effect.exit(
        Stream.runForEach(
          http.jsonStream(HttpClientRequest.post("/chat/completions"), Schema.Unknown, { timeout: "10 seconds" }),
          // the first value takes the consumer 11 s: the bytes already read ahead are not given to it
          (value) => Effect.zipRight(Effect.sync(() => values.push(value)), TestClock.adjust("11 seconds"))
        )
      )
      assert.deepStrictEqual(values, [{ n: 0 }])
      assert.isAbove(sent, 1, "the server had sent more")
      assert.strictEqual(ending(exit), "Timeout: stream not finished within 10s")
    }).pipe(Effect.provide(plain(answering(endless))))
  })
})

describe("the usage that settles a stream's reservation", () => {
  /** What the limiter counts of each token budget for model `m` now. */
  const tokenBudgets = Effect.map(
    Effect.flatMap(RateLimiter.RateLimiter, (limiter) => limiter.snapshot),
    (states) => {
      const budgets = states.find((s) => s.model === "m")?.budgets
      return { input: budgets?.input.used, output: budgets?.output.used, tokens: budgets?.tokens.used }
    }
  )

  it.effect("the last chunk that reports a usage, whatever chunks follow it: its input and output, and their sum", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      yield* Stream.runDrain(http.jsonStream(chat(), Schema.Unknown, chatOptions))
      assert.deepStrictEqual(yield* tokenBudgets, { input: 3, output: 6, tokens: 9 })
    }).pipe(Effect.provide(stack(
      Testing.httpClient(() => ({
        sse: [
          { id: "a", usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 } },
          { id: "b", usage: { prompt_tokens: 3, completion_tokens: 6, total_tokens: 9 } },
          { id: "c" },
          { id: "d", usage: null }
        ]
      })),
      { limiter: { reconcile: "actual" } }
    ))))

  it.effect("a usage in the Responses API's words (input_tokens, output_tokens) settles it the same way", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      yield* Stream.runDrain(http.jsonStream(chat(), Schema.Unknown, chatOptions))
      assert.deepStrictEqual(yield* tokenBudgets, { input: 4, output: 7, tokens: 11 })
    }).pipe(Effect.provide(stack(
      Testing.httpClient(() => ({
        sse: [{ id: "a", usage: { input_tokens: 4, output_tokens: 7, total_tokens: 11 } }]
      })),
      { limiter: { reconcile: "actual" } }
    ))))
})

describe("what the limiter counts a request by", () => {
  it.effect("a JSON answer that is not an object (a number, a string, null) leaves the reservation as it was", () =>
    Effect.gen(function*() {
      for (const body of [7, "done", null, [1, 2]]) {
        const after = yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          const result = yield* http.json(chat(), Schema.Unknown, chatOptions)
          return { value: result.value, ...(yield* counted) }
        }).pipe(Effect.provide(stack(
          Testing.httpClient(() => ({ body: JSON.stringify(body), headers: { "content-type": "application/json" } })),
          { limiter: { reconcile: "actual" } }
        )))
        assert.deepStrictEqual(after.value, body)
        assert.deepInclude(after, { requests: 1, tokens: after.reserved }, JSON.stringify(body))
      }
    }))

  it.effect("without the operation's model a request holds no permit, whatever its body says (the body is never parsed)", () =>
    Effect.gen(function*() {
      const form = new FormData()
      form.append("model", "m")
      const requests = [
        chat(),
        HttpClientRequest.post("/audio/transcriptions").pipe(HttpClientRequest.bodyFormData(form)),
        HttpClientRequest.post("/chat/completions").pipe(
          HttpClientRequest.setBody(HttpBody.text(JSON.stringify(chatBody), "text/plain"))
        ),
        HttpClientRequest.post("/chat/completions").pipe(
          HttpClientRequest.setBody(HttpBody.uint8Array(encoder.encode(JSON.stringify(chatBody))))
        )
      ]
      for (const request of requests) {
        const snapshot = yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          yield* http.json(request, Schema.Unknown)
          const limiter = yield* RateLimiter.RateLimiter
          return yield* limiter.snapshot
        }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: {} })))))
        assert.deepStrictEqual(snapshot, [], request.body._tag)
      }
    }))

  it.effect("the cost is the operation's parameters' (its input estimate and output cap), not the body's", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const limiter = yield* RateLimiter.RateLimiter
      // the body asks for 100 output tokens; the parameters the operation was made of, for 5
      const params = { ...chatBody, max_tokens: 5 }
      yield* http.json(chat(), Schema.Unknown, { model: "m", span: { name: "Chat.create", operation: "chat", params } })
      const cost = limiter.cost("/chat/completions", params)
      assert.strictEqual(cost.output, 5)
      assert.isAbove(cost.input, 0)
      const budgets = (yield* limiter.snapshot).find((s) => s.model === "m")?.budgets
      assert.deepStrictEqual(
        [budgets?.requests.used, budgets?.input.used, budgets?.output.used, budgets?.tokens.used],
        [1, cost.input, 5, cost.input + 5]
      )
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: {} }))))))

  it.effect("an upload that names its model in the options counts as one request and no tokens", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const form = new FormData()
      form.append("model", "m")
      const upload = HttpClientRequest.post("/audio/transcriptions").pipe(HttpClientRequest.bodyFormData(form))
      yield* http.json(upload, Schema.Unknown, { model: "m" })
      const budgets = (yield* (yield* RateLimiter.RateLimiter).snapshot).find((s) => s.model === "m")?.budgets
      assert.deepStrictEqual(
        [budgets?.requests.used, budgets?.input.used, budgets?.output.used, budgets?.tokens.used],
        [1, 0, 0, 0]
      )
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: {} }))))))
})

describe("queue routing is off unless asked for", () => {
  it.effect("without it, a queueable request that would wait waits its turn for /v2", () =>
    Effect.gen(function*() {
      const urls: Array<string> = []
      yield* Effect.gen(function*() {
        const http = yield* InferenceHttpClient
        yield* http.json(chat(), Schema.Unknown, chatOptions)
        const fiber = yield* Effect.fork(http.json(chat(), Schema.Unknown, chatOptions))
        yield* Effect.repeatN(Effect.yieldNow(), 20)
        assert.strictEqual((yield* counted).waiting, 1)
        yield* Fiber.interrupt(fiber)
      }).pipe(Effect.provide(stack(
        Testing.httpClient((request) => {
          urls.push(request.url.href)
          return { body: {} }
        }),
        { limiter: { limits: { m: { rpm: 1, tpm: 1_000_000 } }, queueRouting: false } }
      )))
      assert.deepStrictEqual(urls, ["http://aifs.test/v2/chat/completions"])
    }))
})
