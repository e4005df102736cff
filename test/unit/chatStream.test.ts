import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { maxEventSize } from "../../src/internal/sse.js"
import * as Testing from "../../src/layers/Testing.js"
import { ChatCompletion, ChatCompletionChunk, type ChatMessage, isFunctionCall } from "../../src/schemas/Chat.js"
import { Completion } from "../../src/schemas/Completions.js"
import type { ApiError } from "../../src/schemas/Errors.js"
import * as Chat from "../../src/services/Chat.js"
import * as Completions from "../../src/services/Completions.js"
import { defaultChatParams, layerWithClient, sequence } from "./helpers.js"

const base = { id: "chatcmpl-s1", object: "chat.completion.chunk", created: 1710000000, model: "gpt-4.1" }
const delta = (d: Record<string, unknown>, finish_reason: string | null = null, index = 0) => ({
  ...base,
  choices: [{ index, delta: d, finish_reason }]
})
const usageChunk = { ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: 9, total_tokens: 19 } }

const chatStream = Stream.unwrap(Effect.map(Chat.Chat, (chat) => chat.createStream(defaultChatParams)))

/** Runs the chat stream on the scripted answer: each element or the final failure, in order. */
const runStream = (response: Testing.ScriptedResponse) =>
  Effect.gen(function*() {
    const rec = yield* sequence(response)
    const items = yield* chatStream.pipe(
      Stream.either,
      Stream.runCollect,
      Effect.provide(Testing.layerHttp(rec.handler, { retry: { maxRetries: 0 } }))
    )
    return { items: Chunk.toReadonlyArray(items), request: yield* Queue.take(rec.calls), count: yield* rec.count }
  })

const collectChat = (response: Testing.ScriptedResponse) =>
  Effect.gen(function*() {
    const rec = yield* sequence(response)
    return yield* Chat.collect(chatStream).pipe(Effect.provide(Testing.layerHttp(rec.handler)))
  })

const rights = (items: ReadonlyArray<Either.Either<ChatCompletionChunk, ApiError>>) =>
  items.filter(Either.isRight).map((e) => e.right)

const lastError = (items: ReadonlyArray<Either.Either<ChatCompletionChunk, ApiError>>): ApiError | undefined => {
  const last = items[items.length - 1]
  return last !== undefined && Either.isLeft(last) ? last.left : undefined
}

describe("Chat.createStream", () => {
  it.effect("yields the chunks until [DONE] and asks for a stream with usage", () =>
    Effect.gen(function*() {
      const { items, request } = yield* runStream({
        sse: [
          delta({ role: "assistant", content: "" }),
          delta({ content: "Hello" }),
          delta({ content: " world" }),
          delta({}, "stop"),
          usageChunk
        ]
      })
      assert.isTrue(items.every(Either.isRight))
      const chunks = rights(items)
      assert.strictEqual(chunks.length, 5)
      assert.instanceOf(chunks[0], ChatCompletionChunk)
      assert.strictEqual(chunks.map((c) => c.text).join(""), "Hello world")
      assert.strictEqual(chunks[3]?.choices[0]?.finish_reason, "stop")
      assert.deepStrictEqual(chunks[4]?.choices, [])
      assert.strictEqual(chunks[4]?.usage?.total_tokens, 19)
      assert.strictEqual(request.path, "/v2/chat/completions")
      assert.strictEqual(request.headers["accept"], "text/event-stream")
      const body = request.body as Record<string, unknown>
      assert.strictEqual(body.stream, true)
      assert.deepStrictEqual(body.stream_options, { include_usage: true })
      assert.strictEqual(body.model, defaultChatParams.model)
    }))

  it.effect("skips keep-alive empty-choices chunks without failing", () =>
    Effect.gen(function*() {
      const { items } = yield* runStream({
        sse: [{ ...base, choices: [] }, delta({ content: "Hi" }), { ...base, choices: [] }, usageChunk]
      })
      assert.isTrue(items.every(Either.isRight))
      assert.strictEqual(rights(items).length, 4)
    }))

  it.effect("ignores events after [DONE]", () =>
    Effect.gen(function*() {
      const { items } = yield* runStream({ sse: [delta({ content: "a" }), "[DONE]", delta({ content: "b" })] })
      assert.strictEqual(rights(items).map((c) => c.text).join(""), "a")
      assert.isTrue(items.every(Either.isRight))
    }))

  it.effect("ends at [DONE] even when an event too large to read follows it in the same network chunk", () =>
    Effect.gen(function*() {
      const { items } = yield* runStream({
        sse: [delta({ content: "a" }), "[DONE]", "x".repeat(maxEventSize + 10)],
        done: false
      })
      assert.strictEqual(rights(items).map((c) => c.text).join(""), "a")
      assert.isTrue(items.every(Either.isRight))
      // the same event before [DONE] breaks the stream
      const broken = yield* runStream({ sse: [delta({ content: "a" }), "x".repeat(maxEventSize + 10)] })
      assert.strictEqual(lastError(broken.items)?._tag, "DecodeError")
    }))

  it.effect("an error event mid-stream yields the chunks before it, then fails with RateLimited for code 429", () =>
    Effect.gen(function*() {
      const { count, items } = yield* runStream({
        headers: { "x-request-id": "req-stream" },
        sse: [
          delta({ role: "assistant", content: "Hel" }),
          delta({ content: "lo" }),
          { error: { message: "Rate limit reached. Please retry after 22 seconds.", type: "requests", code: "429" } },
          delta({ content: "never" })
        ]
      })
      assert.strictEqual(items.length, 3)
      assert.strictEqual(rights(items).map((c) => c.text).join(""), "Hello")
      const error = lastError(items)
      assert.strictEqual(error?._tag, "RateLimited")
      if (error?._tag !== "RateLimited") return
      assert.strictEqual(Duration.toMillis(error.retryAfter!), 22_000)
      assert.strictEqual(error.requestId, "req-stream")
      assert.strictEqual(error.endpoint, "POST /v2/chat/completions")
      // a failure after events flowed is never re-sent
      assert.strictEqual(count, 1)
    }))

  it.effect("an error event of another kind fails with ServerError", () =>
    Effect.gen(function*() {
      const { items } = yield* runStream({
        sse: [delta({ content: "x" }), { error: { message: "upstream overloaded", type: "server_error", code: null } }]
      })
      assert.strictEqual(items.length, 2)
      const error = lastError(items)
      assert.strictEqual(error?._tag, "ServerError")
      assert.strictEqual(error?.message, "upstream overloaded")
    }))

  it.effect("a stream that ends without [DONE] fails with TransportError after its chunks", () =>
    Effect.gen(function*() {
      const { items } = yield* runStream({ sse: [delta({ content: "a" }), delta({ content: "b" })], done: false })
      assert.strictEqual(items.length, 3)
      assert.strictEqual(rights(items).map((c) => c.text).join(""), "ab")
      const error = lastError(items)
      assert.strictEqual(error?._tag, "TransportError")
      assert.include(error?.message ?? "", "[DONE]")
    }))

  it.effect("an empty stream without [DONE] fails with TransportError", () =>
    Effect.gen(function*() {
      const { items } = yield* runStream({ sse: [], done: false })
      assert.strictEqual(items.length, 1)
      assert.strictEqual(lastError(items)?._tag, "TransportError")
    }))

  it.effect("non-JSON data is a DecodeError after the chunks before it", () =>
    Effect.gen(function*() {
      const { items } = yield* runStream({ sse: [delta({ content: "a" }), "this is not json"] })
      assert.strictEqual(items.length, 2)
      const error = lastError(items)
      assert.strictEqual(error?._tag, "DecodeError")
      if (error?._tag !== "DecodeError") return
      assert.include(error.excerpt, "this is not json")
    }))

  it.effect("JSON of the wrong shape is a DecodeError", () =>
    Effect.gen(function*() {
      const { items } = yield* runStream({ sse: [{ choices: "nope" }] })
      assert.strictEqual(lastError(items)?._tag, "DecodeError")
    }))

  it.effect("an HTTP error before the stream starts is its typed error", () =>
    Effect.gen(function*() {
      const { count, items } = yield* runStream({ status: 401, body: { detail: "Incorrect API key provided" } })
      assert.strictEqual(items.length, 1)
      assert.strictEqual(lastError(items)?._tag, "Unauthorized")
      assert.strictEqual(count, 1)
    }))

  it.effect("a 429 before the stream starts is retried after the server's wait", () =>
    Effect.gen(function*() {
      const rec = yield* sequence(
        { status: 429, headers: { "retry-after": "3" }, body: { detail: "Too many requests" } },
        { sse: [delta({ content: "ok" })] }
      )
      const fiber = yield* Effect.fork(
        Chat.collect(chatStream).pipe(
          Effect.provide(Testing.layerHttp(rec.handler, { retry: { rateLimitJitter: 0 } }))
        )
      )
      yield* Queue.take(rec.calls)
      yield* TestClock.adjust("2999 millis")
      assert.strictEqual(yield* rec.count, 1)
      yield* TestClock.adjust("1 millis")
      yield* Queue.take(rec.calls)
      const completion = yield* Fiber.join(fiber)
      assert.strictEqual(completion.text, "ok")
    }), 10_000)
})

describe("stream timeouts (TestClock)", () => {
  /** A server that sends the given events and then goes silent without closing the connection. */
  const stalling = (events: ReadonlyArray<unknown>) =>
    HttpClient.make((request) =>
      Effect.sync(() =>
        HttpClientResponse.fromWeb(
          request,
          new Response(
            new ReadableStream<Uint8Array>({
              start(controller) {
                for (const event of events) {
                  controller.enqueue(new TextEncoder().encode(`data: ${JSON.stringify(event)}\n\n`))
                }
              }
            }),
            { headers: { "content-type": "text/event-stream" } }
          )
        )
      )
    )

  it.effect(
    "a stream silent for longer than streamIdleTimeout fails with Timeout(idle) after its chunks",
    () =>
      Effect.gen(function*() {
        const layer = layerWithClient(
          stalling([delta({ role: "assistant", content: "Hel" }), delta({ content: "lo" })]),
          {
            config: { streamIdleTimeout: "30 seconds" }
          }
        )
        const fiber = yield* Effect.fork(
          chatStream.pipe(Stream.either, Stream.runCollect, Effect.map(Chunk.toReadonlyArray), Effect.provide(layer))
        )
        yield* TestClock.adjust("29 seconds")
        assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
        yield* TestClock.adjust("1 second")
        const items = yield* Fiber.join(fiber)
        assert.strictEqual(rights(items).map((c) => c.text).join(""), "Hello")
        const error = lastError(items)
        assert.strictEqual(error?._tag, "Timeout")
        if (error?._tag !== "Timeout") return
        assert.strictEqual(error.timeout, "idle")
        assert.strictEqual(Duration.toMillis(error.after), 30_000)
      }),
    10_000
  )
})

describe("Chat.collect and foldChunks", () => {
  it.effect("folds text and the usage chunk into a completion", () =>
    Effect.gen(function*() {
      const completion = yield* collectChat({
        sse: [
          delta({ role: "assistant", content: "" }),
          delta({ content: "Hello" }),
          delta({ content: "!" }, "stop"),
          usageChunk
        ]
      })
      assert.instanceOf(completion, ChatCompletion)
      assert.strictEqual(completion.id, "chatcmpl-s1")
      assert.strictEqual(completion.object, "chat.completion")
      assert.strictEqual(completion.model, "gpt-4.1")
      assert.strictEqual(completion.created, 1710000000)
      assert.strictEqual(completion.text, "Hello!")
      assert.strictEqual(completion.choices[0]?.message.role, "assistant")
      assert.strictEqual(completion.choices[0]?.finish_reason, "stop")
      assert.strictEqual(completion.usage?.prompt_tokens, 10)
      assert.strictEqual(completion.usage?.total_tokens, 19)
    }))

  it.effect("a first chunk without delta.role still gives an assistant message", () =>
    Effect.gen(function*() {
      const completion = yield* collectChat({ sse: [delta({ content: "Hi" }), delta({ content: "!" }, "stop")] })
      assert.strictEqual(completion.choices[0]?.message.role, "assistant")
      assert.strictEqual(completion.text, "Hi!")
      assert.strictEqual(completion.usage, undefined)
    }))

  it.effect("joins reasoning_content deltas", () =>
    Effect.gen(function*() {
      const completion = yield* collectChat({
        sse: [
          delta({ role: "assistant", reasoning_content: "Let me " }),
          delta({ reasoning_content: "think." }),
          delta({ content: "42" }, "stop")
        ]
      })
      assert.strictEqual(completion.choices[0]?.message.reasoning_content, "Let me think.")
      assert.strictEqual(completion.text, "42")
    }))

  const toolSse = (first: Record<string, unknown>) => [
    delta(first),
    delta({
      tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } }]
    }),
    delta({ tool_calls: [{ index: 0, function: { arguments: "{\"ci" } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: "ty\": \"Bo" } }] }),
    delta({ tool_calls: [{ index: 1, id: "call_2", type: "function", function: { name: "get_time" } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: "nn\"}" } }] }),
    delta({ tool_calls: [{ index: 1, function: { arguments: "{}" } }] }),
    delta({}, "tool_calls"),
    usageChunk
  ]

  const expectedToolCalls = [
    { id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\": \"Bonn\"}" } },
    { id: "call_2", type: "function", function: { name: "get_time", arguments: "{}" } }
  ]

  it.effect("folds streamed tool-call pieces into whole calls with content null", () =>
    Effect.gen(function*() {
      const completion = yield* collectChat({ sse: toolSse({ role: "assistant" }) })
      const choice = completion.choices[0]!
      assert.deepStrictEqual(choice.message.tool_calls, expectedToolCalls)
      assert.strictEqual(choice.message.content, null)
      assert.strictEqual(choice.finish_reason, "tool_calls")
      const call = choice.message.tool_calls![0]!
      assert(isFunctionCall(call))
      assert.deepStrictEqual(JSON.parse(call.function.arguments), { city: "Bonn" })
    }))

  it.effect("tool calls after a first chunk with content null still give content null", () =>
    Effect.gen(function*() {
      const completion = yield* collectChat({ sse: toolSse({ role: "assistant", content: null }) })
      assert.deepStrictEqual(completion.choices[0]?.message.tool_calls, expectedToolCalls)
      assert.strictEqual(completion.choices[0]?.message.content, null)
    }))

  it.effect("tool calls after a vLLM-style first chunk with content \"\" still give content null", () =>
    Effect.gen(function*() {
      const completion = yield* collectChat({ sse: toolSse({ role: "assistant", content: "" }) })
      assert.deepStrictEqual(completion.choices[0]?.message.tool_calls, expectedToolCalls)
      assert.strictEqual(completion.choices[0]?.message.content, null)
    }))

  it("folds several choices by index, refusal and fingerprint", () => {
    const chunks = [
      new ChatCompletionChunk({
        ...base,
        system_fingerprint: "fp_1",
        choices: [
          { index: 1, delta: { role: "assistant", content: "B" }, finish_reason: null },
          { index: 0, delta: { role: "assistant", content: "A" }, finish_reason: null }
        ]
      }),
      new ChatCompletionChunk({
        ...base,
        choices: [{ index: 0, delta: { refusal: "I can't" }, finish_reason: "stop" }, {
          index: 1,
          delta: { content: "b" },
          finish_reason: "length"
        }]
      })
    ]
    const completion = Chat.foldChunks(chunks)
    assert.strictEqual(completion.choices.length, 2)
    assert.strictEqual(completion.choices[0]?.message.content, "A")
    assert.strictEqual(completion.choices[0]?.message.refusal, "I can't")
    assert.strictEqual(completion.choices[1]?.message.content, "Bb")
    assert.strictEqual(completion.choices[1]?.finish_reason, "length")
    assert.strictEqual(completion.system_fingerprint, "fp_1")
  })

  it("folds no chunks into an empty completion", () => {
    const completion = Chat.foldChunks([])
    assert.deepStrictEqual(completion.choices, [])
    assert.strictEqual(completion.text, "")
  })

  it.effect("collect fails with the stream's error", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ sse: [delta({ content: "a" })], done: false })
      const error = yield* Effect.flip(Chat.collect(chatStream).pipe(Effect.provide(Testing.layerHttp(rec.handler))))
      assert.strictEqual(error._tag, "TransportError")
    }))
})

describe("Completions.createStream", () => {
  const textChunk = (text: string, finish_reason: string | null = null) => ({
    id: "cmpl-1",
    object: "text_completion",
    created: 1710000000,
    model: "Llama-3.3-70B-Instruct",
    choices: [{ index: 0, text, logprobs: null, finish_reason }]
  })

  const completionStream = Stream.unwrap(
    Effect.map(Completions.Completions, (c) => c.createStream({ model: "Llama-3.3-70B-Instruct", prompt: "Say" }))
  )

  it.effect("yields text chunks until [DONE]", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({
        sse: [textChunk(" hello"), textChunk(" world", "length"), {
          id: "cmpl-1",
          object: "text_completion",
          choices: [],
          usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }
        }]
      })
      const chunks = Chunk.toReadonlyArray(
        yield* Stream.runCollect(completionStream).pipe(Effect.provide(Testing.layerHttp(rec.handler)))
      )
      assert.strictEqual(chunks.length, 3)
      assert.instanceOf(chunks[0], Completion)
      assert.strictEqual(chunks.map((c) => c.choices[0]?.text ?? "").join(""), " hello world")
      assert.strictEqual(chunks[2]?.usage?.total_tokens, 3)
      const request = yield* Queue.take(rec.calls)
      assert.strictEqual(request.path, "/v2/completions")
      const body = request.body as Record<string, unknown>
      assert.strictEqual(body.stream, true)
      assert.strictEqual(body.prompt, "Say")
    }))

  it.effect("an error event fails the stream after the chunks before it", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ sse: [textChunk("a"), { error: { message: "boom", code: "500" } }] })
      const items = Chunk.toReadonlyArray(
        yield* Stream.runCollect(Stream.either(completionStream)).pipe(
          Effect.provide(Testing.layerHttp(rec.handler, { retry: { maxRetries: 0 } }))
        )
      )
      assert.strictEqual(items.length, 2)
      assert.isTrue(Either.isRight(items[0]!))
      const last = items[1]!
      assert.isTrue(Either.isLeft(last) && last.left._tag === "ServerError")
    }))

  it.effect("a stream without [DONE] fails with TransportError", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ sse: [textChunk("a")], done: false })
      const error = yield* Effect.flip(
        Stream.runDrain(completionStream).pipe(Effect.provide(Testing.layerHttp(rec.handler)))
      )
      assert.strictEqual(error._tag, "TransportError")
    }))
})

describe("Chat.toMessage", () => {
  it.effect("an answer goes back into the conversation as the assistant's turn, tool calls and all", () =>
    Effect.gen(function*() {
      const call = {
        id: "call_1",
        type: "function",
        function: { name: "get_weather", arguments: "{\"city\":\"Bonn\"}" }
      }
      const answer = (message: Record<string, unknown>) => ({
        status: 200,
        body: { ...base, object: "chat.completion", choices: [{ index: 0, message, finish_reason: "stop" }] }
      })
      const rec = yield* sequence(
        answer({ role: "assistant", content: null, tool_calls: [call], reasoning_content: "look it up" }),
        answer({ content: "Rain in Bonn.", tool_calls: null })
      )
      yield* Effect.gen(function*() {
        const chat = yield* Chat.Chat
        const messages: Array<ChatMessage> = [{ role: "user", content: "Weather in Bonn?" }]
        const first = (yield* chat.create({ model: "gpt-4.1", messages })).choices[0]!.message
        messages.push(Chat.toMessage(first), { role: "tool", tool_call_id: "call_1", content: "rain" })
        const second = (yield* chat.create({ model: "gpt-4.1", messages })).choices[0]!.message
        // a text answer without tool calls (`null` from the server) carries none; no role from the server: "assistant"
        assert.deepStrictEqual(Chat.toMessage(second), { role: "assistant", content: "Rain in Bonn." })
      }).pipe(Effect.provide(Testing.layerHttp(rec.handler)))
      yield* Queue.take(rec.calls)
      const sent = (yield* Queue.take(rec.calls)).body as { messages: ReadonlyArray<unknown> }
      // what the server gets back: the assistant's text (null) and its call, not its reasoning
      assert.deepStrictEqual(sent.messages[1], { role: "assistant", content: null, tool_calls: [call] })
    }))
})
