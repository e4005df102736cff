/**
 * The `@effect/ai` provider's conversions, without a server: prompts to chat messages, answers and chunk
 * streams to response parts, errors to `AiError`.
 */
import * as Prompt from "@effect/ai/Prompt"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { apiError } from "../../src/ai.js"
import { toAiError } from "../../src/internal/ai/errors.js"
import { messages } from "../../src/internal/ai/prompt.js"
import { finishReason, parts, streamParts } from "../../src/internal/ai/response.js"
import { ChatCompletion, ChatCompletionChunk } from "../../src/schemas/Chat.js"
import { DecodeError, RateLimited } from "../../src/schemas/Errors.js"

const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(ChatCompletionChunk)({
    id: "chatcmpl-1",
    model: "m",
    created: 1_700_000_000,
    choices: [{ index: 0, delta }],
    ...extra
  })

describe("prompt to messages", () => {
  it.effect("system, user text, images as data URLs, assistant calls and tool results", () =>
    Effect.gen(function*() {
      const prompt = Prompt.make([
        { role: "system", content: "Be brief." },
        {
          role: "user",
          content: [
            { type: "text", text: "What is " },
            { type: "text", text: "this?" },
            { type: "file", mediaType: "image/png", data: new Uint8Array([1, 2, 3]) },
            { type: "file", mediaType: "image/jpeg", data: new URL("https://example.com/a.jpg") }
          ]
        },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "hidden" },
            { type: "tool-call", id: "call_1", name: "look", params: { at: "it" }, providerExecuted: false }
          ]
        },
        {
          role: "tool",
          content: [{
            type: "tool-result",
            id: "call_1",
            name: "look",
            result: { seen: "a cat" },
            isFailure: false,
            providerExecuted: false
          }]
        },
        { role: "user", content: "Thanks" }
      ])
      assert.deepStrictEqual(yield* messages(prompt), [
        { role: "system", content: "Be brief." },
        {
          role: "user",
          content: [
            { type: "text", text: "What is " },
            { type: "text", text: "this?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,AQID" } },
            { type: "image_url", image_url: { url: "https://example.com/a.jpg" } }
          ]
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "look", arguments: "{\"at\":\"it\"}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "{\"seen\":\"a cat\"}" },
        { role: "user", content: "Thanks" }
      ])
    }))
})

describe("answers to parts", () => {
  it("finish reasons in @effect/ai's words", () => {
    assert.deepStrictEqual(
      ["stop", "length", "tool_calls", "function_call", "content_filter", "eos", null, undefined].map(finishReason),
      ["stop", "length", "tool-calls", "tool-calls", "content-filter", "other", "unknown", "unknown"]
    )
  })

  it.effect("a call to the object's tool is the object's text; arguments that are not JSON are MalformedOutput", () =>
    Effect.gen(function*() {
      const answer = (args: string) =>
        Schema.decodeUnknownSync(ChatCompletion)({
          id: "chatcmpl-2",
          model: "m",
          choices: [{
            message: { content: null, tool_calls: [{ id: "c", function: { name: "forecast", arguments: args } }] },
            finish_reason: "tool_calls"
          }],
          usage: {
            prompt_tokens: 5,
            completion_tokens: 7,
            total_tokens: 12,
            completion_tokens_details: { reasoning_tokens: 2 }
          }
        })
      const asObject = yield* parts(answer("{\"a\":1}"), "forecast")
      assert.deepStrictEqual(asObject.slice(1), [
        { type: "text", text: "{\"a\":1}" },
        {
          type: "finish",
          reason: "stop",
          usage: { inputTokens: 5, outputTokens: 7, totalTokens: 12, reasoningTokens: 2 }
        }
      ])
      const broken = yield* Effect.flip(parts(answer("{not json"), undefined))
      assert.strictEqual(broken._tag, "MalformedOutput")
      assert.include(broken.description ?? "", "forecast")
    }))

  it.effect("a stream: reasoning closed by text, two calls by index in pieces, finish with the usage chunk", () =>
    Effect.gen(function*() {
      const chunks = [
        chunk({ role: "assistant", reasoning_content: "think" }),
        chunk({ content: "Hi" }),
        chunk({ tool_calls: [{ index: 0, id: "a", function: { name: "f", arguments: "{\"x\"" } }] }),
        chunk({ tool_calls: [{ index: 1, id: "b", function: { name: "g", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: ":1}" } }] }),
        chunk({}, { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] }),
        chunk({}, { choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } })
      ]
      const out = Chunk.toArray(yield* Stream.runCollect(streamParts(Stream.fromIterable(chunks))))
      assert.deepStrictEqual(out, [
        { type: "response-metadata", id: "chatcmpl-1", modelId: "m", timestamp: "2023-11-14T22:13:20.000Z" },
        { type: "reasoning-start", id: "reasoning_0" },
        { type: "reasoning-delta", id: "reasoning_0", delta: "think" },
        { type: "reasoning-end", id: "reasoning_0" },
        { type: "text-start", id: "text_0" },
        { type: "text-delta", id: "text_0", delta: "Hi" },
        { type: "tool-params-start", id: "a", name: "f" },
        { type: "tool-params-delta", id: "a", delta: "{\"x\"" },
        { type: "tool-params-start", id: "b", name: "g" },
        { type: "tool-params-delta", id: "a", delta: ":1}" },
        { type: "text-end", id: "text_0" },
        { type: "tool-params-end", id: "a" },
        { type: "tool-call", id: "a", name: "f", params: { x: 1 }, providerExecuted: false },
        { type: "tool-params-end", id: "b" },
        { type: "tool-call", id: "b", name: "g", params: {}, providerExecuted: false },
        { type: "finish", reason: "tool-calls", usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7 } }
      ])
      // each run of the stream starts from a fresh state
      const again = yield* Stream.runCollect(streamParts(Stream.fromIterable(chunks.slice(0, 2))))
      assert.strictEqual(Chunk.unsafeGet(again, 0).type, "response-metadata")
    }))
})

describe("errors", () => {
  it("a decode failure is MalformedOutput, anything else UnknownError; the client's error is the cause", () => {
    const limited = new RateLimited({
      message: "429 from the server",
      endpoint: "POST /v2/chat/completions",
      status: 429
    })
    const asAi = toAiError("AifsLanguageModel", "generateText")(limited)
    assert.strictEqual(asAi._tag, "UnknownError")
    assert.strictEqual(apiError(asAi), limited)
    assert.include(asAi.message, "RateLimited: 429 from the server")
    const decode = new DecodeError({
      message: "choices is missing",
      endpoint: "POST /v2/chat/completions",
      excerpt: "{}"
    })
    const malformed = toAiError("AifsLanguageModel", "generateText")(decode)
    assert.strictEqual(malformed._tag, "MalformedOutput")
    assert.strictEqual(apiError(malformed), decode)
    // any other error, a tool's own failure among them: none of the client's
    assert.isUndefined(apiError(new Error("city unknown", { cause: "not an API error" })))
    assert.isUndefined(apiError({ _tag: "CityUnknown" }))
    assert.isUndefined(apiError(undefined))
  })
})
