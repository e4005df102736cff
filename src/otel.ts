/**
 * Traces through the OpenTelemetry SDK without the bridge's per-step cost, and with array attributes as arrays:
 * `layer` takes `NodeSdk.layer`'s configuration and sets an Effect tracer of its own in place of
 * `@effect/opentelemetry`'s. The spans are the same (names, kinds, parents, links, events, status, the exception
 * of a failure); three things differ:
 *
 * - an attribute that is an array of strings, numbers or booleans reaches the exporter as that array, as the
 *   conventions define `gen_ai.response.finish_reasons` and `gen_ai.request.stop_sequences` (the bridge, 0.64,
 *   writes every value that is not a string, number or boolean as its JSON text);
 * - no hook runs around every step of a fiber. The bridge makes the Effect span OpenTelemetry's active span around
 *   each step (0.2 to 0.3 µs a step, paid even when no context manager is registered): so that code outside Effect,
 *   an auto-instrumented library called inside a span, finds it as its parent. Here that code sees whatever context
 *   was active when the fiber started; Effect's spans, the client's and `@effect/platform`'s HTTP client spans (and
 *   the `traceparent` header it sends) keep their parents as before;
 * - the HTTP client span's `http.request.header.*` and `http.response.header.*` attributes (one per header, a dozen a
 *   request: `@effect/platform` sets them all) are left out unless `httpHeaders: true`: OpenTelemetry's HTTP
 *   conventions make them opt-in, and each costs a write to the span.
 *
 * `nestedClientSpans: false` also folds the HTTP client span under each call's span into it (one span a call).
 *
 * A span with no Effect parent takes OpenTelemetry's active span, if any, as its parent (a request handler's span
 * of an instrumented server, say); `Effect.withParentSpan` with `Tracer.externalSpan` (or `@effect/opentelemetry`'s
 * `Tracer.makeExternalSpan`, whose trace flags and state are kept) makes any span the parent.
 *
 * Needs the optional peers `@effect/opentelemetry` (0.64, the Effect 3 line) and `@opentelemetry/api`; nothing of
 * them is loaded by the main entry.
 *
 * @example
 * ```ts
 * import { BatchSpanProcessor, ConsoleSpanExporter } from "@opentelemetry/sdk-trace-base"
 * import { Node } from "effect-aifs"
 * import * as AifsOtel from "effect-aifs/otel"
 * import * as Layer from "effect/Layer"
 *
 * // where `NodeSdk.layer(...)` was: the same configuration (metrics and logs still go through `NodeSdk`)
 * export const TracedClient = Layer.provideMerge(
 *   Node.layerFromEnv,
 *   AifsOtel.layer(() => ({
 *     resource: { serviceName: "my-app" },
 *     spanProcessor: new BatchSpanProcessor(new ConsoleSpanExporter())
 *   }))
 * )
 * ```
 *
 * @since 0.5.0
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import type * as Resource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import * as Otel from "@opentelemetry/api"
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { LazyArg } from "effect/Function"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"

type PrimitiveArray =
  | Array<string | null | undefined>
  | Array<number | null | undefined>
  | Array<boolean | null | undefined>

/** Whether a value is an array OpenTelemetry takes as an attribute: strings, numbers or booleans, one type. */
const isPrimitiveArray = (value: unknown): value is PrimitiveArray => {
  if (!Array.isArray(value)) return false
  let kind: string | undefined
  for (const item of value) {
    if (item === null || item === undefined) continue
    const type = typeof item
    if ((type !== "string" && type !== "number" && type !== "boolean") || (kind !== undefined && type !== kind)) {
      return false
    }
    kind = type
  }
  return true
}

/**
 * An attribute's value as OpenTelemetry takes it: a string, number or boolean as it is, an array of one of them as
 * a copy, a bigint as its digits, anything else as its JSON text (as the bridge writes every non-primitive).
 *
 * @since 0.5.0
 * @category conversions
 */
export const attributeValue = (value: unknown): Otel.AttributeValue => {
  switch (typeof value) {
    case "string":
    case "number":
    case "boolean":
      return value
    case "bigint":
      return value.toString()
  }
  return isPrimitiveArray(value) ? (value.slice() as PrimitiveArray) : Inspectable.toStringUnknown(value)
}

const attributesOf = (record: Readonly<Record<string, unknown>>): Otel.Attributes => {
  const out: Otel.Attributes = {}
  for (const key in record) out[key] = attributeValue(record[key])
  return out
}

const kinds: Record<Tracer.SpanKind, Otel.SpanKind> = {
  internal: Otel.SpanKind.INTERNAL,
  client: Otel.SpanKind.CLIENT,
  server: Otel.SpanKind.SERVER,
  producer: Otel.SpanKind.PRODUCER,
  consumer: Otel.SpanKind.CONSUMER
}

const billion = BigInt(1_000_000_000)
const hrTime = (nanos: bigint): Otel.HrTime => [Number(nanos / billion), Number(nanos % billion)]

/** The OpenTelemetry identity of an Effect span: its own for ours, its ids (and flags and state, if set) else. */
const spanContextOf = (span: Tracer.AnySpan): Otel.SpanContext => {
  if (span instanceof SdkSpan) return span.span.spanContext()
  if (span instanceof FoldedSpan) return span.into.span.spanContext()
  const flags = Context.getOption(span.context, OtelTracer.OtelTraceFlags)
  const state = Context.getOption(span.context, OtelTracer.OtelTraceState)
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    isRemote: span._tag === "ExternalSpan",
    traceFlags: Option.getOrElse(flags, () => span.sampled ? Otel.TraceFlags.SAMPLED : Otel.TraceFlags.NONE),
    ...(Option.isSome(state) ? { traceState: state.value } : {})
  }
}

const linkOf = (link: Tracer.SpanLink): Otel.Link => ({
  context: spanContextOf(link.span),
  attributes: attributesOf(link.attributes)
})

/** The parent of a new span: the Effect one; else, unless it is a root, OpenTelemetry's active span. */
const parentOf = (parent: Option.Option<Tracer.AnySpan>, root: boolean) => {
  const active = Otel.context.active()
  if (Option.isSome(parent)) {
    return { parent, context: Otel.trace.setSpanContext(active, spanContextOf(parent.value)) }
  }
  if (root) return { parent, context: Otel.trace.deleteSpan(active) }
  const outer = Otel.trace.getSpanContext(active)
  if (outer === undefined) return { parent, context: active }
  return { parent: Option.some<Tracer.AnySpan>(OtelTracer.makeExternalSpan(outer)), context: active }
}

const ok = { code: Otel.SpanStatusCode.OK }

/**
 * What the tracer records beyond the conventions' defaults.
 *
 * @since 0.5.0
 * @category models
 */
export interface Options {
  /**
   * Whether `@effect/platform`'s HTTP client spans keep their `http.request.header.<name>` and
   * `http.response.header.<name>` attributes (opt-in in OpenTelemetry's HTTP conventions; default false).
   */
  readonly httpHeaders?: boolean | undefined
  /**
   * Whether a client span opened directly under a GenAI call's client span (one with `gen_ai.operation.name`, as
   * each call's `chat {model}` span) is a span of its own (default true). False folds it into the call's, as the
   * OpenTelemetry Java agent's "span-kind" suppression strategy does for nested client spans: `@effect/platform`'s
   * HTTP client span is then not exported (nor its URL, status and headers; its events and links go to the call's),
   * the `traceparent` header it sends names the call's span, and each request costs one span less. A client span of
   * your own around a call is no GenAI span: the call's span stays under it.
   */
  readonly nestedClientSpans?: boolean | undefined
}

/** Whether an attribute is one of a request's or response's headers (opt-in in OpenTelemetry's HTTP conventions). */
const isHeader = (key: string): boolean =>
  key.startsWith("http.request.header.") || key.startsWith("http.response.header.")

/** The status of an ended span (OK, as the bridge sets it, unless it failed), and the exception of a failure. */
const endWith = (span: Otel.Span, exit: Exit.Exit<unknown, unknown>, time: Otel.HrTime): void => {
  if (Exit.isSuccess(exit)) {
    span.setStatus(ok)
    return
  }
  if (Cause.isInterruptedOnly(exit.cause)) {
    span.setAttribute("status.interrupted", true)
    span.setStatus(ok)
    return
  }
  const error = Cause.prettyErrors(exit.cause)[0]
  if (error === undefined) {
    span.setStatus(ok)
    return
  }
  const stack = Cause.pretty(exit.cause, { renderErrorCause: true })
  span.recordException({ name: error.name, message: error.message, stack }, time)
  span.setStatus({ code: Otel.SpanStatusCode.ERROR, message: error.message })
}

/** An Effect span that writes through to an OpenTelemetry span as it goes. */
class SdkSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly spanId: string
  readonly traceId: string
  readonly sampled: boolean
  readonly attributes = new Map<string, unknown>()
  status: Tracer.SpanStatus

  constructor(
    readonly span: Otel.Span,
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    readonly links: Array<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    readonly httpHeaders: boolean,
    readonly initial: Readonly<Record<string, unknown>> | undefined
  ) {
    const ids = span.spanContext()
    this.spanId = ids.spanId
    this.traceId = ids.traceId
    this.sampled = (ids.traceFlags & Otel.TraceFlags.SAMPLED) === Otel.TraceFlags.SAMPLED
    this.status = { _tag: "Started", startTime }
  }

  attribute(key: string, value: unknown): void {
    this.attributes.set(key, value)
    if (!this.httpHeaders && isHeader(key)) return
    // Effect sets the span's initial attributes again once it is made: those the span started with are written once
    if (this.initial !== undefined && Object.hasOwn(this.initial, key) && this.initial[key] === value) return
    this.span.setAttribute(key, attributeValue(value))
  }

  event(name: string, startTime: bigint, attributes?: Record<string, unknown>): void {
    this.span.addEvent(name, attributes === undefined ? undefined : attributesOf(attributes), hrTime(startTime))
  }

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    for (const link of links) this.links.push(link)
    this.span.addLinks(links.map(linkOf))
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
    const time = hrTime(endTime)
    endWith(this.span, exit, time)
    this.span.end(time)
  }
}

/**
 * A client span opened directly under another client span, folded into it (`nestedClientSpans: false`): nothing of it
 * is exported, and its identity is its parent's, so that the `traceparent` header an HTTP client sends from it names
 * the parent, and a span opened under it nests under the parent.
 */
class FoldedSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly spanId: string
  readonly traceId: string
  readonly sampled: boolean
  readonly attributes = new Map<string, unknown>()
  status: Tracer.SpanStatus

  constructor(
    readonly into: SdkSpan,
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    readonly links: Array<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind
  ) {
    this.spanId = into.spanId
    this.traceId = into.traceId
    this.sampled = into.sampled
    this.status = { _tag: "Started", startTime }
  }

  attribute(key: string, value: unknown): void {
    this.attributes.set(key, value)
  }

  event(name: string, startTime: bigint, attributes?: Record<string, unknown>): void {
    this.into.event(name, startTime, attributes)
  }

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    for (const link of links) this.links.push(link)
    this.into.addLinks(links)
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }
}

/** The GenAI call's client span a new client span under `parent` folds into, if `parent` is one. */
const foldsInto = (parent: Option.Option<Tracer.AnySpan>): SdkSpan | undefined => {
  if (Option.isNone(parent)) return undefined
  const into = parent.value
  return into instanceof SdkSpan && into.kind === "client" && into.attributes.has("gen_ai.operation.name")
    ? into
    : undefined
}

/**
 * An Effect tracer whose spans are spans of an OpenTelemetry tracer, with no hook around the steps of a fiber.
 *
 * @since 0.5.0
 * @category constructors
 */
export const make = (tracer: Otel.Tracer, options: Options = {}): Tracer.Tracer => {
  const httpHeaders = options.httpHeaders === true
  const folds = options.nestedClientSpans === false
  return Tracer.make({
    span(name, effectParent, context, links, startTime, kind, options) {
      const into = folds && kind === "client" ? foldsInto(effectParent) : undefined
      if (into !== undefined) return new FoldedSpan(into, name, effectParent, context, links.slice(), startTime, kind)
      const { context: otelContext, parent } = parentOf(effectParent, options?.root === true)
      const span = tracer.startSpan(name, {
        kind: kinds[kind],
        startTime: hrTime(startTime),
        links: links.map(linkOf),
        // given at the start too, so that a sampler can read them
        ...(options?.attributes === undefined ? {} : { attributes: attributesOf(options.attributes) })
      }, otelContext)
      return new SdkSpan(span, name, parent, context, links.slice(), startTime, kind, httpHeaders, options?.attributes)
    },
    context: (execute) => execute()
  })
}

/**
 * Sets the tracer of `make` over the OpenTelemetry tracer in context (`@effect/opentelemetry`'s `OtelTracer`, as
 * its `Tracer.layerTracer` or `Tracer.layerGlobalTracer` provide it): what its `Tracer.layerWithoutOtelTracer`
 * does, without the per-step hook.
 *
 * @since 0.5.0
 * @category layers
 */
export const layerWithoutOtelTracerWith = (options: Options): Layer.Layer<never, never, OtelTracer.OtelTracer> =>
  Layer.unwrapEffect(Effect.map(OtelTracer.OtelTracer, (tracer) => Layer.setTracer(make(tracer, options))))

/**
 * `layerWithoutOtelTracerWith` with the conventions' defaults.
 *
 * @since 0.5.0
 * @category layers
 */
export const layerWithoutOtelTracer: Layer.Layer<never, never, OtelTracer.OtelTracer> = layerWithoutOtelTracerWith({})

/**
 * `NodeSdk.layer` with this tracer: the same configuration, the same tracer provider (a `NodeTracerProvider` of
 * the span processors, flushed and shut down with the layer), metrics and logs through `NodeSdk` as before; `options`
 * for what it records beyond the conventions' defaults.
 *
 * @since 0.5.0
 * @category layers
 */
export const layer = (
  evaluate: LazyArg<NodeSdk.Configuration>,
  options: Options = {}
): Layer.Layer<Resource.Resource> =>
  Layer.unwrapEffect(Effect.sync(() => {
    const { spanProcessor, ...rest } = evaluate()
    const sdk = NodeSdk.layer(() => rest)
    const processors = spanProcessor === undefined ? [] : Arr.ensure(spanProcessor)
    if (!Arr.isNonEmptyReadonlyArray(processors)) return sdk
    const provider = NodeSdk.layerTracerProvider(processors, {
      ...rest.tracerConfig,
      shutdownTimeout: rest.shutdownTimeout
    })
    const tracing = layerWithoutOtelTracerWith(options).pipe(
      Layer.provide(OtelTracer.layerTracer),
      Layer.provide(provider)
    )
    return Layer.provideMerge(tracing, sdk)
  }))
