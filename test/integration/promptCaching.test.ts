/**
 * Prompt caching against the emulator on a loopback port: `cache_control` on content parts, system messages and tool
 * definitions, and any other provider field, reach the wire as given; a Claude prompt repeated within five minutes of
 * the emulator's clock reports its prefix as cached tokens on the result, the stream's usage and the span; the
 * `@effect/ai` provider sends its cache hints as `cache_control` and reports the cached tokens in its usage.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as Tracer from "effect/Tracer"
import { AifsLanguageModel } from "../../src/ai.js"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as Inference from "../../src/layers/Inference.js"
import * as Node from "../../src/layers/Node.js"
import type { ChatMessage, CreateChatCompletionParams, FunctionTool } from "../../src/schemas/Chat.js"
import * as Chat from "../../src/services/Chat.js"
import { words } from "../helpers/emulatorWire.js"

const claude = "claude-sonnet-4.5"
const ephemeral = { type: "ephemeral" } as const

/** The Node HTTP client, every request body it is handed kept as text in `bodies` (what goes on the socket). */
const recordingHttp = (bodies: Array<string>) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) =>
      HttpClient.tapRequest(client, (request) =>
        Effect.sync(() => {
          if (request.body._tag === "Uint8Array") bodies.push(new TextDecoder().decode(request.body.body))
        })))
  ).pipe(Layer.provide(Node.layerHttpClient()))

/** The emulator, and the client's services against it over the recording HTTP client (no limiter, no retries). */
const client = (bodies: Array<string>) =>
  Layer.unwrapEffect(Effect.map(Emulator.Emulator, (emulator) =>
    Inference.layerHttpLimited(false).pipe(
      Layer.provide(recordingHttp(bodies)),
      Layer.provideMerge(
        ClientConfig.layer({ apiKey: emulator.keyFor("standard4000")!, baseUrl: emulator.baseUrl, maxRetries: 0 })
      )
    ))).pipe(Layer.provideMerge(Emulator.layer()))

/** A tracer keeping every span it makes, over the test's own. */
const recording = (spans: Array<Tracer.Span>) =>
  Effect.map(Effect.tracer, (base) =>
    Tracer.make({
      span: (...args) => {
        const span = base.span(...args)
        spans.push(span)
        return span
      },
      context: base.context
    }))

/** A Claude conversation: a long system prompt whose part is a breakpoint, then `question`. */
const conversation = (question: string): CreateChatCompletionParams => ({
  model: claude,
  messages: [
    { role: "system", content: [{ type: "text", text: words(400), cache_control: ephemeral }] },
    { role: "user", content: question }
  ]
})

// the prefix up to the breakpoint: the reply's priming (3), the system message's own (3), its 400 words
const prefixTokens = 406

describe("cache_control and other provider fields on the wire", () => {
  it.effect("on a content part, a system message and a tool definition: sent byte for byte, read by the emulator", () => {
    const bodies: Array<string> = []
    return Effect.gen(function*() {
      // fields this client does not model pass as they are (objects not written in place: the compiler allows them)
      const part = {
        type: "text",
        text: words(50),
        cache_control: ephemeral,
        x_provider_field: { keep: [1, "two"] }
      } as const
      const system = {
        role: "system",
        content: [{ type: "text", text: words(30), cache_control: { type: "ephemeral", ttl: "1h", x_extra: true } }],
        x_provider_field: "system"
      } as const
      const tool = {
        type: "function",
        function: { name: "lookup", parameters: { type: "object", properties: {} } },
        cache_control: ephemeral,
        x_provider_field: 3
      } as const
      const messages: Array<ChatMessage> = [system, { role: "user", content: [part] }]
      const tools: Array<FunctionTool> = [tool]
      const params: CreateChatCompletionParams = { model: claude, messages, tools, max_tokens: 20 }
      const answer = yield* Chat.Chat.pipe(Effect.flatMap((chat) => chat.create(params)))
      assert.strictEqual(bodies.length, 1)
      assert.strictEqual(bodies[0], JSON.stringify(params))
      const sent = JSON.parse(bodies[0]!)
      assert.deepStrictEqual(sent.tools[0].cache_control, ephemeral)
      assert.strictEqual(sent.tools[0].x_provider_field, 3)
      assert.deepStrictEqual(sent.messages[0].content[0].cache_control, { type: "ephemeral", ttl: "1h", x_extra: true })
      assert.strictEqual(sent.messages[0].x_provider_field, "system")
      assert.deepStrictEqual(sent.messages[1].content[0].x_provider_field, { keep: [1, "two"] })
      // the emulator read the three breakpoints: the whole prefix up to the user's part was written
      assert.strictEqual(answer.usage?.cacheReadTokens, 0)
      assert.isAbove(answer.usage?.cacheWriteTokens ?? 0, 50 + 30)
      assert.strictEqual(answer.usage?.cache_creation_input_tokens, answer.usage?.cacheWriteTokens)
    }).pipe(Effect.provide(client(bodies)))
  })
})

describe("a Claude prompt repeated: cached tokens on the result and the span", () => {
  it.effect("written on first sight, read back within five minutes, written again after", () => {
    const bodies: Array<string> = []
    return Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const spans: Array<Tracer.Span> = []
      const tracer = yield* recording(spans)
      const first = yield* chat.create(conversation("What does clause 4 say?")).pipe(Effect.withTracer(tracer))
      assert.strictEqual(first.usage?.cacheWriteTokens, prefixTokens)
      assert.strictEqual(first.usage?.cacheReadTokens, 0)
      yield* TestClock.adjust("4 minutes")
      const second = yield* chat.create(conversation("And clause 5?")).pipe(Effect.withTracer(tracer))
      assert.strictEqual(second.usage?.prompt_tokens_details?.cached_tokens, prefixTokens)
      assert.strictEqual(second.usage?.cacheReadTokens, prefixTokens)
      assert.strictEqual(second.usage?.cacheWriteTokens, 0)
      assert.isAbove(second.usage!.prompt_tokens, prefixTokens)
      const attributes = spans.filter((span) => span.name === `chat ${claude}`).map((span) =>
        Object.fromEntries(span.attributes)
      )
      assert.strictEqual(attributes.length, 2)
      assert.deepInclude(attributes[0], {
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_creation.input_tokens": prefixTokens
      })
      assert.deepInclude(attributes[1], {
        "gen_ai.usage.input_tokens": second.usage!.prompt_tokens,
        "gen_ai.usage.cache_read.input_tokens": prefixTokens,
        "gen_ai.usage.cache_creation.input_tokens": 0
      })
      // five minutes after its last read, the prefix is gone
      yield* TestClock.adjust("5 minutes")
      const third = yield* chat.create(conversation("And clause 6?"))
      assert.strictEqual(third.usage?.cacheReadTokens, 0)
      assert.strictEqual(third.usage?.cacheWriteTokens, prefixTokens)
    }).pipe(Effect.provide(client(bodies)))
  })

  it.effect("a stream's usage chunk carries them too; another model caches nothing and says nothing of it", () => {
    const bodies: Array<string> = []
    return Effect.gen(function*() {
      const chat = yield* Chat.Chat
      yield* chat.create(conversation("First"))
      const folded = yield* Chat.collect(chat.createStream(conversation("Second")))
      assert.strictEqual(folded.usage?.cacheReadTokens, prefixTokens)
      const llama = { ...conversation("First"), model: "Llama-3.3-70B-Instruct" }
      yield* chat.create(llama)
      const again = yield* chat.create(llama)
      assert.isUndefined(again.usage?.cacheReadTokens)
      assert.isUndefined(again.usage?.cacheWriteTokens)
    }).pipe(Effect.provide(client(bodies)))
  })
})

const Lookup = Tool.make("lookup_clause", {
  description: "The text of a clause",
  parameters: { number: Schema.Number },
  success: Schema.String
}).annotate(AifsLanguageModel.CacheControl, ephemeral)
const Tools = Toolkit.make(Lookup)
const ToolsLive = Tools.toLayer({ lookup_clause: ({ number }) => Effect.succeed(`Clause ${number}.`) })

describe("the @effect/ai provider", () => {
  it.effect("sends its cache hints as cache_control, and reports the cached tokens in its usage", () => {
    const bodies: Array<string> = []
    return Effect.gen(function*() {
      const ask = (question: string) =>
        LanguageModel.generateText({
          prompt: [
            { role: "system", content: words(300), options: { aifs: { cacheControl: ephemeral } } },
            { role: "user", content: question }
          ],
          toolkit: Tools
        })
      const first = yield* ask("Summarise the contract.")
      const sent = JSON.parse(bodies[0]!)
      assert.deepStrictEqual(sent.tools[0].cache_control, ephemeral)
      assert.deepStrictEqual(sent.messages[0].content, [{ type: "text", text: words(300), cache_control: ephemeral }])
      const finish = first.content.find((part) => part.type === "finish")
      const written = (finish?.metadata as { aifs?: { cacheWriteTokens?: number } } | undefined)?.aifs?.cacheWriteTokens
      assert.isAbove(written ?? 0, 300)
      assert.strictEqual(first.usage.cachedInputTokens, 0)
      const second = yield* ask("List the parties.")
      assert.strictEqual(second.usage.cachedInputTokens, written)
    }).pipe(
      Effect.provide([AifsLanguageModel.model(claude), ToolsLive]),
      Effect.provide(client(bodies))
    )
  })
})
