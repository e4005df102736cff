/**
 * Shared fixtures of the integration and compatibility rings: the client against the emulator on a loopback
 * port, bounded waits for forked fibers under the `TestClock`, and metric readings.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import * as Emulator from "../../src/emulator/Emulator.js"
import type * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as Metrics from "../../src/layers/ClientMetrics.js"
import * as Node from "../../src/layers/Node.js"
import { ChatCompletion, type CreateChatCompletionParams } from "../../src/schemas/Chat.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"

/** A one-message chat request. */
export const ask = (
  model: string,
  content: string,
  extra: Partial<CreateChatCompletionParams> = {}
): CreateChatCompletionParams => ({ model, messages: [{ role: "user", content }], ...extra })

/**
 * Polls `check` until it holds: at most `attempts` rounds, each yielding with a short live sleep, and never
 * longer than `deadlineMillis` of wall time. Fails with a message naming `what` when it never holds.
 */
export const waitUntil = <E, R>(
  what: string,
  check: Effect.Effect<boolean, E, R>,
  options: { readonly attempts?: number; readonly deadlineMillis?: number } = {}
): Effect.Effect<void, E | Error, R> =>
  Effect.gen(function*() {
    const attempts = options.attempts ?? 400
    const deadline = (yield* TestServices.provideLive(Clock.currentTimeMillis)) + (options.deadlineMillis ?? 5_000)
    for (let i = 0; i < attempts; i++) {
      if (yield* check) return
      if ((yield* TestServices.provideLive(Clock.currentTimeMillis)) > deadline) break
      yield* TestServices.provideLive(Effect.sleep("5 millis"))
    }
    return yield* Effect.fail(new Error(`timed out waiting until ${what}`))
  })

/**
 * How many fibers sleep on the `TestClock` until a time between `fromMillis` and `toMillis` from now. The
 * clock keeps the sleeps of interrupted fibers (the per-attempt timeouts of finished requests end minutes
 * away), so callers count only the range they expect.
 */
export const sleepsBetween = (fromMillis: number, toMillis: number): Effect.Effect<number> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const sleeps = yield* TestClock.sleeps()
    return Chunk.size(Chunk.filter(sleeps, (end) => end - now >= fromMillis && end - now <= toMillis))
  })

/** The current count of one of the client's counters. */
export const count = (counter: Metric.Metric.Counter<number>): Effect.Effect<number> =>
  Effect.map(Metric.value(counter), (state) => state.count)

/** The client's 429, retry and waited-milliseconds counters, read together. */
export const clientCounters = Effect.all({
  rateLimited: count(Metrics.rateLimited),
  retries: count(Metrics.retries),
  retryWaitMillis: count(Metrics.retryWaitMillis)
})

/**
 * The emulator and a client configured with an arbitrary key (for 401s) or any other client options: the
 * pieces `Testing.layerEmulator` wires, composed by hand.
 */
export const layerEmulatorWithClient = (
  emulatorOptions: Emulator.ServeOptions,
  client: (emulator: Emulator.Emulator["Type"]) => ClientConfig.Options
) =>
  Layer.unwrapEffect(Effect.map(Emulator.Emulator, (emulator) => Node.layer(client(emulator)))).pipe(
    Layer.provideMerge(Emulator.layer(emulatorOptions))
  )

/** `POST /chat/completions` on the queue root, through the transport. */
export const queuedChat = (params: CreateChatCompletionParams) =>
  Effect.flatMap(InferenceHttpClient, (http) =>
    http.json(
      HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(params)),
      ChatCompletion,
      { base: "queue", model: params.model }
    ))
