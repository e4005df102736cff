/**
 * Every example's program, run against the emulator layers, with what it printed captured. Programs that wait
 * on real time (vector-store indexing, the limiter's window) run live, on short emulator timings.
 */
import { afterEach, assert, describe, it, vi } from "@effect/vitest"
import { Chat, type ChatSchema, ClientConfig, Files, Testing, VectorStores } from "effect-aifs"
import { isFunctionCall } from "effect-aifs/schemas/Chat"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as AiToolkit from "./ai-toolkit.js"
import * as Batch from "./batch.js"
import * as ChatTools from "./chat-tools.js"
import * as LimiterState from "./limiter-state.js"
import * as Rag from "./rag.js"
import { inference } from "./run.js"
import * as Streaming from "./streaming.js"
import * as Telemetry from "./telemetry.js"
import * as VectorSearch from "./vector-search.js"

/** What the examples print (`Console.log` and `process.stdout.write`), captured instead of shown. */
let output = ""
const capture = () => {
  output = ""
  vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
    output += `${args.map(String).join(" ")}\n`
  })
  vi.spyOn(console, "error").mockImplementation(() => {})
  vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    output += String(chunk)
    return true
  })
}
afterEach(() => {
  vi.restoreAllMocks()
})

/** The emulator's Chat, recording every request it sends and every answer it gets. */
const recordingChat = (
  sent: Array<{ params: ChatSchema.CreateChatCompletionParams; answer: ChatSchema.ChatCompletion }>
) =>
  Layer.effect(
    Chat.Chat,
    Effect.map(Chat.Chat, (chat) => ({
      ...chat,
      create: (params: ChatSchema.CreateChatCompletionParams) =>
        Effect.tap(chat.create(params), (answer) => Effect.sync(() => sent.push({ params, answer })))
    }))
  ).pipe(Layer.provide(Testing.layerEmulator()))

describe("examples", () => {
  it.effect("telemetry: GenAI spans for model calls, a plain span for the upload, both histograms", () =>
    Effect.gen(function*() {
      capture()
      const { metrics, spans } = yield* Telemetry.program
      const names = spans.map((span) => span.name)
      for (
        const name of ["chat Llama-3.3-70B-Instruct", "chat gpt-4o", "embeddings text-embedding-bge-m3", "Files.upload"]
      ) {
        assert.include(names, name)
      }
      assert.include(output, "span chat Llama-3.3-70B-Instruct (client) gen_ai.operation.name=chat")
      assert.include(output, "gen_ai.response.finish_reasons=[\"stop\"]")
      const metricNames = metrics.resourceMetrics.scopeMetrics.flatMap((scope) =>
        scope.metrics.map((metric) => metric.descriptor.name)
      )
      assert.includeMembers(metricNames, ["gen_ai.client.operation.duration", "gen_ai.client.token.usage"])
    }).pipe(Effect.provide(Layer.provideMerge(Testing.layerEmulator(), Telemetry.TelemetryLive))))

  it.effect("ai-toolkit: the tool is called with the city, its result answers the next turn, an object decodes", () =>
    Effect.gen(function*() {
      capture()
      const { answered, asked, forecast } = yield* AiToolkit.program
      assert.deepStrictEqual(asked.toolCalls.map((call) => [call.name, call.params]), [["get_weather", {
        city: "Berlin"
      }]])
      assert.deepStrictEqual(asked.toolResults.map((result) => result.result), [{
        city: "Berlin",
        celsius: 21,
        sky: "sunny"
      }])
      assert.strictEqual(answered.finishReason, "stop")
      assert.deepStrictEqual(forecast, { city: "Berlin", summary: "Berlin" })
      assert.include(output, "the model called get_weather({\"city\":\"Berlin\"})")
    }).pipe(Effect.provide(Testing.layerEmulator())))

  it.effect("chat-tools: the model asks for the tool, the code runs it, the result goes back, a final answer", () => {
    const sent: Array<{ params: ChatSchema.CreateChatCompletionParams; answer: ChatSchema.ChatCompletion }> = []
    return Effect.gen(function*() {
      capture()
      const { answer, messages } = yield* ChatTools.program
      // the model asked for get_weather with the city from the question
      const [first, second] = sent
      assert.strictEqual(sent.length, 2)
      const call = first!.answer.choices[0]!.message.tool_calls![0]!
      assert(isFunctionCall(call))
      assert.strictEqual(call.function.name, "get_weather")
      assert.deepStrictEqual(JSON.parse(call.function.arguments), { city: "Berlin", unit: "celsius" })
      // the code ran it, and its result went back to the service with the call's id
      const expected = yield* ChatTools.getWeather({ city: "Berlin", unit: "celsius" })
      const toolMessage = second!.params.messages.find((m) => m.role === "tool")
      assert.deepStrictEqual(toolMessage, { role: "tool", tool_call_id: call.id, content: JSON.stringify(expected) })
      assert.deepStrictEqual(second!.params.messages.map((m) => m.role), ["user", "assistant", "tool"])
      assert.deepStrictEqual(messages, second!.params.messages)
      // the final answer was written with the result in its prompt (the emulator counts the tool message)
      assert.isAbove(second!.answer.usage!.prompt_tokens, first!.answer.usage!.prompt_tokens)
      assert.strictEqual(answer.choices[0]?.finish_reason, "stop")
      assert.isAbove(answer.text.length, 0)
      assert.include(output, `get_weather({"city":"Berlin","unit":"celsius"})`)
      assert.include(output, `Answer (stop): ${answer.text}`)
    }).pipe(Effect.provide(recordingChat(sent)))
  })

  it.effect("streaming: the text streamed to stdout is the collected text, reasoning first", () =>
    Effect.gen(function*() {
      capture()
      const { answer, reasoned, streamed } = yield* Streaming.program
      assert.isAbove(streamed.length, 0)
      assert.strictEqual(streamed, answer.text)
      assert.include(output, `streamed:\n${answer.text}\n[collected: ${answer.text.length} characters`)
      assert.isAbove(answer.usage?.completion_tokens ?? 0, 0)
      // Chat.collect gives what a plain create returns for the same request
      const plain = yield* (yield* Chat.Chat).create(Streaming.request)
      assert.strictEqual(plain.text, answer.text)
      assert.strictEqual(plain.choices[0]?.finish_reason, answer.choices[0]?.finish_reason)
      // the reasoning model's reasoning was printed before its answer
      const reasoning = reasoned.choices[0]?.message.reasoning_content ?? ""
      assert.isAbove(reasoning.length, 0)
      assert.isAbove(reasoned.text.length, 0)
      assert.include(output, `(thinking) ${reasoning}\n  (answer) ${reasoned.text}`)
    }).pipe(Effect.provide(Testing.layerEmulator())))

  // live: the emulator indexes a file in half a second of its clock, and waitForFile polls every second
  it.live("vector-search: similar texts score higher; search finds a text and a page image, sent as image_url", () =>
    Effect.gen(function*() {
      capture()
      const { answer, content, results, scores } = yield* VectorSearch.program
      assert.isAbove(scores[0]!.score, scores[1]!.score)

      assert.isAbove(results.texts.length, 0)
      assert.strictEqual(results.texts[0]!.filename, "handbook.txt")
      assert.include(results.texts[0]!.text, "20 requests per minute")
      const [image] = results.imageResults
      assert.strictEqual(results.imageResults.length, 1)
      assert.strictEqual(image!.filename, "page-1.png")
      const url = image!.images[0]!
      assert.match(url, /^data:image\/png;base64,/)
      const bytes = Buffer.from(url.slice("data:image/png;base64,".length), "base64")
      assert.deepStrictEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47])
      // the image hit went to the visual model as an image_url part, beside the excerpts
      assert.deepStrictEqual(content.slice(1), [{ type: "image_url", image_url: { url } }])
      assert.include(content[0]!.type === "text" ? content[0]!.text : "", results.texts[0]!.text)
      assert.isAbove(answer.text.length, 0)
      assert.match(output, /text +\d\.\d{3} +handbook\.txt/)
      assert.match(output, /image +\d+\.\d{3} +page-1\.png +data:image\/png;base64,/)

      // the store and both uploads were deleted when the program ended
      assert.deepStrictEqual((yield* (yield* VectorStores.VectorStores).list()).data, [])
      assert.deepStrictEqual((yield* (yield* Files.Files).list({ purpose: "visual-rag" })).data, [])
    }).pipe(Effect.provide(Testing.layerEmulator())))

  it.effect("rag: ingest gives one outcome per file, each answer names its source file", () =>
    Effect.gen(function*() {
      capture()
      const { answers, outcomes } = yield* Rag.program
      assert.deepStrictEqual(outcomes.map((o) => [o.name, o.ok, o.status]), [
        ["handbook.txt", true, "ingested"],
        ["canteen.md", true, "ingested"],
        ["diagram.bin", false, "file_type_not_supported"]
      ])
      const [code, soup] = answers
      assert.include(code!.answer.text, "7319-KESTREL")
      assert.strictEqual(code!.answer.sources?.[0]?.fileName, "handbook.txt")
      assert.include(code!.answer.sources?.[0]?.passage ?? "", "7319-KESTREL")
      assert.strictEqual(soup!.answer.sources?.[0]?.fileName, "canteen.md")
      assert.include(output, "diagram.bin: not ingested")
      assert.include(output, "source: handbook.txt")
    }).pipe(
      // no upload or ingestion delay: the test needs no clock to move
      Effect.provide(Testing.layerGatewayEmulator({ gateway: { uploadDelay: 0, ingestDuration: 0 } }))
    ))

  it.effect("batch: one result line per request, the failing request as an error line", () =>
    Effect.gen(function*() {
      capture()
      const lines = yield* Batch.program
      assert.strictEqual(lines.length, Batch.requests.length)
      assert.deepStrictEqual(
        lines.map((l) => l.custom_id).sort(),
        Batch.requests.map((r) => r.custom_id).sort()
      )
      for (const line of lines) {
        if (line.custom_id === "typo") {
          assert.isNull(line.response)
          assert.deepStrictEqual(line.error?.code, "NotFound")
          assert.strictEqual(line.error?.status, 404)
        } else {
          assert.isNull(line.error)
          assert.strictEqual(line.response?.status_code, 200)
          const body = line.response?.body as { choices: Array<{ message?: { content: string }; text?: string }> }
          assert.isAbove((body.choices[0]?.message?.content ?? body.choices[0]?.text ?? "").length, 0)
        }
      }
      // every line was printed as one JSON line
      const printed = output.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
      assert.deepStrictEqual(printed, JSON.parse(JSON.stringify(lines)))
      assert.include(output, "5 lines, 4 answered, 1 failed")
    }).pipe(Effect.provide(Testing.layerEmulator())))

  // live: the last five requests wait for the emulator's (short) window to pass
  it.live("limiter-state: the changes stream shows callers waiting, then none; no 429s", () =>
    Effect.gen(function*() {
      capture()
      const { answers, final, met429, seen } = yield* LimiterState.program
      assert.strictEqual(answers.length, 25)
      assert.strictEqual(met429, 0)
      const peak = Math.max(...seen.map((b) => b.waiting))
      assert.isAbove(peak, 0)
      assert.isAtMost(peak, 5)
      // the request budget binds: 20 a window on basic's Llama row
      assert.isTrue(seen.some((b) => b.budgets.requests.used === 20 && b.budgets.requests.limit === 20))
      assert.isTrue(seen.some((b) => b.binding === "requests"))
      assert.strictEqual(seen[seen.length - 1]?.waiting, 0)
      assert.strictEqual(final?.waiting, 0)
      assert.match(output, /waiting: +[1-5] +window: 20\/20 requests/)
      assert.include(output, "25/25 answered")
    }).pipe(Effect.provide(Testing.layerEmulator({ tier: "basic", window: "3 seconds" }))))

  it.effect("run.ts: without AIFS_API_KEY the examples use the emulator, with it the configured service", () =>
    Effect.gen(function*() {
      capture()
      const baseUrl = Effect.map(ClientConfig.ClientConfig, (config) => config.baseUrl)
      const emulated = yield* baseUrl.pipe(
        Effect.provide(inference()),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
      )
      assert.match(emulated, /^http:\/\/127\.0\.0\.1:\d+\/v2$/)
      const real = yield* baseUrl.pipe(
        Effect.provide(inference()),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["AIFS_API_KEY", `gen-${"x".repeat(48)}`]])))
      )
      assert.strictEqual(real, "https://llm-server.llmhub.t-systems.net/v2")
    }))
})
