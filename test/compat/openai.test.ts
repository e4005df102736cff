/**
 * The official `openai` client against the emulator: what users of that client (and of tools built on it)
 * see must work unchanged. Live clock: the client's own timers run for real.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import OpenAI from "openai"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as Testing from "../../src/layers/Testing.js"
import type { FunctionTool } from "../../src/schemas/Chat.js"
import * as Chat from "../../src/services/Chat.js"
import * as Completions from "../../src/services/Completions.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import * as Models from "../../src/services/Models.js"
import { ask } from "../helpers/emulator.js"

/** An `openai` client on the emulator's `/v2`, with the key of a tier. */
const openai = (tier: "basic" | "standard4000" | "seed" = "standard4000", apiKey?: string) =>
  Effect.map(
    Emulator.Emulator,
    (emulator) =>
      new OpenAI({
        apiKey: apiKey ?? emulator.keyFor(tier)!,
        baseURL: emulator.baseUrl,
        maxRetries: 0,
        timeout: 10_000
      })
  )

const call = <A>(f: () => PromiseLike<A>) => Effect.promise(() => Promise.resolve(f()))

/** Runs `f` and returns what it threw (fails the test when it did not throw). */
const thrown = (f: () => PromiseLike<unknown>) =>
  Effect.promise(async () => {
    try {
      await f()
    } catch (error) {
      return error
    }
    throw new Error("expected the call to throw")
  })

// a fresh emulator (and our client on it) per test, on a loopback port, stopped with the test's scope
const emulator = () => Testing.layerEmulator({ client: { maxRetries: 0 } })

const weather = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather forecast for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
} as const satisfies FunctionTool

describe("openai client", () => {
  it.live("models.list pages through every model, meta_data included", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const listed = yield* call(async () => {
        const out: Array<OpenAI.Models.Model> = []
        for await (const model of client.models.list()) out.push(model)
        return out
      })
      const ours = yield* Effect.flatMap(Models.Models, (models) => models.list())
      assert.deepStrictEqual(listed.map((m) => m.id), ours.data.map((m) => m.id))
      const llama = listed.find((m) => m.id === "Llama-3.3-70B-Instruct") as unknown as {
        meta_data?: { source_type?: string }
      }
      assert.strictEqual(llama.meta_data?.source_type, "OPEN SOURCE")
      const one = yield* call(() => client.models.retrieve("gpt-4.1"))
      assert.strictEqual(one.id, "gpt-4.1")
    }).pipe(Effect.provide(emulator())))

  it.live("chat.completions.create returns what our client returns", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const params = ask("Llama-3.3-70B-Instruct", "Say something about quotas")
      const theirs = yield* call(() =>
        client.chat.completions.create({
          model: params.model,
          messages: [{ role: "user", content: "Say something about quotas" }]
        })
      )
      const ours = yield* Effect.flatMap(Chat.Chat, (chat) => chat.create(params))
      assert.strictEqual(theirs.object, "chat.completion")
      assert.strictEqual(theirs.choices[0]?.message.content, ours.text)
      assert.strictEqual(theirs.choices[0]?.finish_reason, "stop")
      assert.deepStrictEqual(theirs.usage, {
        prompt_tokens: ours.usage!.prompt_tokens,
        completion_tokens: ours.usage!.completion_tokens!,
        total_tokens: ours.usage!.total_tokens
      })
      assert.strictEqual(theirs.usage!.prompt_tokens + theirs.usage!.completion_tokens, theirs.usage!.total_tokens)
    }).pipe(Effect.provide(emulator())))

  it.live("a chat stream reconstructs the text and ends with the usage chunk", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const messages = [{ role: "user" as const, content: "Stream me an answer" }]
      const plain = yield* call(() => client.chat.completions.create({ model: "gpt-4o", messages }))
      const chunks = yield* call(async () => {
        const stream = await client.chat.completions.create({
          model: "gpt-4o",
          messages,
          stream: true,
          stream_options: { include_usage: true }
        })
        const out: Array<OpenAI.Chat.Completions.ChatCompletionChunk> = []
        for await (const chunk of stream) out.push(chunk)
        return out
      })
      assert.isAbove(chunks.length, 3)
      const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")
      assert.strictEqual(text, plain.choices[0]?.message.content)
      const last = chunks[chunks.length - 1]!
      assert.deepStrictEqual(last.choices, [])
      assert.deepStrictEqual(last.usage, plain.usage)
      assert.strictEqual(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, "stop")
      // without include_usage there is no usage chunk
      const bare = yield* call(async () => {
        const stream = await client.chat.completions.create({ model: "gpt-4o", messages, stream: true })
        const out: Array<OpenAI.Chat.Completions.ChatCompletionChunk> = []
        for await (const chunk of stream) out.push(chunk)
        return out
      })
      assert.isTrue(bare.every((c) => c.usage === undefined || c.usage === null))
      assert.strictEqual(bare.map((c) => c.choices[0]?.delta.content ?? "").join(""), text)
    }).pipe(Effect.provide(emulator())))

  it.live("the stream helper accumulates a reasoning model's stream into the plain completion", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const messages = [{ role: "user" as const, content: "Think first" }]
      const plain = yield* call(() => client.chat.completions.create({ model: "gpt-oss-120b", messages }))
      const final = yield* call(() =>
        client.chat.completions.stream({ model: "gpt-oss-120b", messages, stream_options: { include_usage: true } })
          .finalChatCompletion()
      )
      assert.strictEqual(final.choices[0]?.message.content, plain.choices[0]?.message.content)
      assert.deepStrictEqual(final.usage, plain.usage)
      const reasoning = (plain.choices[0]?.message as { reasoning_content?: string }).reasoning_content
      assert.isAbove(reasoning?.length ?? 0, 0)
    }).pipe(Effect.provide(emulator())))

  it.live("completions.create returns what our client returns", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const theirs = yield* call(() =>
        client.completions.create({ model: "Llama-3.3-70B-Instruct", prompt: "Once upon a time", max_tokens: 12 })
      )
      const ours = yield* Effect.flatMap(
        Completions.Completions,
        (c) => c.create({ model: "Llama-3.3-70B-Instruct", prompt: "Once upon a time", max_tokens: 12 })
      )
      assert.isAbove(theirs.choices[0]?.text.length ?? 0, 0)
      assert.strictEqual(theirs.choices[0]?.text, ours.choices[0]?.text)
      assert.strictEqual(theirs.usage?.total_tokens, ours.usage?.total_tokens)
    }).pipe(Effect.provide(emulator())))

  it.live("embeddings.create with the default (base64) encoding decodes to our numbers", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const input = ["Ein Satz auf Deutsch", "and one in English"]
      for (
        const [model, dimension] of [["text-embedding-bge-m3", 1024], ["jina-embeddings-v2-base-de", 768]] as const
      ) {
        const theirs = yield* call(() => client.embeddings.create({ model, input }))
        const ours = yield* Effect.flatMap(Embeddings.Embeddings, (e) => e.create({ model, input }))
        assert.strictEqual(theirs.data.length, 2)
        assert.strictEqual(theirs.data[0]!.embedding.length, dimension)
        assert.deepStrictEqual(theirs.data.map((d) => d.embedding), ours.vectors.map((v) => [...v]))
        assert.strictEqual(theirs.usage.total_tokens, ours.usage?.total_tokens)
      }
      const asFloats = yield* call(() =>
        client.embeddings.create({ model: "text-embedding-bge-m3", input: input[0]!, encoding_format: "float" })
      )
      const ours = yield* Effect.flatMap(
        Embeddings.Embeddings,
        (e) => e.create({ model: "text-embedding-bge-m3", input: input[0]! })
      )
      assert.deepStrictEqual(asFloats.data[0]!.embedding, [...ours.vectors[0]!])
    }).pipe(Effect.provide(emulator())))

  it.live("tool calls come back plain and streamed, with arguments that parse", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const request = {
        model: "gpt-4.1",
        messages: [{ role: "user" as const, content: "What is the weather in Munich?" }],
        tools: [weather],
        tool_choice: "required" as const
      }
      const plain = yield* call(() => client.chat.completions.create(request))
      assert.strictEqual(plain.choices[0]?.finish_reason, "tool_calls")
      const call0 = plain.choices[0]?.message.tool_calls?.[0]
      assert.strictEqual(call0?.type, "function")
      if (call0?.type !== "function") return
      assert.strictEqual(call0.function.name, "get_weather")
      assert.deepStrictEqual(JSON.parse(call0.function.arguments), { city: "Munich" })
      const final = yield* call(() => client.chat.completions.stream(request).finalChatCompletion())
      const streamed = final.choices[0]?.message.tool_calls?.[0]
      assert.strictEqual(streamed?.type, "function")
      if (streamed?.type !== "function") return
      assert.strictEqual(streamed.id, call0.id)
      assert.strictEqual(streamed.function.name, "get_weather")
      assert.deepStrictEqual(JSON.parse(streamed.function.arguments), { city: "Munich" })
    }).pipe(Effect.provide(emulator())))

  it.live("an exhausted key of 20 requests a window gives RateLimitError with retry-after and the limit headers", () =>
    Effect.gen(function*() {
      // the seed's basic figures on every model (a basic key itself may not use gpt-4o)
      const client = yield* openai("seed")
      const send = (n: number) =>
        client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: `request ${n}` }] })
      for (let n = 0; n < 20; n++) yield* call(() => send(n))
      const error = yield* thrown(() => send(20))
      assert.instanceOf(error, OpenAI.RateLimitError)
      if (!(error instanceof OpenAI.RateLimitError)) return
      assert.strictEqual(error.status, 429)
      assert.isAbove(Number(error.headers.get("retry-after")), 0)
      assert.strictEqual(error.headers.get("x-ratelimit-remaining-requests"), "0")
      assert.strictEqual(error.headers.get("x-ratelimit-limit-requests"), "20")
      assert.strictEqual(error.code, "429")
      assert.include(error.message, "Rate limit reached")
    }).pipe(
      Effect.provide(
        Testing.layerEmulator({ client: { maxRetries: 0 }, tiers: { seed: Emulator.fallbackQuotas.basic } })
      )
    ))

  it.live("other errors map to the openai client's classes", () =>
    Effect.gen(function*() {
      const wrongKey = yield* openai("standard4000", "gen-notakey000000000000000000000000000000000000000")
      const unauthorized = yield* thrown(() => wrongKey.models.list())
      assert.instanceOf(unauthorized, OpenAI.AuthenticationError)
      const client = yield* openai()
      const notFound = yield* thrown(() =>
        client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "Hi" }] })
      )
      assert.instanceOf(notFound, OpenAI.NotFoundError)
      const badRequest = yield* thrown(() =>
        client.chat.completions.create({ model: "text-embedding-bge-m3", messages: [{ role: "user", content: "Hi" }] })
      )
      assert.instanceOf(badRequest, OpenAI.BadRequestError)
      const invalid = yield* thrown(() =>
        client.chat.completions.create(
          { model: "gpt-4o" } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming
        )
      )
      assert.instanceOf(invalid, OpenAI.UnprocessableEntityError)
    }).pipe(Effect.provide(emulator())))

  // the service answers errors as `{"detail": "..."}`: the openai client reads only `error`, so its users see
  // "429 status code (no body)"; ours carries the server's words in every error's message
  it.live("a `detail` body: the openai client drops the server's words, ours keeps them", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const key = emulator.keys[0]!.key
      const client = new OpenAI({ apiKey: key, baseURL: emulator.baseUrl, maxRetries: 0, timeout: 10_000 })
      const hi = { model: "text-embedding-bge-m3", input: "Hi" }
      // the first request spends the tiny budget; every later one meets the service's budget 429
      yield* call(() => client.embeddings.create(hi))
      const theirs = yield* thrown(() => client.embeddings.create(hi))
      assert.instanceOf(theirs, OpenAI.RateLimitError)
      assert.strictEqual((theirs as Error).message, "429 status code (no body)")
      const ours = yield* Effect.flip(Effect.flatMap(Embeddings.Embeddings, (embeddings) => embeddings.create(hi)))
      assert.strictEqual(ours._tag, "QuotaExceeded")
      assert.strictEqual(ours.message, budgetWords)
    }).pipe(
      Effect.provide(Testing.layerEmulator({
        tier: "basic",
        keys: [{ key: `gen-${"detailwords".padEnd(48, "0")}`, tier: "basic", monthlyBudget: { eur: 1e-12 } }],
        client: { maxRetries: 0 }
      }))
    ))
})

const budgetWords =
  "Your project reached its monthly budget limit. To increase your limit, please get in touch with the administrator."
