/**
 * Embeddings: `POST /embeddings`, float or base64 on the wire, numbers either way.
 *
 * @example
 * ```ts
 * import { Embeddings, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const embeddings = yield* Embeddings.Embeddings
 *   const result = yield* embeddings.create({
 *     model: "text-embedding-bge-m3",
 *     input: ["Rate limits per minute", "Token budgets per minute"]
 *   })
 *   // numbers, whatever `encoding_format` was
 *   return result.vectors.map((vector) => vector.length)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => [ 1024, 1024 ]
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type CreateEmbeddingParams, EmbeddingList } from "../schemas/Embeddings.js"
import type { ApiError } from "../schemas/Errors.js"
import { InferenceHttpClient, withoutResponse, type WithResponse } from "./InferenceHttpClient.js"

/**
 * Embeddings.
 *
 * @example
 * ```ts
 * import { Embeddings, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const cosine = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => {
 *   let dot = 0, na = 0, nb = 0
 *   a.forEach((x, i) => {
 *     const y = b[i] ?? 0
 *     dot += x * y
 *     na += x * x
 *     nb += y * y
 *   })
 *   return dot / Math.sqrt(na * nb)
 * }
 *
 * const similarity = (a: string, b: string) =>
 *   Effect.flatMap(Embeddings.Embeddings, (embeddings) =>
 *     embeddings.create({ model: "text-embedding-bge-m3", input: [a, b] })).pipe(
 *       Effect.map(({ vectors: [x = [], y = []] }) => cosine(x, y))
 *     )
 *
 * Effect.runPromise(similarity("cat", "kitten").pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class Embeddings extends Context.Tag("effect-aifs/Embeddings")<Embeddings, Embeddings.Service>() {}

/**
 * The types of the `Embeddings` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Embeddings {
  /**
   * What `Embeddings` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Embeds one text or several; vectors come back as numbers whatever `encoding_format` was. */
    readonly create: (params: CreateEmbeddingParams) => Effect.Effect<EmbeddingList, ApiError>
    /** `create`, with the response metadata. */
    readonly createWithResponse: (params: CreateEmbeddingParams) => Effect.Effect<WithResponse<EmbeddingList>, ApiError>
  }
}

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Embeddings.Service, never, InferenceHttpClient> = Effect.gen(function*() {
  const http = yield* InferenceHttpClient
  // the span is the transport's, opened when the request leaves the limiter's line
  const createWithResponse = (params: CreateEmbeddingParams) =>
    http.json(
      HttpClientRequest.post("/embeddings").pipe(HttpClientRequest.bodyUnsafeJson(params)),
      EmbeddingList,
      { model: params.model, span: { name: "Embeddings.create", operation: "embeddings", params } }
    )
  return {
    create: (params) => withoutResponse(createWithResponse(params)),
    createWithResponse
  }
})

/**
 * The service, on an `InferenceHttpClient`.
 *
 * @example
 * ```ts
 * import { ClientConfig, Embeddings, InferenceHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // Embeddings alone, on the Node HTTP client
 * export const EmbeddingsLive: Layer.Layer<Embeddings.Embeddings> = Embeddings.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Embeddings, never, InferenceHttpClient> = Layer.effect(Embeddings, make)
