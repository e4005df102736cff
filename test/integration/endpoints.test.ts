/**
 * Every inference endpoint, through the real client stack (undici, error mapping, decoding) against the
 * emulator on a loopback port.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Emulator from "../../src/emulator/Emulator.js"
import { chatPromptTokens } from "../../src/emulator/generate.js"
import { countTokens } from "../../src/emulator/text.js"
import * as Node from "../../src/layers/Node.js"
import * as Testing from "../../src/layers/Testing.js"
import {
  type ChatCompletion,
  type CreateChatCompletionParams,
  type FunctionTool,
  isFunctionCall
} from "../../src/schemas/Chat.js"
import { decodeFloat32Base64 } from "../../src/schemas/Embeddings.js"
import { ModelList } from "../../src/schemas/Models.js"
import * as Chat from "../../src/services/Chat.js"
import * as Completions from "../../src/services/Completions.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import * as Models from "../../src/services/Models.js"
import { ask, layerEmulatorWithClient } from "../helpers/emulator.js"

// a fresh emulator per test: state (ids, limit windows) never leaks from one test into another
const emulator = () => Testing.layerEmulator({ client: { maxRetries: 0 } })

const weather: FunctionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather forecast for a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, days: { type: "integer" }, unit: { enum: ["celsius", "fahrenheit"] } },
      required: ["city"]
    }
  }
}

const clock: FunctionTool = {
  type: "function",
  function: { name: "get_time", parameters: { type: "object", properties: { zone: { type: "string" } } } }
}

const firstMessage = (completion: ChatCompletion) => {
  const choice = completion.choices[0]
  assert.isDefined(choice)
  return choice!.message
}

/** The first tool call of the first choice, which must be a function call. */
const firstCall = (completion: ChatCompletion) => {
  const call = firstMessage(completion).tool_calls?.[0]
  assert(call !== undefined && isFunctionCall(call), "a function call")
  return call
}

const assertHonestUsage = (completion: ChatCompletion) => {
  const usage = completion.usage
  assert.isDefined(usage)
  assert.isNotNull(usage)
  assert.isAbove(usage!.prompt_tokens, 0)
  assert.isAbove(usage!.completion_tokens ?? 0, 0)
  assert.strictEqual(usage!.prompt_tokens + (usage!.completion_tokens ?? 0), usage!.total_tokens)
}

describe("models", () => {
  it.effect("lists open-source and proprietary models with their meta_data", () =>
    Effect.gen(function*() {
      const models = yield* Models.Models
      const list = yield* models.list()
      assert.strictEqual(list.object, "list")
      const byId = new Map(list.data.map((m) => [m.id, m]))
      for (
        const id of ["Llama-3.3-70B-Instruct", "gpt-oss-120b", "gpt-4.1", "claude-sonnet-4.5", "text-embedding-bge-m3"]
      ) {
        assert.isTrue(byId.has(id), `${id} is listed`)
      }
      const llama = byId.get("Llama-3.3-70B-Instruct")!.meta_data
      assert.strictEqual(llama?.model_type, "LLM")
      assert.strictEqual(llama?.source_type, "OPEN SOURCE")
      assert.strictEqual(llama?.is_externally_hosted, false)
      assert.strictEqual(llama?.license, "https://www.llama.com/llama3_3/license/")
      assert.deepStrictEqual(llama?.input_modalities, ["text"])
      const gpt = byId.get("gpt-4.1")!.meta_data
      assert.strictEqual(gpt?.source_type, "PROPRIETARY")
      assert.strictEqual(gpt?.is_externally_hosted, true)
      const bge = byId.get("text-embedding-bge-m3")!.meta_data
      assert.strictEqual(bge?.model_type, "EMBEDDING")
      assert.strictEqual(bge?.hidden_size, 1024)
      // the real service shows only id and meta_data
      assert.isUndefined(byId.get("gpt-4.1")!.owned_by)
    }).pipe(Effect.provide(emulator())))

  it.effect("retrieves one model by id", () =>
    Effect.gen(function*() {
      const models = yield* Models.Models
      const { response, value } = yield* models.retrieveWithResponse("jina-embeddings-v2-base-de")
      assert.strictEqual(value.id, "jina-embeddings-v2-base-de")
      assert.strictEqual(value.meta_data?.hidden_size, 768)
      assert.strictEqual(response.status, 200)
      assert.match(response.requestId ?? "", /^req_/)
    }).pipe(Effect.provide(emulator())))

  it.effect("an unknown model id is NotFound (ids are case-sensitive)", () =>
    Effect.gen(function*() {
      const models = yield* Models.Models
      const error = yield* Effect.flip(models.retrieve("llama-3.3-70b-instruct"))
      assert.strictEqual(error._tag, "NotFound")
      if (error._tag !== "NotFound") return
      assert.strictEqual(error.status, 404)
      assert.include(error.message, "llama-3.3-70b-instruct")
      assert.strictEqual(error.endpoint, "GET /v2/models/llama-3.3-70b-instruct")
    }).pipe(Effect.provide(emulator())))
})

describe("chat completions", () => {
  it.effect("answers with honest usage and a finish reason", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const params = ask("Llama-3.3-70B-Instruct", "Explain sliding windows in one paragraph")
      const completion = yield* chat.create(params)
      assert.match(completion.id, /^chatcmpl-/)
      assert.strictEqual(completion.object, "chat.completion")
      assert.strictEqual(completion.model, "Llama-3.3-70B-Instruct")
      assert.strictEqual(completion.choices[0]?.finish_reason, "stop")
      const message = firstMessage(completion)
      assert.strictEqual(message.role, "assistant")
      assert.isAbove(completion.text.length, 0)
      assertHonestUsage(completion)
      // the counts are those of the text that came back, not invented numbers
      assert.strictEqual(completion.usage?.completion_tokens, countTokens(completion.text))
      assert.strictEqual(completion.usage?.prompt_tokens, chatPromptTokens(params))
    }).pipe(Effect.provide(emulator())))

  it.effect("stops at max_tokens with finish_reason length", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const completion = yield* chat.create(
        ask("Mistral-Small-24B-Instruct-2501", "Tell me a story", { max_tokens: 5 })
      )
      assert.strictEqual(completion.choices[0]?.finish_reason, "length")
      assert.isAtMost(completion.usage?.completion_tokens ?? Infinity, 5)
      assertHonestUsage(completion)
    }).pipe(Effect.provide(emulator())))

  it.effect("a stream folds to the same answer as the plain call, with a usage chunk", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const params = ask("Llama-3.3-70B-Instruct", "What does a rate limiter do?")
      const plain = yield* chat.create(params)
      const chunks = [...(yield* Stream.runCollect(chat.createStream(params)))]
      assert.isAbove(chunks.length, 3, "the answer arrives in several chunks")
      assert.isTrue(chunks.every((c) => c.object === "chat.completion.chunk"))
      assert.strictEqual(new Set(chunks.map((c) => c.id)).size, 1, "every chunk carries the same id")
      const usageChunk = chunks[chunks.length - 1]!
      assert.strictEqual(usageChunk.choices.length, 0, "the usage chunk has empty choices")
      assert.deepStrictEqual(usageChunk.usage, plain.usage)
      const folded = Chat.foldChunks(chunks)
      assert.strictEqual(folded.text, plain.text)
      assert.strictEqual(chunks.map((c) => c.text).join(""), plain.text)
      assert.strictEqual(folded.choices[0]?.finish_reason, "stop")
      assert.strictEqual(folded.choices[0]?.message.role, "assistant")
    }).pipe(Effect.provide(emulator())))

  it.effect("a reasoning model streams reasoning_content before the answer", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const params = ask("gpt-oss-120b", "Is 17 a prime number?")
      const plain = yield* chat.create(params)
      const chunks = [...(yield* Stream.runCollect(chat.createStream(params)))]
      const firstReasoning = chunks.findIndex((c) => (c.choices[0]?.delta.reasoning_content ?? "") !== "")
      const firstContent = chunks.findIndex((c) => (c.choices[0]?.delta.content ?? "") !== "")
      assert.isAtLeast(firstReasoning, 0, "some chunk carries reasoning_content")
      assert.isAbove(firstContent, firstReasoning, "reasoning comes first")
      const folded = yield* Chat.collect(chat.createStream(params))
      const reasoning = firstMessage(folded).reasoning_content ?? ""
      assert.isAbove(reasoning.length, 0)
      assert.strictEqual(reasoning, firstMessage(plain).reasoning_content)
      assert.strictEqual(folded.text, plain.text)
      assert.deepStrictEqual(folded.usage, plain.usage)
    }).pipe(Effect.provide(emulator())))

  it.effect("a required tool choice returns a tool call with JSON arguments and no content", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const completion = yield* chat.create(
        ask("gpt-4.1", "What will the sky look like in Berlin?", { tools: [weather], tool_choice: "required" })
      )
      assert.strictEqual(completion.choices[0]?.finish_reason, "tool_calls")
      const message = firstMessage(completion)
      assert.isNull(message.content)
      const call = firstCall(completion)
      assert.match(call.id, /^call_/)
      assert.strictEqual(call.function.name, "get_weather")
      assert.deepStrictEqual(JSON.parse(call.function.arguments), { city: "Berlin", days: 1, unit: "celsius" })
      assertHonestUsage(completion)
    }).pipe(Effect.provide(emulator())))

  it.effect("a named tool choice calls that tool; a mention calls the tool mentioned; none calls nothing", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const named = yield* chat.create(
        ask("Llama-3.3-70B-Instruct", "Weather please", {
          tools: [weather, clock],
          tool_choice: { type: "function", function: { name: "get_time" } }
        })
      )
      assert.strictEqual(firstCall(named).function.name, "get_time")
      const mentioned = yield* chat.create(
        ask("Llama-3.3-70B-Instruct", "Use get time for Tokyo", { tools: [weather, clock] })
      )
      assert.strictEqual(firstCall(mentioned).function.name, "get_time")
      assert.deepStrictEqual(JSON.parse(firstCall(mentioned).function.arguments), { zone: "Tokyo" })
      const none = yield* chat.create(
        ask("Llama-3.3-70B-Instruct", "Use get time for Tokyo", { tools: [weather, clock], tool_choice: "none" })
      )
      assert.isUndefined(firstMessage(none).tool_calls)
      assert.strictEqual(none.choices[0]?.finish_reason, "stop")
    }).pipe(Effect.provide(emulator())))

  it.effect("a streamed tool call arrives in pieces that fold into the plain call", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const params: CreateChatCompletionParams = ask("gpt-4o", "Forecast for Hamburg, please", {
        tools: [weather],
        tool_choice: "required"
      })
      const plain = yield* chat.create(params)
      const chunks = [...(yield* Stream.runCollect(chat.createStream(params)))]
      const pieces = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []))
      assert.isAbove(pieces.length, 2, "the arguments are streamed incrementally")
      assert.isString(pieces[0]!.id, "the first piece carries the id")
      assert.strictEqual(pieces[0]!.function?.name, "get_weather", "the first piece carries the name")
      assert.isTrue(pieces.slice(1).every((p) => p.id === undefined || p.id === null), "later pieces only append")
      const folded = Chat.foldChunks(chunks)
      assert.strictEqual(folded.choices[0]?.finish_reason, "tool_calls")
      const call = firstCall(folded)
      assert.deepStrictEqual(JSON.parse(call.function.arguments), { city: "Hamburg", days: 1, unit: "celsius" })
      assert.deepStrictEqual(call, firstMessage(plain).tool_calls?.[0])
      assert.isNull(firstMessage(folded).content)
      assert.deepStrictEqual(folded.usage, plain.usage)
    }).pipe(Effect.provide(emulator())))
})

describe("completions", () => {
  it.effect("completes a prompt, plain and streamed, to the same text", () =>
    Effect.gen(function*() {
      const completions = yield* Completions.Completions
      const params = { model: "Llama-3.3-70B-Instruct", prompt: "Once upon a time", max_tokens: 20 }
      const plain = yield* completions.create(params)
      assert.strictEqual(plain.object, "text_completion")
      const text = plain.choices[0]?.text ?? ""
      assert.isAbove(text.length, 0)
      assert.include(["stop", "length"], plain.choices[0]?.finish_reason)
      assert.strictEqual(plain.usage?.completion_tokens, countTokens(text))
      assert.strictEqual(plain.usage?.prompt_tokens, countTokens(params.prompt))
      assert.strictEqual(
        (plain.usage?.prompt_tokens ?? 0) + (plain.usage?.completion_tokens ?? 0),
        plain.usage?.total_tokens
      )
      const chunks = [...(yield* Stream.runCollect(completions.createStream(params)))]
      assert.isAbove(chunks.length, 2)
      assert.strictEqual(chunks.map((c) => c.choices[0]?.text ?? "").join(""), text)
      assert.deepStrictEqual(chunks[chunks.length - 1]!.usage, plain.usage)
      assert.strictEqual(
        chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason,
        plain.choices[0]?.finish_reason
      )
    }).pipe(Effect.provide(emulator())))

  it.effect("several prompts give one choice each, in order", () =>
    Effect.gen(function*() {
      const completions = yield* Completions.Completions
      const both = yield* completions.create({ model: "gpt-oss-120b", prompt: ["Roses are", "Violets are"] })
      const one = yield* completions.create({ model: "gpt-oss-120b", prompt: "Violets are" })
      assert.deepStrictEqual(both.choices.map((c) => c.index), [0, 1])
      assert.strictEqual(both.choices[1]?.text, one.choices[0]?.text)
    }).pipe(Effect.provide(emulator())))

  it.effect("a proprietary model has no /completions: BadRequest", () =>
    Effect.gen(function*() {
      const completions = yield* Completions.Completions
      const error = yield* Effect.flip(completions.create({ model: "gpt-4.1", prompt: "Hi" }))
      assert.strictEqual(error._tag, "BadRequest")
      if (error._tag === "BadRequest") assert.strictEqual(error.status, 400)
    }).pipe(Effect.provide(emulator())))
})

describe("embeddings", () => {
  const RawBase64 = Schema.Struct({ data: Schema.Array(Schema.Struct({ embedding: Schema.String })) })

  it.effect("float and base64 give the same numbers, of the model's dimension", () =>
    Effect.gen(function*() {
      const embeddings = yield* Embeddings.Embeddings
      const input = ["Sliding windows count every request", "Der Schlüssel ist geheim"]
      const float = yield* embeddings.create({ model: "text-embedding-bge-m3", input })
      const base64 = yield* embeddings.create({ model: "text-embedding-bge-m3", input, encoding_format: "base64" })
      assert.strictEqual(float.vectors.length, 2)
      assert.strictEqual(float.vectors[0]!.length, 1024)
      assert.deepStrictEqual(base64.vectors, float.vectors)
      assert.notDeepEqual(float.vectors[0], float.vectors[1])
      const norm = Math.sqrt(float.vectors[0]!.reduce((sum, v) => sum + v * v, 0))
      assert.closeTo(norm, 1, 1e-5)
      assert.strictEqual(float.usage?.prompt_tokens, countTokens(input[0]!) + countTokens(input[1]!))
      assert.strictEqual(float.usage?.total_tokens, float.usage?.prompt_tokens)
      // base64 really went over the wire: the raw body carries strings that decode to the same numbers
      const http = yield* InferenceHttpClient
      const raw = yield* http.json(
        HttpClientRequest.post("/embeddings").pipe(
          HttpClientRequest.bodyUnsafeJson({ model: "text-embedding-bge-m3", input, encoding_format: "base64" })
        ),
        RawBase64
      )
      const decoded = raw.value.data.map((d) => decodeFloat32Base64(d.embedding))
      assert.deepStrictEqual(decoded.map((d) => d._tag === "Right" ? d.right : []), [...base64.vectors])
    }).pipe(Effect.provide(emulator())))

  it.effect("each model has its dimension", () =>
    Effect.gen(function*() {
      const embeddings = yield* Embeddings.Embeddings
      const dimension = (model: string) =>
        Effect.map(embeddings.create({ model, input: "hello world" }), (list) => list.vectors[0]?.length)
      assert.strictEqual(yield* dimension("text-embedding-bge-m3"), 1024)
      assert.strictEqual(yield* dimension("jina-embeddings-v2-base-de"), 768)
      assert.strictEqual(yield* dimension("text-embedding-ada-002"), 1536)
      // a key of a current plan: the legacy standard4000 has no ada-002
    }).pipe(Effect.provide(Testing.layerEmulator({ tier: "essential", client: { maxRetries: 0 } }))))

  it.effect("dimensions shortens the vector; more than the model has is BadRequest", () =>
    Effect.gen(function*() {
      const embeddings = yield* Embeddings.Embeddings
      const short = yield* embeddings.create({ model: "text-embedding-bge-m3", input: "short", dimensions: 256 })
      assert.strictEqual(short.vectors[0]?.length, 256)
      const error = yield* Effect.flip(
        embeddings.create({ model: "text-embedding-bge-m3", input: "long", dimensions: 2048 })
      )
      assert.strictEqual(error._tag, "BadRequest")
    }).pipe(Effect.provide(emulator())))

  it.effect("similar texts are closer than unrelated ones", () =>
    Effect.gen(function*() {
      const embeddings = yield* Embeddings.Embeddings
      const list = yield* embeddings.create({
        model: "jina-embeddings-v2-base-de",
        input: ["the quota of the key", "the quota of a key", "purple elephants dance"]
      })
      const [a, b, c] = list.vectors
      const dot = (x: ReadonlyArray<number>, y: ReadonlyArray<number>) => x.reduce((s, v, i) => s + v * y[i]!, 0)
      assert.isAbove(dot(a!, b!), dot(a!, c!))
    }).pipe(Effect.provide(emulator())))
})

describe("errors", () => {
  it.effect("a wrong key is Unauthorized, and the key never appears in the error", () => {
    const key = "gen-thisisnotakeytheemulatoracceptsatall0000000000"
    return Effect.gen(function*() {
      const models = yield* Models.Models
      const error = yield* Effect.flip(models.list())
      assert.strictEqual(error._tag, "Unauthorized")
      if (error._tag !== "Unauthorized") return
      assert.strictEqual(error.status, 401)
      assert.strictEqual(error.message, "Incorrect API key provided")
      assert.notInclude(JSON.stringify(error), key)
      const chat = yield* Chat.Chat
      const onChat = yield* Effect.flip(chat.create(ask("Llama-3.3-70B-Instruct", "Hi")))
      assert.strictEqual(onChat._tag, "Unauthorized")
    }).pipe(
      Effect.provide(
        layerEmulatorWithClient({}, (emulator) => ({ apiKey: key, baseUrl: emulator.baseUrl, maxRetries: 0 }))
      )
    )
  })

  it.effect("a model that does not exist is NotFound", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const error = yield* Effect.flip(chat.create(ask("gpt-5-ultra", "Hi")))
      assert.strictEqual(error._tag, "NotFound")
      if (error._tag === "NotFound") assert.include(error.message, "gpt-5-ultra")
      const embeddings = yield* Embeddings.Embeddings
      const onEmbeddings = yield* Effect.flip(embeddings.create({ model: "text-embedding-3-large", input: "x" }))
      assert.strictEqual(onEmbeddings._tag, "NotFound")
    }).pipe(Effect.provide(emulator())))

  it.effect("a chat with an embedding model, or embeddings with a chat model, is BadRequest", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const error = yield* Effect.flip(chat.create(ask("text-embedding-bge-m3", "Hi")))
      assert.strictEqual(error._tag, "BadRequest")
      if (error._tag === "BadRequest") {
        assert.strictEqual(error.status, 400)
        assert.include(error.message, "text-embedding-bge-m3")
      }
      const streamed = yield* Effect.flip(Stream.runDrain(chat.createStream(ask("text-embedding-bge-m3", "Hi"))))
      assert.strictEqual(streamed._tag, "BadRequest")
      const embeddings = yield* Embeddings.Embeddings
      const wrongKind = yield* Effect.flip(embeddings.create({ model: "Llama-3.3-70B-Instruct", input: "x" }))
      assert.strictEqual(wrongKind._tag, "BadRequest")
    }).pipe(Effect.provide(emulator())))

  it.effect("a body missing a field is UnprocessableEntity with the FastAPI issues", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const error = yield* Effect.flip(
        http.json(
          HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson({ model: "gpt-4o" })),
          Schema.Unknown
        )
      )
      assert.strictEqual(error._tag, "UnprocessableEntity")
      if (error._tag !== "UnprocessableEntity") return
      assert.strictEqual(error.status, 422)
      const issue = error.issues?.find((i) => i.loc.includes("messages"))
      assert.isDefined(issue)
      assert.deepStrictEqual(issue!.loc, ["body", "messages"])
      assert.strictEqual(issue!.msg, "Field required")
      const notJson = yield* Effect.flip(
        http.json(HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyText("{oops")), Schema.Unknown)
      )
      assert.strictEqual(notJson._tag, "UnprocessableEntity")
      if (notJson._tag === "UnprocessableEntity") assert.strictEqual(notJson.issues?.[0]?.type, "json_invalid")
    }).pipe(Effect.provide(emulator())))

  it.effect("an unknown path is NotFound and a wrong method is a 405", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const missing = yield* Effect.flip(http.json(HttpClientRequest.get("/no/such/route"), Schema.Unknown))
      assert.strictEqual(missing._tag, "NotFound")
      const wrongMethod = yield* Effect.flip(http.json(HttpClientRequest.get("/chat/completions"), Schema.Unknown))
      assert.isTrue("status" in wrongMethod && wrongMethod.status === 405, `got ${wrongMethod._tag}`)
      assert.isFalse(wrongMethod.isRetryable)
    }).pipe(Effect.provide(emulator())))

  it.effect("the emulator stops with its scope: the next request meets a closed port", () =>
    Effect.gen(function*() {
      const url = yield* Effect.scoped(
        Effect.gen(function*() {
          const running = yield* Emulator.Emulator
          assert.match(running.url, /^http:\/\/127\.0\.0\.1:\d+$/)
          assert.isAbove(running.port, 0, "port 0 asks for any free port")
          return running.baseUrl
        }).pipe(Effect.provide(Emulator.layer()))
      )
      const error = yield* Effect.flip(
        Effect.flatMap(Models.Models, (models) => models.list()).pipe(
          Effect.provide(Node.layer({ apiKey: "k", baseUrl: url, maxRetries: 0 }))
        )
      )
      assert.strictEqual(error._tag, "TransportError")
    }))
})

describe("the queue root", () => {
  it.effect("lists models like /v2", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const queued = yield* http.json(HttpClientRequest.get("/models"), ModelList, { base: "queue" })
      const models = yield* Models.Models
      const standard = yield* models.list()
      assert.deepStrictEqual(queued.value.data.map((m) => m.id), standard.data.map((m) => m.id))
    }).pipe(Effect.provide(emulator())))
})
