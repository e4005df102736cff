/**
 * Batch jobs in the OpenAI batch format: a `Stream` of requests in (`custom_id`, `method`, `url`, `body` for
 * chat completions, completions and embeddings), a `Stream` of result lines out, as fast as the rate
 * limiter lets them go. A failed request becomes an error line, never a failed stream. A run given `Flights` can be
 * stopped gracefully: the requests still waiting for the quota are cut at once, those on the wire when the caller says.
 *
 * @example
 * ```ts
 * import { Batch, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Either from "effect/Either"
 * import * as Stream from "effect/Stream"
 *
 * // lines of a batch file (JSON Lines), e.g. read with `FileSystem.stream` and `Stream.splitLines`
 * const lines = [
 *   JSON.stringify({
 *     custom_id: "greeting",
 *     url: "/v1/chat/completions",
 *     body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }] }
 *   }),
 *   JSON.stringify({
 *     custom_id: "vector",
 *     url: "/v1/embeddings",
 *     body: { model: "text-embedding-bge-m3", input: "Hi" }
 *   }),
 *   JSON.stringify({ custom_id: "broken", url: "/v1/images" })
 * ]
 *
 * const parsed = lines.map((line, i) => Batch.parseLine(line, i + 1))
 * const bad = parsed.flatMap((line) => Either.isLeft(line) ? [line.left] : [])
 * const requests = Stream.fromIterable(parsed.flatMap((line) => Either.isRight(line) ? [line.right] : []))
 *
 * const program = Batch.run(requests, { concurrency: 8 }).pipe(
 *   Stream.map((result) => `${result.custom_id}: ${result.response?.status_code ?? result.error?.code}`),
 *   Stream.runCollect,
 *   Effect.map((results) => [...results, ...bad.map((line) => `line ${line.line}: ${line.reason}`)])
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import { ChatCompletion, CreateChatCompletionParams } from "../schemas/Chat.js"
import { Completion, CreateCompletionParams } from "../schemas/Completions.js"
import { CreateEmbeddingParams, EmbeddingList } from "../schemas/Embeddings.js"
import type { ApiError } from "../schemas/Errors.js"
import { Chat } from "./Chat.js"
import { Completions } from "./Completions.js"
import { Embeddings } from "./Embeddings.js"
import type { ResponseMetadata } from "./InferenceHttpClient.js"

/**
 * The endpoints a batch line may name (with or without a `/v1` or `/v2` prefix).
 *
 * @since 0.1.0
 * @category models
 */
export type Endpoint = "chat" | "completions" | "embeddings"

/**
 * One request of a batch, validated.
 *
 * @since 0.1.0
 * @category models
 */
export type BatchRequest =
  | { readonly custom_id: string; readonly endpoint: "chat"; readonly body: CreateChatCompletionParams }
  | { readonly custom_id: string; readonly endpoint: "completions"; readonly body: CreateCompletionParams }
  | { readonly custom_id: string; readonly endpoint: "embeddings"; readonly body: CreateEmbeddingParams }

/**
 * An input line that cannot be run, with why.
 *
 * @since 0.1.0
 * @category models
 */
export interface BadLine {
  /** 1-based line number in the input. */
  readonly line: number
  /** The `custom_id`, when the line had one. */
  readonly custom_id: string | undefined
  /** What is wrong. */
  readonly reason: string
}

/**
 * One output line: the response body or a typed error, never both.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResultLine {
  readonly id: string
  readonly custom_id: string
  readonly response: {
    readonly status_code: number
    readonly request_id: string | null
    readonly body: unknown
  } | null
  readonly error: {
    readonly code: ApiError["_tag"]
    readonly message: string
    readonly status: number | null
  } | null
}

const Line = Schema.Struct({
  custom_id: Schema.String.pipe(Schema.minLength(1)),
  method: Schema.optional(Schema.String),
  url: Schema.String,
  body: Schema.Unknown
})

const endpoints: Record<string, Endpoint> = {
  "/chat/completions": "chat",
  "/completions": "completions",
  "/embeddings": "embeddings"
}

/**
 * The endpoint a batch `url` names, if it is one of the three.
 *
 * @since 0.1.0
 * @category parsing
 */
// what follows the version is looked up as is: only a path starting with "/" can name an endpoint
export const endpointOf = (url: string): Endpoint | undefined => endpoints[url.replace(/^\/v\d+/, "")]

const bodySchemas = {
  chat: CreateChatCompletionParams,
  completions: CreateCompletionParams,
  embeddings: CreateEmbeddingParams
} as const

const issues = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => `${issue.path.join(".") || "body"}: ${issue.message}`)
    .join("; ")

/**
 * Parses and validates one input line (1-based `line` for the report).
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseLine = (text: string, line: number): Either.Either<BatchRequest, BadLine> => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return Either.left({ line, custom_id: undefined, reason: "not JSON" })
  }
  const parsed = Schema.decodeUnknownEither(Line)(json)
  if (Either.isLeft(parsed)) {
    const id = (json as { readonly custom_id?: unknown } | null)?.custom_id
    const customId = typeof id === "string" ? id : undefined
    return Either.left({
      line,
      custom_id: customId,
      reason: customId === undefined ? "missing custom_id" : issues(parsed.left)
    })
  }
  const { body, custom_id, method, url } = parsed.right
  if (method !== undefined && method.toUpperCase() !== "POST") {
    return Either.left({ line, custom_id, reason: `method must be POST, got ${method}` })
  }
  const endpoint = endpointOf(url)
  if (endpoint === undefined) {
    return Either.left({
      line,
      custom_id,
      reason: `unknown url ${url} (expected /v1/chat/completions, /v1/completions or /v1/embeddings)`
    })
  }
  // extra fields of the body are kept: the service may accept parameters this library does not model
  const decoded = Schema.decodeUnknownEither(bodySchemas[endpoint] as Schema.Schema<unknown>)(body, {
    onExcessProperty: "preserve",
    errors: "all"
  })
  if (Either.isLeft(decoded)) return Either.left({ line, custom_id, reason: `invalid body: ${issues(decoded.left)}` })
  return Either.right({ custom_id, endpoint, body: decoded.right } as BatchRequest)
}

const success = (customId: string, meta: ResponseMetadata, body: unknown): ResultLine => ({
  id: `batch_req_${customId}`,
  custom_id: customId,
  response: { status_code: meta.status, request_id: meta.requestId ?? null, body },
  error: null
})

const failure = (customId: string, error: ApiError): ResultLine => ({
  id: `batch_req_${customId}`,
  custom_id: customId,
  response: null,
  error: {
    code: error._tag,
    message: error.message,
    // every error's status, where it has one, is a number; an error without an HTTP answer has none
    status: (error as { readonly status?: number | undefined }).status ?? null
  }
})

/**
 * Runs one request; a failure becomes an error line.
 *
 * @since 0.1.0
 * @category running
 */
export const execute = (request: BatchRequest): Effect.Effect<ResultLine, never, Chat | Completions | Embeddings> => {
  const id = request.custom_id
  const run: Effect.Effect<ResultLine, ApiError, Chat | Completions | Embeddings> = (() => {
    switch (request.endpoint) {
      case "chat":
        return Effect.flatMap(Chat, (chat) => chat.createWithResponse(request.body)).pipe(
          Effect.map(({ response, value }) => success(id, response, Schema.encodeSync(ChatCompletion)(value)))
        )
      case "completions":
        return Effect.flatMap(Completions, (completions) => completions.createWithResponse(request.body)).pipe(
          Effect.map(({ response, value }) => success(id, response, Schema.encodeSync(Completion)(value)))
        )
      case "embeddings":
        return Effect.flatMap(Embeddings, (embeddings) => embeddings.createWithResponse(request.body)).pipe(
          Effect.map(({ response, value }) => success(id, response, Schema.encodeSync(EmbeddingList)(value)))
        )
    }
  })()
  return Effect.catchAll(run, (error) => Effect.succeed(failure(id, error)))
}

/**
 * How many requests of a run are on the wire (they left the rate limiter's line) and how many wait for the quota.
 *
 * @since 0.4.0
 * @category models
 */
export interface FlightCount {
  readonly sent: number
  readonly waiting: number
}

/**
 * The requests of a `run` that started and have not ended, for a graceful stop (`makeFlights`). A request waits for
 * the quota until its operation's span opens, which the transport does as the request leaves the rate limiter's line
 * (with tracing disabled, every request counts as sent).
 *
 * @since 0.4.0
 * @category models
 */
export interface Flights {
  /** The requests on the wire and those waiting for the quota, now. */
  readonly count: Effect.Effect<FlightCount>
  /** The milliseconds the ended requests took, their waits for the quota included. */
  readonly tookMs: Effect.Effect<number>
  /**
   * Stops the run: no request starts after it, and those waiting for the quota are cut at once (never sent, they
   * give no result line); those on the wire go on until they end or `cut`. Returns the count at the stop.
   */
  readonly stop: Effect.Effect<FlightCount>
  /** Cuts the requests still on the wire (their grace is over); returns how many. */
  readonly cut: Effect.Effect<number>
  /** Completes at the stop. */
  readonly stopped: Effect.Effect<void>
  /** Runs one request as a flight: nothing after the stop, and nothing when it is cut. */
  readonly fly: <A, E, R>(request: Effect.Effect<A, E, R>) => Effect.Effect<Option.Option<A>, E, R>
}

interface Flight {
  sent: boolean
  readonly cut: Deferred.Deferred<void>
}

/** `tracer`, telling `flight` it left the limiter's line when a span opens in it (the operation's is the first). */
const telling = (tracer: Tracer.Tracer, flight: Flight): Tracer.Tracer =>
  Tracer.make({
    span: (...args) => {
      flight.sent = true
      return tracer.span(...args)
    },
    context: (f, fiber) => tracer.context(f, fiber)
  })

/** The flights of one run as they are. */
interface State {
  readonly flights: Set<Flight>
  readonly stopped: Deferred.Deferred<void>
  tookMs: number
}

const countOf = ({ flights }: State): FlightCount => {
  const sent = [...flights].filter((flight) => flight.sent).length
  return { sent, waiting: flights.size - sent }
}

/** Cuts the flights that are sent, or those that wait; how many. */
const cutWhere = ({ flights }: State, sent: boolean): Effect.Effect<number> =>
  Effect.suspend(() => {
    const cut = [...flights].filter((flight) => flight.sent === sent)
    return Effect.as(Effect.forEach(cut, (flight) => Deferred.succeed(flight.cut, undefined)), cut.length)
  })

/** `request` as a flight of `state`: told when it leaves the limiter's line, raced against its cut, timed. */
const fly = (state: State) => <A, E, R>(request: Effect.Effect<A, E, R>): Effect.Effect<Option.Option<A>, E, R> =>
  Effect.gen(function*() {
    if (yield* Deferred.isDone(state.stopped)) return Option.none<A>()
    const flight: Flight = {
      sent: !(yield* FiberRef.get(FiberRef.currentTracerEnabled)),
      cut: yield* Deferred.make<void>()
    }
    const start = yield* Clock.currentTimeMillis
    state.flights.add(flight)
    const told = Effect.tracerWith((tracer) => Effect.withTracer(request, telling(tracer, flight)))
    return yield* Effect.raceFirst(Effect.asSome(told), Effect.as(Deferred.await(flight.cut), Option.none<A>())).pipe(
      Effect.ensuring(Effect.map(Clock.currentTimeMillis, (now) => {
        state.flights.delete(flight)
        state.tookMs += now - start
      }))
    )
  })

/**
 * The flights of one run, to give to `run`.
 *
 * @since 0.4.0
 * @category running
 */
export const makeFlights: Effect.Effect<Flights> = Effect.map(Deferred.make<void>(), (stopped): Flights => {
  const state: State = { flights: new Set(), stopped, tookMs: 0 }
  return {
    count: Effect.sync(() => countOf(state)),
    tookMs: Effect.sync(() => state.tookMs),
    // the count before the cut: the requests that waited are said as such
    stop: Effect.suspend(() =>
      Effect.as(Effect.zipRight(Deferred.succeed(stopped, undefined), cutWhere(state, false)), countOf(state))
    ),
    cut: cutWhere(state, true),
    stopped: Deferred.await(stopped),
    fly: fly(state)
  }
})

/**
 * Runs a stream of requests, up to `concurrency` at once (the rate limiter paces them), emitting each result line as
 * it completes. With `flights`, the run can be stopped gracefully (`Flights.stop`): a request it cuts gives no line.
 *
 * @since 0.1.0
 * @category running
 */
export const run = <E, R>(
  requests: Stream.Stream<BatchRequest, E, R>,
  options: { readonly concurrency?: number | undefined; readonly flights?: Flights | undefined } = {}
): Stream.Stream<ResultLine, E, R | Chat | Completions | Embeddings> => {
  const concurrency = options.concurrency ?? 64
  const flights = options.flights
  if (flights === undefined) return Stream.mapEffect(requests, execute, { concurrency, unordered: true })
  return requests.pipe(
    Stream.interruptWhen(flights.stopped),
    Stream.mapEffect((request) => flights.fly(execute(request)), { concurrency, unordered: true }),
    Stream.filterMap(identity)
  )
}
