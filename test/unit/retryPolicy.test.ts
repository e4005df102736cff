import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as HashMap from "effect/HashMap"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as TestClock from "effect/TestClock"
import { retryAnnotation } from "../../src/internal/request/retry.js"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as ClientMetrics from "../../src/layers/ClientMetrics.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import {
  type ApiError,
  BadRequest,
  DecodeError,
  QuotaExceeded,
  RateLimited,
  ServerError,
  Timeout,
  TransportError,
  Unauthorized
} from "../../src/schemas/Errors.js"
import { ModelList } from "../../src/schemas/Models.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { layerWithClient, listModels, modelListBody, sequence } from "./helpers.js"

const ok: Testing.ScriptedResponse = { body: modelListBody }
const exact = { retry: { rateLimitJitter: 0 } }

const settings = RetryPolicy.settings({ rateLimitJitter: "250 millis" })
const fresh: RetryPolicy.State = { retries: 0, waited: Duration.zero }
const decideMillis = (...args: Parameters<typeof RetryPolicy.decide>) =>
  Option.map(RetryPolicy.decide(...args), Duration.toMillis)

const rateLimited = (retryAfter?: Duration.DurationInput) =>
  new RateLimited({
    message: "slow down",
    status: 429,
    ...(retryAfter === undefined ? {} : { retryAfter: Duration.decode(retryAfter) })
  })
const serverError = (status = 503) => new ServerError({ message: "down", status })
const failing = (calls: Ref.Ref<number>): Effect.Effect<never, ApiError> =>
  Effect.zipRight(Ref.update(calls, (n) => n + 1), Effect.fail(serverError()))

describe("RetryPolicy.decide", () => {
  it("fills in the defaults", () => {
    const s = RetryPolicy.settings()
    assert.strictEqual(s.maxRetries, 6)
    assert.strictEqual(Duration.toMillis(s.budget), 120_000)
    assert.strictEqual(Duration.toMillis(s.baseDelay), 500)
    assert.strictEqual(Duration.toMillis(s.maxDelay), 30_000)
    assert.strictEqual(Duration.toMillis(s.rateLimitJitter), 250)
  })

  it("a 429 waits the server's wait plus jitter scaled by the random number", () => {
    assert.deepStrictEqual(decideMillis(rateLimited("5 seconds"), fresh, settings, 0), Option.some(5_000))
    assert.deepStrictEqual(decideMillis(rateLimited("5 seconds"), fresh, settings, 0.5), Option.some(5_125))
    assert.deepStrictEqual(decideMillis(rateLimited("5 seconds"), fresh, settings, 0.999), Option.some(5_249.75))
  })

  it("a 429 without a wait backs off like a 5xx", () => {
    assert.deepStrictEqual(decideMillis(rateLimited(), fresh, settings, 0), Option.some(250))
    assert.deepStrictEqual(decideMillis(rateLimited(), fresh, settings, 1), Option.some(500))
  })

  it("5xx, Timeout and TransportError back off exponentially with equal jitter", () => {
    for (
      const error of [
        serverError(),
        new Timeout({ message: "t", timeout: "total", after: Duration.seconds(1) }),
        new TransportError({ message: "reset" })
      ]
    ) {
      assert.deepStrictEqual(decideMillis(error, fresh, settings, 0), Option.some(250), error._tag)
      assert.deepStrictEqual(decideMillis(error, fresh, settings, 1), Option.some(500), error._tag)
      assert.deepStrictEqual(
        decideMillis(error, { retries: 1, waited: Duration.zero }, settings, 0),
        Option.some(500),
        error._tag
      )
      assert.deepStrictEqual(
        decideMillis(error, { retries: 3, waited: Duration.zero }, settings, 1),
        Option.some(4_000),
        error._tag
      )
    }
  })

  it("back-off is capped at maxDelay", () => {
    const state = { retries: 6, waited: Duration.zero }
    assert.deepStrictEqual(decideMillis(serverError(), state, settings, 1), Option.some(30_000))
    assert.deepStrictEqual(decideMillis(serverError(), state, settings, 0), Option.some(15_000))
    assert.strictEqual(Duration.toMillis(RetryPolicy.backoff(40, settings, 1)), 30_000)
  })

  it("never retries errors that are not retryable", () => {
    for (
      const error of [
        new QuotaExceeded({ message: "quota", status: 429 }),
        new BadRequest({ message: "bad", status: 400 }),
        new Unauthorized({ message: "key", status: 401 }),
        new DecodeError({ message: "shape", excerpt: "" }),
        serverError(501)
      ]
    ) {
      assert.isTrue(Option.isNone(RetryPolicy.decide(error, fresh, settings, 0)), error._tag)
    }
  })

  it("stops after maxRetries", () => {
    const s = RetryPolicy.settings({ maxRetries: 2 })
    assert.isTrue(Option.isSome(RetryPolicy.decide(serverError(), { retries: 1, waited: Duration.zero }, s, 0)))
    assert.isTrue(Option.isNone(RetryPolicy.decide(serverError(), { retries: 2, waited: Duration.zero }, s, 0)))
    assert.isTrue(
      Option.isNone(RetryPolicy.decide(rateLimited("1 second"), { retries: 2, waited: Duration.zero }, s, 0))
    )
  })

  it("a wait that does not fit in the budget gives up; one that just fits is taken", () => {
    const s = RetryPolicy.settings({ budget: "10 seconds", rateLimitJitter: 0 })
    assert.isTrue(Option.isNone(RetryPolicy.decide(rateLimited("11 seconds"), fresh, s, 0)))
    assert.deepStrictEqual(decideMillis(rateLimited("10 seconds"), fresh, s, 0), Option.some(10_000))
    const spent = { retries: 1, waited: Duration.seconds(6) }
    assert.isTrue(Option.isNone(RetryPolicy.decide(rateLimited("5 seconds"), spent, s, 0)))
    assert.deepStrictEqual(decideMillis(rateLimited("4 seconds"), spent, s, 0), Option.some(4_000))
  })

  it.effect("layerDisabled never retries", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const policy = yield* RetryPolicy.RetryPolicy.pipe(Effect.provide(RetryPolicy.layerDisabled))
      const exit = yield* Effect.exit(
        Effect.retry(failing(calls), policy.schedule)
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(yield* Ref.get(calls), 1)
    }))

  it.effect("layerFromClientConfig takes maxRetries from the configuration", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const policy = yield* RetryPolicy.RetryPolicy.pipe(
        Effect.provide(RetryPolicy.layerFromClientConfig),
        Effect.provide(ClientConfig.layer({ apiKey: "k", maxRetries: 1 }))
      )
      const fiber = yield* Effect.fork(
        Effect.retry(failing(calls), policy.schedule)
      )
      yield* TestClock.adjust("1 minute")
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(yield* Ref.get(calls), 2)
    }))
})

describe("RetryPolicy.reported", () => {
  /** The messages logged while `effect` runs. */
  const logged = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const annotations: Array<unknown> = []
      const logger = Logger.make(({ annotations: annotated, logLevel, message }) => {
        lines.push(`${logLevel.label} ${(message as ReadonlyArray<unknown>).join(" ")}`)
        annotations.push(Option.getOrUndefined(HashMap.get(annotated, retryAnnotation)))
      })
      const exit = yield* Effect.exit(effect.pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Logger.withMinimumLogLevel(LogLevel.Debug)
      ))
      return { annotations, exit, lines }
    })

  it.effect("one debug line per retry, marked as a retry's: what failed, where, which retry of how many, when; none at the end", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const policy = RetryPolicy.make({ maxRetries: 2, baseDelay: "1 second", maxDelay: "1 second" })
      const retries = yield* Metric.value(ClientMetrics.retries)
      const unavailable = new ServerError({
        message: "Model unavailable",
        status: 503,
        endpoint: "POST /v2/embeddings"
      })
      const attempt: Effect.Effect<never, ApiError> = Effect.zipRight(
        Ref.update(calls, (n) => n + 1),
        Effect.fail(unavailable)
      )
      const fiber = yield* Effect.fork(logged(Effect.retry(attempt, RetryPolicy.reported(policy, "POST /embeddings"))))
      yield* TestClock.adjust("1 minute")
      const { annotations, exit, lines } = yield* Fiber.join(fiber)
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(annotations, [1, 2])
      assert.strictEqual(yield* Ref.get(calls), 3)
      assert.strictEqual(lines.length, 2)
      // the error's own endpoint (with the base's path) wins over the one the caller knows; the wait is 500 ms to 1 s
      // (half of the 1 s step fixed, half random: at the top of the jitter it reads 1s)
      assert.match(
        lines[0]!,
        /^DEBUG aifs: POST \/v2\/embeddings: ServerError: Model unavailable; retry 1 of 2 in (?:\d{3}ms|1s)$/
      )
      assert.match(
        lines[1]!,
        /^DEBUG aifs: POST \/v2\/embeddings: ServerError: Model unavailable; retry 2 of 2 in (?:\d{3}ms|1s)$/
      )
      assert.strictEqual((yield* Metric.value(ClientMetrics.retries)).count - retries.count, 2)
    }))

  it.effect("a policy with no bound says which retry only; an error with no endpoint names the caller's", () =>
    Effect.gen(function*() {
      const unbounded: RetryPolicy.RetryPolicy.Service = {
        schedule: Schedule.recurs(1).pipe(Schedule.as(Duration.seconds(2)), Schedule.addDelay(() => "2 seconds"))
      }
      const fiber = yield* Effect.fork(logged(
        Effect.retry(Effect.fail<ApiError>(rateLimited("2 seconds")), RetryPolicy.reported(unbounded, "GET /models"))
      ))
      yield* TestClock.adjust("1 minute")
      const { lines } = yield* Fiber.join(fiber)
      assert.deepStrictEqual(lines, ["DEBUG aifs: GET /models: RateLimited: slow down; retry 1 in 2s"])
    }))

  it.effect("a message's closing period does not run into the retry: \"5 seconds; retry\", not \"5 seconds.; retry\"", () =>
    Effect.gen(function*() {
      const once: RetryPolicy.RetryPolicy.Service = {
        schedule: Schedule.recurs(1).pipe(Schedule.as(Duration.seconds(5)), Schedule.addDelay(() => "5 seconds"))
      }
      const refusal = new RateLimited({ message: "Please retry after 5 seconds. ", status: 429 })
      const fiber = yield* Effect.fork(logged(
        Effect.retry(Effect.fail<ApiError>(refusal), RetryPolicy.reported(once, "POST /chat/completions"))
      ))
      yield* TestClock.adjust("1 minute")
      const { lines } = yield* Fiber.join(fiber)
      assert.deepStrictEqual(lines, [
        "DEBUG aifs: POST /chat/completions: RateLimited: Please retry after 5 seconds; retry 1 in 5s"
      ])
    }))
})

describe("RetryPolicy through the transport (TestClock)", () => {
  it.effect("a 429 with reset-requests 3s and reset-tokens 5s waits exactly 5 s", () =>
    Effect.gen(function*() {
      const rec = yield* sequence(
        {
          status: 429,
          headers: { "x-ratelimit-reset-requests": "3s", "x-ratelimit-reset-tokens": "5s" },
          body: { detail: "Too many requests" }
        },
        ok
      )
      const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, exact))))
      yield* Queue.take(rec.calls)
      yield* TestClock.adjust("4999 millis")
      assert.strictEqual(yield* rec.count, 1, "retried before the 5 s reset")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust("1 millis")
      yield* Queue.take(rec.calls)
      const list = yield* Fiber.join(fiber)
      assert.strictEqual(list.data[0]?.id, "Llama-3.3-70B-Instruct")
      assert.strictEqual(yield* rec.count, 2)
    }), 10_000)

  it.effect(
    "a 429 that says only the request budget ran out waits for its reset (3 s), not the token window's",
    () =>
      Effect.gen(function*() {
        const rec = yield* sequence(
          {
            status: 429,
            headers: {
              "x-ratelimit-remaining-requests": "0",
              "x-ratelimit-remaining-tokens": "90000",
              "x-ratelimit-reset-requests": "3s",
              "x-ratelimit-reset-tokens": "1m0s"
            },
            body: { detail: "Too many requests" }
          },
          ok
        )
        const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, exact))))
        yield* Queue.take(rec.calls)
        yield* TestClock.adjust("2999 millis")
        assert.strictEqual(yield* rec.count, 1, "retried before the request budget's reset")
        yield* TestClock.adjust("1 millis")
        yield* Queue.take(rec.calls)
        assert.strictEqual((yield* Fiber.join(fiber)).data[0]?.id, "Llama-3.3-70B-Instruct")
        assert.strictEqual(yield* rec.count, 2)
      }),
    10_000
  )

  it.effect("retry-after: 2 waits 2 s", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 429, headers: { "retry-after": "2" }, body: { detail: "slow down" } }, ok)
      const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, exact))))
      yield* Queue.take(rec.calls)
      yield* TestClock.adjust("1999 millis")
      assert.strictEqual(yield* rec.count, 1)
      yield* TestClock.adjust("1 millis")
      yield* Queue.take(rec.calls)
      yield* Fiber.join(fiber)
    }), 10_000)

  it.effect("retry-after-ms: 1500 waits 1.5 s", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 429, headers: { "retry-after-ms": "1500" } }, ok)
      const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, exact))))
      yield* Queue.take(rec.calls)
      yield* TestClock.adjust("1499 millis")
      assert.strictEqual(yield* rec.count, 1)
      yield* TestClock.adjust("1 millis")
      yield* Queue.take(rec.calls)
      yield* Fiber.join(fiber)
    }), 10_000)

  it.effect("a 429 whose message asks for 22 seconds waits 22 s", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({
        status: 429,
        body: { error: { message: "Rate limit reached. Please retry after 22 seconds.", code: "429" } }
      }, ok)
      const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, exact))))
      yield* Queue.take(rec.calls)
      yield* TestClock.adjust("21999 millis")
      assert.strictEqual(yield* rec.count, 1)
      yield* TestClock.adjust("1 millis")
      yield* Queue.take(rec.calls)
      yield* Fiber.join(fiber)
    }), 10_000)

  it.effect("the 429 jitter stays within rateLimitJitter", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 429, headers: { "retry-after": "2" } }, ok)
      const layer = Testing.layerHttp(rec.handler, { retry: { rateLimitJitter: "300 millis" } })
      const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(layer)))
      yield* Queue.take(rec.calls)
      yield* TestClock.adjust("1999 millis")
      assert.strictEqual(yield* rec.count, 1)
      yield* TestClock.adjust("301 millis")
      yield* Queue.take(rec.calls)
      yield* Fiber.join(fiber)
    }), 10_000)

  it.effect("5xx backs off exponentially and then succeeds", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 503, body: "model temporarily unavailable" }, { status: 502 }, ok)
      const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler))))
      yield* Queue.take(rec.calls)
      // first back-off: between 250 and 500 ms (base 500 ms, equal jitter)
      yield* TestClock.adjust("249 millis")
      assert.strictEqual(yield* rec.count, 1)
      yield* TestClock.adjust("251 millis")
      yield* Queue.take(rec.calls)
      // second back-off: between 500 and 1000 ms after the second call, made between 250 and 500 ms
      yield* TestClock.adjust("249 millis")
      assert.strictEqual(yield* rec.count, 2)
      yield* TestClock.adjust("751 millis")
      yield* Queue.take(rec.calls)
      const list = yield* Fiber.join(fiber)
      assert.strictEqual(list.data.length, 1)
      assert.strictEqual(yield* rec.count, 3)
    }), 10_000)

  it.effect("5xx back-off is exact for a fixed random number", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 500 }, { status: 500 }, ok)
      const fiber = yield* Effect.fork(
        listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler)), Effect.withRandom(Random.fixed([0])))
      )
      yield* Queue.take(rec.calls)
      yield* TestClock.adjust("249 millis")
      assert.strictEqual(yield* rec.count, 1)
      yield* TestClock.adjust("1 millis")
      yield* Queue.take(rec.calls)
      yield* TestClock.adjust("499 millis")
      assert.strictEqual(yield* rec.count, 2)
      yield* TestClock.adjust("1 millis")
      yield* Queue.take(rec.calls)
      yield* Fiber.join(fiber)
    }), 10_000)

  it.effect("a Timeout of an attempt is retried", () =>
    Effect.gen(function*() {
      const rec = yield* sequence(ok)
      const handler: Testing.Handler = (request) =>
        Effect.gen(function*() {
          const answer = yield* rec.handler(request) as Effect.Effect<Testing.ScriptedResponse>
          // the first attempt hangs far beyond the 1 s timeout
          if ((yield* rec.count) === 1) yield* Effect.sleep("1 hour")
          return answer
        })
      const layer = Testing.layerHttp(handler, { config: { timeout: "1 second" } })
      const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(layer)))
      yield* Queue.take(rec.calls)
      yield* TestClock.adjust("999 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      assert.strictEqual(yield* rec.count, 1)
      yield* TestClock.adjust("1 millis")
      yield* TestClock.adjust("500 millis")
      yield* Queue.take(rec.calls)
      yield* Fiber.join(fiber)
      assert.strictEqual(yield* rec.count, 2)
    }), 10_000)

  it.effect("a Timeout without retries fails with Timeout(total)", () =>
    Effect.gen(function*() {
      const handler: Testing.Handler = () => Effect.as(Effect.sleep("1 hour"), ok)
      const layer = Testing.layerHttp(handler, { config: { timeout: "30 seconds" }, retry: { maxRetries: 0 } })
      const fiber = yield* Effect.fork(Effect.flip(listModels.pipe(Effect.provide(layer))))
      yield* TestClock.adjust("30 seconds")
      const error = yield* Fiber.join(fiber)
      assert.instanceOf(error, Timeout)
      assert.strictEqual((error as Timeout).timeout, "total")
      assert.strictEqual(Duration.toMillis((error as Timeout).after), 30_000)
      assert.strictEqual(error.endpoint, "GET /v2/models")
    }), 10_000)

  it.effect("a TransportError is retried with back-off", () =>
    Effect.gen(function*() {
      const calls = yield* Ref.make(0)
      const client = HttpClient.make((request) =>
        Effect.flatMap(Ref.updateAndGet(calls, (n) => n + 1), (n) =>
          n === 1
            ? Effect.fail(
              new HttpClientError.RequestError({ request, reason: "Transport", cause: new Error("ECONNRESET") })
            )
            : Effect.succeed(HttpClientResponse.fromWeb(request, Response.json(modelListBody))))
      )
      const layer = layerWithClient(client)
      const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(layer)))
      yield* TestClock.adjust("249 millis")
      assert.strictEqual(yield* Ref.get(calls), 1)
      yield* TestClock.adjust("251 millis")
      yield* Fiber.join(fiber)
      assert.strictEqual(yield* Ref.get(calls), 2)
    }), 10_000)

  it.effect(
    "failUnconnected: a connection never made fails at once; a connection lost is still retried",
    () =>
      Effect.gen(function*() {
        const calls = yield* Ref.make(0)
        /** Fails the first attempt with a transport error whose cause has `code`, then answers. */
        const failingWith = (code: string) =>
          HttpClient.make((request) =>
            Effect.flatMap(Ref.updateAndGet(calls, (n) => n + 1), (n) =>
              n === 1
                ? Effect.fail(
                  new HttpClientError.RequestError({
                    request,
                    reason: "Transport",
                    cause: Object.assign(new Error(`connect ${code} 127.0.0.1:9`), { code })
                  })
                )
                : Effect.succeed(HttpClientResponse.fromWeb(request, Response.json(modelListBody))))
          )
        // no clock adjustment: a retry would sleep on the TestClock and never come back
        const refused = yield* Effect.flip(
          listModels.pipe(Effect.provide(layerWithClient(failingWith("ECONNREFUSED"))), RetryPolicy.failUnconnected)
        )
        assert.isTrue(refused._tag === "TransportError" && refused.connected === false, String(refused))
        assert.strictEqual(yield* Ref.get(calls), 1)
        // the same refusal outside it is retried
        yield* Ref.set(calls, 0)
        const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(layerWithClient(failingWith("ECONNREFUSED")))))
        yield* TestClock.adjust("500 millis")
        yield* Fiber.join(fiber)
        assert.strictEqual(yield* Ref.get(calls), 2)
        // a connection that was made and then lost is retried inside it too
        yield* Ref.set(calls, 0)
        const reset = yield* Effect.fork(
          listModels.pipe(Effect.provide(layerWithClient(failingWith("ECONNRESET"))), RetryPolicy.failUnconnected)
        )
        yield* TestClock.adjust("500 millis")
        yield* Fiber.join(reset)
        assert.strictEqual(yield* Ref.get(calls), 2)
      }),
    10_000
  )

  it.effect(
    "a 429 asking for longer than the budget fails at once with the server's wait",
    () =>
      Effect.gen(function*() {
        const rec = yield* sequence({ status: 429, headers: { "retry-after": "300" }, body: { detail: "slow down" } })
        // no clock adjustment: if the policy slept, this would hang (and time out)
        const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, exact))))
        assert.instanceOf(error, RateLimited)
        assert.strictEqual(Duration.toMillis((error as RateLimited).retryAfter!), 300_000)
        assert.strictEqual(yield* rec.count, 1)
      }),
    5_000
  )

  it.effect("a reset header beyond a small budget fails at once", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 429, headers: { "x-ratelimit-reset-tokens": "1h4m48s" } })
      const layer = Testing.layerHttp(rec.handler, { retry: { budget: "10 seconds", rateLimitJitter: 0 } })
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(layer)))
      assert.instanceOf(error, RateLimited)
      assert.strictEqual(Duration.toMillis((error as RateLimited).retryAfter!), 3_888_000)
      assert.strictEqual(yield* rec.count, 1)
    }), 5_000)

  it.effect("the budget counts every wait of a call", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 429, headers: { "retry-after": "4" } })
      const layer = Testing.layerHttp(rec.handler, { retry: { budget: "10 seconds", rateLimitJitter: 0 } })
      const fiber = yield* Effect.fork(Effect.flip(listModels.pipe(Effect.provide(layer))))
      yield* TestClock.adjust("4 seconds")
      yield* TestClock.adjust("4 seconds")
      // 4 + 4 = 8 s spent; another 4 s would exceed the 10 s budget: it gives up without waiting
      yield* TestClock.adjust("1 minute")
      const error = yield* Fiber.join(fiber)
      assert.instanceOf(error, RateLimited)
      assert.strictEqual(yield* rec.count, 3)
    }), 10_000)

  it.effect("maxRetries bounds the attempts", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 500, body: { detail: "boom" } })
      const layer = Testing.layerHttp(rec.handler, { retry: { maxRetries: 2 } })
      const fiber = yield* Effect.fork(Effect.flip(listModels.pipe(Effect.provide(layer))))
      yield* TestClock.adjust("10 minutes")
      const error = yield* Fiber.join(fiber)
      assert.instanceOf(error, ServerError)
      assert.strictEqual(error.message, "boom")
      assert.strictEqual(yield* rec.count, 3)
    }), 10_000)

  it.effect("the default policy makes 6 retries", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 503 })
      const fiber = yield* Effect.fork(Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler)))))
      yield* TestClock.adjust("10 minutes")
      assert.instanceOf(yield* Fiber.join(fiber), ServerError)
      assert.strictEqual(yield* rec.count, 7)
    }), 10_000)

  const neverRetried: ReadonlyArray<readonly [string, Testing.ScriptedResponse, string]> = [
    [
      "QuotaExceeded",
      { status: 429, body: { error: { message: "quota", type: "insufficient_quota", code: "insufficient_quota" } } },
      "QuotaExceeded"
    ],
    ["QuotaExceeded (402)", { status: 402, body: { detail: "Payment required" } }, "QuotaExceeded"],
    ["400", { status: 400, body: { detail: "bad" } }, "BadRequest"],
    ["401", { status: 401, body: { detail: "Incorrect API key provided" } }, "Unauthorized"],
    ["404", { status: 404, body: { detail: "Not Found" } }, "NotFound"],
    ["501", { status: 501, body: "not implemented" }, "ServerError"],
    ["DecodeError", { status: 200, body: { data: "not a list" } }, "DecodeError"],
    ["a non-JSON 200", { status: 200, body: "<html>hello</html>" }, "DecodeError"]
  ]

  for (const [name, response, tag] of neverRetried) {
    it.effect(`${name} is never retried`, () =>
      Effect.gen(function*() {
        const rec = yield* sequence(response, ok)
        const fiber = yield* Effect.fork(Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler)))))
        yield* TestClock.adjust("10 minutes")
        const error = yield* Fiber.join(fiber)
        assert.strictEqual(error._tag, tag)
        assert.strictEqual(yield* rec.count, 1)
      }), 10_000)
  }

  it.effect("retry: false on a request is never retried", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 503 }, ok)
      const fiber = yield* Effect.fork(
        Effect.flip(
          Effect.flatMap(InferenceHttpClient, (http) =>
            http.json(HttpClientRequest.get("/models"), ModelList, { retry: false })).pipe(
              Effect.provide(Testing.layerHttp(rec.handler))
            )
        )
      )
      yield* TestClock.adjust("10 minutes")
      assert.instanceOf(yield* Fiber.join(fiber), ServerError)
      assert.strictEqual(yield* rec.count, 1)
    }), 10_000)
})

describe("what the retries show in ClientMetrics", () => {
  const value = (counter: Metric.Metric.Counter<number>) => Effect.map(Metric.value(counter), (state) => state.count)
  const snapshot = Effect.all({
    retries: value(ClientMetrics.retries),
    waited: value(ClientMetrics.retryWaitMillis),
    limited: value(ClientMetrics.rateLimited),
    ok: value(ClientMetrics.requests.pipe(Metric.tagged("status", "200"))),
    unavailable: value(ClientMetrics.requests.pipe(Metric.tagged("status", "503"))),
    tooMany: value(ClientMetrics.requests.pipe(Metric.tagged("status", "429")))
  })
  const delta = (before: typeof snapshot extends Effect.Effect<infer A> ? A : never) =>
    Effect.map(
      snapshot,
      (after) =>
        Object.fromEntries(
          Object.entries(after).map(([name, count]) => [name, count - before[name as keyof typeof before]])
        )
    )

  it.effect(
    "each retry and the time it waited are counted, the final give-up is not a retry; attempts by status",
    () =>
      Effect.gen(function*() {
        const before = yield* snapshot
        const rec = yield* sequence(
          { status: 503 },
          { status: 429, headers: { "retry-after": "3" } },
          { status: 503 },
          { status: 503 }
        )
        const layer = Testing.layerHttp(rec.handler, { retry: { maxRetries: 3, rateLimitJitter: 0 } })
        const fiber = yield* Effect.fork(
          Effect.flip(listModels.pipe(Effect.provide(layer), Effect.withRandom(Random.fixed([0]))))
        )
        // in steps, so that each retry has registered its sleep before the clock passes it, however busy the machine
        for (let step = 0; step < 600 && Option.isNone(yield* Fiber.poll(fiber)); step++) {
          yield* TestClock.adjust("100 millis")
        }
        assert.instanceOf(yield* Fiber.join(fiber), ServerError)
        assert.strictEqual(yield* rec.count, 4)
        // waits: 250 ms (first back-off), 3 s (the server's), 1 s (third back-off, random 0); then it gives up
        assert.deepStrictEqual(yield* delta(before), {
          retries: 3,
          waited: 4_250,
          limited: 1,
          ok: 0,
          unavailable: 3,
          tooMany: 1
        })
        const again = yield* snapshot
        yield* listModels.pipe(Effect.provide(Testing.layerHttp(() => ok)))
        assert.deepStrictEqual(yield* delta(again), {
          retries: 0,
          waited: 0,
          limited: 0,
          ok: 1,
          unavailable: 0,
          tooMany: 0
        })
      }),
    10_000
  )
})

describe("a 429 through the transport, for any wait the server asks", () => {
  it.effect(
    "the retry goes exactly when the server said (retry-after, retry-after-ms or a reset header), not earlier",
    () =>
      Effect.gen(function*() {
        const waits = FastCheck.sample(FastCheck.integer({ min: 1, max: 110_000 }), 12)
        for (const [i, waitMs] of [1, 119_999, 120_000, ...waits].entries()) {
          const seconds = Math.ceil(waitMs / 1_000)
          const headers = [
            { "retry-after-ms": String(waitMs) },
            { "retry-after": String(seconds) },
            { "x-ratelimit-reset-tokens": `${waitMs}ms` }
          ][i % 3]!
          const expected = "retry-after" in headers ? seconds * 1_000 : waitMs
          const rec = yield* sequence({ status: 429, headers, body: { detail: "slow down" } }, ok)
          const fiber = yield* Effect.fork(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, exact))))
          yield* Queue.take(rec.calls)
          yield* TestClock.adjust(expected - 1)
          assert.strictEqual(yield* rec.count, 1, `${JSON.stringify(headers)}: retried before ${expected} ms`)
          yield* TestClock.adjust(1)
          yield* Queue.take(rec.calls)
          yield* Fiber.join(fiber)
        }
      }),
    20_000
  )

  it.effect(
    "a wait longer than what is left of the budget fails at once with the RateLimited that asked for it",
    () =>
      Effect.gen(function*() {
        const cases = FastCheck.sample(
          FastCheck.record({
            budget: FastCheck.integer({ min: 1, max: 300 }),
            over: FastCheck.integer({ min: 1, max: 3_600 })
          }),
          12
        )
        for (const { budget, over } of [{ budget: 10, over: 1 }, ...cases]) {
          const asked = budget + over
          const rec = yield* sequence({
            status: 429,
            headers: { "retry-after": String(asked) },
            body: { detail: "wait" }
          })
          const layer = Testing.layerHttp(rec.handler, { retry: { budget: `${budget} seconds`, rateLimitJitter: 0 } })
          // no clock adjustment: a sleep would never end
          const error = yield* Effect.flip(listModels.pipe(Effect.provide(layer)))
          assert.instanceOf(error, RateLimited)
          assert.strictEqual(Duration.toMillis((error as RateLimited).retryAfter!), asked * 1_000)
          assert.strictEqual(yield* rec.count, 1)
        }
      }),
    20_000
  )
})
