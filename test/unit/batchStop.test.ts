/**
 * `aifs batch` stopped (Ctrl-C, SIGTERM) in the test's process, on the scripted transport, a limiter and the
 * `TestClock`: the requests still waiting for the quota are cut at once (never sent), and only those on the wire get
 * the grace; the stop message counts each kind. A batch whose remaining requests all wait for the window stops
 * without the clock moving.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as TestClock from "effect/TestClock"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { runBatch } from "../../src/cli/batch.js"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as Inference from "../../src/layers/Inference.js"
import * as InferenceHttp from "../../src/layers/InferenceHttp.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { limiterOn } from "../helpers/stores.js"
import { tempDir } from "../helpers/tempDir.js"
import { terminal, type Written } from "../helpers/terminal.js"
import { chatCompletionBody, recorder } from "./helpers.js"

const model = "Llama-3.3-70B-Instruct"

const chat = (customId: string) =>
  JSON.stringify({
    custom_id: customId,
    url: "/v1/chat/completions",
    body: { model, messages: [{ role: "user", content: customId }], max_tokens: 5 }
  })

/**
 * The client stack as the command builds it, on a scripted server: the transport with a limiter of `rpm` requests a
 * minute for the model, and the gate on its line that a stop closes.
 */
const stack = (handler: Testing.Handler, rpm: number) => {
  const limiter = limiterOn(LimiterStore.layerMemory, { margin: 0, limits: { [model]: { rpm, tpm: 1e6 } } })
  const gate = Layer.succeed(RateLimiter.Admitting, { open: true })
  const transport = Layer.scoped(InferenceHttpClient, InferenceHttp.make).pipe(Layer.provide(Layer.mergeAll(
    Layer.succeed(HttpClient.HttpClient, Testing.httpClient(handler)),
    ClientConfig.layer({ apiKey: "test-key", baseUrl: "http://aifs.test/v2" }),
    RetryPolicy.layer({ maxRetries: 0 }),
    limiter,
    gate
  )))
  return Layer.mergeAll(Inference.layer.pipe(Layer.provide(transport)), limiter, gate)
}

const files = (count: number) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("aifs-batch-stop-")
    const paths = { input: join(dir, "in.jsonl"), output: join(dir, "out.jsonl") }
    writeFileSync(paths.input, Array.from({ length: count }, (_, i) => `${chat(`r${i}`)}\n`).join(""))
    return paths
  })

const outputIds = (path: string) =>
  readFileSync(path, "utf8").split("\n").filter((line) => line !== "").map((line) =>
    (JSON.parse(line) as { custom_id: string }).custom_id
  )

/**
 * Waits, a turn of the event loop at a time (no clock), until `done` holds: the run's file reads and writes are real
 * I/O. Bounded in turns, never in time.
 */
const eventually = (what: string, done: () => boolean) =>
  Effect.gen(function*() {
    for (let turn = 0; turn < 2_000 && !done(); turn++) {
      yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
    }
    assert.isTrue(done(), what)
  })

/** Waits for `n` more calls to the server. */
const calls = (server: { readonly calls: Queue.Dequeue<unknown> }, n: number) =>
  Effect.asVoid(Effect.replicateEffect(Queue.take(server.calls), n))

/** The stop's message, once it is written. */
const stopping = (t: Written) => t.until((text) => text.includes("stopping:"))

/** The ids in the output. */
const lineCount = (path: string) => existsSync(path) ? outputIds(path).length : 0

// a run that does not stop when it should never ends here (the clock does not move): the test fails by its time limit
describe("aifs batch, stopped while requests wait for the quota", { timeout: 10_000 }, () => {
  it.scoped("every remaining request waits for the window: the run stops at once, none sent, none in flight", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const paths = yield* files(6)
      const server = yield* recorder(() => ({ body: chatCompletionBody }))
      // 2 requests a minute: r0 and r1 answered, the other 4 wait in the limiter's line for the next window
      const fiber = yield* runBatch(paths.input, paths.output, 6).pipe(
        Effect.provide(stack(server.handler, 2)),
        // a daemon: a run that does not stop fails the test, not its cleanup
        Effect.forkDaemon
      )
      yield* calls(server, 2)
      yield* eventually("r0 and r1 written", () => lineCount(paths.output) === 2)
      const interrupter = yield* Effect.forkDaemon(Fiber.interrupt(fiber))
      assert.strictEqual(
        yield* stopping(t),
        "aifs batch: stopping: no new requests; nothing in flight, the 4 waiting for the quota are not sent " +
          "(Ctrl-C again to quit now)\n"
      )
      // the run ends with the clock where it was: no grace, no window waited for
      assert.isTrue(Exit.isInterrupted(yield* Fiber.join(interrupter)))
      assert.strictEqual(yield* Clock.currentTimeMillis, 0)
      assert.strictEqual(yield* server.count, 2)
      assert.deepStrictEqual(outputIds(paths.output).sort(), ["r0", "r1"])
      assert.strictEqual(
        t.written.at(-1),
        `aifs batch: stopped; the rest is left for a rerun: aifs batch ${paths.input} --out ${paths.output}\n`
      )
    }))

  it.scoped("some on the wire, some waiting: the waiting ones are cut at once, those sent finish in the grace", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const paths = yield* files(4)
      // each answer takes 3 seconds
      const server = yield* recorder(() => Effect.as(Effect.sleep("3 seconds"), { body: chatCompletionBody }))
      const fiber = yield* runBatch(paths.input, paths.output, 4).pipe(
        Effect.provide(stack(server.handler, 2)),
        Effect.forkDaemon
      )
      yield* calls(server, 2)
      yield* TestClock.adjust("1 second")
      const interrupter = yield* Effect.forkDaemon(Fiber.interrupt(fiber))
      assert.strictEqual(
        yield* stopping(t),
        "aifs batch: stopping: no new requests; the 2 in flight get 5s, the 2 waiting for the quota are not sent " +
          "(Ctrl-C again to quit now)\n"
      )
      // the two answers come 2 seconds later: the run ends then, not at the end of the grace
      yield* TestClock.adjust("2 seconds")
      assert.isTrue(Exit.isInterrupted(yield* Fiber.join(interrupter)))
      assert.strictEqual(yield* Clock.currentTimeMillis, 3_000)
      assert.strictEqual(yield* server.count, 2)
      assert.deepStrictEqual(outputIds(paths.output).sort(), ["r0", "r1"])
      assert.include(t.written.at(-1), "aifs batch: stopped; the rest is left for a rerun")
    }))

  it.scoped("a request that waited, then left the line with a later window, gets the grace as one on the wire", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const paths = yield* files(4)
      const server = yield* recorder(() => Effect.as(Effect.sleep("3 seconds"), { body: chatCompletionBody }))
      const fiber = yield* runBatch(paths.input, paths.output, 4).pipe(
        Effect.provide(stack(server.handler, 2)),
        Effect.forkDaemon
      )
      yield* calls(server, 2)
      // a second at a time until r2 and r3 leave the line, each in its own request's fiber
      const later = yield* Effect.fork(calls(server, 2))
      for (let s = 0; s < 120 && Option.isNone(yield* Fiber.poll(later)); s++) yield* TestClock.adjust("1 second")
      yield* Fiber.join(later)
      yield* TestClock.adjust("1 second")
      const interrupter = yield* Effect.forkDaemon(Fiber.interrupt(fiber))
      assert.strictEqual(
        yield* stopping(t),
        "aifs batch: stopping: no new requests; the 2 in flight get 5s (Ctrl-C again to quit now)\n"
      )
      yield* TestClock.adjust("2 seconds")
      assert.isTrue(Exit.isInterrupted(yield* Fiber.join(interrupter)))
      assert.deepStrictEqual(outputIds(paths.output).sort(), ["r0", "r1", "r2", "r3"])
    }))
})
