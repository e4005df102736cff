/**
 * Fault injection: every chaos switch of the emulator met by the real client over loopback sockets. With
 * retries off each fault comes back as its typed error; with `times: k` below `maxRetries` the client
 * recovers and the emulator counts exactly `k` faults. Waits run on the `TestClock` (the emulator runs in
 * the test's runtime, so its delays do too).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { ChaosState, faultMix } from "../../src/emulator/chaos.js"
import * as Emulator from "../../src/emulator/Emulator.js"
import type * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as Testing from "../../src/layers/Testing.js"
import type { ApiError } from "../../src/schemas/Errors.js"
import * as Chat from "../../src/services/Chat.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import * as Models from "../../src/services/Models.js"
import { ask, clientCounters, sleepsBetween, waitUntil } from "../helpers/emulator.js"

const model = "Llama-3.3-70B-Instruct"

/** The emulator with `chaos`, and a client without retries unless told, and without a proactive limiter. */
const emulator = (
  chaos: Emulator.Chaos,
  client: Partial<ClientConfig.Options> = {},
  options: Omit<Testing.LayerEmulatorOptions, "chaos" | "client"> = {}
) => Testing.layerEmulator({ ...options, chaos, client: { maxRetries: 0, ...client }, rateLimiter: false })

const stats = Effect.flatMap(Emulator.Emulator, (emulator) => emulator.stats)

const faultsOf = (kind: Emulator.Fault["kind"]) => Effect.map(stats, (s) => s.faults[kind] ?? 0)

/** Waits (bounded, in wall time) until no handler runs: a fault must never leave one hanging. */
const settled = waitUntil("no handler is in flight", Effect.map(stats, (s) => s.inFlight === 0))

const chatOnce = (content = "hello") => Effect.flatMap(Chat.Chat, (chat) => chat.create(ask(model, content)))

/** Every item of a stream and how it ended: `Right` items, then a `Left` with the error if it failed. */
const streamOutcome = (content = "hello") =>
  Effect.flatMap(
    Chat.Chat,
    (chat) =>
      Effect.map(Stream.runCollect(Stream.either(chat.createStream(ask(model, content)))), Chunk.toReadonlyArray)
  )

/** The typed error of a failed exit; a success, a defect or an interruption fails the test. */
const expectFailure = <A>(exit: Exit.Exit<A, ApiError>): ApiError =>
  Exit.match(exit, {
    onSuccess: () => assert.fail("expected a failure, got a success"),
    onFailure: (cause) =>
      Option.getOrElse(
        Cause.failureOption(cause),
        () => assert.fail(`expected a typed failure, got ${Cause.pretty(cause)}`)
      )
  })

/** Joins a fiber once it has ended, failing (in bounded wall time) instead of hanging when it never does. */
const finish = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) =>
  Effect.zipRight(waitUntil("the call ends", Effect.map(Fiber.poll(fiber), Option.isSome)), Fiber.join(fiber))

/** How long until the earliest `TestClock` sleep that ends within `longest` from now, if there is one. */
const nextSleep = (longest: number): Effect.Effect<number | undefined> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const ahead = Chunk.toReadonlyArray(yield* TestClock.sleeps()).map((end) => end - now)
      .filter((d) => d > 0 && d <= longest)
    return ahead.length === 0 ? undefined : Math.min(...ahead)
  })

/**
 * Runs a call that retries to its end: each time it sleeps for at most `longest` (a back-off), moves the
 * `TestClock` exactly to the end of that sleep, so that no later back-off is passed by the same step.
 */
const drive = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, longest: Duration.DurationInput) =>
  Effect.gen(function*() {
    const millis = Duration.toMillis(Duration.decode(longest))
    for (let round = 0; round < 10; round++) {
      yield* waitUntil(
        "the call ends or backs off",
        Effect.zipWith(Fiber.poll(fiber), nextSleep(millis), (done, next) => Option.isSome(done) || next !== undefined)
      )
      if (Option.isSome(yield* Fiber.poll(fiber))) break
      const next = yield* nextSleep(millis)
      if (next !== undefined) yield* TestClock.adjust(next)
    }
    return yield* finish(fiber)
  })

/** Whether a fiber has ended, read at once: no wall time passes, the test's clock alone moves the call. */
const isDone = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) => Effect.map(Fiber.poll(fiber), Option.isSome)

describe("status faults", () => {
  for (const status of [500, 502, 503] as const) {
    it.effect(`${status}: ServerError with the status and the detail message, not retried when retries are off`, () =>
      Effect.gen(function*() {
        const error = expectFailure(yield* Effect.exit(chatOnce()))
        assert.strictEqual(error._tag, "ServerError")
        if (error._tag !== "ServerError") return
        assert.strictEqual(error.status, status)
        assert.strictEqual(error.endpoint, "POST /v2/chat/completions")
        assert.isTrue(error.isRetryable)
        assert.notInclude(error.message, "HTTP ")
        const s = yield* stats
        assert.strictEqual(s.received, 1)
        assert.strictEqual(s.faults.status, 1)
      }).pipe(Effect.provide(emulator([{ fault: { kind: "status", status } }]))))
  }

  it.effect("5xx on embeddings: ServerError through Embeddings.create", () =>
    Effect.gen(function*() {
      const embeddings = yield* Embeddings.Embeddings
      const error = yield* Effect.flip(embeddings.create({ model: "text-embedding-bge-m3", input: ["a"] }))
      assert.strictEqual(error._tag, "ServerError")
      assert.strictEqual(error._tag === "ServerError" ? error.status : 0, 502)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "status", status: 502 } }]))))

  it.effect("429: RateLimited carrying the server's one-second wait", () =>
    Effect.gen(function*() {
      const error = expectFailure(yield* Effect.exit(chatOnce()))
      assert.strictEqual(error._tag, "RateLimited")
      if (error._tag !== "RateLimited") return
      assert.strictEqual(error.status, 429)
      assert.strictEqual(Duration.toMillis(error.retryAfter!), 1000)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "status", status: 429 } }]))))

  it.effect("two 503s and maxRetries 3: the call succeeds after two back-offs, two faults counted", () =>
    Effect.gen(function*() {
      const before = yield* clientCounters
      const fiber = yield* Effect.fork(chatOnce())
      // back-offs are 250-500 ms, then 500-1000 ms: both are TestClock sleeps
      const completion = yield* drive(fiber, "1 second")
      assert.strictEqual(completion.object, "chat.completion")
      const s = yield* stats
      assert.strictEqual(s.faults.status, 2)
      assert.strictEqual(s.received, 3)
      const after = yield* clientCounters
      assert.strictEqual(after.retries - before.retries, 2)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "status", status: 503 }, times: 2 }], { maxRetries: 3 }))))

  it.effect("one 429 and maxRetries 2: the retry waits the server's second, then succeeds", () =>
    Effect.gen(function*() {
      const before = yield* clientCounters
      const fiber = yield* Effect.fork(chatOnce())
      yield* waitUntil("the 429 wait is pending", Effect.map(sleepsBetween(1000, 1250), (k) => k > 0))
      // just short of the server's wait, the retry has not gone out: it still sleeps, to the second plus jitter
      yield* TestClock.adjust("999 millis")
      assert.isAbove(yield* sleepsBetween(1, 251), 0)
      assert.isFalse(yield* isDone(fiber))
      assert.strictEqual((yield* stats).received, 1)
      yield* TestClock.adjust("251 millis")
      yield* finish(fiber)
      const s = yield* stats
      assert.strictEqual(s.faults.status, 1)
      assert.strictEqual(s.received, 2)
      const after = yield* clientCounters
      assert.strictEqual(after.rateLimited - before.rateLimited, 1)
      assert.isAtLeast(after.retryWaitMillis - before.retryWaitMillis, 1000)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "status", status: 429 }, times: 1 }], { maxRetries: 2 }))))
})

describe("delays", () => {
  it.effect("latency: the answer comes only once the delay has passed on the emulator's clock", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(chatOnce())
      yield* waitUntil("the emulator delays the request", Effect.map(sleepsBetween(4_000, 5_000), (k) => k > 0))
      assert.strictEqual(yield* faultsOf("latency"), 1)
      yield* TestClock.adjust("4 seconds")
      // the emulator still sleeps on the last second of its delay, with the request in flight
      assert.isAbove(yield* sleepsBetween(1, 1_000), 0)
      assert.isFalse(yield* isDone(fiber))
      assert.strictEqual((yield* stats).inFlight, 1)
      yield* TestClock.adjust("1 second")
      const completion = yield* finish(fiber)
      assert.strictEqual(completion.object, "chat.completion")
      yield* settled
    }).pipe(Effect.provide(emulator([{ fault: { kind: "latency", delay: "5 seconds" } }]))))

  it.effect("latency beyond the client's timeout: Timeout (total); the emulator's handler is aborted", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.exit(chatOnce()))
      yield* waitUntil("the emulator delays the request", Effect.map(sleepsBetween(9_000, 10_000), (k) => k > 0))
      yield* TestClock.adjust("2 seconds")
      const error = expectFailure(yield* finish(fiber))
      assert.strictEqual(error._tag, "Timeout")
      assert.strictEqual(error._tag === "Timeout" ? error.timeout : undefined, "total")
      // the client gave up and closed the connection: the sleeping handler is interrupted, not left behind
      yield* waitUntil("the handler is aborted", Effect.map(stats, (s) => s.aborted === 1 && s.inFlight === 0))
    }).pipe(Effect.provide(emulator([{ fault: { kind: "latency", delay: "10 seconds" } }], { timeout: "2 seconds" }))))

  it.effect("latency once, timeout 2 s, maxRetries 2: the retry succeeds, one fault counted", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(chatOnce())
      yield* waitUntil("the emulator delays the request", Effect.map(sleepsBetween(9_000, 10_000), (k) => k > 0))
      yield* TestClock.adjust("2 seconds")
      yield* drive(fiber, "500 millis")
      const s = yield* stats
      assert.strictEqual(s.faults.latency, 1)
      assert.strictEqual(s.received, 2)
    }).pipe(
      Effect.provide(
        emulator([{ fault: { kind: "latency", delay: "10 seconds" }, times: 1 }], {
          timeout: "2 seconds",
          maxRetries: 2
        })
      )
    ))

  it.effect("slowFirstByte beyond firstByteTimeout: Timeout (firstByte), for a call and for a stream", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.exit(chatOnce()))
      yield* waitUntil("the emulator holds the answer", Effect.map(sleepsBetween(9_000, 10_000), (k) => k > 0))
      yield* TestClock.adjust("2 seconds")
      const error = expectFailure(yield* finish(fiber))
      assert.strictEqual(error._tag, "Timeout")
      if (error._tag !== "Timeout") return
      assert.strictEqual(error.timeout, "firstByte")
      assert.strictEqual(Duration.toMillis(error.after), 2_000)
      yield* waitUntil("the first handler is aborted", Effect.map(stats, (s) => s.aborted === 1))

      const streamed = yield* Effect.fork(streamOutcome())
      yield* waitUntil("the emulator holds the stream", Effect.map(faultsOf("slowFirstByte"), (n) => n === 2))
      yield* waitUntil("the stream's hold is pending", Effect.map(sleepsBetween(9_000, 10_000), (k) => k > 0))
      yield* TestClock.adjust("2 seconds")
      const items = yield* finish(streamed)
      assert.strictEqual(items.length, 1)
      const last = items[0]!
      assert.isTrue(Either.isLeft(last))
      if (Either.isRight(last)) return
      assert.strictEqual(last.left._tag, "Timeout")
      assert.strictEqual(last.left._tag === "Timeout" ? last.left.timeout : undefined, "firstByte")
      yield* waitUntil("both handlers are aborted", Effect.map(stats, (s) => s.aborted === 2 && s.inFlight === 0))
    }).pipe(
      Effect.provide(emulator([{ fault: { kind: "slowFirstByte", delay: "10 seconds" } }], {
        firstByteTimeout: "2 seconds"
      }))
    ))

  it.effect("slowFirstByte once, maxRetries 2: the retry succeeds, one fault counted", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(chatOnce())
      yield* waitUntil("the emulator holds the answer", Effect.map(sleepsBetween(9_000, 10_000), (k) => k > 0))
      yield* TestClock.adjust("2 seconds")
      yield* drive(fiber, "500 millis")
      const s = yield* stats
      assert.strictEqual(s.faults.slowFirstByte, 1)
      assert.strictEqual(s.received, 2)
    }).pipe(
      Effect.provide(
        emulator([{ fault: { kind: "slowFirstByte", delay: "10 seconds" }, times: 1 }], {
          firstByteTimeout: "2 seconds",
          maxRetries: 2
        })
      )
    ))
})

describe("dropped connections", () => {
  it.effect("resetBeforeBody: TransportError for a call, a stream and a GET; the connection is gone", () =>
    Effect.gen(function*() {
      const error = expectFailure(yield* Effect.exit(chatOnce()))
      assert.strictEqual(error._tag, "TransportError")
      assert.strictEqual(error.endpoint, "POST /v2/chat/completions")
      const items = yield* streamOutcome()
      assert.strictEqual(items.length, 1)
      assert.strictEqual(Either.isLeft(items[0]!) ? items[0].left._tag : "item", "TransportError")
      const models = yield* Models.Models
      const listError = yield* Effect.flip(models.list())
      assert.strictEqual(listError._tag, "TransportError")
      const s = yield* stats
      assert.strictEqual(s.faults.resetBeforeBody, 3)
      // deliberate resets are not client aborts
      assert.strictEqual(s.aborted, 0)
      yield* waitUntil("no connection is left open", Effect.map(stats, (s) => s.connections === 0))
      yield* settled
    }).pipe(Effect.provide(emulator([{ fault: { kind: "resetBeforeBody" } }]))))

  it.effect("resetBeforeBody twice, maxRetries 3: recovered, two faults counted", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(chatOnce())
      yield* drive(fiber, "1 second")
      const s = yield* stats
      assert.strictEqual(s.faults.resetBeforeBody, 2)
      assert.strictEqual(s.received, 3)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "resetBeforeBody" }, times: 2 }], { maxRetries: 3 }))))

  it.effect("resetDuringBody: TransportError while reading the body of a call and a GET", () =>
    Effect.gen(function*() {
      const error = expectFailure(yield* Effect.exit(chatOnce()))
      assert.strictEqual(error._tag, "TransportError")
      // the status line and headers arrived: the failure is in the body
      assert.include(error.message, "body")
      const models = yield* Models.Models
      const listError = yield* Effect.flip(models.list())
      assert.strictEqual(listError._tag, "TransportError")
      const s = yield* stats
      assert.strictEqual(s.faults.resetDuringBody, 2)
      assert.strictEqual(s.aborted, 0)
      yield* settled
    }).pipe(Effect.provide(emulator([{ fault: { kind: "resetDuringBody" } }]))))

  it.effect("resetDuringBody on a stream: the first chunk arrives, then TransportError", () =>
    Effect.gen(function*() {
      const items = yield* streamOutcome()
      assert.strictEqual(items.length, 2)
      assert.isTrue(Either.isRight(items[0]!))
      const last = items[1]!
      assert.strictEqual(Either.isLeft(last) ? last.left._tag : "item", "TransportError")
      yield* settled
    }).pipe(Effect.provide(emulator([{ fault: { kind: "resetDuringBody" } }]))))

  it.effect("resetDuringBody once, maxRetries 2: recovered, one fault counted", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.fork(chatOnce())
      yield* drive(fiber, "500 millis")
      const s = yield* stats
      assert.strictEqual(s.faults.resetDuringBody, 1)
      assert.strictEqual(s.received, 2)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "resetDuringBody" }, times: 1 }], { maxRetries: 2 }))))
})

describe("broken bodies", () => {
  it.effect("truncatedSse: two chunks, then TransportError for the missing [DONE]; not retried", () =>
    Effect.gen(function*() {
      const items = yield* streamOutcome("a long enough answer to stream in many chunks")
      assert.strictEqual(items.length, 3)
      assert.isTrue(Either.isRight(items[0]!) && Either.isRight(items[1]!))
      const last = items[2]!
      if (Either.isRight(last)) return assert.fail("the stream should have failed")
      assert.strictEqual(last.left._tag, "TransportError")
      assert.include(last.left.message, "[DONE]")
      const s = yield* stats
      assert.strictEqual(s.faults.truncatedSse, 1)
      assert.strictEqual(s.received, 1)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "truncatedSse" } }], { maxRetries: 3 }))))

  it.effect("truncatedSse leaves a non-streaming request alone and keeps its use for a stream", () =>
    Effect.gen(function*() {
      const completion = yield* chatOnce()
      assert.strictEqual(completion.object, "chat.completion")
      assert.strictEqual(yield* faultsOf("truncatedSse"), 0)
      const items = yield* streamOutcome()
      assert.isTrue(Either.isLeft(items[items.length - 1]!))
      assert.strictEqual(yield* faultsOf("truncatedSse"), 1)
      // `times: 1` is spent now
      const again = yield* streamOutcome()
      assert.isTrue(again.every(Either.isRight))
    }).pipe(Effect.provide(emulator([{ fault: { kind: "truncatedSse" }, times: 1 }]))))

  it.effect("malformedJson: DecodeError with status 200 and the body's start; never retried", () =>
    Effect.gen(function*() {
      const error = expectFailure(yield* Effect.exit(chatOnce()))
      assert.strictEqual(error._tag, "DecodeError")
      if (error._tag !== "DecodeError") return
      assert.strictEqual(error.status, 200)
      assert.include(error.message, "not JSON")
      assert.include(error.excerpt, "chatcmpl-chaos")
      const s = yield* stats
      assert.strictEqual(s.received, 1)
      assert.strictEqual(s.faults.malformedJson, 1)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "malformedJson" } }], { maxRetries: 3 }))))

  it.effect("wrongContentType: DecodeError whose excerpt shows the HTML page; never retried", () =>
    Effect.gen(function*() {
      const error = expectFailure(yield* Effect.exit(chatOnce()))
      assert.strictEqual(error._tag, "DecodeError")
      if (error._tag !== "DecodeError") return
      assert.strictEqual(error.status, 200)
      assert.include(error.excerpt, "<title>Sign in")
      assert.strictEqual((yield* stats).received, 1)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "wrongContentType" } }], { maxRetries: 3 }))))

  it.effect("non-SSE 200 bodies on a stream are a DecodeError naming the content type, with an excerpt", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      for (const fault of [{ kind: "wrongContentType" }, { kind: "malformedJson" }] as const) {
        yield* emulator.setChaos([{ fault }])
        const items = yield* streamOutcome()
        assert.strictEqual(items.length, 1, fault.kind)
        const only = items[0]!
        if (Either.isRight(only)) return assert.fail(`${fault.kind}: expected a failure`)
        const error = only.left
        assert.strictEqual(error._tag, "DecodeError", fault.kind)
        if (error._tag !== "DecodeError") return
        assert.strictEqual(error.status, 200)
        assert.include(error.message, "expected an event stream, got")
        assert.isAbove(error.excerpt.length, 0)
      }
      yield* settled
    }).pipe(Effect.provide(emulator([]))))

  it.effect("bodyLargerThanDeclared: DecodeError on the declared (cut) body; the next request is clean", () =>
    Effect.gen(function*() {
      const error = expectFailure(yield* Effect.exit(chatOnce()))
      assert.strictEqual(error._tag, "DecodeError")
      if (error._tag !== "DecodeError") return
      assert.strictEqual(error.status, 200)
      assert.isTrue(error.excerpt.startsWith("{\"id\":\"chatcmpl-"))
      // the surplus bytes must not poison the connection the next request uses
      const completion = yield* chatOnce("again")
      assert.strictEqual(completion.object, "chat.completion")
      const s = yield* stats
      assert.strictEqual(s.faults.bodyLargerThanDeclared, 1)
      assert.strictEqual(s.received, 2)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "bodyLargerThanDeclared" }, times: 1 }], { maxRetries: 3 }))))
})

describe("rules", () => {
  it.effect("route and method select the requests a rule applies to", () =>
    Effect.gen(function*() {
      const embeddings = yield* Embeddings.Embeddings
      const models = yield* Models.Models
      const emulator = yield* Emulator.Emulator
      yield* chatOnce()
      const error = yield* Effect.flip(embeddings.create({ model: "text-embedding-bge-m3", input: ["a"] }))
      assert.strictEqual(error._tag, "ServerError")
      yield* emulator.setChaos([{ fault: { kind: "status", status: 500 }, method: "get" }])
      yield* chatOnce()
      assert.strictEqual((yield* Effect.flip(models.list()))._tag, "ServerError")
      assert.strictEqual(yield* faultsOf("status"), 2)
    }).pipe(Effect.provide(emulator([{ fault: { kind: "status", status: 503 }, route: "/v2/embeddings" }]))))

  it.effect("setChaos replaces the rules at run time and restarts their counts; [] turns faults off", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      yield* chatOnce()
      yield* emulator.setChaos([{ fault: { kind: "status", status: 503 }, times: 1 }])
      assert.strictEqual((yield* Effect.flip(chatOnce()))._tag, "ServerError")
      yield* chatOnce()
      yield* emulator.setChaos([{ fault: { kind: "status", status: 503 }, times: 1 }])
      assert.strictEqual((yield* Effect.flip(chatOnce()))._tag, "ServerError")
      yield* emulator.setChaos([])
      yield* chatOnce()
      const s = yield* stats
      assert.strictEqual(s.faults.status, 2)
      assert.strictEqual(s.received, 5)
    }).pipe(Effect.provide(emulator([]))))

  const pattern = (seed: number) =>
    Effect.gen(function*() {
      const models = yield* Models.Models
      const outcomes: Array<boolean> = []
      for (let i = 0; i < 30; i++) outcomes.push(Either.isLeft(yield* Effect.either(models.list())))
      const s = yield* stats
      assert.strictEqual(s.faults.status ?? 0, outcomes.filter((failed) => failed).length)
      return outcomes.map((failed) => (failed ? "x" : ".")).join("")
    }).pipe(Effect.provide(emulator([{ fault: { kind: "status", status: 503 }, rate: 0.3 }], {}, { chaosSeed: seed })))

  it.effect("rate draws from the seeded generator: the same seed gives the same faults", () =>
    Effect.gen(function*() {
      const first = yield* pattern(7)
      const second = yield* pattern(7)
      const other = yield* pattern(8)
      assert.strictEqual(first, second)
      assert.notStrictEqual(first, other)
      const failures = first.split("").filter((c) => c === "x").length
      assert.isAbove(failures, 2)
      assert.isBelow(failures, 25)
    }))

  it("faultMix hits about the given share of requests, with 5xx and resets", () => {
    const state = new ChaosState(faultMix(0.2), 42)
    const kinds: Record<string, number> = {}
    let hits = 0
    for (let i = 0; i < 10_000; i++) {
      const picked = state.pick("POST", "/v2/chat/completions")
      if (picked === undefined) continue
      hits++
      kinds[picked.fault.kind] = (kinds[picked.fault.kind] ?? 0) + 1
    }
    assert.isAbove(hits, 1_800)
    assert.isBelow(hits, 2_200)
    assert.isAbove(kinds.status ?? 0, 0)
    assert.isAbove(kinds.resetBeforeBody ?? 0, 0)
    assert.isAbove(kinds.resetDuringBody ?? 0, 0)
    assert.strictEqual(new ChaosState(faultMix(0), 42).pick("GET", "/v2/models"), undefined)
  })
})

describe("stats", () => {
  it.effect("a client that gives up mid-request is counted as aborted, and the handler ends", () =>
    Effect.gen(function*() {
      yield* chatOnce()
      const emulator = yield* Emulator.Emulator
      yield* emulator.setChaos([{ fault: { kind: "latency", delay: "1 hour" } }])
      const fiber = yield* Effect.fork(chatOnce())
      yield* waitUntil("the request is held", Effect.map(stats, (s) => s.inFlight === 1 && s.faults.latency === 1))
      assert.strictEqual((yield* stats).aborted, 0)
      yield* Fiber.interrupt(fiber)
      yield* waitUntil("the handler is aborted", Effect.map(stats, (s) => s.aborted === 1 && s.inFlight === 0))
      const s = yield* stats
      assert.strictEqual(s.received, 2)
    }).pipe(Effect.provide(emulator([]))))

  it.effect("a stream stays in flight until its body ends; a consumer that stops early aborts it", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const fiber = yield* Effect.fork(Stream.runCollect(Stream.take(chat.createStream(ask(model, "stream me")), 1)))
      yield* waitUntil("the first chunk is pending", Effect.map(sleepsBetween(1, 1_000), (k) => k > 0))
      assert.strictEqual((yield* stats).inFlight, 1)
      yield* TestClock.adjust("1 second")
      const first = yield* finish(fiber)
      assert.strictEqual(Chunk.size(first), 1)
      yield* waitUntil("the stream is aborted", Effect.map(stats, (s) => s.aborted === 1 && s.inFlight === 0))
    }).pipe(Effect.provide(emulator([], {}, { streamChunkDelay: "1 second" }))))

  it.effect("connections counts the server's open connections: one per concurrent request, none after", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* stats).connections, 0)
      const fibers = yield* Effect.forEach([1, 2, 3], (i) => Effect.fork(chatOnce(`held ${i}`)))
      yield* waitUntil("three requests are held", Effect.map(stats, (s) => s.inFlight === 3))
      yield* waitUntil("three connections are open", Effect.map(stats, (s) => s.connections === 3))
      yield* Fiber.interruptAll(fibers)
      yield* waitUntil(
        "every connection is closed",
        Effect.map(stats, (s) => s.connections === 0 && s.aborted === 3 && s.inFlight === 0)
      )
    }).pipe(Effect.provide(emulator([{ fault: { kind: "latency", delay: "1 hour" } }]))))
})
