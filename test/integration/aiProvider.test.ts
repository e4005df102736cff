/**
 * The `@effect/ai` provider (`effect-aifs/ai`) against the emulator on a loopback port: text, streams, tools
 * fed back, structured output both ways, batched embeddings and errors that keep the client's own.
 */
import * as AiChat from "@effect/ai/Chat"
import * as EmbeddingModel from "@effect/ai/EmbeddingModel"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { AifsEmbeddingModel, AifsLanguageModel, apiError } from "../../src/ai.js"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Chat from "../../src/services/Chat.js"
import { ask, waitUntil } from "../helpers/emulator.js"

const emulator = () => Testing.layerEmulator({ client: { maxRetries: 0 } })
const llama = "Llama-3.3-70B-Instruct"

const GetWeather = Tool.make("get_weather", {
  description: "The weather forecast for a city",
  parameters: { city: Schema.String },
  success: Schema.String
})
const GetTime = Tool.make("get_time", { parameters: { zone: Schema.String }, success: Schema.String })
const Tools = Toolkit.make(GetWeather, GetTime)
const ToolsLive = Tools.toLayer({
  get_weather: ({ city }) => Effect.succeed(`Sunny in ${city}, 21 degrees`),
  get_time: ({ zone }) => Effect.succeed(`12:00 in ${zone}`)
})

describe("AifsLanguageModel", () => {
  it.effect("generateText answers what Chat.create answers, with usage, finish reason and metadata", () =>
    Effect.gen(function*() {
      const response = yield* LanguageModel.generateText({ prompt: "Explain rate limits briefly" }).pipe(
        Effect.provide(AifsLanguageModel.model(llama))
      )
      const direct = yield* Chat.Chat.pipe(
        Effect.flatMap((chat) => chat.create(ask(llama, "Explain rate limits briefly")))
      )
      assert.strictEqual(response.text, direct.choices[0]!.message.content)
      assert.isAbove(response.text.length, 0)
      assert.strictEqual(response.finishReason, "stop")
      assert.strictEqual(response.usage.inputTokens, direct.usage!.prompt_tokens)
      assert.strictEqual(response.usage.outputTokens, direct.usage!.completion_tokens)
      const metadata = response.content.find((part) => part.type === "response-metadata")
      assert.deepStrictEqual(metadata?.modelId, Option.some(llama))
      assert.match(Option.getOrElse(metadata!.id, () => ""), /^chatcmpl-/)
    }).pipe(Effect.provide(emulator())))

  it.effect("streamText parts fold to the same text and reasoning as generateText, and finish with usage", () =>
    Effect.gen(function*() {
      const prompt = [
        { role: "system", content: "Answer briefly." },
        { role: "user", content: "What is a token window?" }
      ] as const
      const model = AifsLanguageModel.model("gpt-oss-120b")
      const whole = yield* LanguageModel.generateText({ prompt }).pipe(Effect.provide(model))
      const parts = yield* LanguageModel.streamText({ prompt }).pipe(Stream.runCollect, Effect.provide(model))
      const list = [...parts]
      const text = list.flatMap((p) => p.type === "text-delta" ? [p.delta] : []).join("")
      const reasoning = list.flatMap((p) => p.type === "reasoning-delta" ? [p.delta] : []).join("")
      assert.strictEqual(text, whole.text)
      assert.isAbove(reasoning.length, 0)
      assert.strictEqual(reasoning, whole.reasoningText)
      assert.deepStrictEqual(
        list.map((p) => p.type).filter((t) => !t.endsWith("-delta")),
        ["response-metadata", "reasoning-start", "reasoning-end", "text-start", "text-end", "finish"]
      )
      const finish = list[list.length - 1]!
      assert.strictEqual(finish.type, "finish")
      if (finish.type === "finish") {
        assert.strictEqual(finish.reason, "stop")
        assert.strictEqual(finish.usage.outputTokens, whole.usage.outputTokens)
      }
    }).pipe(Effect.provide(emulator())))

  it.effect("a tool defined with Tool.make is called, its result fed back, and the model answers", () =>
    Effect.gen(function*() {
      const chat = yield* AiChat.fromPrompt([{ role: "system", content: "Use the tools." }])
      const first = yield* chat.generateText({ prompt: "What is the get_weather in Berlin?", toolkit: Tools })
      assert.strictEqual(first.finishReason, "tool-calls")
      assert.deepStrictEqual(first.toolCalls.map((call) => [call.name, call.params]), [["get_weather", {
        city: "Berlin"
      }]])
      assert.deepStrictEqual(first.toolResults.map((result) => result.result), ["Sunny in Berlin, 21 degrees"])
      // the history ends with the tool's result: the model answers instead of calling the tool again
      const second = yield* chat.generateText({ prompt: [], toolkit: Tools })
      assert.strictEqual(second.finishReason, "stop")
      assert.deepStrictEqual(second.toolCalls, [])
      assert.isAbove(second.text.length, 0)
    }).pipe(Effect.provide([AifsLanguageModel.model(llama), ToolsLive]), Effect.provide(emulator())))

  it.effect("streamText with a toolkit: the call's pieces, the whole call, its result, then the finish", () =>
    Effect.gen(function*() {
      const parts = yield* LanguageModel.streamText({ prompt: "get_weather for Hamburg please", toolkit: Tools }).pipe(
        Stream.runCollect
      )
      const list = [...parts]
      const pieces = list.flatMap((p) => p.type === "tool-params-delta" ? [p.delta] : [])
      assert.isAbove(pieces.length, 1, "the arguments arrive in pieces")
      assert.deepStrictEqual(JSON.parse(pieces.join("")), { city: "Hamburg" })
      const call = list.find((p) => p.type === "tool-call")
      assert.deepStrictEqual(call?.type === "tool-call" ? call.params : undefined, { city: "Hamburg" })
      const result = list.find((p) => p.type === "tool-result")
      assert.strictEqual(result?.type === "tool-result" ? result.result : undefined, "Sunny in Hamburg, 21 degrees")
      const finish = list.find((p) => p.type === "finish")
      assert.strictEqual(finish?.type === "finish" ? finish.reason : undefined, "tool-calls")
    }).pipe(Effect.provide([AifsLanguageModel.model(llama), ToolsLive]), Effect.provide(emulator())))

  it.effect("toolChoice: none keeps a mentioned tool out, required and one named tool force a call", () =>
    Effect.gen(function*() {
      const generate = (prompt: string, toolChoice: LanguageModel.ToolChoice<"get_weather" | "get_time">) =>
        LanguageModel.generateText({ prompt, toolkit: Tools, toolChoice }).pipe(
          Effect.map((response) => response.toolCalls.map((call) => call.name))
        )
      assert.deepStrictEqual(yield* generate("What is the get_weather in Paris?", "none"), [])
      assert.deepStrictEqual(yield* generate("What is the get_weather in Paris?", "auto"), ["get_weather"])
      assert.deepStrictEqual(yield* generate("Tell me anything", "required"), ["get_weather"])
      assert.deepStrictEqual(yield* generate("Tell me anything", { tool: "get_time" }), ["get_time"])
      assert.deepStrictEqual(yield* generate("Tell me anything", { oneOf: ["get_time"], mode: "required" }), [
        "get_time"
      ])
    }).pipe(Effect.provide([AifsLanguageModel.model(llama), ToolsLive]), Effect.provide(emulator())))

  const Forecast = Schema.Struct({ city: Schema.String, temperature: Schema.Number, sunny: Schema.Boolean })

  it.effect("generateObject decodes with a Schema, through a forced tool call and through response_format", () =>
    Effect.gen(function*() {
      const viaTool = yield* LanguageModel.generateObject({ prompt: "Forecast for Bonn", schema: Forecast }).pipe(
        Effect.provide(AifsLanguageModel.model(llama))
      )
      assert.deepStrictEqual(viaTool.value, { city: "Bonn", temperature: 1, sunny: true })
      const viaFormat = yield* LanguageModel.generateObject({
        prompt: "Forecast for Bonn",
        schema: Forecast,
        objectName: "forecast"
      }).pipe(Effect.provide(AifsLanguageModel.model("gpt-4o")))
      assert.deepStrictEqual(viaFormat.value, { city: "example", temperature: 1.5, sunny: true })
      const forced = yield* LanguageModel.generateObject({ prompt: "Forecast for Bonn", schema: Forecast }).pipe(
        Effect.provide(AifsLanguageModel.model(llama, { structuredOutput: "json_schema" }))
      )
      assert.deepStrictEqual(forced.value, viaFormat.value)
    }).pipe(Effect.provide(emulator())))

  it.effect("images reach a visual model; a file that is not an image is refused before sending", () =>
    Effect.gen(function*() {
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47])
      const prompt = (mediaType: string) => [{
        role: "user" as const,
        content: [{ type: "text" as const, text: "Describe this" }, { type: "file" as const, mediaType, data: png }]
      }]
      const seen = yield* LanguageModel.generateText({ prompt: prompt("image/png") }).pipe(
        Effect.provide(AifsLanguageModel.model("Qwen3-VL-30B-A3B-Instruct-FP8"))
      )
      assert.isAbove(seen.text.length, 0)
      const before = (yield* (yield* Emulator.Emulator).stats).received
      const refused = yield* LanguageModel.generateText({ prompt: prompt("application/pdf") }).pipe(
        Effect.provide(AifsLanguageModel.model("Qwen3-VL-30B-A3B-Instruct-FP8")),
        Effect.flip
      )
      assert.strictEqual(refused._tag, "MalformedInput")
      assert.strictEqual((yield* (yield* Emulator.Emulator).stats).received, before)
    }).pipe(Effect.provide(emulator())))

  it.effect("withConfigOverride sets request parameters for a part of the program", () =>
    Effect.gen(function*() {
      const short = yield* LanguageModel.generateText({ prompt: "Write a long story" }).pipe(
        AifsLanguageModel.withConfigOverride({ max_tokens: 3 }),
        Effect.provide(AifsLanguageModel.model(llama, { max_tokens: 1000 }))
      )
      assert.strictEqual(short.finishReason, "length")
      assert.isAtMost(short.usage.outputTokens ?? Infinity, 3)
    }).pipe(Effect.provide(emulator())))

  it.effect("a 429 with retries disabled is an AiError whose cause is the client's RateLimited", () =>
    Effect.gen(function*() {
      const generate = LanguageModel.generateText({ prompt: "Hello" }).pipe(
        Effect.provide(AifsLanguageModel.model(llama))
      )
      yield* generate
      const error = yield* Effect.flip(generate)
      assert.strictEqual(error._tag, "UnknownError")
      assert.strictEqual(apiError(error)?._tag, "RateLimited")
      assert.include(error.message, "RateLimited")
    }).pipe(Effect.provide(Testing.layerEmulator({
      tiers: { one: { rpm: 1, tpm: 1_000_000 } },
      keys: [{ key: "gen-onerequestperminutekeyfortheaiprovidertest000000", tier: "one" }],
      tier: "one",
      rateLimiter: false,
      client: { maxRetries: 0 }
    }))))
})

describe("AifsEmbeddingModel", () => {
  it.effect("300 embed calls from separate fibers become one request per batch, each vector its text's", () =>
    Effect.gen(function*() {
      const stats = (yield* Emulator.Emulator).stats
      const model = yield* EmbeddingModel.EmbeddingModel
      const texts = Array.from({ length: 300 }, (_, i) => `document number ${i}`)
      const before = (yield* stats).received
      const fiber = yield* Effect.fork(Effect.forEach(texts, (text) => model.embed(text), { concurrency: "unbounded" }))
      // the data loader's window is on the TestClock: move it on until every call has its answer
      yield* waitUntil(
        "every embed call answered",
        Effect.zipRight(TestClock.adjust("10 millis"), Effect.map(Fiber.poll(fiber), (exit) => exit._tag === "Some"))
      )
      const vectors = yield* Fiber.join(fiber)
      const requests = (yield* stats).received - before
      assert.isAtLeast(requests, 3, "at most 128 inputs per request")
      assert.isAtMost(requests, 5)
      assert.strictEqual(vectors.length, 300)
      assert.isTrue(vectors.every((v) => v.length === 1024))
      const again = yield* Effect.fork(model.embed(texts[7]!))
      yield* TestClock.adjust("10 millis")
      assert.deepStrictEqual(yield* Fiber.join(again), vectors[7])
      assert.notDeepEqual(vectors[7], vectors[8])
    }).pipe(
      Effect.provide(AifsEmbeddingModel.model("text-embedding-bge-m3", { maxBatchSize: 128 })),
      Effect.provide(emulator())
    ))

  it.effect("batched mode: embedMany is one request; an error keeps the client's own as its cause", () =>
    Effect.gen(function*() {
      const stats = (yield* Emulator.Emulator).stats
      const before = (yield* stats).received
      const vectors = yield* EmbeddingModel.EmbeddingModel.pipe(
        Effect.flatMap((model) => model.embedMany(["one", "two", "three"])),
        Effect.provide(AifsEmbeddingModel.model("jina-embeddings-v2-base-de", { mode: "batched", dimensions: 8 }))
      )
      assert.strictEqual((yield* stats).received - before, 1)
      assert.deepStrictEqual(vectors.map((v) => v.length), [8, 8, 8])
      const failed = yield* EmbeddingModel.EmbeddingModel.pipe(
        Effect.flatMap((model) => model.embed("one")),
        Effect.provide(AifsEmbeddingModel.model("no-such-model", { mode: "batched" })),
        Effect.either
      )
      assert.isTrue(Either.isLeft(failed))
      if (Either.isLeft(failed)) assert.strictEqual(apiError(failed.left)?._tag, "NotFound")
    }).pipe(Effect.provide(emulator())))
})
