/**
 * The service's two interface versions, as the emulator serves them (for all keys, or per key) and as the client
 * meets them: 1.0.0 answers the queue with a job handle at once and serves fine-tuning; 1.1.0 waits in the queue
 * and has no fine-tuning routes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as FineTuning from "../../src/services/FineTuning.js"
import * as JobQueue from "../../src/services/JobQueue.js"
import { ask, layerEmulatorWithClient } from "../helpers/emulator.js"

const served = (interfaceVersion: "1.0.0" | "1.1.0", client: "1.0.0" | "1.1.0") =>
  layerEmulatorWithClient({ interfaceVersion }, (emulator) => ({
    apiKey: emulator.keyFor("standard4000")!,
    baseUrl: emulator.baseUrl,
    tier: "standard4000",
    apiVersion: client
  }))

describe("interface 1.0.0", () => {
  it.effect("the queue answers a job handle at once (202), and fine-tuning is served", () =>
    Effect.gen(function*() {
      const queue = yield* JobQueue.JobQueue
      const result = yield* queue.chat(ask("Llama-3.3-70B-Instruct", "Queue this"))
      assert.strictEqual(result._tag, "Accepted")
      if (result._tag === "Accepted") {
        assert.strictEqual(result.status, 202)
        assert.match(result.handle.handle ?? "", /^job-/)
        assert.strictEqual(result.handle.status, "queued")
      }
      const jobs = yield* (yield* FineTuning.FineTuning).list()
      assert.deepStrictEqual(jobs.data, [])
    }).pipe(Effect.provide(served("1.0.0", "1.0.0"))))
})

describe("interface 1.1.0", () => {
  it.effect("the queue answers the result; fine-tuning routes are absent on the server, refused by the client", () =>
    Effect.gen(function*() {
      const queue = yield* JobQueue.JobQueue
      const result = yield* queue.chat(ask("Llama-3.3-70B-Instruct", "Queue this"))
      assert.strictEqual(result._tag, "Completed")
      if (result._tag === "Completed") assert.isAbove(result.value.text.length, 0)
      const stats = (yield* Emulator.Emulator).stats
      const before = (yield* stats).received
      // a client that expects 1.0.0 meets the 404 of a route that is not there
      const error = yield* Effect.flip((yield* FineTuning.FineTuning).list())
      assert.strictEqual(error._tag, "NotFound")
      assert.strictEqual((yield* stats).received - before, 1)
    }).pipe(Effect.provide(served("1.1.0", "1.0.0"))))

  it.effect("a client told 1.1.0 does not send fine-tuning requests at all (Unsupported)", () =>
    Effect.gen(function*() {
      const stats = (yield* Emulator.Emulator).stats
      const before = (yield* stats).received
      const error = yield* Effect.flip((yield* FineTuning.FineTuning).list())
      assert.strictEqual(error._tag, "Unsupported")
      assert.strictEqual((yield* stats).received - before, 0)
    }).pipe(Effect.provide(served("1.1.0", "1.1.0"))))
})

describe("per key", () => {
  const old = "gen-akeyservedunderinterfaceonepointzerozero000000000"
  it.effect("a key that carries 1.0.0 on an emulator serving 1.1.0 is answered as 1.0.0", () =>
    Effect.gen(function*() {
      const queue = yield* JobQueue.JobQueue
      const result = yield* queue.embeddings({ model: "text-embedding-bge-m3", input: "x" })
      assert.strictEqual(result._tag, "Accepted")
    }).pipe(Effect.provide(layerEmulatorWithClient(
      {
        interfaceVersion: "1.1.0",
        keys: [{ key: old, tier: "standard4000", interfaceVersion: "1.0.0" }, {
          key: "gen-akeyservedunderinterfaceonepointonezero000000000",
          tier: "standard4000"
        }]
      },
      (emulator) => ({ apiKey: old, baseUrl: emulator.baseUrl, tier: "standard4000", apiVersion: "1.0.0" })
    ))))
})
