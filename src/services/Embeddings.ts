/**
 * Embeddings: `POST /embeddings`, float or base64 on the wire, numbers either way.
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
      { model: params.model, span: { name: "Embeddings.create", operation: "embeddings" } }
    )
  return {
    create: (params) => withoutResponse(createWithResponse(params)),
    createWithResponse
  }
})

/**
 * The service, on an `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Embeddings, never, InferenceHttpClient> = Layer.effect(Embeddings, make)
