/**
 * Prompt caching without a server: the emulator's cache of Claude prefixes (breakpoints, lifetimes, the lookback, the
 * bound), the counts a span reads from an answer under either naming, the usage's accessors, and the `@effect/ai`
 * provider's cache hints as `cache_control` on messages, parts and tool definitions.
 */
import * as Prompt from "@effect/ai/Prompt"
import * as Tool from "@effect/ai/Tool"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { AifsLanguageModel } from "../../src/ai.js"
import { PromptCache } from "../../src/emulator/promptCache.js"
import { messages, tools } from "../../src/internal/ai/prompt.js"
import { usage } from "../../src/internal/ai/response.js"
import { ResponseSummary } from "../../src/internal/telemetry.js"
import type { ChatMessage, CreateChatCompletionParams } from "../../src/schemas/Chat.js"
import { Usage } from "../../src/schemas/Shared.js"
import { words } from "../helpers/emulatorWire.js"

const claude = "claude-sonnet-4.5"
const ephemeral = { type: "ephemeral" } as const
const minutes = (n: number) => n * 60_000

/** A system prompt of `n` one-token words, its part a breakpoint, then one question. */
const cachedSystem = (n: number, question: string, ttl?: string): CreateChatCompletionParams => ({
  model: claude,
  messages: [
    {
      role: "system",
      content: [{ type: "text", text: words(n), cache_control: ttl === undefined ? ephemeral : { ...ephemeral, ttl } }]
    },
    { role: "user", content: question }
  ]
})

// the prefix up to the system part: the reply's priming (3), the message's own (3), the words
const systemPrefix = (n: number) => 3 + 3 + n

describe("the emulator's prompt cache", () => {
  it("writes the prefix up to a breakpoint, then reads it back for the same key and model", () => {
    const cache = new PromptCache()
    assert.deepStrictEqual(cache.use("k", claude, cachedSystem(200, "first?"), 0), { read: 0, written: 206 })
    assert.strictEqual(systemPrefix(200), 206)
    // what follows the breakpoint may change
    assert.deepStrictEqual(cache.use("k", claude, cachedSystem(200, "second?"), 1_000), { read: 206, written: 0 })
    // another key, another model or another prefix: nothing to read
    assert.deepStrictEqual(cache.use("other", claude, cachedSystem(200, "first?"), 2_000), { read: 0, written: 206 })
    assert.deepStrictEqual(cache.use("k", "claude-3-7-sonnet", cachedSystem(200, "x"), 2_000), {
      read: 0,
      written: 206
    })
    assert.deepStrictEqual(cache.use("k", claude, cachedSystem(201, "first?"), 2_000), { read: 0, written: 207 })
  })

  it("nothing without breakpoints; no answer at all for a model that is not a Claude model", () => {
    const cache = new PromptCache()
    const plain: CreateChatCompletionParams = { model: claude, messages: [{ role: "user", content: words(50) }] }
    assert.deepStrictEqual(cache.use("k", claude, plain, 0), { read: 0, written: 0 })
    assert.deepStrictEqual(cache.use("k", claude, plain, 1), { read: 0, written: 0 })
    assert.isUndefined(cache.use("k", "Llama-3.3-70B-Instruct", cachedSystem(200, "q"), 0))
    assert.isUndefined(cache.use("k", "gpt-4.1", cachedSystem(200, "q"), 0))
    assert.strictEqual(cache.size, 0)
  })

  it("a prefix lives five minutes from its last use, an hour with ttl 1h", () => {
    const cache = new PromptCache()
    cache.use("k", claude, cachedSystem(100, "a"), 0)
    assert.strictEqual(cache.use("k", claude, cachedSystem(100, "b"), minutes(5) - 1)?.read, 106)
    // the read renewed it
    assert.strictEqual(cache.use("k", claude, cachedSystem(100, "c"), minutes(10) - 2)?.read, 106)
    assert.deepStrictEqual(cache.use("k", claude, cachedSystem(100, "d"), minutes(15) - 2), { read: 0, written: 106 })
    cache.use("k", claude, cachedSystem(300, "a", "1h"), 0)
    assert.strictEqual(cache.use("k", claude, cachedSystem(300, "b", "1h"), minutes(59))?.read, 306)
    assert.strictEqual(cache.use("k", claude, cachedSystem(300, "c", "1h"), minutes(119) + 1)?.read, 0)
  })

  it("a conversation: each turn reads the last turn's prefix and writes only what it added", () => {
    const cache = new PromptCache()
    const turn1: Array<ChatMessage> = [
      { role: "system", content: [{ type: "text", text: words(100), cache_control: ephemeral }] },
      { role: "user", content: [{ type: "text", text: words(40), cache_control: ephemeral }] }
    ]
    // the system prompt (106), then the question: the message's own 3 and its 40 words
    assert.deepStrictEqual(cache.use("k", claude, { model: claude, messages: turn1 }, 0), { read: 0, written: 149 })
    const turn2: Array<ChatMessage> = [
      turn1[0]!,
      // the breakpoint moved on: the part is the same without it
      { role: "user", content: [{ type: "text", text: words(40) }] },
      { role: "assistant", content: words(10) },
      { role: "user", content: [{ type: "text", text: words(20), cache_control: ephemeral }] }
    ]
    assert.deepStrictEqual(cache.use("k", claude, { model: claude, messages: turn2 }, 1_000), {
      read: 149,
      written: 13 + 23
    })
  })

  it("tool definitions come first, each a block: a breakpoint on the last one caches them all", () => {
    const cache = new PromptCache()
    const tool = (name: string, cached: boolean) => ({
      type: "function" as const,
      function: { name, parameters: { type: "object" } },
      ...(cached ? { cache_control: ephemeral } : {})
    })
    const params = (question: string): CreateChatCompletionParams => ({
      model: claude,
      tools: [tool("first_tool", false), tool("second_tool", true)],
      messages: [{ role: "user", content: question }]
    })
    const first = cache.use("k", claude, params(words(30)), 0)!
    assert.isAbove(first.written, 3)
    assert.deepStrictEqual(cache.use("k", claude, params(words(31)), 1), { read: first.written, written: 0 })
  })

  it("a read looks back 20 blocks from a breakpoint, no further", () => {
    const cache = new PromptCache()
    const part = (i: number, cached = false) => ({
      type: "text" as const,
      text: `part ${i}`,
      ...(cached ? { cache_control: ephemeral } : {})
    })
    const prompt = (length: number): CreateChatCompletionParams => ({
      model: claude,
      messages: [{ role: "user", content: Array.from({ length }, (_, i) => part(i, i === length - 1)) }]
    })
    const written = cache.use("k", claude, prompt(1), 0)!.written
    // the written prefix is the 20th block back from the breakpoint: found
    assert.strictEqual(cache.use("k", claude, prompt(20), 1)?.read, written)
    const cache2 = new PromptCache()
    cache2.use("k", claude, prompt(1), 0)
    // the 21st: not found
    assert.strictEqual(cache2.use("k", claude, prompt(21), 1)?.read, 0)
  })

  it("keeps at most its capacity, the least recently used dropped first", () => {
    const cache = new PromptCache(2)
    cache.use("k", claude, cachedSystem(10, "q"), 0)
    cache.use("k", claude, cachedSystem(11, "q"), 1)
    // a read makes the first the most recently used
    assert.strictEqual(cache.use("k", claude, cachedSystem(10, "r"), 2)?.read, 16)
    cache.use("k", claude, cachedSystem(12, "q"), 3)
    assert.strictEqual(cache.size, 2)
    assert.strictEqual(cache.use("k", claude, cachedSystem(11, "r"), 4)?.read, 0)
    assert.strictEqual(cache.use("k", claude, cachedSystem(12, "r"), 5)?.read, 18)
  })
})

describe("cached tokens on the usage and the span", () => {
  const decode = Schema.decodeUnknownSync(Usage)

  it("the usage reads OpenAI's names first, else an Anthropic-style proxy's, else says nothing", () => {
    const openai = decode({ prompt_tokens: 9, prompt_tokens_details: { cached_tokens: 5, cache_write_tokens: 2 } })
    assert.strictEqual(openai.cacheReadTokens, 5)
    assert.strictEqual(openai.cacheWriteTokens, 2)
    const proxy = decode({ prompt_tokens: 9, cache_read_input_tokens: 4, cache_creation_input_tokens: 3 })
    assert.strictEqual(proxy.cacheReadTokens, 4)
    assert.strictEqual(proxy.cacheWriteTokens, 3)
    const both = decode({
      prompt_tokens: 9,
      prompt_tokens_details: { cached_tokens: 6 },
      cache_read_input_tokens: 1,
      cache_creation_input_tokens: 3
    })
    assert.strictEqual(both.cacheReadTokens, 6)
    assert.strictEqual(both.cacheWriteTokens, 3)
    const none = decode({ prompt_tokens: 9, prompt_tokens_details: { audio_tokens: 0 } })
    assert.isUndefined(none.cacheReadTokens)
    assert.isUndefined(none.cacheWriteTokens)
  })

  it("the span says gen_ai.usage.cache_read / cache_creation .input_tokens under any of the names", () => {
    const attributes = (usage: Record<string, unknown>) => {
      const summary = new ResponseSummary()
      summary.observe({ model: "m", usage })
      return summary.attributes()
    }
    assert.deepInclude(attributes({ prompt_tokens: 9, prompt_tokens_details: { cached_tokens: 5 } }), {
      "gen_ai.usage.input_tokens": 9,
      "gen_ai.usage.cache_read.input_tokens": 5
    })
    assert.deepInclude(
      attributes({ prompt_tokens: 9, cache_read_input_tokens: 4, cache_creation_input_tokens: 3 }),
      { "gen_ai.usage.cache_read.input_tokens": 4, "gen_ai.usage.cache_creation.input_tokens": 3 }
    )
    assert.deepInclude(
      attributes({ input_tokens: 9, input_tokens_details: { cached_tokens: 2, cache_write_tokens: 1 } }),
      { "gen_ai.usage.cache_read.input_tokens": 2, "gen_ai.usage.cache_creation.input_tokens": 1 }
    )
    const plain = attributes({ prompt_tokens: 9, completion_tokens: 1 })
    assert.notProperty(plain, "gen_ai.usage.cache_read.input_tokens")
    assert.notProperty(plain, "gen_ai.usage.cache_creation.input_tokens")
  })

  it("the @effect/ai usage: cachedInputTokens from either name", () => {
    assert.strictEqual(usage(decode({ prompt_tokens: 9, cache_read_input_tokens: 4 })).cachedInputTokens, 4)
    assert.strictEqual(
      usage(decode({ prompt_tokens: 9, prompt_tokens_details: { cached_tokens: 7 } })).cachedInputTokens,
      7
    )
    assert.notProperty(usage(decode({ prompt_tokens: 9 })), "cachedInputTokens")
  })
})

describe("the @effect/ai provider's cache hints", () => {
  const hint = { aifs: { cacheControl: ephemeral } }

  it.effect("a hint on a system message, a part or a message puts cache_control on the part it ends", () =>
    Effect.gen(function*() {
      const prompt = Prompt.make([
        { role: "system", content: "Long instructions.", options: hint },
        {
          role: "user",
          content: [{ type: "text", text: "Context. ", options: hint }, { type: "text", text: "Question?" }]
        },
        { role: "user", content: [{ type: "text", text: "Another." }], options: hint },
        { role: "user", content: "Plain." }
      ])
      assert.deepStrictEqual(yield* messages(prompt), [
        { role: "system", content: [{ type: "text", text: "Long instructions.", cache_control: ephemeral }] },
        {
          role: "user",
          content: [{ type: "text", text: "Context. ", cache_control: ephemeral }, { type: "text", text: "Question?" }]
        },
        { role: "user", content: [{ type: "text", text: "Another.", cache_control: ephemeral }] },
        { role: "user", content: "Plain." }
      ])
    }))

  it.effect("assistant text, a tool-call-only answer and tool results; the anthropic namespace too", () =>
    Effect.gen(function*() {
      const anthropic = { anthropic: { cacheControl: { type: "ephemeral", ttl: "1h" } } }
      const prompt = Prompt.make([
        { role: "assistant", content: [{ type: "text", text: "Answer." }], options: anthropic },
        {
          role: "assistant",
          content: [{ type: "tool-call", id: "c1", name: "look", params: {}, providerExecuted: false, options: hint }]
        },
        {
          role: "tool",
          content: [{
            type: "tool-result",
            id: "c1",
            name: "look",
            result: "seen",
            isFailure: false,
            providerExecuted: false
          }],
          options: hint
        }
      ])
      assert.deepStrictEqual(yield* messages(prompt), [
        {
          role: "assistant",
          content: [{ type: "text", text: "Answer.", cache_control: { type: "ephemeral", ttl: "1h" } }]
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "look", arguments: "{}" } }],
          cache_control: ephemeral
        },
        { role: "tool", tool_call_id: "c1", content: [{ type: "text", text: "seen", cache_control: ephemeral }] }
      ])
    }))

  it.effect("a hint that is not an object with a type is none", () =>
    Effect.gen(function*() {
      const prompt = Prompt.make([{ role: "system", content: "S", options: { anthropic: { cacheControl: "yes" } } }])
      assert.deepStrictEqual(yield* messages(prompt), [{ role: "system", content: "S" }])
    }))

  it.effect("a tool annotated with AifsLanguageModel.CacheControl carries cache_control on its definition", () =>
    Effect.gen(function*() {
      const cached = Tool.make("cached", { parameters: { q: Schema.String } }).annotate(
        AifsLanguageModel.CacheControl,
        ephemeral
      )
      const plain = Tool.make("plain", { parameters: { q: Schema.String } })
      const fields = yield* tools({ tools: [plain, cached], toolChoice: "auto" })
      assert.notProperty(fields.tools![0]!, "cache_control")
      assert.deepStrictEqual(fields.tools![1]!.cache_control, ephemeral)
    }))
})
