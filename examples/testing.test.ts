/**
 * How to test your own code that uses effect-aifs: stub a service with `Testing.mock`, or script HTTP answers
 * with `Testing.layerHttp` (the real client stack runs: error mapping, retries, decoding).
 */
import { assert, describe, it } from "@effect/vitest"
import { Chat, ChatSchema, Testing } from "effect-aifs"
import * as Effect from "effect/Effect"

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

describe("summarise", () => {
  it.effect("returns the model's answer (service stub)", () =>
    Effect.gen(function*() {
      const summary = yield* summarise("A long text.")
      assert.strictEqual(summary, "A short text.")
    }).pipe(Effect.provide(Testing.mock(Chat.Chat, {
      create: () =>
        Effect.succeed(
          new ChatSchema.ChatCompletion({
            id: "chatcmpl-1",
            model: "Llama-3.3-70B-Instruct",
            choices: [{ index: 0, message: { role: "assistant", content: "A short text." }, finish_reason: "stop" }]
          })
        )
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
})
