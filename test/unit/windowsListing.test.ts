/**
 * The context windows a limiter lacks, learnt from a `/models` listing (internal/request/windows.ts): one per key that
 * nobody asked for, awaited by the requests that need it, never again; and a listing the caller made. Against a
 * scripted server, the limiter on.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as Inference from "../../src/layers/Inference.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Chat from "../../src/services/Chat.js"
import * as Models from "../../src/services/Models.js"

const askOf = (id: string, content: string, max_tokens: number) =>
  Effect.flatMap(Chat.Chat, (chat) => chat.create({ model: id, messages: [{ role: "user", content }], max_tokens }))

/** The tag `askOf` fails with. */
const refusalOf = (id: string, content: string, max_tokens: number) =>
  Effect.map(Effect.flip(askOf(id, content, max_tokens)), (error) => error._tag)

/** A model the plans' tables do not know. */
const unlisted = "private-model"

/** What the scripted server of `scripted` answered, by kind. */
let served = { listings: 0, chats: 0 }

/**
 * A scripted server with the limiter on: its `/models` lists `unlisted` with the window `windowOf` (a 500 when
 * undefined), its chat answers every request.
 */
const scripted = ({ windowOf }: { readonly windowOf: number | undefined }) => {
  served = { listings: 0, chats: 0 }
  const server = Testing.httpClient((request) => {
    if (request.method === "GET" && request.path === "/v2/models") {
      served.listings++
      return windowOf === undefined ? { status: 500, body: { detail: "down" } } : {
        body: { object: "list", data: [{ id: unlisted, meta_data: { max_sequence_length: windowOf } }] }
      }
    }
    served.chats++
    return {
      body: {
        id: "chatcmpl-1",
        model: unlisted,
        choices: [{ index: 0, message: { role: "assistant", content: "Hi" }, finish_reason: "stop" }]
      }
    }
  })
  return Inference.layerHttpLimited().pipe(
    Layer.provide(Layer.succeed(HttpClient.HttpClient, server)),
    Layer.provide(ClientConfig.layer({ apiKey: "test-key", baseUrl: "http://aifs.test/v2", maxRetries: 0 }))
  )
}

describe("context windows from a listing", () => {
  it.effect("a window from the caller's /models listing (max_sequence_length) is kept: later overflows fail unsent", () =>
    Effect.gen(function*() {
      yield* Effect.flatMap(Models.Models, (models) => models.list())
      assert.strictEqual(yield* refusalOf(unlisted, "Hi", 8_193), "ContextLengthExceeded")
      assert.deepStrictEqual(served, { listings: 1, chats: 0 })
    }).pipe(Effect.provide(scripted({ windowOf: 8_192 }))))

  it.effect("a window the tables lack: one /models listing per key that nobody asked for, awaited by its requests", () =>
    Effect.gen(function*() {
      // too small to overflow any window the tables know: sent with no listing
      yield* askOf(unlisted, "Hi", 100)
      assert.deepStrictEqual(served, { listings: 0, chats: 1 })
      const refusals = yield* Effect.all(
        [9_000, 10_000, 20_000].map((cap) => refusalOf(unlisted, "Hi", cap)),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(refusals, ["ContextLengthExceeded", "ContextLengthExceeded", "ContextLengthExceeded"])
      yield* askOf(unlisted, "Hi", 8_000)
      assert.deepStrictEqual(served, { listings: 1, chats: 2 })
    }).pipe(Effect.provide(scripted({ windowOf: 8_192 }))))

  it.effect("a listing that fails teaches nothing and is not made again: the requests go out unchecked", () =>
    Effect.gen(function*() {
      yield* askOf(unlisted, "Hi", 9_000)
      yield* askOf(unlisted, "Hi", 9_000)
      assert.deepStrictEqual(served, { listings: 1, chats: 2 })
    }).pipe(Effect.provide(scripted({ windowOf: undefined }))))
})
