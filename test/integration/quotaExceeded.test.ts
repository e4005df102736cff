/**
 * A key whose budget is spent, against the emulator: the first refusal that says so (402, 429 `insufficient_quota`,
 * the service's 429 "reached its monthly budget limit", or a 403 with those words) is `QuotaExceeded` for the KEY.
 * The limiter stops admitting every model of that key at once: later requests to other models fail with it without
 * reaching the server, callers waiting in line fail with it, nothing is retried, routed to the queue or learnt; a
 * different key on the same limiter goes on. Requests are counted at the server.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Emulator from "../../src/emulator/Emulator.js"
import { budgetReachedDetail } from "../../src/emulator/spend.js"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as ClientMetrics from "../../src/layers/ClientMetrics.js"
import * as Inference from "../../src/layers/Inference.js"
import * as InferenceHttp from "../../src/layers/InferenceHttp.js"
import * as Node from "../../src/layers/Node.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import type { ApiError } from "../../src/schemas/Errors.js"
import * as Chat from "../../src/services/Chat.js"
import * as Completions from "../../src/services/Completions.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import * as Responses from "../../src/services/Responses.js"
import { ask, count, layerEmulatorWithClient, waitUntil } from "../helpers/emulator.js"

const keyOf = (name: string) => `gen-${`quotaexceeded${name}`.padEnd(48, "0")}`
const spentKey = keyOf("spent")
const otherKey = keyOf("other")
const llama = "Llama-3.3-70B-Instruct"

/** What the emulator has seen so far. */
const stats = Effect.flatMap(Emulator.Emulator, (emulator) => emulator.stats)

/** How many requests the emulator has received so far. */
const received = Effect.map(stats, (s) => s.received)

/** `QuotaExceeded`, with the status the server refused with. */
const assertQuotaExceeded = (error: ApiError, status: number, what: string) => {
  assert.strictEqual(error._tag, "QuotaExceeded", `${what}: ${error._tag}: ${error.message}`)
  assert.strictEqual(error._tag === "QuotaExceeded" ? error.status : undefined, status, what)
}

/** One request per kind of model route of the client in context: chat, a stream, completions, responses, embeddings. */
const everyModel = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  const completions = yield* Completions.Completions
  const responses = yield* Responses.Responses
  const embeddings = yield* Embeddings.Embeddings
  const requests: ReadonlyArray<readonly [string, Effect.Effect<unknown, ApiError>]> = [
    ["gpt-4o", chat.create(ask("gpt-4o", "Hello"))],
    [llama, chat.create(ask(llama, "Hello"))],
    ["a stream of gemini-2.5-flash", Stream.runDrain(chat.createStream(ask("gemini-2.5-flash", "Hello")))],
    ["Qwen3-30B-A3B-FP8", completions.create({ model: "Qwen3-30B-A3B-FP8", prompt: "Hello" })],
    ["gpt-4.1", responses.create({ model: "gpt-4.1", input: "Hello" })],
    ["text-embedding-bge-m3", embeddings.create({ model: "text-embedding-bge-m3", input: "Hello" })]
  ]
  return requests
})

/**
 * Every model of the client in context fails with `QuotaExceeded` (the first refusal's status), and not one of those
 * requests reaches the server.
 */
const assertKeyStopped = (status: number) =>
  Effect.gen(function*() {
    for (const [model, request] of yield* everyModel) {
      const before = yield* received
      assertQuotaExceeded(yield* Effect.flip(request), status, model)
      assert.strictEqual((yield* received) - before, 0, `${model}: refused by the limiter, not sent`)
    }
  })

/**
 * A second client, of `apiKey`, on the emulator in context and on `limiter` (the first client's: its buckets and the
 * keys it stopped are shared).
 */
const clientOf = (apiKey: string, limiter: RateLimiter.RateLimiter.Service) =>
  Layer.unwrapEffect(Effect.map(Emulator.Emulator, (emulator) =>
    Inference.layer.pipe(
      Layer.provideMerge(InferenceHttp.layer),
      Layer.provide(RetryPolicy.layerFromClientConfig),
      Layer.provide(ClientConfig.layer({ apiKey, baseUrl: emulator.baseUrl, tier: "standard4000" })),
      Layer.provide(Node.httpClient),
      Layer.provide(Layer.succeed(RateLimiter.RateLimiter, limiter))
    )))

/** The emulator with `keys`, and a client of the spent key with `rateLimiter` options. */
const emulatorWith = (
  keys: ReadonlyArray<Emulator.KeySpec>,
  tier: ClientConfig.Plan | "auto",
  rateLimiter: RateLimiter.Options = {}
) =>
  layerEmulatorWithClient(
    { keys, window: "10 seconds" },
    (emulator) => ({
      apiKey: spentKey,
      baseUrl: emulator.baseUrl,
      tier,
      rateLimiter: { window: "10 seconds", ...rateLimiter }
    })
  )

/** A budget that the first answered request spends (the emulator refuses once the spend reaches it). */
const oneRequest = { eur: 1e-9 }

describe("a key whose budget is spent", () => {
  for (const status of [402, 429] as const) {
    it.effect(`${status}: the first QuotaExceeded stops every model of the key; another key goes on`, () =>
      Effect.gen(function*() {
        const chat = yield* Chat.Chat
        const limiter = yield* RateLimiter.RateLimiter
        const retriesBefore = yield* count(ClientMetrics.retries)
        const before = yield* received
        const first = yield* Effect.flip(chat.create(ask("gpt-4o", "Hello")))
        assertQuotaExceeded(first, status, "the first request")
        assert.strictEqual((yield* received) - before, 1, "the first request is sent once, never retried")
        yield* assertKeyStopped(status)
        // every bucket of the key says why it admits nothing
        const buckets = yield* limiter.snapshot
        assert.isAtLeast(buckets.length, 1)
        for (const bucket of buckets) assert.strictEqual(bucket.spent, first.message, bucket.model)
        assert.strictEqual((yield* count(ClientMetrics.retries)) - retriesBefore, 0)
        // not a rate limit: the emulator's windows had room
        assert.strictEqual((yield* stats).rateLimited, 0)

        // another key on the same limiter is unaffected: its requests are sent and answered
        const sentBefore = yield* received
        const answer = yield* Effect.flatMap(Chat.Chat, (other) => other.create(ask("gpt-4o", "Hello"))).pipe(
          Effect.provide(clientOf(otherKey, limiter))
        )
        assert.isAbove(answer.text.length, 0)
        assert.strictEqual((yield* received) - sentBefore, 1)
        const other = (yield* limiter.snapshot).filter((b) => !buckets.some((s) => s.key === b.key))
        assert.deepStrictEqual(other.map((b) => [b.model, b.spent]), [["gpt-4o", undefined]])
      }).pipe(Effect.provide(emulatorWith(
        [{ key: spentKey, tier: "standard4000", exhausted: status }, { key: otherKey, tier: "standard4000" }],
        "standard4000"
      ))))
  }

  it.effect("a monthly budget that runs out mid-way: the service's 429 stops every model and the callers waiting", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const embeddings = yield* Embeddings.Embeddings
      const limiter = yield* RateLimiter.RateLimiter
      const retriesBefore = yield* count(ClientMetrics.retries)
      // answered while the budget lasts: it spends it
      assert.isAbove((yield* chat.create(ask(llama, "first"))).text.length, 0)
      // one Llama request a window: the next two wait in the limiter's line
      const waiting = yield* Effect.fork(Effect.all(
        [chat.create(ask(llama, "second")), chat.create(ask(llama, "third"))],
        { concurrency: "unbounded", mode: "either" }
      ))
      yield* waitUntil(
        "two callers wait for Llama",
        Effect.map(limiter.snapshot, (states) => states.find((s) => s.model === llama)?.waiting === 2)
      )
      const before = yield* received
      // another model meets the service's refusal
      const error = yield* Effect.flip(embeddings.create({ model: "text-embedding-bge-m3", input: "Hello" }))
      assertQuotaExceeded(error, 429, "the refusal")
      assert.strictEqual(error.message, budgetReachedDetail)
      // the callers waiting fail with it now: the clock does not move, no window frees
      yield* waitUntil("the waiting callers fail", Effect.map(Fiber.poll(waiting), Option.isSome))
      const results = yield* Fiber.join(waiting)
      assert.strictEqual(results.length, 2)
      for (const result of results) {
        assert.isTrue(Either.isLeft(result), "a waiting caller fails")
        if (Either.isLeft(result)) assertQuotaExceeded(result.left, 429, "a waiting caller")
      }
      assert.strictEqual((yield* received) - before, 1, "the callers waiting were never sent")
      yield* assertKeyStopped(429)
      assert.strictEqual((yield* count(ClientMetrics.retries)) - retriesBefore, 0, "nothing is retried")
      assert.strictEqual((yield* stats).rateLimited, 0)
    }).pipe(Effect.provide(emulatorWith(
      [{ key: spentKey, tier: "basic", monthlyBudget: oneRequest }],
      "basic",
      { limits: { [llama]: { rpm: 1 } } }
    ))))

  it.effect("a spent key's requests are not routed to the queue, even when its window is full", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const embeddings = yield* Embeddings.Embeddings
      // the window of one Llama request is full: the next Llama request would go to the queue
      const limiter = yield* RateLimiter.RateLimiter
      yield* chat.create(ask(llama, "first"))
      const key = (yield* limiter.snapshot)[0]!.key
      assert.isTrue(yield* limiter.wouldWait({ key, model: llama, input: 10 }), "a Llama request would go to the queue")
      const refused = yield* Effect.flip(embeddings.create({ model: "text-embedding-bge-m3", input: "x" }))
      assertQuotaExceeded(refused, 429, "the refusal")
      const before = yield* received
      for (let i = 0; i < 3; i++) {
        assertQuotaExceeded(yield* Effect.flip(chat.create(ask(llama, `queued ${i}`))), 429, `Llama ${i}`)
      }
      assert.strictEqual((yield* received) - before, 0, "neither the queue nor /v2 saw them")
    }).pipe(Effect.provide(emulatorWith(
      [{ key: spentKey, tier: "basic", monthlyBudget: oneRequest }],
      "basic",
      { limits: { [llama]: { rpm: 1 } }, queueRouting: true }
    ))))

  it.effect("a request routed to the queue that meets the spent budget stops the key too", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      // the window of one Llama request is full: the second goes to the queue, where the budget is found spent
      yield* chat.create(ask(llama, "first"))
      const queued = yield* Effect.flip(chat.create(ask(llama, "second")))
      assertQuotaExceeded(queued, 429, "the queued request")
      assert.include(queued._tag === "QuotaExceeded" ? queued.endpoint ?? "" : "", "/queue/")
      yield* assertKeyStopped(429)
    }).pipe(Effect.provide(emulatorWith(
      [{ key: spentKey, tier: "basic", monthlyBudget: oneRequest }],
      "basic",
      { limits: { [llama]: { rpm: 1 } }, queueRouting: true }
    ))))

  it.effect("a budget refusal teaches a learning bucket nothing: no limit, no block, no wider margin", () =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const limiter = yield* RateLimiter.RateLimiter
      // auto: Llama's limits are learnt from its 429s; a budget of 0 refuses from the first request
      assertQuotaExceeded(yield* Effect.flip(chat.create(ask(llama, "Hello"))), 429, "the first request")
      const bucket = (yield* limiter.snapshot).find((s) => s.model === llama)
      assert.isDefined(bucket?.spent)
      for (const budget of ["requests", "input", "output", "tokens"] as const) {
        assert.isUndefined(bucket?.budgets[budget].limit, `${budget}: nothing learnt`)
      }
      assert.strictEqual(bucket?.blockedMs, 0)
      assert.strictEqual(bucket?.marginMs, 0)
    }).pipe(Effect.provide(emulatorWith(
      [{ key: spentKey, tier: "basic", monthlyBudget: { eur: 0 } }],
      "auto",
      { margin: 0 }
    ))))
})

/** A server that refuses every request with 403 and the service's budget words, counting what it receives. */
const forbiddingServer = Effect.acquireRelease(
  Effect.async<{ readonly server: ReturnType<typeof createServer>; readonly received: () => number }>((resume) => {
    let received = 0
    const server = createServer((request, response) => {
      received++
      request.resume()
      request.on("end", () => {
        response.writeHead(403, { "content-type": "application/json" })
        response.end(JSON.stringify({ detail: budgetReachedDetail }))
      })
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ server, received: () => received })))
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
)

describe("a 403 that says the budget is spent", () => {
  it.effect("is QuotaExceeded for the key: every model stops after the first, nothing is retried", () =>
    Effect.gen(function*() {
      const { received, server } = yield* forbiddingServer
      const port = (server.address() as AddressInfo).port
      yield* Effect.gen(function*() {
        const chat = yield* Chat.Chat
        const embeddings = yield* Embeddings.Embeddings
        const first = yield* Effect.flip(chat.create(ask(llama, "Hello")))
        assertQuotaExceeded(first, 403, "the first request")
        assert.strictEqual(first.message, budgetReachedDetail)
        assert.strictEqual(received(), 1)
        assertQuotaExceeded(yield* Effect.flip(chat.create(ask("gpt-4o", "Hello"))), 403, "gpt-4o")
        assertQuotaExceeded(
          yield* Effect.flip(embeddings.create({ model: "text-embedding-bge-m3", input: "Hello" })),
          403,
          "embeddings"
        )
        assert.strictEqual(received(), 1, "only the first request reached the server")
      }).pipe(
        Effect.provide(Node.layer({ apiKey: spentKey, baseUrl: `http://127.0.0.1:${port}/v2`, tier: "basic" }))
      )
    }).pipe(Effect.scoped))
})
