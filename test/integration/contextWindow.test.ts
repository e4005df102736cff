/**
 * Context windows before a request is spent: a request whose prompt estimate plus `max_tokens` cannot fit its
 * model's window fails with `ContextLengthExceeded` and is never sent, the window known from the limiter's options,
 * the plan's table, or a `/models` listing (`max_sequence_length`); the server's own "context length exceeded" maps
 * to the same error, never retried; `contextCheck: false` turns the check off. Against the emulator on loopback.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import * as TokenEstimator from "../../src/layers/TokenEstimator.js"
import * as Chat from "../../src/services/Chat.js"
import * as Models from "../../src/services/Models.js"
import { words } from "../helpers/emulatorWire.js"

const model = "Llama-3.3-70B-Instruct"

const ask = (content: string, max_tokens?: number) =>
  Effect.flatMap(Chat.Chat, (chat) =>
    chat.create({
      model,
      messages: [{ role: "user", content }],
      ...(max_tokens === undefined ? {} : { max_tokens })
    }))

/** Requests the scripted server of the last test answered. */
let calls = 0

const received = Effect.map(Effect.flatMap(Emulator.Emulator, (emulator) => emulator.stats), (stats) => stats.received)

describe("context windows", () => {
  it.effect("a window told to the limiter: the prompt and max_tokens over it fail unsent; within it, sent", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(ask("Hi", 1_000))
      assert.strictEqual(refused._tag, "ContextLengthExceeded")
      if (refused._tag !== "ContextLengthExceeded") return
      assert.strictEqual(refused.model, model)
      assert.strictEqual(refused.window, 1_000)
      assert.isAbove(refused.requested!, 1_000)
      assert.isUndefined(refused.status)
      assert.isFalse(refused.isRetryable)
      assert.match(refused.message, /^Llama-3\.3-70B-Instruct: about \d+ tokens .* context window of 1000$/)
      assert.strictEqual(yield* received, 0, "never sent")
      // without max_tokens only the prompt must fit: a prompt of 900 words fits, one of 1,100 does not
      yield* ask(words(900))
      assert.strictEqual((yield* Effect.flip(ask(words(1_100))))._tag, "ContextLengthExceeded")
      yield* ask("Hi", 900)
      assert.strictEqual(yield* received, 2)
    }).pipe(Effect.provide(Testing.layerEmulator({ rateLimiter: { contextWindows: { [model]: 1_000 } } }))))

  it.effect("contextCheck: false sends it anyway", () =>
    Effect.gen(function*() {
      yield* ask("Hi", 1_000)
      assert.strictEqual(yield* received, 1)
    }).pipe(Effect.provide(Testing.layerEmulator({
      rateLimiter: { contextWindows: { [model]: 1_000 }, contextCheck: false }
    }))))

  it.effect("a window from a /models listing (max_sequence_length): once listed, an overflow is refused unsent", () =>
    Effect.gen(function*() {
      const listed = yield* Effect.flatMap(Models.Models, (models) => models.list())
      const window = listed.data.find((m) => m.id === model)!.meta_data!.max_sequence_length!
      assert.isAbove(window, 0)
      const before = yield* received
      const refused = yield* Effect.flip(ask("Hi", window))
      assert.strictEqual(refused._tag, "ContextLengthExceeded")
      if (refused._tag === "ContextLengthExceeded") assert.strictEqual(refused.window, window)
      assert.strictEqual(yield* received, before)
    }).pipe(Effect.provide(Testing.layerEmulator())))

  it.effect("a window from the plan's table: Llama on essential, 128,000 tokens", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter.RateLimiter
      const ticket = { key: "k", model, input: 100_000 }
      yield* limiter.acquire({ ...ticket, cap: 28_000 })
      const refused = yield* Effect.flip(limiter.acquire({ ...ticket, cap: 28_001 }))
      assert.strictEqual(refused._tag, "ContextLengthExceeded")
      if (refused._tag === "ContextLengthExceeded") assert.deepInclude(refused, { window: 128_000, requested: 128_001 })
    }).pipe(Effect.provide(
      RateLimiter.layerWith({ tier: "essential" }).pipe(
        Layer.provide(Layer.merge(LimiterStore.layerMemory, TokenEstimator.layer))
      )
    )))

  it.effect("the server's \"Context length exceeded\": ContextLengthExceeded with its status, never retried", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(ask("Hi"))
      assert.strictEqual(refused._tag, "ContextLengthExceeded")
      assert.strictEqual(refused.message, "Context length exceeded: 140000 tokens, the model's maximum is 128000")
      if (refused._tag === "ContextLengthExceeded") assert.strictEqual(refused.status, 400)
      assert.strictEqual(calls, 1)
    }).pipe(Effect.provide(Testing.layerHttp(() => {
      calls++
      return {
        status: 400,
        body: { detail: "Context length exceeded: 140000 tokens, the model's maximum is 128000" }
      }
    }))))
})
