/**
 * Spans and metrics as an OpenTelemetry backend receives them (`@effect/opentelemetry` with in-memory exporters),
 * from calls to the emulator: a chat call, a stream, an embedding, a failed call and a file upload.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { assert, describe, layer } from "@effect/vitest"
import type { Attributes } from "@opentelemetry/api"
import { type CollectionResult, MetricReader } from "@opentelemetry/sdk-metrics"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as Plans from "../../src/internal/plans.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Chat from "../../src/services/Chat.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import * as Files from "../../src/services/Files.js"
import { ask } from "../helpers/emulator.js"

/** A data point as read here: its attributes and its value (a number, or a histogram's count and sum). */
interface Point {
  readonly attributes: Attributes
  readonly value: unknown
}

/** A reader that hands over what it collects when asked. */
class Reader extends MetricReader {
  protected onForceFlush() {
    return Promise.resolve()
  }
  protected onShutdown() {
    return Promise.resolve()
  }
}

const telemetry = () => {
  const spans = new InMemorySpanExporter()
  const reader = new Reader()
  const layer = NodeSdk.layer(() => ({
    resource: { serviceName: "telemetry-test" },
    spanProcessor: new SimpleSpanProcessor(spans),
    metricReader: reader
  }))
  return { spans, reader, layer }
}

const SpanKindClient = 2
const SpanKindInternal = 0

const named = (spans: InMemorySpanExporter, name: string): ReadableSpan => {
  const found = spans.getFinishedSpans().filter((span) => span.name === name)
  assert.strictEqual(found.length, 1, `one span named ${name}, among ${spans.getFinishedSpans().map((s) => s.name)}`)
  return found[0]!
}

const genAiKeys = (span: ReadableSpan) => Object.keys(span.attributes).filter((key) => key.startsWith("gen_ai."))

/** The data points of one metric, with their attributes. */
const points = (result: CollectionResult, name: string) =>
  result.resourceMetrics.scopeMetrics.flatMap((scope) =>
    scope.metrics.filter((metric) => metric.descriptor.name === name).flatMap((metric): ReadonlyArray<Point> =>
      metric.dataPoints
    )
  )

/**
 * An array attribute as the bridge hands it to OpenTelemetry: `@effect/opentelemetry` 0.64 writes any value that
 * is not a string, number or boolean as its JSON text.
 */
const arrayOf = (value: unknown) => typeof value === "string" ? JSON.parse(value) : value

describe("OpenTelemetry GenAI spans and metrics, through @effect/opentelemetry", () => {
  const { layer: sdk, reader, spans } = telemetry()
  const client = Layer.provideMerge(Testing.layerEmulator({ client: { maxRetries: 0 } }), sdk)
  layer(client)((it) => {
    it.effect("a chat call: `chat {model}`, kind client, request parameters, the answer's id, model, reasons, usage", () =>
      Effect.gen(function*() {
        const chat = yield* Chat.Chat
        const answer = yield* chat.create(ask("Llama-3.3-70B-Instruct", "Say hi", { temperature: 0.3, max_tokens: 50 }))
        const span = named(spans, "chat Llama-3.3-70B-Instruct")
        const emulator = yield* Emulator.Emulator
        assert.strictEqual(span.kind, SpanKindClient)
        assert.deepInclude(span.attributes, {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": "aifs",
          "gen_ai.request.model": "Llama-3.3-70B-Instruct",
          "gen_ai.request.temperature": 0.3,
          "gen_ai.request.max_tokens": 50,
          "gen_ai.response.id": answer.id,
          "gen_ai.response.model": "Llama-3.3-70B-Instruct",
          "server.address": "127.0.0.1",
          "server.port": emulator.port,
          "aifs.operation": "Chat.create",
          "aifs.route": "/v2"
        })
        assert.deepStrictEqual(arrayOf(span.attributes["gen_ai.response.finish_reasons"]), [
          answer.choices[0]!.finish_reason
        ])
        assert.strictEqual(span.attributes["gen_ai.usage.input_tokens"], answer.usage!.prompt_tokens)
        assert.strictEqual(span.attributes["gen_ai.usage.output_tokens"], answer.usage!.completion_tokens)
        assert.notProperty(span.attributes, "gen_ai.system")
        assert.notProperty(span.attributes, "error.type")
        // the attempt's HTTP client span is its child
        const http = spans.getFinishedSpans().find((s) => s.parentSpanContext?.spanId === span.spanContext().spanId)
        assert.strictEqual(http?.kind, SpanKindClient)
        assert.strictEqual(http?.attributes["http.response.status_code"], 200)
        // the key shows nowhere
        const key = emulator.keys.find((k) => k.tier === "standard4000")!.key
        assert.notInclude(JSON.stringify(spans.getFinishedSpans().map((s) => s.attributes)), key)
      }))

    it.effect("a stream: one span to its end, marked streaming, with the usage of its last chunk", () =>
      Effect.gen(function*() {
        spans.reset()
        const chat = yield* Chat.Chat
        const folded = yield* Chat.collect(chat.createStream(ask("gpt-4o", "Stream something")))
        const span = named(spans, "chat gpt-4o")
        assert.strictEqual(span.kind, SpanKindClient)
        assert.deepInclude(span.attributes, {
          "gen_ai.request.stream": true,
          "gen_ai.response.id": folded.id,
          "gen_ai.usage.input_tokens": folded.usage!.prompt_tokens,
          "gen_ai.usage.output_tokens": folded.usage!.completion_tokens!,
          "aifs.operation": "Chat.createStream"
        })
        assert.deepStrictEqual(arrayOf(span.attributes["gen_ai.response.finish_reasons"]), [
          folded.choices[0]!.finish_reason
        ])
      }))

    it.effect("an embedding: `embeddings {model}`, the encoding asked for, input tokens only", () =>
      Effect.gen(function*() {
        spans.reset()
        const embeddings = yield* Embeddings.Embeddings
        const list = yield* embeddings.create({ model: "text-embedding-bge-m3", input: ["a", "b"] })
        const span = named(spans, "embeddings text-embedding-bge-m3")
        assert.strictEqual(span.kind, SpanKindClient)
        assert.deepInclude(span.attributes, {
          "gen_ai.operation.name": "embeddings",
          "gen_ai.usage.input_tokens": list.usage!.prompt_tokens
        })
        assert.deepStrictEqual(arrayOf(span.attributes["gen_ai.request.encoding_formats"]), ["float"])
        assert.notProperty(span.attributes, "gen_ai.usage.output_tokens")
      }))

    it.effect("a failed call: the span ends in error with error.type, the client's tag", () =>
      Effect.gen(function*() {
        spans.reset()
        const chat = yield* Chat.Chat
        const error = yield* Effect.flip(chat.create(ask("no-such-model", "Hi")))
        assert.strictEqual(error._tag, "NotFound")
        const span = named(spans, "chat no-such-model")
        assert.strictEqual(span.attributes["error.type"], "NotFound")
        assert.strictEqual(span.status.code, 2, "status ERROR")
      }))

    it.effect("a file upload: its own span with no gen_ai attribute, the HTTP client span of the attempt below", () =>
      Effect.gen(function*() {
        spans.reset()
        const files = yield* Files.Files
        yield* files.upload({ file: Files.fromBytes("{}\n", "train.jsonl"), purpose: "fine-tune" })
        const span = named(spans, "Files.upload")
        assert.strictEqual(span.kind, SpanKindInternal)
        assert.deepStrictEqual(genAiKeys(span), [])
        assert.strictEqual(span.attributes["aifs.operation"], "Files.upload")
        const http = spans.getFinishedSpans().find((s) => s.parentSpanContext?.spanId === span.spanContext().spanId)
        assert.strictEqual(http?.kind, SpanKindClient)
        assert.strictEqual(http?.attributes["http.request.method"], "POST")
        assert.deepStrictEqual(http && genAiKeys(http), [])
      }))

    it.effect("metrics: operation duration and token usage histograms by operation, model and token type", () =>
      Effect.gen(function*() {
        const chat = yield* Chat.Chat
        const answer = yield* chat.create(ask("Mistral-Small-24B-Instruct-2501", "Count my tokens"))
        yield* Effect.flip(chat.create(ask("no-such-model", "Hi")))
        const result = yield* Effect.promise(() => reader.collect())
        const usage = points(result, "gen_ai.client.token.usage").filter((point) =>
          point.attributes["gen_ai.request.model"] === "Mistral-Small-24B-Instruct-2501"
        )
        const byType = Object.fromEntries(usage.map((point) => [point.attributes["gen_ai.token.type"], point.value]))
        assert.deepInclude(byType["input"], { count: 1, sum: answer.usage!.prompt_tokens })
        assert.deepInclude(byType["output"], { count: 1, sum: answer.usage!.completion_tokens! })
        const durations = points(result, "gen_ai.client.operation.duration")
        const failed = durations.find((point) => point.attributes["gen_ai.request.model"] === "no-such-model")
        assert.strictEqual(failed?.attributes["error.type"], "NotFound")
        assert.strictEqual(failed?.attributes["gen_ai.operation.name"], "chat")
        assert.strictEqual(failed?.attributes["gen_ai.provider.name"], "aifs")
        const ok = durations.find((point) =>
          point.attributes["gen_ai.request.model"] === "Mistral-Small-24B-Instruct-2501"
        )
        assert.notProperty(ok?.attributes ?? {}, "error.type")
        assert.isAbove(points(result, "aifs.limiter.wait").length, 0)
      }))

    it.effect("spend: a call's cost at its plan's prices on its span (aifs.spend), and the aifs.spend metric", () =>
      Effect.gen(function*() {
        spans.reset()
        const before = yield* Effect.promise(() => reader.collect())
        const spentBefore = points(before, "aifs.spend").find((p) => p.attributes.model === "Qwen3-30B-A3B-FP8")
        assert.isUndefined(spentBefore, "nothing spent on the model yet")
        const chat = yield* Chat.Chat
        const answer = yield* chat.create(ask("Qwen3-30B-A3B-FP8", "What does this cost?"))
        // the client's tier, standard4000: its table's prices for the model, EUR a million tokens
        const prices = Plans.pricesOf("standard4000", "Qwen3-30B-A3B-FP8")!
        const usage = answer.usage!
        const cost = (usage.prompt_tokens * prices.input + usage.completion_tokens! * prices.output) / 1_000_000
        const span = named(spans, "chat Qwen3-30B-A3B-FP8")
        assert.closeTo(span.attributes["aifs.spend"] as number, cost, 1e-12)
        assert.strictEqual(span.attributes["aifs.spend.currency"], "EUR")
        const after = yield* Effect.promise(() => reader.collect())
        const spent = points(after, "aifs.spend").find((p) => p.attributes.model === "Qwen3-30B-A3B-FP8")
        assert.strictEqual(spent?.attributes.currency, "EUR")
        assert.closeTo(spent?.value as number, cost, 1e-12)
      }))
  })
})
