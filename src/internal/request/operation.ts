/**
 * A request as one operation: its span, opened when the first attempt leaves the limiter's line (a caller waiting
 * there holds no span), and its attempts, the first one admitted before anything else is built.
 * @internal
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { ApiError } from "../../schemas/Errors.js"
import type { RequestOptions } from "../../services/InferenceHttpClient.js"
import { requestAttributes } from "../spans.js"
import type { Admissions, FirstAdmission } from "./admission.js"

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

/** The span of an operation: its name and attributes (no call-site capture: every request would hold its error). */
const spanOf = (span: NonNullable<RequestOptions["span"]>, options: RequestOptions, waitedMs: number | undefined) =>
  [span.name, {
    attributes: {
      ...requestAttributes(span.operation, options.model),
      ...(waitedMs === undefined ? {} : { "aifs.limiter.wait_ms": waitedMs })
    },
    captureStackTrace: false
  }] as const

/** `effect` in the operation's span, when the request names one. */
const traced = <A>(effect: Effect.Effect<A, ApiError>, options: RequestOptions, waitedMs: number | undefined) =>
  options.span === undefined ? effect : Effect.withSpan(effect, ...spanOf(options.span, options, waitedMs))

const tracedStream = <A>(stream: Stream.Stream<A, ApiError>, options: RequestOptions, waitedMs: number | undefined) =>
  options.span === undefined ? stream : Stream.withSpan(stream, ...spanOf(options.span, options, waitedMs))

/** The operations of requests, admitted by `admissions` when a limiter is on. */
export const make = (admissions: Admissions | undefined) => {
  /** A refusal by the limiter (larger than the whole quota) still gets the operation's span, showing why. */
  const refusedIn = (options: RequestOptions) => (failed: Effect.Effect<never, ApiError>) =>
    traced(failed, options, undefined)

  /**
   * Runs the attempts of one request in its span. A caller waiting in the limiter's line holds its request and a
   * suspended fiber, not the span, retry and attempt machinery.
   */
  const admitted = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    run: (first: FirstAdmission) => Effect.Effect<A, ApiError>
  ): Effect.Effect<A, ApiError> => {
    const invalid = invalidDuration(options)
    if (invalid !== undefined) return Effect.dieMessage(`RequestOptions.${invalid} is not a duration`)
    return admissions === undefined
      ? traced(run({ admission: undefined }), options, undefined)
      : admissions.first(
        request,
        options,
        refusedIn(options),
        (first, waitedMs) => traced(run(first), options, waitedMs)
      )
  }

  /**
   * `admitted` for a stream: the span covers the stream to its end. The first admission is kept by the stream's
   * scope until the stream's first attempt takes it.
   */
  const admittedStream = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    run: (first: FirstAdmission) => Stream.Stream<A, ApiError>
  ): Stream.Stream<A, ApiError> => {
    const invalid = invalidDuration(options)
    if (invalid !== undefined) return Stream.dieMessage(`RequestOptions.${invalid} is not a duration`)
    if (admissions === undefined) return tracedStream(run({ admission: undefined }), options, undefined)
    return Stream.unwrapScoped(
      admissions.first(request, options, refusedIn(options), (first, waitedMs) =>
        // the stream runs after this returns: its scope, not the end of this, gives back an unused admission
        Effect.uninterruptible(Effect.suspend(() => {
          const kept: FirstAdmission = { admission: first.admission }
          first.admission = undefined
          return Effect.as(
            Effect.addFinalizer(() => Effect.suspend(() => kept.admission?.permit?.cancel ?? Effect.void)),
            tracedStream(run(kept), options, waitedMs)
          )
        })))
    )
  }

  return { admitted, admittedStream }
}
