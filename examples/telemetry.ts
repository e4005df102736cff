/**
 * Traces and metrics with `@effect/opentelemetry`: a chat call, a stream, an embedding and a file upload, their
 * spans and the GenAI histograms collected in memory (offline) and printed. Swap the in-memory exporter and the
 * reader for OTLP ones (`@opentelemetry/exporter-trace-otlp-http`, ...) to send them to a collector.
 *
 *   npx tsx examples/telemetry.ts            (the emulator; with AIFS_API_KEY set, the real service)
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import type { Attributes } from "@opentelemetry/api"
import { type CollectionResult, MetricReader } from "@opentelemetry/sdk-metrics"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Chat, Embeddings, Files } from "effect-aifs"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { inference, isMain, run } from "./run.js"

/** A data point as read here: its attributes and its value (a number, or a histogram's count and sum). */
interface Point {
  readonly attributes: Attributes
  readonly value: unknown
}

/** A metric reader that hands over what it collects when asked (a periodic exporting one in production). */
class OnDemandReader extends MetricReader {
  protected onForceFlush() {
    return Promise.resolve()
  }
  protected onShutdown() {
    return Promise.resolve()
  }
}

export const spans = new InMemorySpanExporter()
export const reader = new OnDemandReader()

/** The OpenTelemetry SDK for Effect: every span and metric of the program goes to these. */
export const TelemetryLive = NodeSdk.layer(() => ({
  resource: { serviceName: "effect-aifs-example" },
  spanProcessor: new SimpleSpanProcessor(spans),
  metricReader: reader
}))

const kinds = ["internal", "server", "client", "producer", "consumer"]

const histogram = (result: CollectionResult, name: string) =>
  result.resourceMetrics.scopeMetrics.flatMap((scope) =>
    scope.metrics.filter((metric) => metric.descriptor.name === name).flatMap((metric): ReadonlyArray<Point> =>
      metric.dataPoints
    )
  )

export const program = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  yield* chat.create({
    model: "Llama-3.3-70B-Instruct",
    messages: [{ role: "user", content: "Hello" }],
    temperature: 0.2
  })
  yield* Chat.collect(chat.createStream({ model: "gpt-4o", messages: [{ role: "user", content: "Stream" }] }))
  yield* (yield* Embeddings.Embeddings).create({ model: "text-embedding-bge-m3", input: ["a text"] })
  yield* (yield* Files.Files).upload({ file: Files.fromBytes("{}\n", "train.jsonl"), purpose: "fine-tune" })

  for (const span of spans.getFinishedSpans()) {
    const attributes = Object.entries(span.attributes)
      .filter(([key]) => key.startsWith("gen_ai.") || key.startsWith("aifs.") || key === "http.response.status_code")
      // the bridge hands arrays over as JSON text
      .map(([key, value]) => `${key}=${typeof value === "string" ? value.replace(/\s+/g, "") : value}`)
    yield* Console.log(`span ${span.name} (${kinds[span.kind]}) ${attributes.join(" ")}`)
  }
  const result = yield* Effect.promise(() => reader.collect())
  for (const name of ["gen_ai.client.operation.duration", "gen_ai.client.token.usage"]) {
    for (const point of histogram(result, name)) {
      const value = point.value as { readonly count: number; readonly sum: number }
      const tags = Object.entries(point.attributes).map(([key, tag]) => `${key}=${tag}`).join(" ")
      yield* Console.log(`metric ${name} count=${value.count} sum=${value.sum} ${tags}`)
    }
  }
  return { spans: spans.getFinishedSpans(), metrics: result }
})

if (isMain(import.meta.url)) run(program, Layer.provideMerge(inference(), TelemetryLive))
