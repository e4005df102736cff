/**
 * A key's monthly project budget (`KeySpec.monthlyBudget`) on the emulator: each answered request adds its usage
 * tokens times the model's prices on the key's plan; once the spend reaches the budget, every model answers the
 * service's own 429 body, with no `retry-after`, until the next month. Raw HTTP on loopback under the `TestClock`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as Emulator from "../../src/emulator/Emulator.js"
import { sleepsBetween, waitUntil } from "../helpers/emulator.js"
import { chat, post, type Reply, transcribe, usageOf, words } from "../helpers/emulatorWire.js"

const budgetBody =
  `{"detail":"Your project reached its monthly budget limit. To increase your limit, please get in touch with the ` +
  `administrator."}`

const keyOf = (name: string) => `gen-${`monthlybudget${name}`.padEnd(48, "0")}`

/** 100 words of one token each: an embedding of 100 input tokens. */
const hundred = words(100)

/** bge-m3 on standard4000: 0.48 EUR per million tokens. */
const embedCost = 100 * 0.48 / 1_000_000

const embed = (key: string) => post("/v2/embeddings", key, { model: "text-embedding-bge-m3", input: hundred })

/** One request to every kind of model route, with models of standard4000 (a key may use its plan's models only). */
const everyModel = (key: string): ReadonlyArray<Effect.Effect<Reply, Error, Emulator.Emulator>> => [
  chat(key, "Llama-3.3-70B-Instruct", "Hi"),
  chat(key, "gpt-4o", "Hi"),
  chat(key, "gemini-2.5-flash", "Hi"),
  post("/queue/chat/completions", key, { model: "gpt-oss-120b", messages: [{ role: "user", content: "Hi" }] }),
  post("/v2/completions", key, { model: "Qwen3-30B-A3B-FP8", prompt: "Hi" }),
  post("/v2/responses", key, { model: "gpt-4.1", input: "Hi" }),
  embed(key),
  post("/v2/embeddings", key, { model: "jina-embeddings-v2-base-de", input: "Hi" }),
  post("/v2/images/generations", key, { model: "gpt-image-1", prompt: "a cat" }),
  transcribe(key, "whisper-large-v3")
]

const assertBudgetReached = (reply: Reply) => {
  assert.strictEqual(reply.status, 429)
  assert.strictEqual(reply.text, budgetBody)
  assert.isUndefined(reply.headers["retry-after"])
  assert.isUndefined(reply.headers["x-ratelimit-limit-requests"])
}

describe("a monthly project budget", () => {
  it.effect("is spent by plan prices: every model answers 429 once it is reached, and not before", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const key = keyOf("basic")
      // 2.5 requests' worth: the first three are answered (two leave the spend below the budget), the fourth is not
      for (let i = 1; i <= 3; i++) {
        const reply = yield* embed(key)
        assert.strictEqual(reply.status, 200, `request ${i}`)
        assert.closeTo(yield* emulator.spent(key), i * embedCost, 1e-12)
      }
      for (const request of everyModel(key)) assertBudgetReached(yield* request)
      assert.closeTo(yield* emulator.spent(key), 3 * embedCost, 1e-12, "a refused request costs nothing")
      assert.strictEqual((yield* emulator.stats).rateLimited, 0, "not a rate limit")
      // another key of the same tier has its own budget
      assert.strictEqual((yield* embed(keyOf("other"))).status, 200)
    }).pipe(
      Effect.provide(Emulator.layer({
        keys: [
          { key: keyOf("basic"), tier: "standard4000", monthlyBudget: { eur: 2.5 * embedCost } },
          { key: keyOf("other"), tier: "standard4000", monthlyBudget: { eur: 2.5 * embedCost } }
        ]
      }))
    ))

  it.effect("no wait within the month helps; the next calendar month starts from zero", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const key = keyOf("basic")
      assert.strictEqual((yield* embed(key)).status, 200)
      assertBudgetReached(yield* embed(key))
      // the TestClock starts at 1970-01-01: a day, then into February
      yield* TestClock.adjust("1 day")
      assertBudgetReached(yield* embed(key))
      yield* TestClock.adjust("30 days")
      assert.strictEqual(yield* emulator.spent(key), 0)
      assert.strictEqual((yield* embed(key)).status, 200)
      assert.closeTo(yield* emulator.spent(key), embedCost, 1e-12)
      assertBudgetReached(yield* chat(key, "gpt-4o", "Hi"))
    }).pipe(
      Effect.provide(
        Emulator.layer({ keys: [{ key: keyOf("basic"), tier: "standard4000", monthlyBudget: { eur: embedCost } }] })
      )
    ))

  it.effect("costs follow the key's plan, and 1 EUR per million tokens where it has no price", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const claude = yield* chat(keyOf("essential"), "claude-3-7-sonnet", words(50))
      const sonnet = usageOf(claude)
      assert.closeTo(
        yield* emulator.spent(keyOf("essential")),
        (sonnet.input * 2.7 + sonnet.output * 13.5) / 1_000_000,
        1e-12
      )
      const llama = usageOf(yield* chat(keyOf("essential"), "Llama-3.3-70B-Instruct", words(50)))
      assert.closeTo(
        yield* emulator.spent(keyOf("essential")),
        (sonnet.input * 2.7 + sonnet.output * 13.5 + llama.input * 0.2 + llama.output * 0.65) / 1_000_000,
        1e-12
      )
      const custom = usageOf(yield* chat(keyOf("tiny"), "gpt-4o", words(50)))
      assert.closeTo(yield* emulator.spent(keyOf("tiny")), (custom.input + custom.output) / 1_000_000, 1e-12)
    }).pipe(
      Effect.provide(Emulator.layer({
        tiers: { tiny: { rpm: 100, tpm: 100_000 } },
        keys: [{ key: keyOf("essential"), tier: "essential" }, { key: keyOf("tiny"), tier: "tiny" }]
      }))
    ))

  it.effect("a budget of 0 refuses the first request; a rotated key keeps its project's spend", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      assertBudgetReached(yield* chat(keyOf("zero"), "Llama-3.3-70B-Instruct", "Hi"))
      const key = keyOf("basic")
      assert.strictEqual((yield* embed(key)).status, 200)
      const successor = yield* emulator.rotateKey(key)
      assert.closeTo(yield* emulator.spent(successor), embedCost, 1e-12)
      assertBudgetReached(yield* embed(successor))
    }).pipe(
      Effect.provide(Emulator.layer({
        keys: [
          { key: keyOf("zero"), tier: "basic", monthlyBudget: { eur: 0 } },
          { key: keyOf("basic"), tier: "basic", monthlyBudget: { eur: embedCost } }
        ]
      }))
    ))

  it.effect("the queue refuses too: at once under 1.0.0, and a request that waited while the budget ran out", () =>
    Effect.gen(function*() {
      const queued = (key: string, model: string) => post("/queue/embeddings", key, { model, input: hundred })
      assertBudgetReached(yield* queued(keyOf("v1"), "text-embedding-bge-m3"))
      const key = keyOf("tiny")
      assert.strictEqual((yield* embed(key)).status, 200)
      // bge-m3's window is full (1 request): the queue holds this one for the window
      const waiting = yield* Effect.fork(queued(key, "text-embedding-bge-m3"))
      yield* waitUntil("the queued request waits", Effect.map(sleepsBetween(9_000, 10_000), (n) => n === 1))
      // meanwhile another model spends the rest of the budget
      assert.strictEqual(
        (yield* post("/v2/embeddings", key, { model: "jina-embeddings-v2-base-de", input: hundred })).status,
        200
      )
      yield* TestClock.adjust("10 seconds")
      assertBudgetReached(yield* Fiber.join(waiting))
    }).pipe(
      Effect.provide(Emulator.layer({
        window: "10 seconds",
        tiers: { tiny: { rpm: 1, tpm: 100_000 } },
        keys: [
          { key: keyOf("v1"), tier: "tiny", interfaceVersion: "1.0.0", monthlyBudget: { eur: 0 } },
          // 1 EUR per million tokens: a request of 100 tokens costs 0.0001
          { key: keyOf("tiny"), tier: "tiny", monthlyBudget: { eur: 0.00015 } }
        ]
      }))
    ))

  it.effect("`exhausted` keys answer as before: 402, or 429 insufficient_quota", () =>
    Effect.gen(function*() {
      const payment = yield* chat(keyOf("402"), "Llama-3.3-70B-Instruct", "Hi")
      assert.strictEqual(payment.status, 402)
      assert.strictEqual(
        payment.json?.detail,
        "Budget exhausted for this API key: no more requests until it is renewed"
      )
      const quota = yield* chat(keyOf("429"), "gpt-4o", "Hi")
      assert.strictEqual(quota.status, 429)
      assert.strictEqual(quota.json?.error?.code, "insufficient_quota")
    }).pipe(
      Effect.provide(Emulator.layer({
        keys: [
          { key: keyOf("402"), tier: "basic", exhausted: 402 },
          { key: keyOf("429"), tier: "standard4000", exhausted: 429 }
        ]
      }))
    ))
})
