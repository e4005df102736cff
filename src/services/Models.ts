/**
 * The model catalogue: `GET /models`, `GET /models/{id}`.
 *
 * @example
 * ```ts
 * import { Models, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const models = yield* Models.Models
 *   const list = yield* models.list()
 *   return list.data.filter((model) => model.meta_data?.model_type === "LLM").map((model) => model.id)
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
import { segment } from "../internal/pathSegment.js"
import type { ApiError } from "../schemas/Errors.js"
import { Model, ModelList } from "../schemas/Models.js"
import { InferenceHttpClient, withoutResponse, type WithResponse } from "./InferenceHttpClient.js"

/**
 * The model catalogue.
 *
 * @example
 * ```ts
 * import { Models, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // one model by its (case-sensitive) id, with what the catalogue says about it
 * const program = Effect.gen(function*() {
 *   const models = yield* Models.Models
 *   const model = yield* models.retrieve("gpt-oss-120b")
 *   return `${model.id}: ${model.meta_data?.max_sequence_length} tokens of context`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => gpt-oss-120b: 131072 tokens of context
 * ```
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
  // each request's span is the transport's, opened when the request leaves the limiter's line
  const listWithResponse = Effect.fnUntraced(function*() {
    return yield* http.json(HttpClientRequest.get("/models"), ModelList, { span: { name: "Models.list" } })
  })
  const retrieveWithResponse = Effect.fnUntraced(function*(id: string) {
    return yield* http.json(HttpClientRequest.get(`/models/${yield* segment(id)}`), Model, {
      span: { name: "Models.retrieve" }
    })
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
 * @example
 * ```ts
 * import { ClientConfig, InferenceHttp, Models, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // Models alone, on the Node HTTP client
 * export const ModelsLive: Layer.Layer<Models.Models> = Models.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Models, never, InferenceHttpClient> = Layer.effect(Models, make)
