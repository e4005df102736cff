import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Tracer from "effect/Tracer"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as ClientMetrics from "../../src/layers/ClientMetrics.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Chat from "../../src/services/Chat.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import { ask, count, waitUntil } from "../helpers/emulator.js"

/**
 * Runs `total` forked requests to completion under the TestClock: waits (bounded, live) until every request
 * is either done or waiting in the limiter, then moves the clock to the earliest pending wake-up. The clock
 * never moves while a request is on the wire, so client and emulator see the same send times.
 */
const runToCompletion = <A, E>(fiber: Fiber.Fiber<A, E>, total: number, done: () => number, maxSteps = 400) =>
  Effect.gen(function*() {
    const limiter = yield* RateLimiter.RateLimiter
    for (let step = 0; step < maxSteps; step++) {
      if (Option.isSome(yield* Fiber.poll(fiber))) return yield* Fiber.join(fiber)
      yield* waitUntil(
        "every request is done or waiting in the limiter",
        Effect.map(limiter.snapshot, (states) => done() + states.reduce((n, s) => n + s.waiting, 0) >= total)
      )
      if (Option.isSome(yield* Fiber.poll(fiber))) return yield* Fiber.join(fiber)
      const now = yield* Clock.currentTimeMillis
      const wakeUps = Chunk.toReadonlyArray(yield* TestClock.sleeps()).filter((t) => t > now)
      yield* TestClock.adjust(Math.max(1, Math.min(...wakeUps) - now))
    }
    return yield* Effect.dieMessage(`not done after ${maxSteps} clock steps`)
  })

/** The default tracer, keeping every span it makes in `spans`. */
const recordingTracer = (base: Tracer.Tracer, spans: Array<Tracer.Span>): Tracer.Tracer =>
  Tracer.make({
    span: (...args) => {
      const span = base.span(...args)
      spans.push(span)
      return span
    },
    context: base.context
  })

describe("the proactive rate limiter against the emulator", () => {
  it.effect("100 requests on a basic-tier key with a short window finish with zero 429s", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const embeddings = yield* Embeddings.Embeddings
      const before = yield* count(ClientMetrics.rateLimited)
      let done = 0
      const requests = Array.from({ length: 100 }, (_, i) => i)
      const fiber = yield* Effect.fork(Effect.forEach(requests, (i) => {
        const call = i % 4 === 0
          ? Effect.asVoid(embeddings.create({ model: "text-embedding-ada-002", input: [`text ${i}`] }))
          : Effect.asVoid(chat.create(ask(i % 2 === 0 ? "gpt-4o" : "Llama-3.3-70B-Instruct", `question ${i}`, {
            max_tokens: 40
          })))
        return Effect.ensuring(call, Effect.sync(() => done++))
      }, { concurrency: "unbounded" }))
      yield* runToCompletion(fiber, requests.length, () => done)
      assert.strictEqual(done, 100)
      assert.strictEqual((yield* count(ClientMetrics.rateLimited)) - before, 0)
      // the limits the proprietary models sent were learnt
      const states = yield* (yield* RateLimiter.RateLimiter).snapshot
      assert.strictEqual(states.find((s) => s.model === "gpt-4o")?.budgets.requests.source, "header")
      assert.strictEqual(states.find((s) => s.model === "Llama-3.3-70B-Instruct")?.budgets.requests.source, "plan")
    }).pipe(Effect.provide(Testing.layerEmulator({
      // the client knows basic's table (Llama's row) and learns the rest from headers; the key, of the seed's basic
      // figures on every model, may use the proprietary models a basic key may not (404)
      tier: "seed",
      tiers: { seed: Emulator.fallbackQuotas.basic },
      window: "6 seconds",
      rateLimiter: { margin: 0, tier: "basic" }
    }))))

  it.effect("with queue routing, a request over the local budget goes to the queue instead of waiting", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const admittedBefore = yield* count(ClientMetrics.limiterAdmitted)
      const rateLimitedBefore = yield* count(ClientMetrics.rateLimited)
      let done = 0
      const fiber = yield* Effect.fork(Effect.forEach(
        Array.from({ length: 21 }, (_, i) => i),
        (i) =>
          Effect.ensuring(
            chat.create(ask("Llama-3.3-70B-Instruct", `question ${i}`, { max_tokens: 20 })),
            Effect.sync(() => done++)
          ),
        { concurrency: "unbounded" }
      ))
      // 20 go through the limiter on /v2; the 21st is sent to /queue, where the emulator holds it
      yield* waitUntil("20 requests are answered", Effect.sync(() => done >= 20))
      assert.strictEqual((yield* count(ClientMetrics.limiterAdmitted)) - admittedBefore, 20)
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      // nobody waits in the client's limiter: the 21st is held by the server's queue
      const states = yield* (yield* RateLimiter.RateLimiter).snapshot
      assert.strictEqual(states.find((s) => s.model === "Llama-3.3-70B-Instruct")?.waiting, 0)
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(fiber)
      assert.strictEqual(done, 21)
      assert.strictEqual((yield* count(ClientMetrics.rateLimited)) - rateLimitedBefore, 0)
    }).pipe(Effect.provide(Testing.layerEmulator({
      tier: "basic",
      window: "10 seconds",
      rateLimiter: { margin: 0, queueRouting: true }
    }))))

  it.effect("the operation's span opens when the request leaves the line, with the wait, model and usage on it", () => {
    const spans: Array<Tracer.Span> = []
    return Effect.gen(function*() {
      const recording = recordingTracer(yield* Effect.tracer, spans)
      const chat = yield* Chat.Chat
      const model = "Llama-3.3-70B-Instruct"
      let done = 0
      // 21 requests on 20 per window: the last one waits a window in the limiter
      const fiber = yield* Effect.fork(
        Effect.forEach(
          Array.from({ length: 21 }, (_, i) => i),
          (i) =>
            Effect.ensuring(chat.create(ask(model, `question ${i}`, { max_tokens: 20 })), Effect.sync(() => done++)),
          { concurrency: "unbounded" }
        ).pipe(Effect.withSpan("caller"), Effect.withTracer(recording))
      )
      yield* waitUntil("20 requests are answered", Effect.sync(() => done >= 20))
      const named = (name: string) => spans.filter((span) => span.name === name)
      // the waiting request holds no span yet
      assert.strictEqual(named("chat Llama-3.3-70B-Instruct").length, 20)
      yield* runToCompletion(fiber, 21, () => done)
      const [caller] = named("caller")
      const creates = named("chat Llama-3.3-70B-Instruct")
      assert.strictEqual(creates.length, 21)
      for (const span of creates) {
        assert.strictEqual(span.status._tag, "Ended")
        assert.strictEqual(Option.getOrUndefined(span.parent)?.spanId, caller?.spanId)
        assert.strictEqual(span.attributes.get("gen_ai.operation.name"), "chat")
        assert.strictEqual(span.attributes.get("gen_ai.request.model"), model)
        assert.strictEqual(span.attributes.get("gen_ai.response.model"), model)
        assert.isAbove(span.attributes.get("gen_ai.usage.input_tokens") as number, 0)
        assert.isAbove(span.attributes.get("gen_ai.usage.output_tokens") as number, 0)
      }
      const waits = creates.map((span) => span.attributes.get("aifs.limiter.wait_ms") as number)
      assert.deepStrictEqual(waits.slice(0, 20), Array.from({ length: 20 }, () => 0))
      assert.isAtLeast(waits[20]!, 6_000)
    }).pipe(Effect.provide(Testing.layerEmulator({ tier: "basic", window: "6 seconds", rateLimiter: { margin: 0 } })))
  })

  it.effect("a stream's span covers the stream to its end and carries its usage", () => {
    const spans: Array<Tracer.Span> = []
    return Effect.gen(function*() {
      const recording = recordingTracer(yield* Effect.tracer, spans)
      const chat = yield* Chat.Chat
      const model = "Llama-3.3-70B-Instruct"
      const chunks = yield* Stream.runCollect(chat.createStream(ask(model, "stream this", { max_tokens: 20 }))).pipe(
        Effect.withSpan("caller"),
        Effect.withTracer(recording)
      )
      const usage = Chunk.toReadonlyArray(chunks).find((chunk) => chunk.usage)?.usage
      const [caller] = spans.filter((span) => span.name === "caller")
      const [span] = spans.filter((span) => span.name === "chat Llama-3.3-70B-Instruct")
      assert.strictEqual(span?.status._tag, "Ended")
      assert.strictEqual(Option.getOrUndefined(span!.parent)?.spanId, caller?.spanId)
      assert.strictEqual(span?.attributes.get("gen_ai.operation.name"), "chat")
      assert.strictEqual(span?.attributes.get("aifs.operation"), "Chat.createStream")
      assert.strictEqual(span?.attributes.get("gen_ai.request.stream"), true)
      assert.strictEqual(span?.attributes.get("aifs.limiter.wait_ms"), 0)
      assert.strictEqual(span?.attributes.get("gen_ai.usage.input_tokens"), usage?.prompt_tokens)
      assert.strictEqual(span?.attributes.get("gen_ai.usage.output_tokens"), usage?.completion_tokens)
      // the HTTP exchange ran inside it
      const http = spans.find((s) => s.name.startsWith("http.client"))
      assert.strictEqual(Option.getOrUndefined(http!.parent)?.spanId, span?.spanId)
    }).pipe(Effect.provide(Testing.layerEmulator({ tier: "basic" })))
  })

  it.effect("a request larger than the whole token quota fails at once, before it is sent", () => {
    const spans: Array<Tracer.Span> = []
    return Effect.gen(function*() {
      const recording = recordingTracer(yield* Effect.tracer, spans)
      const chat = yield* Chat.Chat
      const before = yield* count(ClientMetrics.limiterAdmitted)
      const error = yield* Effect.flip(chat.create(ask("Llama-3.3-70B-Instruct", "hi", { max_tokens: 20_000 }))).pipe(
        Effect.withTracer(recording)
      )
      // its span shows the refusal
      const [span] = spans.filter((s) => s.name === "chat Llama-3.3-70B-Instruct")
      assert.isTrue(span?.status._tag === "Ended" && Exit.isFailure(span.status.exit))
      assert.strictEqual(span?.attributes.get("error.type"), "RequestTooLarge")
      assert.strictEqual(error._tag, "RequestTooLarge")
      // refused by the client: no status (the server's own refusal would carry its 429)
      if (error._tag === "RequestTooLarge") {
        assert.isUndefined(error.status)
        // basic's Llama row allows 5,000 output tokens a window: the 20,000 reserved can never fit it
        assert.strictEqual(error.budget, "output")
        assert.strictEqual(error.requested, 20_000)
        assert.strictEqual(error.limit, 5_000)
      }
      assert.strictEqual((yield* count(ClientMetrics.limiterAdmitted)) - before, 0)
    }).pipe(Effect.provide(Testing.layerEmulator({ tier: "basic" })))
  })
})
