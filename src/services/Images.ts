/**
 * Images: `POST /images/generations`, and edits through the queue route `/queue/images/edits` (multipart).
 *
 * @example
 * ```ts
 * import { Images, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const images = yield* Images.Images
 *   const result = yield* images.generate({ model: "gpt-image-1", prompt: "A lighthouse at dusk", size: "1024x1024" })
 *   // `b64_json` answers decoded to bytes (write them with `fs.writeFile("lighthouse.png", bytes)`)
 *   return result.bytes.map((bytes) => `${bytes.length} bytes`)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import { multipart } from "../internal/multipart.js"
import type { ApiError } from "../schemas/Errors.js"
import { type CreateImageParams, type EditImageParams, ImagesResponse } from "../schemas/Images.js"
import { InferenceHttpClient, type RequestOptions, withoutResponse, type WithResponse } from "./InferenceHttpClient.js"

export {
  /**
   * A file from a `Blob` (see `Upload.fromBlob`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromBlob,
  /**
   * A file from bytes in memory, or a string as UTF-8 (see `Upload.fromBytes`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromBytes,
  /**
   * A file from a path, streamed from disk while the request is sent (see `Upload.fromPath`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromPath,
  /**
   * A file from a stream of chunks, sent once and never retried (see `Upload.fromStream`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromStream
} from "../schemas/Upload.js"

/**
 * Images.
 *
 * @example
 * ```ts
 * import { Images, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // an edit goes to the queue route, with a long time limit
 * const program = Effect.gen(function*() {
 *   const images = yield* Images.Images
 *   const generated = yield* images.generate({ model: "gpt-image-1", prompt: "A red bicycle" })
 *   const edited = yield* images.edit({
 *     model: "gpt-image-1",
 *     prompt: "Make the bicycle blue",
 *     image: Images.fromBytes(generated.bytes[0] ?? new Uint8Array(), "bicycle.png", "image/png")
 *   })
 *   return edited.data.length
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => 1
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class Images extends Context.Tag("effect-aifs/Images")<Images, Images.Service>() {}

/**
 * The types of the `Images` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Images {
  /**
   * What `Images` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Generates images from a prompt. */
    readonly generate: (params: CreateImageParams) => Effect.Effect<ImagesResponse, ApiError>
    /** `generate`, with the response metadata. */
    readonly generateWithResponse: (params: CreateImageParams) => Effect.Effect<WithResponse<ImagesResponse>, ApiError>
    /** Edits an image (sent to the queue route `/queue/images/edits`, with a long time limit). */
    readonly edit: (params: EditImageParams) => Effect.Effect<ImagesResponse, ApiError>
  }
}

/**
 * The multipart request of an image edit, on the queue. A `span` in `options` gets the request's parameters as
 * its `params` (the span reads the sampling ones only).
 *
 * @since 0.1.0
 * @category requests
 */
export const sendEdit = <A, I>(
  http: InferenceHttpClient.Service,
  params: EditImageParams,
  schema: Schema.Schema<A, I>,
  options: RequestOptions
) =>
  Effect.flatMap(
    multipart(
      HttpClientRequest.post("/images/edits"),
      { model: params.model, prompt: params.prompt, n: params.n, size: params.size, quality: params.quality },
      "image",
      params.image
    ),
    ({ request, retry }) =>
      http.json(request, schema, {
        ...options,
        base: "queue",
        model: params.model,
        retry: retry && options.retry !== false,
        // the span reads only the parameters it knows (never the file or the prompt)
        ...(options.span === undefined ? {} : { span: { ...options.span, params } })
      })
  )

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Images.Service, never, InferenceHttpClient> = Effect.gen(function*() {
  const http = yield* InferenceHttpClient
  // the span is the transport's, opened when the request leaves the limiter's line
  const generateWithResponse = (params: CreateImageParams) =>
    http.json(
      HttpClientRequest.post("/images/generations").pipe(HttpClientRequest.bodyUnsafeJson(params)),
      ImagesResponse,
      { model: params.model, span: { name: "Images.generate", operation: "images.generations", params } }
    )
  const edit = Effect.fnUntraced(function*(params: EditImageParams) {
    // the queue may hold the request until the key has capacity
    return (yield* sendEdit(http, params, ImagesResponse, {
      timeout: Duration.minutes(30),
      span: { name: "Images.edit", operation: "images.edits" }
    })).value
  })
  return {
    generate: (params) => withoutResponse(generateWithResponse(params)),
    generateWithResponse,
    edit
  }
})

/**
 * The service, on an `InferenceHttpClient`.
 *
 * @example
 * ```ts
 * import { ClientConfig, Images, InferenceHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // Images alone, on the Node HTTP client
 * export const ImagesLive: Layer.Layer<Images.Images> = Images.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Images, never, InferenceHttpClient> = Layer.effect(Images, make)
