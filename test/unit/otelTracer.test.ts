/**
 * `effect-aifs/otel`'s tracer over an OpenTelemetry SDK tracer with an in-memory exporter: attribute values as the
 * conventions type them, parents (Effect's, an external one, OpenTelemetry's active span), sampling at the start,
 * status and exceptions, and no hook around the steps of a fiber (where `@effect/opentelemetry`'s has one).
 */
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Otel from "@opentelemetry/api"
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  type Sampler,
  SamplingDecision,
  SimpleSpanProcessor
} from "@opentelemetry/sdk-trace-base"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"
import { attributeValue, layerWithoutOtelTracer, make } from "../../src/otel.js"

/** A context manager that holds one context at a time, synchronously: enough for `context.with` around a run. */
class SyncContextManager implements Otel.ContextManager {
  private current = Otel.ROOT_CONTEXT
  active() {
    return this.current
  }
  with<A extends Array<unknown>, F extends (...args: A) => ReturnType<F>>(
    context: Otel.Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    const previous = this.current
    this.current = context
    try {
      return fn.call(thisArg, ...args)
    } finally {
      this.current = previous
    }
  }
  bind<T>(_context: Otel.Context, target: T): T {
    return target
  }
  enable() {
    return this
  }
  disable() {
    this.current = Otel.ROOT_CONTEXT
    return this
  }
}

Otel.context.setGlobalContextManager(new SyncContextManager())
afterAll(() => Otel.context.disable())

/** The attributes each span's sampler saw at its start, by span name. */
const sampled = new Map<string, Otel.Attributes>()
const sampler: Sampler = {
  shouldSample: (context, _traceId, name, _kind, attributes) => {
    sampled.set(name, attributes)
    const parent = Otel.trace.getSpanContext(context)
    const dropped = name === "unsampled" ||
      (parent !== undefined && (parent.traceFlags & Otel.TraceFlags.SAMPLED) === 0)
    return { decision: dropped ? SamplingDecision.NOT_RECORD : SamplingDecision.RECORD_AND_SAMPLED }
  },
  toString: () => "recording"
}
const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(exporter)] })
const otelTracer = provider.getTracer("otel-tracer-test")
const ours = Layer.setTracer(make(otelTracer))

const named = (name: string): ReadableSpan => {
  const found = exporter.getFinishedSpans().filter((span) => span.name === name)
  assert.strictEqual(found.length, 1, `one span named ${name}, among ${exporter.getFinishedSpans().map((s) => s.name)}`)
  return found[0]!
}

const run = <A, E>(effect: Effect.Effect<A, E>, tracer: Layer.Layer<never> = ours) => {
  exporter.reset()
  return Effect.runPromiseExit(Effect.provide(effect, tracer))
}

describe("attributeValue", () => {
  it("keeps primitives and arrays of one primitive type, writes bigints as digits and anything else as JSON", () => {
    assert.strictEqual(attributeValue("stop"), "stop")
    assert.strictEqual(attributeValue(0.3), 0.3)
    assert.strictEqual(attributeValue(false), false)
    assert.strictEqual(attributeValue(12n), "12")
    assert.deepStrictEqual(attributeValue(["length", "stop"]), ["length", "stop"])
    assert.deepStrictEqual(attributeValue([1, null, 2]), [1, null, 2])
    assert.deepStrictEqual(attributeValue([true]), [true])
    assert.deepStrictEqual(attributeValue([]), [])
    // the conventions' arrays are homogeneous: a mixed one, or one of objects, is text as the bridge writes it
    assert.strictEqual(attributeValue(["a", 1]), "[\n  \"a\",\n  1\n]")
    assert.strictEqual(attributeValue([{ a: 1 }]), "[\n  {\n    \"a\": 1\n  }\n]")
    assert.strictEqual(attributeValue({ a: 1 }), "{\n  \"a\": 1\n}")
  })

  it("copies an array, so that a caller changing its own afterwards does not change the span", () => {
    const stop = ["\n"]
    const value = attributeValue(stop)
    stop.push("###")
    assert.deepStrictEqual(value, ["\n"])
  })
})

describe("effect-aifs/otel's tracer", () => {
  it("nests Effect spans as OpenTelemetry parents, with kinds, arrays and the attributes a sampler sees", async () => {
    const program = Effect.withSpan(
      Effect.withSpan(Effect.annotateCurrentSpan("gen_ai.response.finish_reasons", ["length"]), "chat m", {
        kind: "client",
        attributes: { "gen_ai.request.model": "m", "gen_ai.request.stop_sequences": ["\n"] }
      }),
      "handler",
      { kind: "server" }
    )
    assert.isTrue(Exit.isSuccess(await run(program)))
    const [outer, inner] = [named("handler"), named("chat m")]
    assert.strictEqual(outer.kind, Otel.SpanKind.SERVER)
    assert.strictEqual(inner.kind, Otel.SpanKind.CLIENT)
    assert.strictEqual(inner.parentSpanContext?.spanId, outer.spanContext().spanId)
    assert.strictEqual(inner.spanContext().traceId, outer.spanContext().traceId)
    assert.isUndefined(outer.parentSpanContext)
    assert.deepStrictEqual(inner.attributes["gen_ai.response.finish_reasons"], ["length"])
    assert.deepStrictEqual(inner.attributes["gen_ai.request.stop_sequences"], ["\n"])
    assert.deepStrictEqual(sampled.get("chat m"), {
      "gen_ai.request.model": "m",
      "gen_ai.request.stop_sequences": ["\n"]
    })
    assert.strictEqual(inner.status.code, Otel.SpanStatusCode.OK)
  })

  it("takes an external parent, its trace flags and state, and links to other spans", async () => {
    const external = OtelTracer.makeExternalSpan({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      traceFlags: 1,
      traceState: "vendor=on"
    })
    const linked = Tracer.externalSpan({ traceId: "1".repeat(32), spanId: "2".repeat(16) })
    const program = Effect.withSpan(Effect.void, "child", {
      links: [{ _tag: "SpanLink", span: linked, attributes: {} }]
    })
    assert.isTrue(Exit.isSuccess(await run(Effect.withParentSpan(program, external))))
    const child = named("child")
    assert.strictEqual(child.spanContext().traceId, external.traceId)
    assert.strictEqual(child.parentSpanContext?.spanId, external.spanId)
    assert.isTrue(child.parentSpanContext?.isRemote)
    assert.strictEqual(child.spanContext().traceState?.get("vendor"), "on")
    assert.deepStrictEqual(child.links.map((link) => link.context.spanId), [linked.spanId])
  })

  it("under no Effect parent, takes OpenTelemetry's active span as the parent; a root span takes none", async () => {
    const request = otelTracer.startSpan("GET /ask")
    const context = Otel.trace.setSpan(Otel.context.active(), request)
    const program = Effect.zip(
      Effect.withSpan(Effect.currentSpan, "inside"),
      Effect.withSpan(Effect.currentSpan, "root", { root: true })
    )
    exporter.reset()
    // run at once inside the context (a context manager on AsyncLocalStorage carries it to later steps too)
    const [inside, root] = Otel.context.with(context, () => Effect.runSync(Effect.provide(program, ours)))
    request.end()
    assert.strictEqual(named("inside").parentSpanContext?.spanId, request.spanContext().spanId)
    assert.strictEqual(named("inside").spanContext().traceId, request.spanContext().traceId)
    assert.isUndefined(named("root").parentSpanContext)
    // Effect sees the same parent (an external span), and none for the root
    assert.strictEqual(Option.getOrUndefined(inside.parent)?.spanId, request.spanContext().spanId)
    assert.isTrue(Option.isNone(root.parent))
  })

  it("ends a failure in error with its exception, an interruption with status.interrupted", async () => {
    await run(Effect.withSpan(Effect.fail(new Error("no capacity")), "failing"))
    const failing = named("failing")
    assert.strictEqual(failing.status.code, Otel.SpanStatusCode.ERROR)
    assert.strictEqual(failing.status.message, "no capacity")
    assert.strictEqual(failing.events[0]?.name, "exception")
    assert.strictEqual(failing.events[0]?.attributes?.["exception.message"], "no capacity")
    await run(Effect.withSpan(Effect.interrupt, "interrupted"))
    assert.strictEqual(named("interrupted").attributes["status.interrupted"], true)
  })

  it("reports a span the sampler drops as not sampled, and its children follow it", async () => {
    const program = Effect.withSpan(
      Effect.flatMap(
        Effect.currentSpan,
        (span) => Effect.map(Effect.withSpan(Effect.currentSpan, "child"), (c) => [span, c])
      ),
      "unsampled"
    )
    const exit = await run(program)
    assert.isTrue(Exit.isSuccess(exit))
    if (Exit.isSuccess(exit)) assert.deepStrictEqual(exit.value.map((span) => span.sampled), [false, false])
    assert.deepStrictEqual(exporter.getFinishedSpans(), [])
  })

  it("runs no hook around a fiber's steps: code outside Effect does not see the Effect span as active", async () => {
    const activeInside = Effect.withSpan(Effect.sync(() => Otel.trace.getActiveSpan()?.spanContext().spanId), "step")
    const bridge = Layer.provide(OtelTracer.layerWithoutOtelTracer, Layer.succeed(OtelTracer.OtelTracer, otelTracer))
    const viaBridge = await run(activeInside, bridge)
    assert.deepStrictEqual(viaBridge, Exit.succeed(named("step").spanContext().spanId))
    assert.deepStrictEqual(await run(activeInside), Exit.succeed(undefined))
    // the layer over @effect/opentelemetry's OtelTracer sets the same tracer
    const viaLayer = Layer.provide(layerWithoutOtelTracer, Layer.succeed(OtelTracer.OtelTracer, otelTracer))
    assert.deepStrictEqual(await run(activeInside, viaLayer), Exit.succeed(undefined))
    assert.strictEqual(exporter.getFinishedSpans().length, 1)
  })
})
