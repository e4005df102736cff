/**
 * Responses: `POST /responses`, plain and streamed (typed events; unknown event types are skipped with a
 * debug log), function tools, `text.format` JSON-schema output, and `outputText`.
 *
 * @example
 * ```ts
 * import { Responses, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const responses = yield* Responses.Responses
 *   const response = yield* responses.create({
 *     model: "gpt-4.1",
 *     instructions: "Answer in one sentence.",
 *     input: "What is a vector store?"
 *   })
 *   return response.text
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { ApiError } from "../schemas/Errors.js"
import {
  AnyStreamEvent,
  type CreateResponseParams,
  knownEventTypes,
  Response,
  type ResponseStreamEvent
} from "../schemas/Responses.js"
import { InferenceHttpClient, withoutResponse, type WithResponse } from "./InferenceHttpClient.js"

export {
  /**
   * The text of a response: its `output_text` parts, joined (see `ResponsesSchema.outputText`).
   *
   * @since 0.1.0
   * @category helpers
   */
  outputText
} from "../schemas/Responses.js"

/**
 * Responses.
 *
 * @example
 * ```ts
 * import { Responses, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Stream from "effect/Stream"
 *
 * // typed stream events: print the text deltas as they come, then read the final response
 * const program = Effect.gen(function*() {
 *   const responses = yield* Responses.Responses
 *   const print = (text: string) => Effect.sync(() => process.stdout.write(text))
 *   const events = responses.createStream({ model: "gpt-4.1", input: "Name three rivers." }).pipe(
 *     Stream.tap((event) => event.type === "response.output_text.delta" ? print(event.delta) : Effect.void)
 *   )
 *   const final = yield* Responses.finalResponse(events)
 *   return final._tag === "Some" ? `\n${final.value.status}` : "\nno final response"
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class Responses extends Context.Tag("effect-aifs/Responses")<Responses, Responses.Service>() {}

/**
 * The types of the `Responses` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Responses {
  /**
   * What `Responses` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Creates a response and returns it whole (read the text with `.text` or `outputText`). */
    readonly create: (params: CreateResponseParams) => Effect.Effect<Response, ApiError>
    /** `create`, with the response metadata. */
    readonly createWithResponse: (params: CreateResponseParams) => Effect.Effect<WithResponse<Response>, ApiError>
    /** Streams the typed events of a response; event types this client does not know are skipped. */
    readonly createStream: (params: CreateResponseParams) => Stream.Stream<ResponseStreamEvent, ApiError>
  }
}

const isKnown = (event: typeof AnyStreamEvent.Type): event is ResponseStreamEvent => knownEventTypes.has(event.type)

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Responses.Service, never, InferenceHttpClient> = Effect.gen(function*() {
  const http = yield* InferenceHttpClient
  // the span is the transport's, opened when the request leaves the limiter's line
  const createWithResponse = (params: CreateResponseParams) =>
    http.json(
      HttpClientRequest.post("/responses").pipe(HttpClientRequest.bodyUnsafeJson(params)),
      Response,
      { model: params.model, span: { name: "Responses.create", operation: "chat", params } }
    )
  const createStream = (params: CreateResponseParams): Stream.Stream<ResponseStreamEvent, ApiError> =>
    http.jsonStream(
      HttpClientRequest.post("/responses").pipe(HttpClientRequest.bodyUnsafeJson({ ...params, stream: true })),
      AnyStreamEvent,
      // the events end when the server closes the stream: there is no [DONE]
      { model: params.model, terminator: null, span: { name: "Responses.createStream", operation: "chat", params } }
    ).pipe(
      // the type is not logged: it is the server's text, which could echo anything
      Stream.mapChunksEffect((events) => {
        const known = Chunk.filter(events, isKnown)
        return known.length === events.length
          ? Effect.succeed(known)
          : Effect.as(Effect.logDebug("aifs: skipping a response stream event of an unknown type"), known)
      })
    )
  return {
    create: (params) => withoutResponse(createWithResponse(params)),
    createWithResponse,
    createStream
  }
})

/**
 * The service, on an `InferenceHttpClient`.
 *
 * @example
 * ```ts
 * import { ClientConfig, InferenceHttp, Node, Responses } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // Responses alone, on the Node HTTP client
 * export const ResponsesLive: Layer.Layer<Responses.Responses> = Responses.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Responses, never, InferenceHttpClient> = Layer.effect(Responses, make)

/**
 * Runs a stream and returns its text: the `output_text` deltas, joined.
 *
 * @example
 * ```ts
 * import { Responses, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.flatMap(Responses.Responses, (responses) =>
 *   Responses.collectText(responses.createStream({ model: "gpt-4.1", input: "Say hello." })))
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category folding
 */
export const collectText = <E, R>(stream: Stream.Stream<ResponseStreamEvent, E, R>): Effect.Effect<string, E, R> =>
  Stream.runFold(stream, "", (text, event) => event.type === "response.output_text.delta" ? text + event.delta : text)

/**
 * Runs a stream and returns the final response (from `response.completed`, `failed` or `incomplete`).
 *
 * @since 0.1.0
 * @category folding
 */
export const finalResponse = <E, R>(
  stream: Stream.Stream<ResponseStreamEvent, E, R>
): Effect.Effect<Option.Option<Response>, E, R> =>
  Stream.runFold(
    stream,
    Option.none<Response>(),
    (last, event) =>
      event.type === "response.completed" || event.type === "response.failed" || event.type === "response.incomplete"
        ? Option.some(event.response)
        : last
  )
