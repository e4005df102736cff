/**
 * The HTTP stack behind `InferenceHttpClient`: resolves the base, authenticates, reads the rate-limit
 * headers of every response, maps failures to `ApiError` (once, here) and retries with the `RetryPolicy`.
 *
 * @example
 * ```ts
 * import * as HttpClient from "@effect/platform/HttpClient"
 * import { ClientConfig, Inference, InferenceHttp, Models, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // what the transport adds to a service's relative request: the base URL and the key
 * const sent: Array<string> = []
 * const scripted = Testing.httpClient((request) => {
 *   sent.push(`${request.method} ${request.url} (${request.headers.authorization})`)
 *   return { body: { object: "list", data: [] } }
 * })
 *
 * const ClientLive = Inference.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-secret", baseUrl: "https://llm.example/v2" })),
 *   Layer.provide(Layer.succeed(HttpClient.HttpClient, scripted))
 * )
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.list())
 *
 * Effect.runPromise(program.pipe(Effect.provide(ClientLive))).then(() => console.log(sent))
 * // => [ 'GET https://llm.example/v2/models (Bearer gen-secret)' ]
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { identity } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { excerpt, fromHttpClientError, fromStreamError, pacedByLimiter } from "../internal/errors.js"
import { fingerprint, makeRedactor } from "../internal/redact.js"
import { annotateResponse, requestAttributes } from "../internal/spans.js"
import { decodeEvents } from "../internal/sse.js"
import * as Transport from "../internal/transport.js"
import {
  type ApiError,
  DecodeError,
  type LimiterUnavailable,
  type RequestTooLarge,
  Timeout,
  TransportError
} from "../schemas/Errors.js"
import type { RateLimitInfo } from "../schemas/RateLimit.js"
import {
  InferenceHttpClient,
  type RequestOptions,
  ResponseMetadata,
  type ServerSentEvent,
  type StreamOptions,
  type WithResponse
} from "../services/InferenceHttpClient.js"
import { ClientConfig } from "./ClientConfig.js"
import * as Metrics from "./ClientMetrics.js"
import { type Permit, RateLimiter } from "./RateLimiter.js"
import * as RetryPolicy from "./RetryPolicy.js"

/**
 * Builds the transport from the platform `HttpClient`, the `ClientConfig` and the `RetryPolicy`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<
  InferenceHttpClient.Service,
  never,
  HttpClient.HttpClient | ClientConfig | RetryPolicy.RetryPolicy
> = Effect.gen(function*() {
  const config = yield* ClientConfig
  const policy = yield* RetryPolicy.RetryPolicy
  const client = yield* HttpClient.HttpClient
  // optional: without a RateLimiter in the context, requests go out at once and only the retries react
  const limiter = Option.getOrUndefined(
    Option.filter(yield* Effect.serviceOption(RateLimiter), (limiter) => limiter.enabled)
  )
  const redact = makeRedactor([config.apiKey])
  // one tagged counter per status, made once (tagging builds a new metric key each time)
  const byStatus = new Map<number, Metric.Metric.Counter<number>>()
  const requestsWithStatus = (status: number) => {
    let counter = byStatus.get(status)
    if (counter === undefined) {
      counter = Metric.tagged(Metrics.requests, "status", String(status))
      byStatus.set(status, counter)
    }
    return counter
  }
  const keyId = fingerprint(config.apiKey)
  const bases = { v2: config.baseUrl, v1: config.v1Url, queue: config.queueUrl } as const

  const prepare = (request: HttpClientRequest.HttpClientRequest, options: RequestOptions, accept: string) =>
    request.pipe(
      HttpClientRequest.prependUrl(bases[options.base ?? "v2"]),
      HttpClientRequest.bearerToken(config.apiKey),
      HttpClientRequest.setHeaders({ accept, "user-agent": Transport.userAgent })
    )

  /** One attempt up to the response headers; a non-2xx status becomes its typed error. */
  const send = (
    request: HttpClientRequest.HttpClientRequest,
    endpoint: string,
    firstByte: Duration.Duration | undefined
  ) =>
    Transport.send(client, request, endpoint, redact, {
      firstByte,
      connect: config.connectTimeout,
      observe: (status) =>
        Effect.zipRight(
          Metric.increment(requestsWithStatus(status)),
          status === 429 ? Metric.increment(Metrics.rateLimited) : Effect.void
        )
    }).pipe(Effect.map(([response, info]) => [response, new ResponseMetadata(info)] as const))

  /** The first-byte and total limits of a request on its base: the queue waits for capacity, so longer. */
  const timeoutsOf = (options: RequestOptions) => {
    const queue = options.base === "queue"
    return {
      firstByte: options.firstByteTimeout === undefined
        ? queue ? config.queueTimeout : config.firstByteTimeout
        : Duration.decode(options.firstByteTimeout),
      total: options.timeout === undefined
        ? queue ? config.queueTimeout : config.timeout
        : Duration.decode(options.timeout)
    }
  }

  /**
   * `effect`, retried by the policy. The schedule's machinery is set up only after a first failure, which it then
   * meets as its first input (most requests succeed at once, and `Effect.retry` would build it for each).
   */
  const retrying = <A>(
    request: HttpClientRequest.HttpClientRequest,
    effect: Effect.Effect<A, ApiError>,
    options: RequestOptions
  ): Effect.Effect<A, ApiError> =>
    options.retry === false ? effect : Effect.catchAll(effect, (first) => {
      let replayed = false
      return Effect.retry(
        Effect.suspend(() => {
          if (replayed) return effect
          replayed = true
          return Effect.fail(first)
        }),
        RetryPolicy.reported(policy, Transport.endpointOf(request))
      )
    })

  const decodeBody = <A, I>(schema: Schema.Schema<A, I>, text: string, meta: ResponseMetadata, endpoint: string) =>
    Transport.decodeJson(schema, text, meta, endpoint, redact)

  /**
   * Waits for the limiter's capacity for one attempt (or routes it to the queue when configured); `onGranted`
   * sees the permit as the limiter grants it. Use through `admitGuarded`.
   */
  const admit = (
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    onGranted: (permit: Permit) => void
  ): Effect.Effect<Admission, RequestTooLarge | LimiterUnavailable> => {
    if (limiter === undefined) return Effect.succeed({ permit: undefined, options, model: undefined })
    // the body is parsed only to estimate its cost for the limiter
    const body = jsonBody(request)
    const cost = body === undefined ? undefined : limiter.cost(request.url, body)
    const model = cost?.model
    if (cost === undefined || model === undefined) return Effect.succeed({ permit: undefined, options, model })
    const ticket = { key: keyId, model, tokens: cost.tokens }
    const acquire = Effect.map(limiter.acquire(ticket, onGranted), (permit): Admission => ({ permit, options, model }))
    if (!limiter.queueRouting || (options.base ?? "v2") !== "v2" || !queueable.has(request.url)) return acquire
    return Effect.flatMap(limiter.wouldWait(ticket), (wait) =>
      wait
        // the caller's limits were meant for /v2: the queue waits for capacity, so it gets the queue's
        ? Effect.succeed({
          permit: undefined,
          options: { ...options, base: "queue", timeout: undefined, firstByteTimeout: undefined },
          model
        })
        : acquire)
  }

  /**
   * `admit`, from inside an uninterruptible region (`restore` makes the wait interruptible): a permit granted
   * just as an interruption lands is given back, not lost between the limiter and this caller. `refused`
   * sees a refusal by the limiter (larger than the whole quota).
   */
  const admitGuarded = (
    restore: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>,
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    refused: (failed: Effect.Effect<never, RequestTooLarge | LimiterUnavailable>) => Effect.Effect<never, ApiError> =
      identity
  ): Effect.Effect<Admission, ApiError> => {
    let granted: Permit | undefined
    return Effect.flatMap(
      Effect.exit(restore(admit(request, options, (permit) => {
        granted = permit
      }))),
      (exit) => {
        if (Exit.isSuccess(exit)) return exit
        const cause = Effect.failCause(exit.cause)
        const failed = granted === undefined ? cause : Effect.zipRight(granted.cancel, cause)
        return Exit.isInterrupted(exit) ? failed : refused(failed)
      }
    )
  }

  /** The attributes of the operation's span. */
  const spanAttributes = (options: RequestOptions, waitedMs: number | undefined) => ({
    ...requestAttributes(options.span!.operation, options.model),
    ...(waitedMs === undefined ? {} : { "aifs.limiter.wait_ms": waitedMs })
  })

  /** `effect` in the operation's span, when the request names one. */
  const traced = <A>(
    effect: Effect.Effect<A, ApiError>,
    options: RequestOptions,
    waitedMs: number | undefined
  ): Effect.Effect<A, ApiError> =>
    options.span === undefined ? effect : Effect.withSpan(effect, options.span.name, {
      attributes: spanAttributes(options, waitedMs),
      // no call-site capture: its error object would be held by every request for as long as it runs
      captureStackTrace: false
    })

  /**
   * Waits for the first admission of a request, interruptibly, and runs `use` with it and how long the caller
   * waited; `use` must take `first.admission` (an attempt does) or it goes back when `use` ends. A request the
   * limiter refuses (larger than the whole quota) still gets its span, showing why.
   */
  const admitFirst = <B, E2, R2>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    use: (first: FirstAdmission, waitedMs: number) => Effect.Effect<B, E2, R2>
  ): Effect.Effect<B, ApiError | E2, R2> =>
    // as few frames as possible stay on a caller's fiber while it waits: thousands may wait at once
    Effect.clockWith((clock) => {
      const arrived = clock.unsafeCurrentTimeMillis()
      return Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(
          // refused: the operation's span still shows why
          admitGuarded(restore, request, options, (failed) => traced(failed, options, undefined)),
          (admission) => {
            const first: FirstAdmission = { admission }
            return Effect.ensuring(
              restore(Effect.suspend(() => use(first, clock.unsafeCurrentTimeMillis() - arrived))),
              Effect.suspend(() => first.admission?.permit?.cancel ?? Effect.void)
            )
          }
        )
      )
    })

  /**
   * Runs the attempts of one request, the first one admitted before anything else is built (the operation's
   * span included): a caller waiting in the limiter's line holds its request and a suspended fiber, not the
   * span, retry and attempt machinery.
   */
  const admitted = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    run: (first: FirstAdmission) => Effect.Effect<A, ApiError>
  ): Effect.Effect<A, ApiError> => {
    const invalid = invalidDuration(options)
    if (invalid !== undefined) return Effect.dieMessage(`RequestOptions.${invalid} is not a duration`)
    return limiter === undefined
      ? traced(run({ admission: undefined }), options, undefined)
      : admitFirst(request, options, (first, waitedMs) => traced(run(first), options, waitedMs))
  }

  /**
   * `admitted` for a stream: the span covers the stream to its end. The first admission is kept by the
   * stream's scope until the stream's first attempt takes it.
   */
  const admittedStream = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    run: (first: FirstAdmission) => Stream.Stream<A, ApiError>
  ): Stream.Stream<A, ApiError> => {
    const tracedStream = (stream: Stream.Stream<A, ApiError>, waitedMs: number | undefined) =>
      options.span === undefined ? stream : Stream.withSpan(stream, options.span.name, {
        attributes: spanAttributes(options, waitedMs),
        captureStackTrace: false
      })
    const invalid = invalidDuration(options)
    if (invalid !== undefined) return Stream.dieMessage(`RequestOptions.${invalid} is not a duration`)
    return limiter === undefined
      ? tracedStream(run({ admission: undefined }), undefined)
      : Stream.unwrapScoped(
        admitFirst(request, options, (first, waitedMs) =>
          // the stream runs after this returns: its scope, not the end of this, gives back an unused admission
          Effect.uninterruptible(Effect.suspend(() => {
            const kept: FirstAdmission = { admission: first.admission }
            first.admission = undefined
            return Effect.as(
              Effect.addFinalizer(() => Effect.suspend(() => kept.admission?.permit?.cancel ?? Effect.void)),
              tracedStream(run(kept), waitedMs)
            )
          })))
      )
  }

  /**
   * One attempt through the rate limiter: takes the first admission or waits for capacity, sends, learns
   * from the response's headers, settles the reservation when the attempt fails, and reads the response with
   * `read`. The total time limit runs from sending (not while waiting in the limiter's line) to the end of
   * `read`.
   */
  const attempt = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    accept: string,
    read: (sent: Sent) => Effect.Effect<A, ApiError>,
    first: FirstAdmission
  ) =>
    // uninterruptible between the limiter's grant and the guard that settles it: an interruption lands only
    // inside `restore`, where the permit is always accounted for
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const admission = first.admission ?? (yield* admitGuarded(restore, request, options))
        first.admission = undefined
        const { model, permit } = admission
        const routed = admission.options
        const prepared = prepare(request, routed, accept)
        const endpoint = Transport.endpointOf(prepared)
        const timeouts = timeoutsOf(routed)
        const learn = (info: RateLimitInfo | undefined, status: number) =>
          limiter === undefined || model === undefined || info === undefined
            ? Effect.void
            : limiter.learn(keyId, model, info, status)
        let sending = false
        let settled = false
        // marks the permit settled and settles it in one piece: the guard below leaves a settled permit alone
        const settling = <S>(settle: Effect.Effect<S>) =>
          Effect.uninterruptible(Effect.suspend(() => {
            settled = true
            return settle
          }))
        const sentAt = yield* Clock.currentTimeMillis
        const exchange = Effect.suspend(() => {
          sending = true
          // a first-byte limit no shorter than the total one could never fire first: one timer is enough
          return send(
            prepared,
            endpoint,
            Duration.lessThan(timeouts.firstByte, timeouts.total) ? timeouts.firstByte : undefined
          )
        }).pipe(
          Effect.catchAll((error): Effect.Effect<never, ApiError> => {
            // an answer's error carries the status and the limits it came with; other errors neither
            const answer: {
              readonly _tag: string
              readonly status?: number | undefined
              readonly rateLimit?: RateLimitInfo | undefined
            } = error
            const learnt = learn(answer.rateLimit, answer.status ?? 0)
            // a 429 the server did not count: the slot comes back, and a limiter that learns its limits measures
            // them; when it then paces the retry itself (it waits until the window frees), the retry need not wait
            if (error._tag === "RateLimited") {
              if (permit === undefined) return Effect.zipRight(learnt, Effect.fail(error))
              return Effect.flatMap(
                settling(permit.throttled),
                (paced) => Effect.zipRight(learnt, Effect.fail(paced ? pacedByLimiter(error) : error))
              )
            }
            // never reached the server (no connection): the slot comes back; no answer (a dropped connection, no
            // answer in time): it stays counted, the server may hold it; any other answer: counted, its tokens
            // come back
            const settle = permit === undefined
              ? Effect.void
              : (error._tag === "TransportError" && error.connected === false) ||
                  (error._tag === "Timeout" && error.timeout === "connect")
              ? permit.cancel
              : error._tag === "TransportError" || error._tag === "Timeout"
              ? permit.answered
              : Effect.zipRight(permit.answered, permit.refund)
            return Effect.zipRight(Effect.zipRight(settling(settle), learnt), Effect.fail(error))
          }),
          Effect.tap(([, meta]) =>
            Effect.zipRight(
              settling(permit === undefined ? Effect.void : permit.succeeded),
              learn(meta.rateLimit, meta.status)
            )
          ),
          Effect.flatMap(([response, meta]) => read({ response, meta, endpoint, permit, timeouts, sentAt })),
          Transport.totalTimeout(timeouts.total, endpoint)
        )
        // interrupted or timed out before the answer: once sent, the server may have counted the request, so it
        // stays counted from now (the limiter never gives back what the server may hold); not sent: it comes back
        return yield* Effect.onExit(
          restore(exchange),
          (exit) =>
            settled || permit === undefined || Exit.isSuccess(exit)
              ? Effect.void
              : sending
              ? permit.answered
              : permit.cancel
        )
      })
    )

  /** The attempts of one request, retried by the policy unless the request says not to. */
  const exchange = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    accept: string,
    read: (sent: Sent) => Effect.Effect<A, ApiError>
  ): Effect.Effect<A, ApiError> =>
    admitted(request, options, (first) => retrying(request, attempt(request, options, accept, read, first), options))

  const json = <A, I>(
    request: HttpClientRequest.HttpClientRequest,
    schema: Schema.Schema<A, I>,
    options: RequestOptions = {}
  ): Effect.Effect<WithResponse<A>, ApiError> =>
    exchange(
      request,
      options,
      "application/json",
      ({ endpoint, meta, permit, response }) =>
        Transport.readText(response, endpoint).pipe(
          Effect.flatMap((text) => decodeBody(schema, text, meta, endpoint)),
          Effect.tap((value) =>
            options.span === undefined
              ? reconcile(permit, value)
              : Effect.zipRight(reconcile(permit, value), annotateResponse(value))
          ),
          Effect.map((value) => ({ value, response: meta }))
        )
    )

  const text = (
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions = {}
  ): Effect.Effect<WithResponse<string>, ApiError> =>
    exchange(
      request,
      options,
      "text/plain, */*",
      ({ endpoint, meta, response }) =>
        Effect.map(Transport.readText(response, endpoint), (value) => ({ value, response: meta }))
    )

  /**
   * Opens a stream: the attempt ends at the status line; the events carry on the idle limit between chunks
   * and what is left of the total limit.
   */
  const open = (request: HttpClientRequest.HttpClientRequest, options: RequestOptions, first: FirstAdmission) => {
    const idle = options.idleTimeout === undefined ? config.streamIdleTimeout : Duration.decode(options.idleTimeout)
    return retrying(
      request,
      attempt(request, options, "text/event-stream", (sent) => {
        // a 200 that is not an event stream (an HTML page from a proxy, a JSON body): a contract break to show
        const type = sent.meta.headers["content-type"]
        return type === undefined || type.toLowerCase().includes("text/event-stream") ?
          Effect.succeed(sent) :
          Effect.flatMap(
            Effect.orElseSucceed(Transport.readBounded(sent.response), () => ""),
            (text) =>
              Effect.fail(
                new DecodeError({
                  message: `expected an event stream, got ${redact(type).slice(0, 100)}`,
                  endpoint: sent.endpoint,
                  status: sent.meta.status,
                  ...(sent.meta.requestId === undefined ? {} : { requestId: sent.meta.requestId }),
                  excerpt: excerpt(redact(text))
                })
              )
          )
      }, first),
      options
    ).pipe(
      Effect.map(({ endpoint, meta, permit, response, sentAt, timeouts }) => ({
        endpoint,
        meta,
        permit,
        events: decodeEvents(
          response.stream.pipe(
            Stream.mapError((error) => fromHttpClientError(error, endpoint)),
            Stream.timeoutFail(
              () =>
                new Timeout({
                  message: `stream idle for ${Duration.format(idle)}`,
                  endpoint,
                  timeout: "idle",
                  after: idle
                }),
              idle
            ),
            Stream.interruptWhen(
              Effect.flatMap(Clock.currentTimeMillis, (now) =>
                Effect.zipRight(
                  Effect.sleep(Math.max(0, Duration.toMillis(timeouts.total) - (now - sentAt))),
                  Effect.fail(
                    new Timeout({
                      message: `stream not finished within ${Duration.format(timeouts.total)}`,
                      endpoint,
                      timeout: "total",
                      after: timeouts.total
                    })
                  )
                ))
            )
          ),
          endpoint
        )
      }))
    )
  }

  const sse = (
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions = {}
  ): Stream.Stream<ServerSentEvent, ApiError> =>
    admittedStream(request, options, (first) =>
      Stream.unwrap(
        Effect.map(
          open(request, options, first),
          ({ events }) => Stream.map(events, (event): ServerSentEvent => ({ event: event.event, data: event.data }))
        )
      ))

  const jsonStream = <A, I>(
    request: HttpClientRequest.HttpClientRequest,
    schema: Schema.Schema<A, I>,
    options: StreamOptions = {}
  ): Stream.Stream<A, ApiError> =>
    admittedStream(
      request,
      options,
      (first) =>
        Stream.unwrap(Effect.map(open(request, options, first), ({ endpoint, events, meta, permit }) => {
          const terminator = options.terminator === undefined ? "[DONE]" : options.terminator
          const context = { endpoint, requestId: meta.requestId, rateLimit: meta.rateLimit }
          const decode = Transport.decoder(schema, endpoint, redact)
          let ended = false
          let failure: ApiError | undefined
          let usage: A | undefined
          /** The payload of an error event, redacted (the server may echo the key), as JSON when it is JSON. */
          const errorOf = (data: string): ApiError => {
            let payload: unknown
            try {
              payload = JSON.parse(redact(data))
            } catch {
              payload = { error: { message: redact(data) } }
            }
            return fromStreamError(payload, context)
          }
          /** One event to its value, or the error that ends the stream. */
          const decodeEvent = (event: ServerSentEvent): Either.Either<A, ApiError> => {
            if (event.event === "error") return Either.left(errorOf(event.data))
            const data = decode.parse(event.data, meta)
            if (Either.isLeft(data)) return Either.left(data.left)
            if (isErrorPayload(data.right)) return Either.left(errorOf(event.data))
            return decode.value(data.right, event.data, meta)
          }
          // decoded a network chunk at a time, synchronously (no effect per event); the terminator or an error ends
          // the stream within its chunk (a `stop` mark), without waiting for more bytes
          const body = events.pipe(
            Stream.mapChunks((chunk) => {
              const values: Array<A | typeof stop> = []
              for (const event of chunk) {
                const data = event.data.trim()
                if (data === "") continue
                if (data === terminator) {
                  ended = true
                  values.push(stop)
                  break
                }
                const value = decodeEvent(event)
                if (Either.isLeft(value)) {
                  failure = value.left
                  values.push(stop)
                  break
                }
                if (usageTotal(value.right) !== undefined) usage = value.right
                values.push(value.right)
              }
              return Chunk.unsafeFromArray(values)
            }),
            Stream.takeWhile((value): value is A => value !== stop),
            // however the stream ends (done, failed, interrupted, or its consumer stopped early), the usage it saw
            // settles the reservation
            Stream.ensuring(Effect.suspend(() => reconcile(permit, usage)))
          )
          return Stream.concat(
            body,
            Stream.suspend(() => {
              const end = failure !== undefined
                ? Stream.fail(failure)
                : terminator !== null && !ended
                ? Stream.fail(new TransportError({ message: `stream ended before ${terminator}`, endpoint }))
                : Stream.empty
              // the operation's span shows the usage the stream reported (this runs within it, a finalizer not)
              return options.span === undefined || usage === undefined
                ? end
                : Stream.concat(Stream.drain(Stream.fromEffect(annotateResponse(usage))), end)
            })
          )
        }))
    )

  return { apiVersion: config.apiVersion, json, text, sse, jsonStream }
})

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

/** Marks the end of a stream's values within a chunk. */
const stop: unique symbol = Symbol("effect-aifs/stream-stop")

/** What an attempt goes out with: the limiter's permit, its options (maybe routed to the queue) and its model. */
interface Admission {
  readonly permit: Permit | undefined
  readonly options: RequestOptions
  readonly model: string | undefined
}

/** The admission of a request's first attempt, until the attempt takes it. */
interface FirstAdmission {
  admission: Admission | undefined
}

/** A response whose status line came back, handed to the reader of an attempt. */
interface Sent {
  readonly response: HttpClientResponse.HttpClientResponse
  readonly meta: ResponseMetadata
  readonly endpoint: string
  readonly permit: Permit | undefined
  readonly timeouts: { readonly firstByte: Duration.Duration; readonly total: Duration.Duration }
  /** When the request went out (the total limit counts from here). */
  readonly sentAt: number
}

/** The routes the queue root mirrors: a request to one of these may be routed there. */
const queueable = new Set([
  "/chat/completions",
  "/completions",
  "/embeddings",
  "/audio/transcriptions",
  "/audio/translations",
  "/images/generations"
])

const decoder = new TextDecoder()

/** The parsed JSON body of a request, when it has one (the limiter estimates its cost). */
const jsonBody = (request: HttpClientRequest.HttpClientRequest): unknown => {
  const body = request.body
  if (body._tag !== "Uint8Array" || !body.contentType.includes("json")) return undefined
  try {
    return JSON.parse(decoder.decode(body.body))
  } catch {
    return undefined
  }
}

/** The `usage.total_tokens` of a decoded body or chunk, if it has one. */
const usageTotal = (value: unknown): number | undefined => {
  if (typeof value !== "object" || value === null || !("usage" in value)) return undefined
  const usage = (value as { usage: unknown }).usage
  if (typeof usage !== "object" || usage === null || !("total_tokens" in usage)) return undefined
  const total = (usage as { total_tokens: unknown }).total_tokens
  return typeof total === "number" && total > 0 ? total : undefined
}

const reconcile = (permit: Permit | undefined, value: unknown): Effect.Effect<void> => {
  const total = permit === undefined ? undefined : usageTotal(value)
  return permit === undefined || total === undefined ? Effect.void : permit.reconcile(total)
}

const isErrorPayload = (data: unknown): boolean =>
  typeof data === "object" && data !== null && "error" in data && !("choices" in data) &&
  (data as { error: unknown }).error !== null

/**
 * The transport, from the platform `HttpClient`, a `ClientConfig` and a `RetryPolicy`.
 *
 * @example
 * ```ts
 * import { ClientConfig, InferenceHttp, Node, RetryPolicy } from "effect-aifs"
 * import type { InferenceHttpClient } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the transport with a retry policy of your own (the one from the configuration: `layerDefaultRetry`)
 * export const TransportLive: Layer.Layer<InferenceHttpClient.InferenceHttpClient> = InferenceHttp.layer.pipe(
 *   Layer.provide(RetryPolicy.layer({ maxRetries: 10, budget: "5 minutes", maxDelay: "1 minute" })),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<
  InferenceHttpClient,
  never,
  HttpClient.HttpClient | ClientConfig | RetryPolicy.RetryPolicy
> = Layer.effect(InferenceHttpClient, make)

/**
 * The transport with the default retry policy (its `maxRetries` from the `ClientConfig`).
 *
 * @example
 * ```ts
 * import { Chat, ClientConfig, InferenceHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // one service on the transport, with the default policy (`maxRetries` from the configuration)
 * export const ChatLive: Layer.Layer<Chat.Chat> = Chat.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-...", maxRetries: 2 })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDefaultRetry: Layer.Layer<InferenceHttpClient, never, HttpClient.HttpClient | ClientConfig> = layer
  .pipe(Layer.provide(RetryPolicy.layerFromClientConfig))
