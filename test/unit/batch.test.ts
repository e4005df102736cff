/**
 * The batch runner on the scripted transport: every kind of bad input line is reported with its line number and
 * reason, never sent; every request gives exactly one result line, a failure as an error line, never a failed
 * stream; results go out as their answers come, as many in flight as asked. A run's flights tell the requests on the
 * wire from those waiting for the quota, and stop the run: those waiting cut at once, those on the wire when cut.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Testing from "../../src/layers/Testing.js"
import { RateLimited } from "../../src/schemas/Errors.js"
import * as Batch from "../../src/services/Batch.js"
import * as Chat from "../../src/services/Chat.js"
import * as Completions from "../../src/services/Completions.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import { chatCompletionBody } from "./helpers.js"

const completionBody = {
  id: "cmpl-1",
  object: "text_completion",
  created: 1710000000,
  model: "m",
  choices: [{ index: 0, text: "an answer", finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }
}

const embeddingBody = {
  object: "list",
  model: "e",
  data: [{ object: "embedding", index: 0, embedding: [0.5, -0.25] }],
  usage: { prompt_tokens: 1, total_tokens: 1 }
}

const chatLine = (customId: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    custom_id: customId,
    method: "POST",
    url: "/v1/chat/completions",
    body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: customId }], ...extra }
  })

const bad = (text: string) => {
  const parsed = Batch.parseLine(text, 7)
  if (Either.isRight(parsed)) throw new Error(`expected a bad line: ${text}`)
  assert.strictEqual(parsed.left.line, 7)
  return parsed.left
}

describe("Batch.parseLine", () => {
  it("a chat line: its custom_id, the endpoint from the url (any /vN prefix or none), the body with extra fields kept", () => {
    for (const url of ["/v1/chat/completions", "/v2/chat/completions", "/v10/chat/completions", "/chat/completions"]) {
      const parsed = Batch.parseLine(
        JSON.stringify({
          custom_id: "a",
          method: "post",
          url,
          body: { model: "m", messages: [{ role: "user", content: "hi" }], top_k: 5 }
        }),
        1
      )
      assert.isTrue(Either.isRight(parsed), url)
      if (Either.isLeft(parsed)) continue
      assert.strictEqual(parsed.right.custom_id, "a")
      assert.strictEqual(parsed.right.endpoint, "chat")
      assert.strictEqual((parsed.right.body as unknown as { top_k: number }).top_k, 5)
    }
  })

  it("completions and embeddings lines, with or without a method", () => {
    const completion = Batch.parseLine(
      JSON.stringify({ custom_id: "c", url: "/v1/completions", body: { model: "m", prompt: "p" } }),
      1
    )
    assert.strictEqual(Either.getOrThrow(completion).endpoint, "completions")
    const embedding = Batch.parseLine(
      JSON.stringify({ custom_id: "e", method: "POST", url: "/v1/embeddings", body: { model: "m", input: ["x"] } }),
      1
    )
    assert.strictEqual(Either.getOrThrow(embedding).endpoint, "embeddings")
  })

  it("not JSON: reported as such, no custom_id", () => {
    assert.deepStrictEqual(bad("{not json"), { line: 7, custom_id: undefined, reason: "not JSON" })
  })

  it("no custom_id, an empty one or one that is not a string: missing custom_id", () => {
    for (const text of ["{}", "[]", "null", "\"text\"", JSON.stringify({ custom_id: 5, url: "/v1/embeddings" })]) {
      const line = bad(text)
      assert.strictEqual(line.reason, "missing custom_id", text)
      assert.isUndefined(line.custom_id)
    }
    const empty = bad(JSON.stringify({ custom_id: "", url: "/v1/embeddings", body: {} }))
    assert.strictEqual(empty.custom_id, "")
    assert.include(empty.reason, "custom_id")
  })

  it("a line with a custom_id but no url names the field and keeps the id", () => {
    const line = bad(JSON.stringify({ custom_id: "x", body: {} }))
    assert.strictEqual(line.custom_id, "x")
    assert.include(line.reason, "url")
  })

  it("a method other than POST is refused, whatever its case", () => {
    for (const method of ["GET", "delete", "Put"]) {
      const line = bad(chatLine("m").replace("\"POST\"", JSON.stringify(method)))
      assert.strictEqual(line.custom_id, "m")
      assert.strictEqual(line.reason, `method must be POST, got ${method}`)
    }
  })

  it("an unknown url says which ones are known", () => {
    const urls = [
      "/v1/images/generations",
      "/v1/chat/completions/x",
      "v1/embeddings",
      "/v1x/embeddings",
      // a version only in front
      "/chat/v1/completions",
      "/v1/v1/embeddings"
    ]
    for (const url of urls) {
      const line = bad(JSON.stringify({ custom_id: "u", url, body: {} }))
      assert.strictEqual(
        line.reason,
        `unknown url ${url} (expected /v1/chat/completions, /v1/completions or /v1/embeddings)`,
        url
      )
    }
  })

  it("an invalid body names the path of each problem", () => {
    const line = bad(JSON.stringify({ custom_id: "b", url: "/v1/chat/completions", body: { model: 3 } }))
    assert.strictEqual(line.custom_id, "b")
    assert.match(line.reason, /^invalid body: /)
    assert.include(line.reason, "model")
    assert.include(line.reason, "messages")
    assert.include(line.reason, "; ")
    // a nested problem by its whole path
    const nested = bad(
      JSON.stringify({
        custom_id: "n",
        url: "/v1/chat/completions",
        body: { model: "m", messages: [{ role: "user" }] }
      })
    )
    assert.strictEqual(nested.reason, "invalid body: messages.0.content: is missing")
    const whole = bad(JSON.stringify({ custom_id: "w", url: "/v1/embeddings", body: "text" }))
    assert.match(whole.reason, /^invalid body: body: /)
  })
})

const requests = (...ids: ReadonlyArray<string>) =>
  Stream.fromIterable(ids.map((id) => Either.getOrThrow(Batch.parseLine(chatLine(id), 1))))

describe("Batch.run", () => {
  it.effect("one result line per request: the answer with status and request id, or the error with its tag", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Stream.runCollect(Batch.run(requests("ok", "missing", "broken", "slow"))))
      yield* TestClock.adjust("2 seconds")
      const lines = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      assert.strictEqual(lines.length, 4)
      const byId = Object.fromEntries(lines.map((line) => [line.custom_id, line]))
      const ok = byId.ok!
      assert.strictEqual(ok.id, "batch_req_ok")
      assert.strictEqual(ok.response?.status_code, 200)
      assert.strictEqual(ok.response?.request_id, "req-ok")
      assert.strictEqual((ok.response?.body as { id: string }).id, chatCompletionBody.id)
      assert.isNull(ok.error)
      const missing = byId.missing!
      assert.strictEqual(missing.id, "batch_req_missing")
      assert.isNull(missing.response)
      assert.deepStrictEqual(missing.error, { code: "NotFound", message: "no such model", status: 404 })
      assert.strictEqual(byId.broken!.error?.code, "DecodeError")
      assert.strictEqual(byId.broken!.error?.status, 200)
      // a failure without an HTTP answer has status null
      assert.strictEqual(byId.slow!.error?.code, "Timeout")
      assert.isNull(byId.slow!.error?.status)
    }).pipe(Effect.provide(Testing.layerHttp((request) => {
      const content = (request.body as { messages: Array<{ content: string }> }).messages[0]!.content
      if (content === "missing") return { status: 404, body: { detail: "no such model" } }
      if (content === "broken") return { body: "not a completion" }
      if (content === "slow") return Effect.as(Effect.sleep("1 minute"), { body: chatCompletionBody })
      return { body: chatCompletionBody, headers: { "x-request-id": "req-ok" } }
    }, { retry: { maxRetries: 0 }, config: { timeout: "1 second" } }))))

  it.effect("completions and embeddings lines go to their endpoints and their answers are the result bodies", () =>
    Effect.gen(function*() {
      const lines = [
        JSON.stringify({ custom_id: "c", url: "/v1/completions", body: { model: "m", prompt: "p", top_k: 3 } }),
        JSON.stringify({ custom_id: "e", url: "/v1/embeddings", body: { model: "e", input: "x" } })
      ]
      const results = Chunk.toReadonlyArray(
        yield* Stream.runCollect(
          Batch.run(Stream.fromIterable(lines.map((line) => Either.getOrThrow(Batch.parseLine(line, 1)))))
        )
      )
      const byId = Object.fromEntries(results.map((line) => [line.custom_id, line]))
      assert.deepStrictEqual(byId.c!.response, {
        status_code: 200,
        request_id: "req-/v2/completions",
        body: completionBody
      })
      assert.deepStrictEqual(byId.e!.response, {
        status_code: 200,
        request_id: "req-/v2/embeddings",
        body: embeddingBody
      })
      assert.isNull(byId.c!.error)
      assert.isNull(byId.e!.error)
    }).pipe(Effect.provide(Testing.layerHttp((request) => {
      const body = request.path === "/v2/completions"
        ? (request.body as { top_k?: number }).top_k === 3 ? completionBody : { error: "top_k lost" }
        : request.path === "/v2/embeddings"
        ? embeddingBody
        : { error: `unexpected ${request.path}` }
      return { body, headers: { "x-request-id": `req-${request.path}` } }
    }))))

  it.effect("an error without an HTTP answer has status null in its line, even when it names its status as absent", () =>
    Effect.gen(function*() {
      const [line] = Chunk.toReadonlyArray(yield* Stream.runCollect(Batch.run(requests("a"))))
      assert.deepStrictEqual(line!.error, { code: "RateLimited", message: "wait too long", status: null })
      assert.strictEqual(
        JSON.stringify(line!.error),
        "{\"code\":\"RateLimited\",\"message\":\"wait too long\",\"status\":null}"
      )
    }).pipe(Effect.provide(Layer.mergeAll(
      Testing.mock(Chat.Chat, {
        createWithResponse: () => Effect.fail(new RateLimited({ message: "wait too long", status: undefined }))
      }),
      Testing.mock(Completions.Completions, {}),
      Testing.mock(Embeddings.Embeddings, {})
    ))))

  it.effect("the requests run concurrently up to the limit, and results come in the order answers come", () =>
    Effect.gen(function*() {
      const ids = Array.from({ length: 6 }, (_, i) => `r${i}`)
      const fiber = yield* Stream.runCollect(Batch.run(requests(...ids), { concurrency: 3 })).pipe(Effect.fork)
      // each answer takes (6 - i) seconds: with 3 at once, r0..r2 start together and r2 answers first
      yield* TestClock.adjust("4 seconds")
      yield* TestClock.adjust("4 seconds")
      yield* TestClock.adjust("10 seconds")
      const lines = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      assert.deepStrictEqual(lines.map((l) => l.custom_id), ["r2", "r1", "r0", "r5", "r4", "r3"])
    }).pipe(Effect.provide(Testing.layerHttp((request) => {
      const content = (request.body as { messages: Array<{ content: string }> }).messages[0]!.content
      const index = Number(content.slice(1))
      return Effect.as(Effect.sleep(`${6 - index} seconds`), { body: chatCompletionBody })
    }))))

  it.effect("by default 64 requests are in flight at once", () => {
    let inFlight = 0
    let most = 0
    return Effect.gen(function*() {
      const ids = Array.from({ length: 100 }, (_, i) => `r${i}`)
      const fiber = yield* Stream.runCollect(Batch.run(requests(...ids))).pipe(Effect.fork)
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* Fiber.join(fiber)).length, 100)
      assert.strictEqual(most, 64)
    }).pipe(Effect.provide(Testing.layerHttp(() =>
      Effect.gen(function*() {
        most = Math.max(most, ++inFlight)
        yield* Effect.sleep("1 second")
        inFlight--
        return { body: chatCompletionBody }
      })
    )))
  })
})

/** A request that leaves the limiter's line when `sent` is done (its operation's span opens), then never ends. */
const request = (sent: Deferred.Deferred<void>) =>
  Effect.zipRight(Deferred.await(sent), Effect.withSpan(Effect.never, "Chat.create"))

describe("the flights of a run", () => {
  it.effect("a request is waiting until its span opens, then on the wire; the stop cuts the waiting, the cut the rest", () =>
    Effect.gen(function*() {
      const flights = yield* Batch.makeFlights
      const gates = yield* Effect.all([Deferred.make<void>(), Deferred.make<void>(), Deferred.make<void>()])
      const fibers = yield* Effect.forEach(gates, (gate) => Effect.fork(flights.fly(request(gate))))
      yield* Effect.yieldNow()
      assert.deepStrictEqual(yield* flights.count, { sent: 0, waiting: 3 })
      yield* Deferred.succeed(gates[0], undefined)
      yield* Effect.yieldNow()
      assert.deepStrictEqual(yield* flights.count, { sent: 1, waiting: 2 })
      // the stop says what it found, and cuts the two still waiting: they give nothing
      assert.deepStrictEqual(yield* flights.stop, { sent: 1, waiting: 2 })
      assert.isTrue(Option.isNone(yield* Fiber.join(fibers[1]!)))
      assert.isTrue(Option.isNone(yield* Fiber.join(fibers[2]!)))
      assert.deepStrictEqual(yield* flights.count, { sent: 1, waiting: 0 })
      assert.isTrue(Option.isNone(yield* Fiber.poll(fibers[0]!)), "the one on the wire goes on")
      // nothing starts after the stop
      assert.isTrue(Option.isNone(yield* flights.fly(Effect.succeed(1))))
      assert.strictEqual(yield* flights.cut, 1)
      assert.isTrue(Option.isNone(yield* Fiber.join(fibers[0]!)))
      assert.deepStrictEqual(yield* flights.count, { sent: 0, waiting: 0 })
    }))

  it.effect("a flight gives its request's result, and counts the time it took", () =>
    Effect.gen(function*() {
      const flights = yield* Batch.makeFlights
      const fiber = yield* Effect.fork(flights.fly(Effect.as(Effect.sleep("3 seconds"), "answer")))
      yield* TestClock.adjust("3 seconds")
      assert.deepStrictEqual(yield* Fiber.join(fiber), Option.some("answer"))
      assert.strictEqual(yield* flights.tookMs, 3_000)
    }))

  it.effect("with tracing disabled, no span tells when a request leaves the line: every request counts as sent", () =>
    Effect.gen(function*() {
      const flights = yield* Batch.makeFlights
      yield* Effect.fork(flights.fly(Effect.never).pipe(Effect.withTracerEnabled(false)))
      yield* Effect.yieldNow()
      assert.deepStrictEqual(yield* flights.stop, { sent: 1, waiting: 0 })
    }))

  it.effect("run with flights: after a stop no request starts, those sent give their lines, and the stream ends", () =>
    Effect.gen(function*() {
      const flights = yield* Batch.makeFlights
      const fiber = yield* Stream.runCollect(Batch.run(requests("r0", "r1", "r2", "r3"), { concurrency: 2, flights }))
        .pipe(Effect.fork)
      for (let i = 0; i < 100 && (yield* flights.count).sent < 2; i++) yield* Effect.yieldNow()
      // no limiter here: a request leaves at once, its span open
      assert.deepStrictEqual(yield* flights.stop, { sent: 2, waiting: 0 })
      yield* TestClock.adjust("1 second")
      const lines = Chunk.toReadonlyArray(yield* Fiber.join(fiber))
      assert.deepStrictEqual(lines.map((l) => l.custom_id).sort(), ["r0", "r1"])
    }).pipe(Effect.provide(Testing.layerHttp(() => Effect.as(Effect.sleep("1 second"), { body: chatCompletionBody })))))
})
