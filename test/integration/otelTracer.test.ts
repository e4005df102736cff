/**
 * A chat call to the emulator traced through `effect-aifs/otel` into an in-memory exporter: the GenAI attributes
 * typed as the conventions define them (finish reasons and stop sequences as string arrays), the spans in one trace
 * under the caller's; and, beside it, what `@effect/opentelemetry`'s `NodeSdk.layer` hands the same exporter (the
 * arrays as JSON text, as docs/observability.md says).
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { assert, describe, layer } from "@effect/vitest"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Testing from "../../src/layers/Testing.js"
import * as AifsOtel from "../../src/otel.js"
import * as Chat from "../../src/services/Chat.js"
import { ask } from "../helpers/emulator.js"

const SpanKindClient = 2

/** The names of a span's header attributes. */
const headerAttributes = (span: ReadableSpan) =>
  Object.keys(span.attributes).filter((key) => /^http\.(request|response)\.header\./.test(key))

const named = (spans: InMemorySpanExporter, name: string): ReadableSpan => {
  const found = spans.getFinishedSpans().filter((span) => span.name === name)
  assert.strictEqual(found.length, 1, `one span named ${name}, among ${spans.getFinishedSpans().map((s) => s.name)}`)
  return found[0]!
}

/** A call cut short by `max_tokens` (its finish reason `length`), with a stop sequence, inside a span of the app's. */
const tracedCall = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  return yield* chat.create(ask("Llama-3.3-70B-Instruct", "Tell me a long story", { max_tokens: 1, stop: ["###"] }))
}).pipe(Effect.withSpan("handle request", { kind: "server" }))

const configuration = (spans: InMemorySpanExporter) => () => ({
  resource: { serviceName: "otel-tracer-test" },
  spanProcessor: new SimpleSpanProcessor(spans)
})

describe("effect-aifs/otel: a chat call's spans at an in-memory exporter", () => {
  const spans = new InMemorySpanExporter()
  const traced = Layer.provideMerge(
    Testing.layerEmulator({ client: { maxRetries: 0 } }),
    AifsOtel.layer(configuration(spans))
  )
  layer(traced)((it) => {
    it.effect("finish reasons and stop sequences are string arrays; app, chat and HTTP spans in one trace", () =>
      Effect.gen(function*() {
        const answer = yield* tracedCall
        assert.strictEqual(answer.choices[0]!.finish_reason, "length")
        const app = named(spans, "handle request")
        const chat = named(spans, "chat Llama-3.3-70B-Instruct")
        assert.deepStrictEqual(chat.attributes["gen_ai.response.finish_reasons"], ["length"])
        assert.deepStrictEqual(chat.attributes["gen_ai.request.stop_sequences"], ["###"])
        assert.deepInclude(chat.attributes, {
          "gen_ai.operation.name": "chat",
          "gen_ai.request.max_tokens": 1,
          "gen_ai.response.id": answer.id,
          "gen_ai.usage.output_tokens": answer.usage!.completion_tokens!
        })
        assert.strictEqual(chat.kind, SpanKindClient)
        assert.strictEqual(chat.parentSpanContext?.spanId, app.spanContext().spanId)
        const http = spans.getFinishedSpans().find((s) => s.parentSpanContext?.spanId === chat.spanContext().spanId)
        assert.strictEqual(http?.kind, SpanKindClient)
        assert.strictEqual(http?.attributes["http.response.status_code"], 200)
        const traces = new Set([app, chat, http!].map((span) => span.spanContext().traceId))
        assert.strictEqual(traces.size, 1)
        // the headers, opt-in in the HTTP conventions, are not written to the span
        assert.deepStrictEqual(headerAttributes(http!), [])
        assert.include(Object.keys(http!.attributes), "url.full")
      }))
  })
})

describe("effect-aifs/otel with httpHeaders: true", () => {
  const spans = new InMemorySpanExporter()
  const traced = Layer.provideMerge(
    Testing.layerEmulator({ client: { maxRetries: 0 } }),
    AifsOtel.layer(configuration(spans), { httpHeaders: true })
  )
  layer(traced)((it) => {
    it.effect("the HTTP span carries each request and response header, the key redacted", () =>
      Effect.gen(function*() {
        yield* tracedCall
        const chat = named(spans, "chat Llama-3.3-70B-Instruct")
        const http = spans.getFinishedSpans().find((s) => s.parentSpanContext?.spanId === chat.spanContext().spanId)!
        assert.includeMembers(headerAttributes(http), [
          "http.request.header.authorization",
          "http.request.header.content-type",
          "http.response.header.content-type"
        ])
        assert.strictEqual(http.attributes["http.request.header.authorization"], "<redacted>")
      }))
  })
})

describe("effect-aifs/otel with nestedClientSpans: false", () => {
  const spans = new InMemorySpanExporter()
  const traced = Layer.provideMerge(
    Testing.layerEmulator({ client: { maxRetries: 0 } }),
    AifsOtel.layer(configuration(spans), { nestedClientSpans: false })
  )
  layer(traced)((it) => {
    it.effect("the HTTP client span is folded into the call's: its traceparent names the call, one client span a call", () =>
      Effect.gen(function*() {
        spans.reset()
        yield* tracedCall
        const app = named(spans, "handle request")
        const chat = named(spans, "chat Llama-3.3-70B-Instruct")
        const clients = spans.getFinishedSpans().filter((span) => span.kind === SpanKindClient)
        assert.deepStrictEqual(clients.map((span) => span.name), ["chat Llama-3.3-70B-Instruct"])
        assert.strictEqual(chat.parentSpanContext?.spanId, app.spanContext().spanId)
        assert.deepStrictEqual(chat.attributes["gen_ai.response.finish_reasons"], ["length"])
        // the emulator, in this process, traces its side: the request it served came from the call's span
        const served = named(spans, "http.server POST")
        assert.strictEqual(served.parentSpanContext?.spanId, chat.spanContext().spanId)
        assert.strictEqual(served.spanContext().traceId, app.spanContext().traceId)
      }))
  })

  layer(traced)((it) => {
    it.effect("a client span of the app's around a call is no GenAI span: the call's span stays, under it", () =>
      Effect.gen(function*() {
        spans.reset()
        yield* Effect.flatMap(Chat.Chat, (chat) => chat.create(ask("Llama-3.3-70B-Instruct", "Hi"))).pipe(
          Effect.withSpan("outbound", { kind: "client" })
        )
        const clients = spans.getFinishedSpans().filter((span) => span.kind === SpanKindClient)
        assert.deepStrictEqual(clients.map((span) => span.name).sort(), ["chat Llama-3.3-70B-Instruct", "outbound"])
        const chat = named(spans, "chat Llama-3.3-70B-Instruct")
        assert.strictEqual(chat.parentSpanContext?.spanId, named(spans, "outbound").spanContext().spanId)
      }))

    it.effect("under a folded span: a span nests under the call's, an event and a link go to the call's", () =>
      Effect.gen(function*() {
        spans.reset()
        const linked = yield* Effect.makeSpan("elsewhere")
        yield* Effect.void.pipe(
          Effect.withSpan("inner"),
          Effect.zipRight(Effect.flatMap(Effect.currentSpan, (span) =>
            Effect.sync(() => {
              span.event("retrying", BigInt(Date.now()) * 1_000_000n, { attempt: 2 })
              span.addLinks([{ _tag: "SpanLink", span: linked, attributes: { why: "test" } }])
            }))),
          Effect.withSpan("http.client POST", { kind: "client" }),
          Effect.withSpan("chat m", { kind: "client", attributes: { "gen_ai.operation.name": "chat" } })
        )
        const call = named(spans, "chat m")
        assert.deepStrictEqual(spans.getFinishedSpans().map((span) => span.name).sort(), ["chat m", "inner"])
        assert.strictEqual(named(spans, "inner").parentSpanContext?.spanId, call.spanContext().spanId)
        assert.deepStrictEqual(call.events.map((event) => [event.name, event.attributes]), [["retrying", {
          attempt: 2
        }]])
        assert.deepStrictEqual(call.links.map((link) => link.attributes), [{ why: "test" }])
        assert.strictEqual(call.attributes["gen_ai.operation.name"], "chat")
      }))
  })

  const sent: Array<string | undefined> = []
  const scripted = Layer.provideMerge(
    Testing.layerHttp((request) => {
      sent.push(request.headers["traceparent"])
      return { body: { id: "chatcmpl-1", object: "chat.completion", created: 0, model: "m", choices: [] } }
    }, { retry: { maxRetries: 0 } }),
    AifsOtel.layer(configuration(spans), { nestedClientSpans: false })
  )
  layer(scripted)((it) => {
    it.effect("the traceparent header names the call's span", () =>
      Effect.gen(function*() {
        spans.reset()
        yield* Effect.flatMap(Chat.Chat, (chat) =>
          chat.create({ model: "m", messages: [{ role: "user", content: "Hi" }] }))
        const chat = named(spans, "chat m")
        assert.strictEqual(spans.getFinishedSpans().length, 1)
        assert.deepStrictEqual(sent, [`00-${chat.spanContext().traceId}-${chat.spanContext().spanId}-01`])
      }))
  })
})

describe("@effect/opentelemetry's NodeSdk.layer, for contrast: the same call's arrays as JSON text, its headers", () => {
  const spans = new InMemorySpanExporter()
  const traced = Layer.provideMerge(
    Testing.layerEmulator({ client: { maxRetries: 0 } }),
    NodeSdk.layer(configuration(spans))
  )
  layer(traced)((it) => {
    it.effect("gen_ai.response.finish_reasons arrives as the text of the array", () =>
      Effect.gen(function*() {
        yield* tracedCall
        const chat = named(spans, "chat Llama-3.3-70B-Instruct")
        // if this ever fails, the bridge writes arrays as arrays: docs/observability.md should say so
        assert.strictEqual(chat.attributes["gen_ai.response.finish_reasons"], "[\n  \"length\"\n]")
        assert.strictEqual(chat.parentSpanContext?.spanId, named(spans, "handle request").spanContext().spanId)
        // and every header on the HTTP span
        const http = spans.getFinishedSpans().find((s) => s.parentSpanContext?.spanId === chat.spanContext().spanId)!
        assert.include(headerAttributes(http), "http.request.header.authorization")
      }))
  })
})
