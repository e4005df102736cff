/**
 * The model catalogue: `GET /models`, `GET /models/{id}`.
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { annotateRequest } from "../internal/spans.js"
import type { ApiError } from "../schemas/Errors.js"
import { Model, ModelList } from "../schemas/Models.js"
import { InferenceHttpClient, withoutResponse, type WithResponse } from "./InferenceHttpClient.js"

/**
 * The model catalogue.
 *
 * @since 0.1.0
 * @category tags
 */
export class Models extends Context.Tag("effect-aifs/Models")<Models, Models.Service>() {}

/**
 * The types of the `Models` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Models {
  /**
   * What `Models` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Lists the models the key can use. */
    readonly list: () => Effect.Effect<ModelList, ApiError>
    /** `list`, with the response metadata. */
    readonly listWithResponse: () => Effect.Effect<WithResponse<ModelList>, ApiError>
    /** One model by its (case-sensitive) id; `NotFound` when unknown. */
    readonly retrieve: (id: string) => Effect.Effect<Model, ApiError>
    /** `retrieve`, with the response metadata. */
    readonly retrieveWithResponse: (id: string) => Effect.Effect<WithResponse<Model>, ApiError>
  }
}

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Models.Service, never, InferenceHttpClient> = Effect.gen(function*() {
  const http = yield* InferenceHttpClient
  const listWithResponse = Effect.fn("Models.list")(function*() {
    yield* annotateRequest("models.list", undefined)
    return yield* http.json(HttpClientRequest.get("/models"), ModelList)
  })
  const retrieveWithResponse = Effect.fn("Models.retrieve")(function*(id: string) {
    yield* annotateRequest("models.retrieve", id)
    return yield* http.json(HttpClientRequest.get(`/models/${encodeURIComponent(id)}`), Model)
  })
  return {
    list: () => withoutResponse(listWithResponse()),
    listWithResponse,
    retrieve: (id) => withoutResponse(retrieveWithResponse(id)),
    retrieveWithResponse
  }
})

/**
 * The service, on an `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Models, never, InferenceHttpClient> = Layer.effect(Models, make)
