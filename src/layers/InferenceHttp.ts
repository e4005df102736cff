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
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { reconcile } from "../internal/limiter/settlement.js"
import * as Admission from "../internal/request/admission.js"
import * as Attempt from "../internal/request/attempt.js"
import * as Credentials from "../internal/request/credentials.js"
import * as Deadlines from "../internal/request/deadline.js"
import { decoder } from "../internal/request/decode.js"
import { decodeJsonEvents, expectEventStream, timedBody } from "../internal/request/events.js"
import { recordAnswerOf } from "../internal/request/instruments.js"
import * as Operation from "../internal/request/operation.js"
import * as Pipeline from "../internal/request/pipeline.js"
import * as Windows from "../internal/request/windows.js"
import * as Wire from "../internal/request/wire.js"
import { decodeEvents } from "../internal/sse.js"
import { serverOf } from "../internal/telemetry.js"
import * as Transport from "../internal/transport.js"
import type { ApiError } from "../schemas/Errors.js"
import { ModelList } from "../schemas/Models.js"
import {
  InferenceHttpClient,
  type RequestOptions,
  type ServerSentEvent,
  type StreamOptions,
  type WithResponse
} from "../services/InferenceHttpClient.js"
import { ClientConfig } from "./ClientConfig.js"
import { Admitting, RateLimiter } from "./RateLimiter.js"
import * as RetryPolicy from "./RetryPolicy.js"

/**
 * The bodies of a transport's requests, read whole: JSON decoded with its schema (the usage it reports settles the
 * request's permit), or text.
 */
const bodies = (pipeline: Pipeline.Pipeline, redact: (text: string) => string) => {
  const json = <A, I>(
    request: HttpClientRequest.HttpClientRequest,
    schema: Schema.Schema<A, I>,
    options: RequestOptions = {}
  ): Effect.Effect<WithResponse<A>, ApiError> =>
    pipeline.run(
      request,
      options,
      "application/json",
      ({ endpoint, meta, permit, response }) =>
        Effect.flatMap(Transport.readText(response, endpoint), (text) => {
          const decoded = decoder(schema, endpoint, redact).text(text, meta)
          if (Either.isLeft(decoded)) return Effect.fail(decoded.left)
          const value = decoded.right
          // the usage it reports settles the permit; a model's answer shows on its span and in its metrics
          const answer = recordAnswerOf(options, value, { value, response: meta })
          return permit === undefined ? answer : Effect.zipRight(reconcile(permit, value), answer)
        })
    )

  const text = (
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions = {}
  ): Effect.Effect<WithResponse<string>, ApiError> =>
    pipeline.run(
      request,
      options,
      "text/plain, */*",
      ({ endpoint, meta, response }) =>
        Effect.map(Transport.readText(response, endpoint), (value) => ({ value, response: meta }))
    )
  return { json, text }
}

/** The streams of a transport's requests: events, or JSON events decoded with their schema. */
const streams = (
  pipeline: Pipeline.Pipeline,
  streamIdleTimeout: Duration.Duration,
  redact: (text: string) => string,
  deadlines: Deadlines.Deadlines
) => {
  /**
   * A stream's events: its attempts end at the status line; the events carry on the idle limit between chunks and
   * what is left of the total limit.
   */
  const events = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    read: (sent: Attempt.Sent, body: Stream.Stream<Uint8Array, ApiError>) => Stream.Stream<A, ApiError>
  ): Stream.Stream<A, ApiError> =>
    pipeline.stream(request, options, (first) => {
      const idle = options.idleTimeout === undefined ? streamIdleTimeout : Duration.decode(options.idleTimeout)
      const opened = pipeline.attempts(request, options, "text/event-stream", expectEventStream(redact), first)
      return Stream.unwrap(Effect.map(opened, (sent) => read(sent, timedBody(sent, idle, deadlines))))
    })

  const sse = (
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions = {}
  ): Stream.Stream<ServerSentEvent, ApiError> =>
    events(request, options, (sent, body) =>
      Stream.map(
        decodeEvents(body, sent.endpoint),
        (event): ServerSentEvent => ({ event: event.event, data: event.data })
      ))

  const jsonStream = <A, I>(
    request: HttpClientRequest.HttpClientRequest,
    schema: Schema.Schema<A, I>,
    options: StreamOptions = {}
  ): Stream.Stream<A, ApiError> =>
    events(request, options, (sent, body) => {
      const terminator = options.terminator === undefined ? "[DONE]" : options.terminator
      return decodeJsonEvents(sent, body, schema, terminator, options, redact)
    })
  return { sse, jsonStream }
}

/**
 * Builds the transport from the platform `HttpClient`, the `ClientConfig` and the `RetryPolicy`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<
  InferenceHttpClient.Service,
  never,
  HttpClient.HttpClient | ClientConfig | RetryPolicy.RetryPolicy | Scope.Scope
> = Effect.gen(function*() {
  const config = yield* ClientConfig
  const policy = yield* RetryPolicy.RetryPolicy
  const client = yield* HttpClient.HttpClient
  // optional: without a RateLimiter in the context, requests go out at once and only the retries react
  const limiter = Option.getOrUndefined(
    Option.filter(yield* Effect.serviceOption(RateLimiter), (limiter) => limiter.enabled)
  )
  const credentials = Credentials.make(config)
  const { redact, renewing } = credentials
  const line = Option.getOrElse(yield* Effect.serviceOption(Admitting), () => ({ open: true }))
  // a listing of the models for the windows the limiter lacks: `json` is defined below, and called only later
  const windows = limiter === undefined ?
    undefined :
    Windows.make(limiter, Effect.suspend(() => listModels), yield* Effect.scope)
  const admissions = limiter === undefined ? undefined : Admission.make(limiter, credentials.keyId, line, windows)
  const deadlines = yield* Deadlines.make
  const pipeline = Pipeline.make({
    operations: Operation.make(admissions, serverOf(config.baseUrl)),
    policy,
    attempt: Attempt.make({
      admissions,
      // under the key the request was admitted with: a renewal meanwhile does not move what it teaches
      learn: (key, model, info, status) =>
        limiter === undefined ? Effect.void : limiter.learn(key ?? credentials.keyId(), model, info, status),
      spent: (key, error) => limiter === undefined ? Effect.void : limiter.spent(key ?? credentials.keyId(), error),
      prepare: Wire.preparer(config, credentials),
      send: Wire.sender(client, config, redact),
      deadlines
    }),
    renewing
  })

  const { json, text } = bodies(pipeline, redact)
  // once per key, not retried: a request waits for it
  const listModels = Effect.map(
    json(HttpClientRequest.get("/models"), ModelList, { retry: false }),
    ({ value }) => value
  )

  const { jsonStream, sse } = streams(pipeline, config.streamIdleTimeout, redact, deadlines)
  return { apiVersion: config.apiVersion, json, text, sse, jsonStream }
})

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
> = Layer.scoped(InferenceHttpClient, make)

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
