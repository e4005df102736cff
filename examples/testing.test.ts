/**
 * How to test your own code that uses effect-aifs: stub a service with `Testing.mock`, script HTTP answers
 * with `Testing.layerHttp` (the real client stack runs: error mapping, retries, decoding), or run it against
 * the emulator with `Testing.layerEmulator` (real sockets, no key, no network).
 */
import { assert, describe, it } from "@effect/vitest"
import { Chat, ChatSchema, Emulator, Testing } from "effect-aifs"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"

// the code under test: a summary, with a fallback when the quota is exhausted for now
const summarise = (text: string) =>
  Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const answer = yield* chat.create({
      model: "Llama-3.3-70B-Instruct",
      messages: [{ role: "system", content: "Summarise in one line." }, { role: "user", content: text }]
    })
    return answer.text
  }).pipe(Effect.catchTag("RateLimited", (error) => Effect.succeed(`busy: ${error.message}`)))

/** A completion as the service would send it, for the stubs below. */
const completion = (content: string) =>
  new ChatSchema.ChatCompletion({
    id: "chatcmpl-1",
    model: "Llama-3.3-70B-Instruct",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }]
  })

describe("summarise", () => {
  it.effect("returns the model's answer (service stub)", () =>
    Effect.gen(function*() {
      const summary = yield* summarise("A long text.")
      assert.strictEqual(summary, "A short text.")
    }).pipe(Effect.provide(Testing.mock(Chat.Chat, {
      create: () => Effect.succeed(completion("A short text."))
    }))))

  it.effect("falls back when rate limited (scripted HTTP)", () =>
    Effect.gen(function*() {
      const summary = yield* summarise("A long text.")
      assert.strictEqual(summary, "busy: Rate limit exceeded")
    }).pipe(Effect.provide(Testing.layerHttp(
      () => ({ status: 429, headers: { "retry-after": "600" }, body: { detail: "Rate limit exceeded" } }),
      // a 10-minute wait does not fit the default 2-minute budget: RateLimited comes back at once
      { retry: { budget: "2 minutes" } }
    ))))

  it.effect("sends the instruction and the text (what the stub received)", () => {
    const received: Array<ChatSchema.CreateChatCompletionParams> = []
    return Effect.gen(function*() {
      yield* summarise("A long text.")
      assert.strictEqual(received.length, 1)
      assert.deepStrictEqual(received[0]?.messages, [
        { role: "system", content: "Summarise in one line." },
        { role: "user", content: "A long text." }
      ])
    }).pipe(Effect.provide(Testing.mock(Chat.Chat, {
      create: (params) => Effect.sync(() => received.push(params)).pipe(Effect.as(completion("Short.")))
    })))
  })

  it.effect("a method the stub does not give fails loudly", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const defect = yield* Effect.flip(Effect.try(() => chat.createStream({ model: "m", messages: [] })))
      assert.include(String(defect.error), "effect-aifs/Chat.createStream is not mocked")
    }).pipe(Effect.provide(Testing.mock(Chat.Chat, { create: () => Effect.succeed(completion("")) }))))

  it.effect("the request on the wire: path, key, body (scripted HTTP)", () => {
    const requests: Array<Testing.ScriptedRequest> = []
    return Effect.gen(function*() {
      const summary = yield* summarise("A long text.")
      assert.strictEqual(summary, "Scripted.")
      const [request] = requests
      assert.strictEqual(request?.method, "POST")
      assert.strictEqual(request?.path, "/v2/chat/completions")
      assert.strictEqual(request?.headers.authorization, "Bearer test-key")
      assert.deepInclude(request?.body, { model: "Llama-3.3-70B-Instruct" })
    }).pipe(Effect.provide(Testing.layerHttp((request) => {
      requests.push(request)
      return { body: { choices: [{ message: { role: "assistant", content: "Scripted." }, finish_reason: "stop" }] } }
    })))
  })

  it.effect("a 503 is retried after a back-off on the TestClock, then the answer comes (scripted HTTP)", () => {
    let calls = 0
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(summarise("A long text."))
      yield* TestClock.adjust("1 minute") // the back-off sleeps on the TestClock: move it instead of waiting
      assert.strictEqual(yield* Fiber.join(fiber), "Second time lucky.")
      assert.strictEqual(calls, 2)
    }).pipe(Effect.provide(Testing.layerHttp(() => {
      calls++
      return calls === 1
        ? { status: 503, body: { detail: "Model temporarily unavailable" } }
        : { body: { choices: [{ message: { content: "Second time lucky." }, finish_reason: "stop" }] } }
    })))
  })

  it.effect("answers from the emulator, deterministically (real sockets, no key)", () =>
    Effect.gen(function*() {
      const first = yield* summarise("A long text.")
      assert.isAbove(first.length, 0)
      assert.strictEqual(yield* summarise("A long text."), first)
      assert.notStrictEqual(yield* summarise("Another text entirely."), first)
    }).pipe(Effect.provide(Testing.layerEmulator())))

  it.effect("falls back when the emulator answers 429 (chaos switch)", () =>
    Effect.gen(function*() {
      const summary = yield* summarise("A long text.")
      assert.match(summary, /^busy: /)
      const stats = yield* (yield* Emulator.Emulator).stats
      assert.strictEqual(stats.faults.status, 1)
    }).pipe(Effect.provide(Testing.layerEmulator({
      chaos: [{ fault: { kind: "status", status: 429 }, route: "/v2/chat/completions" }],
      client: { maxRetries: 0 } // fail on the first 429 instead of waiting for the server's reset
    }))))
})
