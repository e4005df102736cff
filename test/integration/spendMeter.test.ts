/**
 * The spend meter and the client's own monthly budget (`RateLimiter.Options.budget`, `AIFS_BUDGET`), against the
 * emulator on loopback under the `TestClock`: what answered requests cost by the key's plan's prices, added up per key
 * and model for the month; a warning once at 80%; from 100%, or for a request whose estimate (its prompt and whole
 * `max_tokens`) would cross the budget, a `BudgetExceeded` before anything is sent.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as TestClock from "effect/TestClock"
import * as Emulator from "../../src/emulator/Emulator.js"
import { fingerprint } from "../../src/internal/redact.js"
import * as Spend from "../../src/internal/spend.js"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Chat from "../../src/services/Chat.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import { words } from "../helpers/emulatorWire.js"

const claude = "claude-sonnet-4.5"

/** bge-m3 on basic: 0.48 EUR per million tokens; 100 words are 100 tokens to the emulator. */
const embedCost = 100 * 0.48 / 1_000_000
const hundred = words(100)

const embed = Effect.flatMap(Embeddings.Embeddings, (e) => e.create({ model: "text-embedding-bge-m3", input: hundred }))

/** What the configured key spent this month, as the limiter reports it. */
const spending = Effect.gen(function*() {
  const config = yield* ClientConfig.ClientConfig
  const limiter = yield* RateLimiter.RateLimiter
  return yield* limiter.spending(fingerprint(config.apiKey))
})

/** A question to Claude after a long system prompt marked for the prompt cache. */
const ask = (question: string) =>
  Effect.flatMap(Chat.Chat, (chat) =>
    chat.create({
      model: claude,
      messages: [
        { role: "system", content: [{ type: "text", text: words(400), cache_control: { type: "ephemeral" } }] },
        { role: "user", content: question }
      ],
      max_tokens: 20
    }))

const client = (budget: number | undefined) =>
  Testing.layerEmulator({
    tier: "basic",
    client: { maxRetries: 0 },
    rateLimiter: budget === undefined ? {} : { budget }
  })

describe("the spend meter", () => {
  it.effect("adds each answer's usage at the plan's prices, per model, for the month; the emulator agrees", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 3; i++) yield* embed
      const chat = yield* Chat.Chat
      const answer = yield* chat.create({
        model: "Llama-3.3-70B-Instruct",
        messages: [{ role: "user", content: "Hi" }]
      })
      const spent = yield* spending
      const bge = spent.models["text-embedding-bge-m3"]!
      assert.deepInclude(bge, { requests: 3, input: 300, output: 0, cached: 0 })
      assert.closeTo(bge.cost, 3 * embedCost, 1e-12)
      const llama = spent.models["Llama-3.3-70B-Instruct"]!
      const usage = answer.usage!
      assert.deepInclude(llama, { requests: 1, input: usage.prompt_tokens, output: usage.completion_tokens ?? 0 })
      // Llama on basic: 3.53 EUR a million tokens in and out
      assert.closeTo(llama.cost, usage.total_tokens * 3.53 / 1_000_000, 1e-12)
      assert.closeTo(spent.total.cost, bge.cost + llama.cost, 1e-12)
      assert.strictEqual(spent.month, "1970-01")
      assert.strictEqual(spent.budget, undefined)
      const emulator = yield* Emulator.Emulator
      assert.closeTo(spent.total.cost, yield* emulator.spent(emulator.keyFor("basic")!), 1e-12)
      // a new calendar month starts from nothing
      yield* TestClock.adjust("32 days")
      assert.deepStrictEqual((yield* spending).models, {})
    }).pipe(Effect.provide(client(undefined))))

  it.effect("a spent budget: the next request fails with BudgetExceeded, saying budget and spend, and is never sent", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      let answered = 0
      let refusal: RateLimiter.Refusal | undefined
      while (refusal === undefined && answered < 5) {
        const result = yield* Effect.either(embed)
        if (result._tag === "Right") answered++
        else if (result.left._tag === "BudgetExceeded") refusal = result.left
        else assert.fail(`unexpected ${result.left._tag}`)
      }
      // 2.5 requests' worth: two are answered, the third would cross it
      assert.strictEqual(answered, 2)
      assert.strictEqual(refusal?._tag, "BudgetExceeded")
      if (refusal?._tag !== "BudgetExceeded") return
      assert.closeTo(refusal.spent, 2 * embedCost, 1e-12)
      assert.closeTo(refusal.budget, 2.5 * embedCost, 1e-15)
      assert.isAbove(refusal.spent + refusal.estimate, refusal.budget)
      assert.strictEqual(refusal.currency, "EUR")
      assert.strictEqual(refusal.model, "text-embedding-bge-m3")
      assert.match(
        refusal.message,
        /^text-embedding-bge-m3: this request \(about .+ EUR\) would cross the monthly budget/
      )
      assert.isFalse(refusal.isRetryable)
      assert.strictEqual((yield* emulator.stats).received, 2, "the refused request was never sent")
    }).pipe(Effect.provide(client(2.5 * embedCost))))

  it.effect("requests at once count each other's estimates: no more are sent than the budget holds", () =>
    Effect.gen(function*() {
      const results = yield* Effect.all(Array.from({ length: 6 }, () => Effect.either(embed)), {
        concurrency: "unbounded"
      })
      const tags = results.map((result) => result._tag === "Right" ? "answered" : result.left._tag)
      // 2.5 requests' worth: two in flight hold it, the other four are refused before sending
      assert.deepStrictEqual(tags.filter((tag) => tag === "answered").length, 2, tags.join())
      assert.deepStrictEqual(tags.filter((tag) => tag === "BudgetExceeded").length, 4, tags.join())
      assert.strictEqual((yield* (yield* Emulator.Emulator).stats).received, 2)
      assert.isAtMost((yield* spending).total.cost, 2.5 * embedCost)
    }).pipe(Effect.provide(client(2.5 * embedCost))))

  it.effect("a request's estimate counts its whole max_tokens: too large a cap is refused while a small one goes", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const ask = (max_tokens: number) =>
        chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }], max_tokens })
      // a budget of 0.01 EUR: 100,000 output tokens at 3.53 EUR a million would cost 0.35 EUR
      const refused = yield* Effect.flip(ask(100_000))
      assert.strictEqual(refused._tag, "BudgetExceeded")
      if (refused._tag === "BudgetExceeded") assert.isAbove(refused.estimate, 100_000 * 3.53 / 1_000_000)
      yield* ask(20)
      assert.strictEqual((yield* (yield* Emulator.Emulator).stats).received, 1)
    }).pipe(Effect.provide(client(0.01))))

  it.effect("warns once at 80% of the budget, naming spend and budget", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => {
        if (logLevel._tag === "Warning") warnings.push(String(Array.isArray(message) ? message.join(" ") : message))
      })
      const logged = Logger.replace(Logger.defaultLogger, logger)
      // 1.2 requests' worth: the first reaches 83%, the second is refused
      yield* Effect.provide(embed, logged)
      assert.deepStrictEqual(warnings.filter((w) => w.includes("80%")).length, 1, warnings.join("\n"))
      assert.match(warnings[0]!, /^aifs: spend: .+ EUR of the monthly budget of .+ EUR spent \(80% or more\)$/)
      const refused = yield* Effect.flip(Effect.provide(embed, logged))
      assert.strictEqual(refused._tag, "BudgetExceeded")
      assert.strictEqual(warnings.length, 1, "once")
    }).pipe(Effect.provide(client(1.2 * embedCost))))

  it.effect("a Claude prompt read from the prompt cache: its cached and written tokens on the month, at the input price the table gives", () =>
    Effect.gen(function*() {
      const first = yield* ask("What does clause 4 say?")
      const second = yield* ask("And clause 5?")
      const read = second.usage?.cacheReadTokens ?? 0
      assert.isAbove(read, 400)
      const spent = (yield* spending).models[claude]!
      const input = first.usage!.prompt_tokens + second.usage!.prompt_tokens
      const output = (first.usage!.completion_tokens ?? 0) + (second.usage!.completion_tokens ?? 0)
      const written = first.usage?.cacheWriteTokens ?? 0
      assert.isAbove(written, 400)
      assert.strictEqual(second.usage?.cacheWriteTokens, 0)
      assert.deepInclude(spent, { requests: 2, input, output, cached: read, written })
      // the plans' tables give no cached price: cached input costs what input costs
      const prices = Spend.pricesOf("standard4000", claude, undefined)!
      assert.isUndefined(prices.cachedInput)
      assert.closeTo(spent.cost, (input * prices.input + output * prices.output) / 1_000_000, 1e-12)
      const emulator = yield* Emulator.Emulator
      assert.closeTo(spent.cost, yield* emulator.spent(emulator.keyFor("standard4000")!), 1e-12)
    }).pipe(Effect.provide(Testing.layerEmulator({ tier: "standard4000", client: { maxRetries: 0 } }))))

  it.effect("configured cache prices: reads at cachedInput, writes at cacheWrite, the rest at the input price", () => {
    const prices = { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 }
    return Effect.gen(function*() {
      const answers = [yield* ask("What does clause 4 say?"), yield* ask("And clause 5?")]
      const usage = answers.map((answer) => answer.usage!)
      const cost = usage.reduce((sum, u) => {
        const plain = u.prompt_tokens - (u.cacheReadTokens ?? 0) - (u.cacheWriteTokens ?? 0)
        return sum + (plain * prices.input + (u.cacheReadTokens ?? 0) * prices.cachedInput +
              (u.cacheWriteTokens ?? 0) * prices.cacheWrite + (u.completion_tokens ?? 0) * prices.output) / 1e6
      }, 0)
      const spent = (yield* spending).models[claude]!
      assert.isAbove(spent.written, 0)
      assert.isAbove(spent.cached, 0)
      assert.closeTo(spent.cost, cost, 1e-12)
    }).pipe(Effect.provide(Testing.layerEmulator({
      tier: "standard4000",
      client: { maxRetries: 0 },
      rateLimiter: { prices: { [claude]: prices } }
    })))
  })
})
