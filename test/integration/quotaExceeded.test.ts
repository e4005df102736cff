/**
 * A key whose budget is spent, against the emulator: 402, or 429 with `insufficient_quota`, end in
 * `QuotaExceeded` at once, with the default retry policy and limiter on: never retried, never waited for.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as ClientMetrics from "../../src/layers/ClientMetrics.js"
import * as Chat from "../../src/services/Chat.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import { ask, count, layerEmulatorWithClient } from "../helpers/emulator.js"

const key = "gen-abudgetthatisspentalreadyforthequotatest0000000000"

const spent = (status: 402 | 429) =>
  layerEmulatorWithClient(
    { keys: [{ key, tier: "standard4000", exhausted: status }] },
    (emulator) => ({ apiKey: key, baseUrl: emulator.baseUrl, tier: "standard4000" })
  )

describe("a key whose budget is spent", () => {
  for (const status of [402, 429] as const) {
    it.effect(`${status}: QuotaExceeded at once on every model, one request each, no retry, no wait`, () =>
      Effect.gen(function*() {
        const stats = (yield* Emulator.Emulator).stats
        const chat = yield* Chat.Chat
        const retriesBefore = yield* count(ClientMetrics.retries)
        for (const model of ["gpt-4o", "Llama-3.3-70B-Instruct"]) {
          const before = (yield* stats).received
          const error = yield* Effect.flip(chat.create(ask(model, "Hello")))
          assert.strictEqual(error._tag, "QuotaExceeded", model)
          assert.strictEqual(error._tag === "QuotaExceeded" ? error.status : undefined, status)
          assert.strictEqual((yield* stats).received - before, 1, `${model}: sent once`)
        }
        const embedded = yield* Effect.flip(
          Effect.flatMap(Embeddings.Embeddings, (e) => e.create({ model: "text-embedding-bge-m3", input: "x" }))
        )
        assert.strictEqual(embedded._tag, "QuotaExceeded")
        assert.strictEqual((yield* count(ClientMetrics.retries)) - retriesBefore, 0)
        // the emulator did not count it as a rate limit: the window has room, the budget does not
        assert.strictEqual((yield* stats).rateLimited, 0)
      }).pipe(Effect.provide(spent(status))))
  }
})
