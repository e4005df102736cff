/**
 * Legacy text completions: `POST /completions` (open-source models only), plain and streamed.
 *
 * @example
 * ```ts
 * import { Completions, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const completions = yield* Completions.Completions
 *   const completion = yield* completions.create({
 *     model: "Llama-3.3-70B-Instruct",
 *     prompt: "The three primary colours are",
 *     max_tokens: 20
 *   })
 *   return completion.choices[0]?.text
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import { Completion, type CreateCompletionParams } from "../schemas/Completions.js"
import type { ApiError } from "../schemas/Errors.js"
import { InferenceHttpClient, withoutResponse, type WithResponse } from "./InferenceHttpClient.js"

/**
 * Text completions.
 *
 * @example
 * ```ts
 * import { Completions, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Stream from "effect/Stream"
 *
 * // each streamed element carries the new text in `choices[0].text`
 * const program = Effect.gen(function*() {
 *   const completions = yield* Completions.Completions
 *   return yield* completions.createStream({ model: "Llama-3.3-70B-Instruct", prompt: "Once upon a time" }).pipe(
 *     Stream.map((piece) => piece.choices[0]?.text ?? ""),
 *     Stream.mkString
 *   )
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class Completions extends Context.Tag("effect-aifs/Completions")<Completions, Completions.Service>() {}

/**
 * The types of the `Completions` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Completions {
  /**
   * What `Completions` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Completes a prompt. */
    readonly create: (params: CreateCompletionParams) => Effect.Effect<Completion, ApiError>
    /** `create`, with the response metadata. */
    readonly createWithResponse: (params: CreateCompletionParams) => Effect.Effect<WithResponse<Completion>, ApiError>
    /** Streams the completion; each element carries the new text in `choices[i].text`. */
    readonly createStream: (params: CreateCompletionParams) => Stream.Stream<Completion, ApiError>
  }
}

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Completions.Service, never, InferenceHttpClient> = Effect.gen(function*() {
  const http = yield* InferenceHttpClient
  // the span is the transport's, opened when the request leaves the limiter's line
  const createWithResponse = (params: CreateCompletionParams) =>
    http.json(
      HttpClientRequest.post("/completions").pipe(HttpClientRequest.bodyUnsafeJson(params)),
      Completion,
      { model: params.model, span: { name: "Completions.create", operation: "text_completion", params } }
    )
  return {
    create: (params) => withoutResponse(createWithResponse(params)),
    createWithResponse,
    createStream: (params) =>
      http.jsonStream(
        HttpClientRequest.post("/completions").pipe(HttpClientRequest.bodyUnsafeJson({
          ...params,
          stream: true,
          stream_options: { include_usage: true, ...params.stream_options }
        })),
        Completion,
        { model: params.model, span: { name: "Completions.createStream", operation: "text_completion", params } }
      )
  }
})

/**
 * The service, on an `InferenceHttpClient`.
 *
 * @example
 * ```ts
 * import { ClientConfig, Completions, InferenceHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // Completions alone, on the Node HTTP client
 * export const CompletionsLive: Layer.Layer<Completions.Completions> = Completions.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Completions, never, InferenceHttpClient> = Layer.effect(Completions, make)
