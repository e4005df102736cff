/**
 * What adopters tripped on, against the emulator over loopback: a base URL without `/v2` says where the request went
 * and asks about `/v2`; a base URL with it keeps the service's own 404 as it was.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Emulator from "../../src/emulator/Emulator.js"
import { Models } from "../../src/services/Models.js"
import { layerEmulatorWithClient } from "../helpers/emulator.js"

describe("what adopters tripped on", () => {
  it.effect("a base URL without /v2: the 404 names the URL it went to and asks whether the base URL ends in /v2", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const origin = emulator.baseUrl.replace(/\/v2$/, "")
      const error = yield* Effect.flip(Effect.flatMap(Models, (models) => models.list()))
      assert.strictEqual(error._tag, "NotFound")
      assert.strictEqual(
        error.message,
        `Not Found at ${origin}/models: does the base URL (${origin}) end in /v2?`
      )
    }).pipe(Effect.provide(layerEmulatorWithClient({}, (emulator) => ({
      apiKey: Emulator.keyOf("basic"),
      baseUrl: emulator.baseUrl.replace(/\/v2$/, ""),
      maxRetries: 0
    })))))

  it.effect("with /v2, a model the service does not have is its own 404, word for word", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.flatMap(Models, (models) => models.retrieve("no-such-model")))
      assert.strictEqual(error._tag, "NotFound")
      assert.notInclude(error.message, "does the base URL")
      assert.notInclude(error.message, " at http")
    }).pipe(Effect.provide(layerEmulatorWithClient({}, (emulator) => ({
      apiKey: Emulator.keyOf("basic"),
      baseUrl: emulator.baseUrl,
      maxRetries: 0
    })))))
})
