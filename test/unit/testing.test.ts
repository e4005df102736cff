import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Testing from "../../src/layers/Testing.js"
import { ChatCompletion } from "../../src/schemas/Chat.js"
import * as Chat from "../../src/services/Chat.js"
import * as Models from "../../src/services/Models.js"
import { chatCompletionBody, defaultChatParams } from "./helpers.js"

describe("Testing.mock", () => {
  const layer = Testing.mock(Chat.Chat, {
    create: () => Effect.succeed(Schema.decodeUnknownSync(ChatCompletion)(chatCompletionBody))
  })

  it.effect("a mocked method answers", () =>
    Effect.gen(function*() {
      const completion = yield* Effect.flatMap(Chat.Chat, (chat) => chat.create(defaultChatParams)).pipe(
        Effect.provide(layer)
      )
      assert.strictEqual(completion.text, "Hello! How can I help you today?")
    }))

  it.effect("an unmocked method throws a message naming the method", () =>
    Effect.gen(function*() {
      const chat = yield* Effect.provide(Chat.Chat, layer)
      assert.throws(() => chat.createStream(defaultChatParams), "effect-aifs/Chat.createStream is not mocked")
      assert.throws(() => chat.createWithResponse(defaultChatParams), /createWithResponse is not mocked/)
    }))

  it.effect("calling an unmocked method inside an effect dies with that message", () =>
    Effect.gen(function*() {
      const models = Testing.mock(Models.Models, {})
      const exit = yield* Effect.exit(Effect.flatMap(Models.Models, (m) => m.list()).pipe(Effect.provide(models)))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isSuccess(exit)) return
      assert.isTrue(Cause.isDie(exit.cause))
      assert.include(Cause.pretty(exit.cause), "effect-aifs/Models.list is not mocked")
    }))
})
