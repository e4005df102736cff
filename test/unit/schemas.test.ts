import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Testing from "../../src/layers/Testing.js"
import { Transcription } from "../../src/schemas/Audio.js"
import { ChatCompletion, ChatCompletionChunk, isFunctionCall } from "../../src/schemas/Chat.js"
import { Completion } from "../../src/schemas/Completions.js"
import { decodeFloat32Base64, EmbeddingList, encodeFloat32Base64, Float32Base64 } from "../../src/schemas/Embeddings.js"
import { ApiError, BadRequest, DecodeError, RateLimited } from "../../src/schemas/Errors.js"
import { Model, ModelList } from "../../src/schemas/Models.js"
import { DetailErrorBody, OpenAIErrorBody, Usage } from "../../src/schemas/Shared.js"
import { VectorStoreFile } from "../../src/schemas/VectorStores.js"
import { foldChunks } from "../../src/services/Chat.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import * as Models from "../../src/services/Models.js"
import { chatCompletionBody, createChat, sequence } from "./helpers.js"

/** Decodes JSON text as the transport does (extra fields ignored). */
const decode = <A, I>(schema: Schema.Schema<A, I>, json: string): A =>
  Schema.decodeUnknownSync(schema)(JSON.parse(json), { onExcessProperty: "ignore" })

const decodeEither = <A, I>(schema: Schema.Schema<A, I>, value: unknown) =>
  Schema.decodeUnknownEither(schema)(value, { onExcessProperty: "ignore" })

// The documented examples, verbatim from API-FACTS.md.
const documentedMetaData = `{"model_type": "LLM", "source_type": "OPEN SOURCE", "max_sequence_length": 128000,
 "hidden_size": 0, "max_output_length": 0, "deployment_region": "otc-germany", "location": "otc-germany",
 "license": "https://www.llama.com/llama3_3/license/", "display_name": "Meta LLama 3.3 70B",
 "deployment_country": "Germany, EU", "input_modalities": ["text"], "output_modalities": ["text"],
 "model_lifecycle_stage": "Stable", "is_externally_hosted": false}`

const documentedChatCompletion = `{"id": "chatcmpl-abc123", "object": "chat.completion", "created": 1710000000,
 "model": "Llama-3.3-70B-Instruct",
 "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello! How can I help you today?"},
   "finish_reason": "stop"}],
 "usage": {"prompt_tokens": 10, "completion_tokens": 9, "total_tokens": 19}}`

describe("Models", () => {
  it("decodes the documented meta_data record", () => {
    const model = decode(Model, `{"id": "Llama-3.3-70B-Instruct", "meta_data": ${documentedMetaData}}`)
    assert.instanceOf(model, Model)
    assert.strictEqual(model.id, "Llama-3.3-70B-Instruct")
    const meta = model.meta_data!
    assert.strictEqual(meta.model_type, "LLM")
    assert.strictEqual(meta.source_type, "OPEN SOURCE")
    assert.strictEqual(meta.max_sequence_length, 128000)
    assert.strictEqual(meta.hidden_size, 0)
    assert.strictEqual(meta.max_output_length, 0)
    assert.strictEqual(meta.deployment_region, "otc-germany")
    assert.strictEqual(meta.location, "otc-germany")
    assert.strictEqual(meta.license, "https://www.llama.com/llama3_3/license/")
    assert.strictEqual(meta.display_name, "Meta LLama 3.3 70B")
    assert.strictEqual(meta.deployment_country, "Germany, EU")
    assert.deepStrictEqual(meta.input_modalities, ["text"])
    assert.deepStrictEqual(meta.output_modalities, ["text"])
    assert.strictEqual(meta.model_lifecycle_stage, "Stable")
    assert.strictEqual(meta.is_externally_hosted, false)
    // object, created, owned_by are never shown
    assert.strictEqual(model.object, undefined)
    assert.strictEqual(model.created, undefined)
    assert.strictEqual(model.owned_by, undefined)
  })

  it("decodes the list form", () => {
    const list = decode(
      ModelList,
      `{"object": "list", "data": [{"id": "Llama-3.3-70B-Instruct", "meta_data": ${documentedMetaData}},
        {"id": "jina-embeddings-v2-base-de", "meta_data": {"model_type": "EMBEDDING", "hidden_size": 768}}]}`
    )
    assert.strictEqual(list.data.length, 2)
    assert.strictEqual(list.data[1]?.meta_data?.hidden_size, 768)
  })

  it("tolerates unknown model types, nulls, empty modalities, missing meta_data and extra fields", () => {
    const list = decode(
      ModelList,
      JSON.stringify({
        data: [
          {
            id: "Qwen3-VL-30B-A3B-Instruct-FP8",
            object: "model",
            created: 1_700_000_000,
            owned_by: "system",
            meta_data: {
              model_type: "MULTIMODAL",
              source_type: "SOMETHING NEW",
              input_modalities: null,
              output_modalities: [],
              end_of_life_date: null,
              max_sequence_length: null,
              brand_new_field: { nested: true }
            },
            another_extra: 1
          },
          { id: "whisper-large-v3" },
          { id: "gpt-4o", meta_data: null }
        ]
      })
    )
    assert.strictEqual(list.object, undefined)
    const [vl, whisper, gpt] = list.data
    assert.strictEqual(vl?.meta_data?.model_type, "MULTIMODAL")
    assert.strictEqual(vl?.meta_data?.source_type, "SOMETHING NEW")
    assert.strictEqual(vl?.meta_data?.input_modalities, null)
    assert.deepStrictEqual(vl?.meta_data?.output_modalities, [])
    assert.strictEqual(vl?.meta_data?.end_of_life_date, null)
    assert.strictEqual(vl?.owned_by, "system")
    assert.strictEqual(whisper?.meta_data, undefined)
    assert.strictEqual(gpt?.meta_data, null)
  })

  it("a model without id does not decode", () => {
    assert.isTrue(Either.isLeft(decodeEither(Model, { meta_data: {} })))
  })

  it.effect("retrieve decodes one model and escapes the id in the path", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({
        body: JSON.parse(`{"id": "Llama-3.3-70B-Instruct", "meta_data": ${documentedMetaData}}`)
      })
      const model = yield* Effect.flatMap(Models.Models, (m) => m.retrieve("Llama-3.3-70B-Instruct")).pipe(
        Effect.provide(Testing.layerHttp(rec.handler))
      )
      assert.strictEqual(model.meta_data?.display_name, "Meta LLama 3.3 70B")
      yield* Effect.flatMap(Models.Models, (m) => m.retrieve("a/b c")).pipe(
        Effect.provide(Testing.layerHttp(rec.handler))
      )
      const requests = [yield* Queue.take(rec.calls), yield* Queue.take(rec.calls)]
      assert.strictEqual(requests[0]?.path, "/v2/models/Llama-3.3-70B-Instruct")
      assert.strictEqual(requests[1]?.path, "/v2/models/a%2Fb%20c")
    }))
})

describe("Chat", () => {
  it("decodes the documented chat completion", () => {
    const completion = decode(ChatCompletion, documentedChatCompletion)
    assert.instanceOf(completion, ChatCompletion)
    assert.strictEqual(completion.id, "chatcmpl-abc123")
    assert.strictEqual(completion.object, "chat.completion")
    assert.strictEqual(completion.created, 1710000000)
    assert.strictEqual(completion.model, "Llama-3.3-70B-Instruct")
    assert.strictEqual(completion.choices[0]?.index, 0)
    assert.strictEqual(completion.choices[0]?.message.role, "assistant")
    assert.strictEqual(completion.choices[0]?.message.content, "Hello! How can I help you today?")
    assert.strictEqual(completion.choices[0]?.finish_reason, "stop")
    assert.strictEqual(completion.usage?.prompt_tokens, 10)
    assert.strictEqual(completion.usage?.completion_tokens, 9)
    assert.strictEqual(completion.usage?.total_tokens, 19)
    assert.strictEqual(completion.text, "Hello! How can I help you today?")
  })

  it("decodes a tool call message with content null", () => {
    const completion = decode(
      ChatCompletion,
      JSON.stringify({
        id: "chatcmpl-tool",
        object: "chat.completion",
        created: 1710000001,
        model: "gpt-4.1",
        choices: [{
          index: 0,
          message: {
            role: "assistant",
            content: null,
            tool_calls: [{
              id: "call_abc",
              type: "function",
              function: { name: "get_weather", arguments: "{\"city\":\"Bonn\"}" }
            }]
          },
          finish_reason: "tool_calls"
        }],
        usage: { prompt_tokens: 50, completion_tokens: 12, total_tokens: 62 }
      })
    )
    const message = completion.choices[0]!.message
    assert.strictEqual(message.content, null)
    assert.strictEqual(completion.text, "")
    assert.strictEqual(completion.choices[0]?.finish_reason, "tool_calls")
    assert.deepStrictEqual(message.tool_calls, [{
      id: "call_abc",
      type: "function",
      function: { name: "get_weather", arguments: "{\"city\":\"Bonn\"}" }
    }])
  })

  it("tolerates unknown finish reasons, nulls, missing fields and extras", () => {
    const completion = decode(
      ChatCompletion,
      JSON.stringify({
        choices: [{
          message: {
            content: "hi",
            reasoning_content: "thinking...",
            refusal: null,
            tool_calls: null,
            annotations: [],
            audio: null
          },
          finish_reason: "weird_new_reason",
          logprobs: null,
          stop_reason: 128009
        }, {
          index: 1,
          message: { role: "assistant", content: "second" },
          finish_reason: null
        }],
        usage: {
          prompt_tokens: 5,
          completion_tokens: 3,
          total_tokens: 8,
          prompt_tokens_details: null,
          completion_tokens_details: { reasoning_tokens: 2 }
        },
        system_fingerprint: null,
        service_tier: "default",
        prompt_logprobs: null,
        kv_transfer_params: null
      })
    )
    assert.strictEqual(completion.id, "")
    assert.strictEqual(completion.model, "")
    assert.strictEqual(completion.object, undefined)
    assert.strictEqual(completion.choices[0]?.index, 0)
    assert.strictEqual(completion.choices[0]?.message.role, "assistant")
    assert.strictEqual(completion.choices[0]?.message.reasoning_content, "thinking...")
    assert.strictEqual(completion.choices[0]?.finish_reason, "weird_new_reason")
    assert.strictEqual(completion.choices[1]?.finish_reason, null)
    assert.strictEqual(completion.usage?.completion_tokens_details?.reasoning_tokens, 2)
    assert.strictEqual(completion.system_fingerprint, null)
  })

  it("decodes stream chunks: role, content, empty choices with usage, reasoning, tool-call pieces", () => {
    const first = decode(
      ChatCompletionChunk,
      `{"id":"c1","object":"chat.completion.chunk","created":1710000000,"model":"gpt-oss-120b",
        "choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
    )
    assert.strictEqual(first.choices[0]?.delta.role, "assistant")
    assert.strictEqual(first.text, "")
    const noRole = decode(ChatCompletionChunk, `{"id":"c1","choices":[{"index":0,"delta":{"content":"Hi"}}]}`)
    assert.strictEqual(noRole.choices[0]?.delta.role, undefined)
    assert.strictEqual(noRole.text, "Hi")
    const reasoning = decode(
      ChatCompletionChunk,
      `{"id":"c1","choices":[{"index":0,"delta":{"reasoning_content":"Let me think","content":null}}]}`
    )
    assert.strictEqual(reasoning.choices[0]?.delta.reasoning_content, "Let me think")
    const usage = decode(
      ChatCompletionChunk,
      `{"id":"c1","object":"chat.completion.chunk","choices":[],
        "usage":{"prompt_tokens":10,"completion_tokens":9,"total_tokens":19}}`
    )
    assert.deepStrictEqual(usage.choices, [])
    assert.strictEqual(usage.usage?.total_tokens, 19)
    const missingChoices = decode(ChatCompletionChunk, `{"id":"c1","usage":null}`)
    assert.deepStrictEqual(missingChoices.choices, [])
    const tool = decode(
      ChatCompletionChunk,
      `{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",
        "function":{"name":"get_weather","arguments":""}}]}}]}`
    )
    assert.strictEqual(tool.choices[0]?.delta.tool_calls?.[0]?.function?.name, "get_weather")
    const piece = decode(
      ChatCompletionChunk,
      `{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"ci"}}]},
        "finish_reason":"weird_new_reason"}]}`
    )
    assert.strictEqual(piece.choices[0]?.delta.tool_calls?.[0]?.function?.arguments, "{\"ci")
    assert.strictEqual(piece.choices[0]?.delta.tool_calls?.[0]?.id, undefined)
    assert.strictEqual(piece.choices[0]?.finish_reason, "weird_new_reason")
    const noDelta = decode(ChatCompletionChunk, `{"choices":[{"index":0,"finish_reason":"stop"}]}`)
    assert.deepStrictEqual(noDelta.choices[0]?.delta, {})
  })

  it.effect("Chat.create decodes the documented example through the transport", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ body: chatCompletionBody })
      const completion = yield* createChat().pipe(Effect.provide(Testing.layerHttp(rec.handler)))
      assert.instanceOf(completion, ChatCompletion)
      assert.strictEqual(completion.text, "Hello! How can I help you today?")
      const request = yield* Queue.take(rec.calls)
      assert.strictEqual(request.method, "POST")
      assert.strictEqual(request.path, "/v2/chat/completions")
      assert.deepStrictEqual(request.body, {
        model: "Llama-3.3-70B-Instruct",
        messages: [{ role: "user", content: "Hello" }]
      })
    }))
})

describe("Completions", () => {
  it("decodes a text completion and a stream chunk", () => {
    const completion = decode(
      Completion,
      `{"id":"cmpl-1","object":"text_completion","created":1710000000,"model":"Llama-3.3-70B-Instruct",
        "choices":[{"index":0,"text":" world","logprobs":null,"finish_reason":"length","stop_reason":null}],
        "usage":{"prompt_tokens":2,"completion_tokens":16,"total_tokens":18}}`
    )
    assert.strictEqual(completion.choices[0]?.text, " world")
    assert.strictEqual(completion.choices[0]?.finish_reason, "length")
    assert.strictEqual(completion.usage?.completion_tokens, 16)
    const chunk = decode(Completion, `{"id":"cmpl-1","choices":[{"text":"Hi","finish_reason":null}]}`)
    assert.strictEqual(chunk.choices[0]?.index, 0)
    assert.strictEqual(chunk.object, undefined)
    const weird = decode(Completion, `{"choices":[{"text":"","finish_reason":"weird_new_reason"}]}`)
    assert.strictEqual(weird.choices[0]?.finish_reason, "weird_new_reason")
    const usageOnly = decode(Completion, `{"id":"cmpl-1","choices":[],"usage":{"prompt_tokens":2,"total_tokens":2}}`)
    assert.deepStrictEqual(usageOnly.choices, [])
  })
})

describe("Usage", () => {
  it("embedding usage has prompt and total tokens only", () => {
    const usage = decode(Usage, `{"prompt_tokens": 8, "total_tokens": 8}`)
    assert.strictEqual(usage.prompt_tokens, 8)
    assert.strictEqual(usage.total_tokens, 8)
    assert.strictEqual(usage.completion_tokens, undefined)
  })

  it("transcription-style usage and details decode", () => {
    const usage = decode(
      Usage,
      `{"total_tokens": 52, "prompt_tokens": 0, "completion_tokens": 52,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": null}, "extra": 1}`
    )
    assert.strictEqual(usage.completion_tokens, 52)
    assert.strictEqual(usage.prompt_tokens_details?.cached_tokens, 0)
  })

  it("missing counts default to 0", () => {
    const usage = decode(Usage, `{}`)
    assert.strictEqual(usage.prompt_tokens, 0)
    assert.strictEqual(usage.total_tokens, 0)
  })
})

describe("Embeddings", () => {
  it("decodes the float form", () => {
    const list = decode(
      EmbeddingList,
      `{"object":"list","data":[{"object":"embedding","index":1,"embedding":[0.5,-1]},
        {"object":"embedding","index":0,"embedding":[0.25,2]}],"model":"jina-embeddings-v2-base-de",
        "usage":{"prompt_tokens":8,"total_tokens":8}}`
    )
    assert.deepStrictEqual(list.data[0]?.embedding, [0.5, -1])
    // vectors come back in input order
    assert.deepStrictEqual(list.vectors, [[0.25, 2], [0.5, -1]])
    assert.strictEqual(list.usage?.completion_tokens, undefined)
  })

  it("decodes hand-computed little-endian float32 bytes", () => {
    // 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0, 0.5f = 00 00 00 3f (little-endian)
    const bytes = Uint8Array.from([0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x3f])
    const base64 = "AACAPwAAAMAAAAA/"
    assert.strictEqual(Buffer.from(bytes).toString("base64"), base64)
    assert.deepStrictEqual(decodeFloat32Base64(base64), Either.right([1, -2, 0.5]))
    assert.strictEqual(encodeFloat32Base64([1, -2, 0.5]), base64)
    const list = decode(EmbeddingList, JSON.stringify({ data: [{ index: 0, embedding: base64 }] }))
    assert.deepStrictEqual(list.data[0]?.embedding, [1, -2, 0.5])
  })

  it("base64 round-trips float32 values", () => {
    const vector = [0.1, -0.2, 3.5, 0, 1e-7, -65504]
    const decoded = Either.getOrThrow(decodeFloat32Base64(encodeFloat32Base64(vector)))
    assert.strictEqual(decoded.length, vector.length)
    decoded.forEach((value, i) => assert.strictEqual(value, Math.fround(vector[i]!)))
    assert.deepStrictEqual(Schema.decodeSync(Float32Base64)(encodeFloat32Base64([2.5])), [2.5])
    assert.strictEqual(Schema.encodeSync(Float32Base64)([2.5]), encodeFloat32Base64([2.5]))
  })

  it("an empty base64 string is an empty vector", () => {
    assert.deepStrictEqual(decodeFloat32Base64(""), Either.right([]))
  })

  it("invalid base64 and a length not a multiple of 4 fail", () => {
    assert.isTrue(Either.isLeft(decodeFloat32Base64("!!!not base64!!!")))
    const three = Buffer.from([1, 2, 3]).toString("base64")
    const result = decodeFloat32Base64(three)
    assert.isTrue(Either.isLeft(result))
    assert.include(Either.isLeft(result) ? result.left : "", "3 bytes")
  })

  const embed = (responseBody: unknown, encoding_format?: "float" | "base64") =>
    Effect.gen(function*() {
      const rec = yield* sequence({ body: responseBody })
      const result = yield* Effect.flatMap(Embeddings.Embeddings, (e) =>
        e.create({
          model: "text-embedding-bge-m3",
          input: ["a", "b"],
          ...(encoding_format === undefined ? {} : { encoding_format })
        })).pipe(
          Effect.provide(Testing.layerHttp(rec.handler, { retry: { maxRetries: 0 } })),
          Effect.either
        )
      return { result, request: yield* Queue.take(rec.calls) }
    })

  it.effect("float and base64 bodies both decode to numbers through the transport", () =>
    Effect.gen(function*() {
      const float = yield* embed({ data: [{ index: 0, embedding: [1, -2, 0.5] }, { index: 1, embedding: [0.25] }] })
      assert.deepStrictEqual(Either.getOrThrow(float.result).vectors, [[1, -2, 0.5], [0.25]])
      const base64 = yield* embed(
        {
          object: "list",
          data: [
            { object: "embedding", index: 0, embedding: encodeFloat32Base64([1, -2, 0.5]) },
            { object: "embedding", index: 1, embedding: "AACAPg==" }
          ],
          model: "text-embedding-bge-m3",
          usage: { prompt_tokens: 2, total_tokens: 2 }
        },
        "base64"
      )
      assert.deepStrictEqual(Either.getOrThrow(base64.result).vectors, [[1, -2, 0.5], [0.25]])
      assert.deepStrictEqual(base64.request.body, {
        model: "text-embedding-bge-m3",
        input: ["a", "b"],
        encoding_format: "base64"
      })
      assert.strictEqual(base64.request.path, "/v2/embeddings")
    }))

  it.effect("invalid base64 is a DecodeError through the transport", () =>
    Effect.gen(function*() {
      const { result } = yield* embed({ data: [{ index: 0, embedding: "%%%not-base64%%%" }] }, "base64")
      assert.isTrue(Either.isLeft(result))
      if (Either.isRight(result)) return
      assert.instanceOf(result.left, DecodeError)
      assert.include(result.left.message, "EmbeddingList")
      assert.include((result.left as DecodeError).excerpt, "%%%not-base64%%%")
    }))

  it.effect("a base64 vector of the wrong length is a DecodeError through the transport", () =>
    Effect.gen(function*() {
      const { result } = yield* embed({
        data: [{ index: 0, embedding: Buffer.from([1, 2, 3, 4, 5]).toString("base64") }]
      })
      assert.isTrue(Either.isLeft(result))
      if (Either.isRight(result)) return
      assert.instanceOf(result.left, DecodeError)
    }))
})

describe("error bodies", () => {
  it("decode every documented form", () => {
    assert.deepStrictEqual(
      decode(DetailErrorBody, `{"detail": "Incorrect API key provided"}`),
      { detail: "Incorrect API key provided" }
    )
    const list = decode(
      DetailErrorBody,
      `{"detail": [{"loc": ["body", "model"], "msg": "field required", "type": "value_error.missing"}]}`
    )
    assert.deepStrictEqual(list.detail, [{
      loc: ["body", "model"],
      msg: "field required",
      type: "value_error.missing"
    }])
    const noLoc = decode(DetailErrorBody, `{"detail": [{"msg": "bad"}]}`)
    assert.deepStrictEqual(noLoc.detail, [{ loc: [], msg: "bad" }])
    const openai = decode(
      OpenAIErrorBody,
      `{"error": {"message": "Rate limit. Please retry after 22 seconds", "type": "requests", "code": "429"}}`
    )
    assert.strictEqual(openai.error.code, "429")
    const numeric = decode(OpenAIErrorBody, `{"error": {"message": "x", "type": null, "code": 429, "param": null}}`)
    assert.strictEqual(numeric.error.code, 429)
  })

  it("errors round-trip through the ApiError schema", () => {
    const error = new RateLimited({ message: "slow", status: 429, code: "429" })
    const encoded = Schema.encodeSync(ApiError)(error)
    const decoded = Schema.decodeUnknownSync(ApiError)(JSON.parse(JSON.stringify(encoded)))
    assert.instanceOf(decoded, RateLimited)
    assert.strictEqual(decoded.message, "slow")
    const bad = Schema.decodeUnknownSync(ApiError)({ _tag: "BadRequest", message: "m", status: 400 })
    assert.instanceOf(bad, BadRequest)
  })
})

describe("answers the OpenAI document allows", () => {
  const decodeChat = Schema.decodeUnknownSync(ChatCompletion)
  const withCalls = (calls: ReadonlyArray<unknown>) =>
    decodeChat({
      id: "c",
      model: "m",
      choices: [{
        index: 0,
        message: { role: "assistant", content: null, tool_calls: calls },
        finish_reason: "tool_calls"
      }]
    })

  it("a custom tool call, a function call without `type`, and a call of an unknown kind, in one answer", () => {
    const calls = withCalls([
      { id: "c1", type: "custom", custom: { name: "shell", input: "ls -la" } },
      { id: "c2", function: { name: "get_weather", arguments: "{}" } },
      { id: "c3", type: "web_search_call", web_search: { query: "x" } }
    ]).choices[0]!.message.tool_calls!
    assert.deepStrictEqual(calls[0], { id: "c1", type: "custom", custom: { name: "shell", input: "ls -la" } })
    assert.deepStrictEqual(calls[1], { id: "c2", type: "function", function: { name: "get_weather", arguments: "{}" } })
    // an unknown kind is kept whole: a future call type does not fail the answer
    assert.deepStrictEqual(calls[2], { id: "c3", type: "web_search_call", web_search: { query: "x" } })
    assert.deepStrictEqual(calls.filter(isFunctionCall).map((call) => call.function.name), ["get_weather"])
  })

  it("a function call that breaks its own shape still fails (the unknown kind does not swallow it)", () => {
    assert.throws(() => withCalls([{ id: "c", type: "function", function: { arguments: "{}" } }]))
    assert.throws(() => withCalls([{ id: "c", type: "custom", custom: { input: "x" } }]))
  })

  it("Chat.foldChunks joins a streamed custom call's input like a function's arguments", () => {
    const chunk = (tool_calls: ReadonlyArray<unknown>) =>
      Schema.decodeUnknownSync(ChatCompletionChunk)({
        id: "c",
        model: "m",
        choices: [{ index: 0, delta: { tool_calls } }]
      })
    const folded = foldChunks([
      chunk([{ index: 0, id: "c1", type: "custom", custom: { name: "shell", input: "ls " } }]),
      chunk([{ index: 0, custom: { input: "-la" } }])
    ])
    assert.deepStrictEqual(folded.choices[0]!.message.tool_calls, [
      { id: "c1", type: "custom", custom: { name: "shell", input: "ls -la" } }
    ])
  })

  it("a diarized transcript's string segment ids; a vector-store file without status", () => {
    const transcript = Schema.decodeUnknownSync(Transcription)({
      text: "hi",
      segments: [{ id: "seg_001", start: 0, end: 1, text: "hi" }, { id: 2, start: 1, end: 2, text: "" }]
    })
    assert.deepStrictEqual(transcript.segments?.map((segment) => segment.id), ["seg_001", 2])
    const file = Schema.decodeUnknownSync(VectorStoreFile)({ id: "file-1", object: "vector_store.file" })
    assert.isUndefined(file.status)
    assert.isTrue(file.isDone, "nothing to wait for")
  })
})
