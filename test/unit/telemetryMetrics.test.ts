/**
 * The GenAI histograms and the limiter's wait, as the transport records them (scripted answers, the TestClock):
 * tokens from the answer's usage by type, the duration of an operation in seconds with `error.type` on failure,
 * nothing for an operation that runs no model. Effect metrics are process-wide: each test uses models of its own.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import { MetricTypeId } from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Metrics from "../../src/layers/ClientMetrics.js"
import * as Testing from "../../src/layers/Testing.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { chatBody, stack } from "./transportStack.js"

/** One series of a histogram: its tags in the order the transport writes them. */
const series = (metric: Metric.Metric.Histogram<number>, tags: ReadonlyArray<readonly [string, string]>) =>
  Effect.map(
    Metric.value(Metric.taggedWithLabels(metric, tags.map(([key, value]) => MetricLabel.make(key, value)))),
    ({ count, sum }) => ({ count, sum })
  )

/** The tags of a model operation's series (a chat unless named). */
const chatTags = (model: string, operation = "chat") =>
  [["gen_ai.operation.name", operation], ["gen_ai.provider.name", "aifs"], ["gen_ai.request.model", model]] as const

const tokens = (model: string, type: "input" | "output") =>
  series(Metrics.tokenUsage, [...chatTags(model), ["gen_ai.token.type", type]])

const answer = (usage: Record<string, number>) => ({ model: "served", usage })

/**
 * A model name no earlier run in this process used: the metric registry outlives a test (and a mutation run runs a
 * test many times in one process), so each run counts on series of its own.
 */
let runs = 0
const fresh = (name: string) => `${name}-${++runs}`

const call = (model: string, operation = "chat") =>
  Effect.flatMap(InferenceHttpClient, (http) =>
    http.json(
      HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson({ ...chatBody, model })),
      Schema.Unknown,
      { span: { name: "Chat.create", operation }, model }
    ))

describe("gen_ai.client.token.usage", () => {
  it.effect("the answer's usage, one observation per type, each model its own series", () =>
    Effect.gen(function*() {
      const tokensA = fresh("tokens-a")
      const tokensB = fresh("tokens-b")
      yield* call(tokensA)
      yield* call(tokensA)
      yield* call(tokensB)
      assert.deepStrictEqual(yield* tokens(tokensA, "input"), { count: 2, sum: 24 })
      assert.deepStrictEqual(yield* tokens(tokensA, "output"), { count: 2, sum: 60 })
      assert.deepStrictEqual(yield* tokens(tokensB, "input"), { count: 1, sum: 12 })
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({
      body: answer({ prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 })
    }))))))

  it.effect("an answer without output tokens (embeddings) observes input only; no model, no observation", () =>
    Effect.gen(function*() {
      const tokensEmbed = fresh("tokens-embed")
      const tokensFiles = fresh("tokens-files")
      yield* call(tokensEmbed, "embeddings")
      const embedTags = chatTags(tokensEmbed, "embeddings")
      assert.deepStrictEqual(yield* series(Metrics.tokenUsage, [...embedTags, ["gen_ai.token.type", "input"]]), {
        count: 1,
        sum: 8
      })
      assert.deepStrictEqual(yield* series(Metrics.tokenUsage, [...embedTags, ["gen_ai.token.type", "output"]]), {
        count: 0,
        sum: 0
      })
      // an upload's answer carries no model's tokens, whatever its body holds
      yield* call(tokensFiles, "files.upload")
      assert.strictEqual((yield* tokens(tokensFiles, "input")).count, 0)
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: answer({ prompt_tokens: 8, total_tokens: 8 }) }))))))
})

describe("what is not observed", () => {
  it.effect("an answer without a usage observes no tokens; an operation that runs no model, no duration", () =>
    Effect.gen(function*() {
      const noUsage = fresh("no-usage")
      const upload = fresh("upload")
      yield* call(noUsage)
      assert.strictEqual((yield* tokens(noUsage, "input")).count, 0)
      assert.strictEqual((yield* tokens(noUsage, "output")).count, 0)
      assert.strictEqual((yield* series(Metrics.operationDuration, chatTags(noUsage))).count, 1)
      yield* call(upload, "files.upload")
      assert.strictEqual((yield* series(Metrics.operationDuration, chatTags(upload, "files.upload"))).count, 0)
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: { model: "served" } }))))))
})

/** A handler that answers its first request after 1.5 s and fails every later one (500) after as long. */
const answerThenFail = () => {
  let answered = false
  return () =>
    Effect.as(
      Effect.sleep("1500 millis"),
      answered ? { status: 500, body: { detail: "down" } } : (answered = true, { body: answer({ prompt_tokens: 1 }) })
    )
}

describe("gen_ai.client.operation.duration", () => {
  it.effect("seconds from the operation's start to its answer; a failure is tagged with its error's type", () =>
    Effect.gen(function*() {
      const durationOk = fresh("duration-ok")
      const durationFailed = fresh("duration-failed")
      const fiber = yield* Effect.fork(call(durationOk))
      yield* TestClock.adjust("1500 millis")
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(yield* series(Metrics.operationDuration, chatTags(durationOk)), { count: 1, sum: 1.5 })
      const failing = yield* Effect.fork(Effect.flip(call(durationFailed)))
      yield* TestClock.adjust("1500 millis")
      assert.strictEqual((yield* Fiber.join(failing))._tag, "ServerError")
      assert.deepStrictEqual(
        yield* series(Metrics.operationDuration, [...chatTags(durationFailed), ["error.type", "ServerError"]]),
        { count: 1, sum: 1.5 }
      )
      assert.strictEqual((yield* series(Metrics.operationDuration, chatTags(durationFailed))).count, 0)
    }).pipe(Effect.provide(stack(Testing.httpClient(answerThenFail())))))

  it.effect("an operation interrupted mid-way is timed to the interruption, with no error type", () =>
    Effect.gen(function*() {
      const durationInterrupted = fresh("duration-interrupted")
      const fiber = yield* Effect.fork(call(durationInterrupted))
      yield* TestClock.adjust("500 millis")
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(yield* series(Metrics.operationDuration, chatTags(durationInterrupted)), {
        count: 1,
        sum: 0.5
      })
    }).pipe(Effect.provide(stack(Testing.httpClient(answerThenFail())))))

  it.effect("a stream is timed from its start to its end, in seconds", () =>
    Effect.gen(function*() {
      const streamed = fresh("duration-stream")
      const fiber = yield* Effect.fork(Effect.flatMap(InferenceHttpClient, (http) =>
        Stream.runDrain(
          http.jsonStream(
            HttpClientRequest.post("/chat/completions").pipe(
              HttpClientRequest.bodyUnsafeJson({ ...chatBody, model: streamed })
            ),
            Schema.Unknown,
            { span: { name: "Chat.createStream", operation: "chat" }, model: streamed }
          )
        )))
      yield* TestClock.adjust("2500 millis")
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(yield* series(Metrics.operationDuration, chatTags(streamed)), { count: 1, sum: 2.5 })
    }).pipe(
      Effect.provide(stack(Testing.httpClient(() => Effect.as(Effect.sleep("2500 millis"), { sse: [{ n: 1 }] }))))
    ))

  it.effect("the wait in the limiter's line is aifs.limiter.wait in seconds, not part of the duration", () =>
    Effect.gen(function*() {
      const waitModel = fresh("wait-model")
      const waits = Metric.value(Metrics.limiterWait)
      const before = yield* waits
      yield* call(waitModel)
      const fiber = yield* Effect.fork(call(waitModel))
      yield* TestClock.adjust("7 seconds")
      yield* Fiber.join(fiber)
      const after = yield* waits
      assert.strictEqual(after.count - before.count, 2)
      assert.strictEqual(after.sum - before.sum, 7)
      assert.deepStrictEqual(yield* series(Metrics.operationDuration, chatTags(waitModel)), { count: 2, sum: 0 })
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: answer({ prompt_tokens: 1, total_tokens: 1 }) })), {
      limiter: { limits: { "*": { rpm: 1, tpm: 1_000_000 } }, window: "7 seconds" }
    }))))
})

describe("the metrics' names", () => {
  it.effect("follow OpenTelemetry's convention: dotted, lower case, under aifs. or gen_ai., no _total suffix", () =>
    Effect.gen(function*() {
      // reading a metric registers it: the registry's snapshot then names each one
      const exported = Object.values(Metrics)
      assert.isTrue(exported.every((value) => Predicate.hasProperty(value, MetricTypeId)))
      for (const metric of exported) metric.unsafeValue([])
      const names = new Set((yield* Metric.snapshot).map((pair) => pair.metricKey.name))
      const ours = [...names].filter((name) => /^(aifs|gen_ai)[._]/.test(name))
      // ClientMetrics' and the spend meter's (aifs.spend)
      assert.isAtLeast(ours.length, exported.length, ours.join(", "))
      for (const name of ours) {
        assert.match(name, /^(aifs|gen_ai)(\.[a-z_]+)+$/)
        assert.notMatch(name, /_total$/)
      }
    }))
})
