/**
 * JobQueue on a scripted transport: every route on the queue root, results and accepted-with-handle answers
 * both decoded, and the long time-to-first-byte limit (TestClock).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as Testing from "../../src/layers/Testing.js"
import { ChatCompletion } from "../../src/schemas/Chat.js"
import { resultOrHandle } from "../../src/schemas/JobQueue.js"
import { fromBytes } from "../../src/schemas/Upload.js"
import * as Chat from "../../src/services/Chat.js"
import * as JobQueue from "../../src/services/JobQueue.js"
import { chatCompletionBody, defaultChatParams } from "./helpers.js"
import { capturing, urlOf } from "./surfaceHelpers.js"

const JobQueueFile = fromBytes("abc", "a.wav")

describe("JobQueue schemas", () => {
  it("a result decodes as a result; an id-and-status body as a handle; anything else fails", () => {
    const schema = resultOrHandle(ChatCompletion)
    assert.strictEqual(Schema.decodeUnknownSync(schema)(chatCompletionBody).kind, "result")
    const handle = Schema.decodeUnknownSync(schema)({ job_id: "job-1", status: "queued" })
    assert.strictEqual(handle.kind, "handle")
    if (handle.kind === "handle") assert.strictEqual(handle.value.handle, "job-1")
    assert.isTrue(Schema.decodeUnknownEither(schema)({ id: "x" })._tag === "Left")
  })
})

describe("JobQueue service", () => {
  it.effect("every route goes to the queue root with the /v2 bodies", () => {
    const { layer, requests } = capturing((request) => {
      if (request.path.endsWith("/models")) return { body: { object: "list", data: [{ id: "m" }] } }
      if (request.path.includes("/audio/")) return { body: { text: "hi" } }
      if (request.path.includes("/images/")) return { body: { created: 1, data: [{ b64_json: "AAAA" }] } }
      if (request.path.endsWith("/embeddings")) return { body: { data: [{ index: 0, embedding: [1, 0] }] } }
      if (request.path.endsWith("/completions") && !request.path.includes("chat")) {
        return { body: { id: "c", choices: [{ index: 0, text: "x", finish_reason: "stop" }] } }
      }
      return { body: chatCompletionBody }
    })
    return Effect.gen(function*() {
      const queue = yield* JobQueue.JobQueue
      const results = [
        yield* queue.chat(defaultChatParams),
        yield* queue.completions({ model: "m", prompt: "p" }),
        yield* queue.embeddings({ model: "m", input: "x" }),
        yield* queue.transcribe({ model: "whisper-large-v3", file: JobQueueFile }),
        yield* queue.translate({ model: "whisper-large-v3", file: JobQueueFile }),
        yield* queue.generateImages({ model: "gpt-image-1", prompt: "p" }),
        yield* queue.editImages({ model: "gpt-image-1", prompt: "p", image: JobQueueFile })
      ]
      assert.deepStrictEqual(results.map((r) => r._tag), Array(7).fill("Completed"))
      yield* queue.models()
      assert.deepStrictEqual(requests.map((r) => `${r.method} ${urlOf(r).pathname}`), [
        "POST /queue/chat/completions",
        "POST /queue/completions",
        "POST /queue/embeddings",
        "POST /queue/audio/transcriptions",
        "POST /queue/audio/translations",
        "POST /queue/images/generations",
        "POST /queue/images/edits",
        "GET /queue/models"
      ])
    }).pipe(Effect.provide(layer))
  })

  it.effect("an accepted-with-handle answer (1.0.0 asynchronous queue) becomes Accepted with its status", () =>
    Effect.gen(function*() {
      const queue = yield* JobQueue.JobQueue
      const result = yield* queue.chat(defaultChatParams)
      assert.strictEqual(result._tag, "Accepted")
      if (result._tag === "Accepted") {
        assert.strictEqual(result.status, 202)
        assert.strictEqual(result.handle.handle, "queue-job-7")
        assert.strictEqual(result.handle.status, "accepted")
      }
    }).pipe(
      Effect.provide(
        Testing.layerHttp(() => ({ status: 202, body: { id: "queue-job-7", status: "accepted", object: "queue.job" } }))
      )
    ))

  it.effect("the queue waits out a 15-minute first byte where /v2 times out (10 minutes)", () =>
    Effect.gen(function*() {
      const queue = yield* JobQueue.JobQueue
      const chat = yield* Chat.Chat
      const queued = yield* Effect.fork(queue.chat(defaultChatParams))
      const standard = yield* Effect.fork(Effect.flip(chat.create(defaultChatParams)))
      yield* TestClock.adjust("16 minutes")
      const result = yield* Fiber.join(queued)
      assert.strictEqual(result._tag, "Completed")
      assert.strictEqual((yield* Fiber.join(standard))._tag, "Timeout")
    }).pipe(Effect.provide(Testing.layerHttp(
      () => Effect.as(Effect.sleep("15 minutes"), { body: chatCompletionBody }),
      { retry: { maxRetries: 0 } }
    ))))

  it.effect("without a time limit of its own the queue holds to the configuration's queueTimeout, both ways", () =>
    Effect.gen(function*() {
      const queue = yield* JobQueue.JobQueue
      const answered = yield* Effect.fork(queue.chat(defaultChatParams))
      yield* TestClock.adjust("36 minutes")
      assert.strictEqual((yield* Fiber.join(answered))._tag, "Completed", "35 minutes fit in an hour's limit")
      const held = yield* Effect.fork(Effect.flip(queue.chat({ ...defaultChatParams, model: "held" })))
      yield* TestClock.adjust("1 hour")
      const error = yield* Fiber.join(held)
      assert.strictEqual(error._tag, "Timeout")
      if (error._tag === "Timeout") assert.strictEqual(Duration.toMinutes(error.after), 60)
    }).pipe(Effect.provide(Testing.layerHttp(
      (request) =>
        Effect.as(
          Effect.sleep((request.body as { model: string }).model === "held" ? "2 hours" : "35 minutes"),
          { body: chatCompletionBody }
        ),
      { retry: { maxRetries: 0 }, config: { queueTimeout: "1 hour" } }
    ))))
})
