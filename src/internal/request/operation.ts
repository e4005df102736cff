/**
 * A request as one operation: its span, opened when the first attempt leaves the limiter's line (a caller waiting
 * there holds no span), its metrics (`instruments.ts`), and its attempts, the first one admitted before anything else is built.
 * Every request of both transports gets its span here (through `pipeline.ts`, or a refusal before any attempt),
 * named and annotated by `telemetry.ts`.
 * @internal
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { ApiError } from "../../schemas/Errors.js"
import * as Metrics from "../metrics.js"
import { isModelOperation, type Server, spanOf } from "../telemetry.js"
import type { Admissions, FirstAdmission } from "./admission.js"
import { ended, recordDuration } from "./instruments.js"
import type { RequestOptions } from "./types.js"

/**
 * The first per-request time limit that is not a duration, if any: checked before the request waits in the
 * limiter, so that decoding it later cannot throw while a permit is held (the types forbid such a value).
 */
const invalidDuration = (options: RequestOptions): string | undefined => {
  const limits = [
    ["timeout", options.timeout],
    ["firstByteTimeout", options.firstByteTimeout],
    ["idleTimeout", options.idleTimeout]
  ] as const
  return limits.find(([, value]) => value !== undefined && Option.isNone(Duration.decodeUnknown(value)))?.[0]
}

/** The route an admission took, as `aifs.route` says it. */
const routeOf = (options: RequestOptions, first: FirstAdmission) =>
  `/${first.admission?.options.base ?? options.base ?? "v2"}`

/** The span's options at its start. */
const spanOptions = (
  op: NonNullable<RequestOptions["span"]>,
  options: RequestOptions,
  server: Server | undefined,
  streaming: boolean,
  extra: Record<string, unknown>
) => {
  const span = spanOf(op, options.model, server, streaming)
  return [span.name, {
    kind: span.kind,
    attributes: { ...span.attributes, ...extra },
    captureStackTrace: false
  }] as const
}

/** What the client adds to every operation's span: the limiter's wait and the route the request took. */
const extras = (options: RequestOptions, first: FirstAdmission | undefined, waitedMs: number | undefined) => ({
  ...(waitedMs === undefined ? {} : { "aifs.limiter.wait_ms": waitedMs }),
  ...(first === undefined ? {} : { "aifs.route": routeOf(options, first) })
})

/**
 * `effect` in the operation's span (when the request names one), with `error.type` on failure and, for a model
 * operation, its duration.
 */
const traced = <A>(
  effect: Effect.Effect<A, ApiError>,
  options: RequestOptions,
  server: Server | undefined,
  first?: FirstAdmission,
  waitedMs?: number
): Effect.Effect<A, ApiError> => {
  const op = options.span
  if (op === undefined) return effect
  const operation = op.operation
  const timed = Effect.clockWith((clock) => {
    const start = clock.unsafeCurrentTimeMillis()
    return Effect.onExit(effect, (exit) => ended(options, operation, start, clock, exit))
  })
  return Effect.withSpan(timed, ...spanOptions(op, options, server, false, extras(options, first, waitedMs)))
}

/** `traced` for a stream: the span and the duration cover it to its end. */
const tracedStream = <A>(
  stream: Stream.Stream<A, ApiError>,
  options: RequestOptions,
  server: Server | undefined,
  first: FirstAdmission | undefined,
  waitedMs: number | undefined
): Stream.Stream<A, ApiError> => {
  const op = options.span
  if (op === undefined) return stream
  const operation = op.operation
  const timed = Stream.unwrap(Effect.map(Clock.currentTimeMillis, (start) => {
    let errorType: string | undefined
    return stream.pipe(
      Stream.tapError((error) => {
        errorType = error._tag
        return Effect.annotateCurrentSpan("error.type", error._tag)
      }),
      Stream.ensuring(
        Effect.suspend(() =>
          isModelOperation(operation) ? recordDuration(options, operation, start, errorType) : Effect.void
        )
      )
    )
  }))
  return Stream.withSpan(timed, ...spanOptions(op, options, server, true, extras(options, first, waitedMs)))
}

/**
 * The operations of requests, admitted by `admissions` when a limiter is on. `routes`: whether the span says the
 * route a request took (`aifs.route`: the inference transport's bases; the gateway has one).
 */
export const make = (admissions: Admissions | undefined, server: Server | undefined, routes = true) => {
  /** The first admission as the span shows it: its route, unless the transport has one only. */
  const shown = (first: FirstAdmission) => routes ? first : undefined
  /** The wait in the limiter's line, as the `aifs.limiter.wait` histogram counts it. */
  const waited = <A, E, R>(effect: Effect.Effect<A, E, R>, waitedMs: number) =>
    Effect.withFiberRuntime<A, E, R>((fiber) => {
      Metrics.limiterWait.unsafeUpdate(waitedMs / 1000, fiber.getFiberRef(FiberRef.currentMetricLabels))
      return effect
    })

  /** A refusal by the limiter (larger than the whole quota) still gets the operation's span, showing why. */
  const refused = (failed: Effect.Effect<never, ApiError>, options: RequestOptions) => traced(failed, options, server)

  /**
   * Runs the attempts of one request in its span. A caller waiting in the limiter's line holds its request and a
   * suspended fiber, not the span, retry and attempt machinery.
   */
  const operation = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    run: (first: FirstAdmission) => Effect.Effect<A, ApiError>
  ): Effect.Effect<A, ApiError> => {
    const invalid = invalidDuration(options)
    if (invalid !== undefined) return Effect.dieMessage(`RequestOptions.${invalid} is not a duration`)
    if (admissions === undefined) {
      const first: FirstAdmission = { admission: undefined }
      return traced(run(first), options, server, shown(first))
    }
    return admissions.first(
      request,
      options,
      refused,
      (first, waitedMs) => waited(traced(run(first), options, server, shown(first), waitedMs), waitedMs)
    )
  }

  /**
   * `operation` for a stream: the span covers the stream to its end. The first admission is kept by the stream's
   * scope until the stream's first attempt takes it.
   */
  const operationStream = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    run: (first: FirstAdmission) => Stream.Stream<A, ApiError>
  ): Stream.Stream<A, ApiError> => {
    const invalid = invalidDuration(options)
    if (invalid !== undefined) return Stream.dieMessage(`RequestOptions.${invalid} is not a duration`)
    if (admissions === undefined) {
      const first: FirstAdmission = { admission: undefined }
      return tracedStream(run(first), options, server, shown(first), undefined)
    }
    return Stream.unwrapScoped(
      admissions.first(request, options, refused, (first, waitedMs) =>
        // the stream runs after this returns: its scope, not the end of this, gives back an unused admission
        Effect.uninterruptible(Effect.suspend(() => {
          const kept: FirstAdmission = { admission: first.admission }
          first.admission = undefined
          return Effect.as(
            Effect.addFinalizer(() => Effect.suspend(() => kept.admission?.permit?.settle("unsent") ?? Effect.void)),
            tracedStream(run(kept), options, server, shown(kept), waitedMs)
          )
        })).pipe((effect) => waited(effect, waitedMs)))
    )
  }

  return { operation, operationStream }
}

/** The operations of a transport's requests: what `make` returns. */
export type Operations = ReturnType<typeof make>
