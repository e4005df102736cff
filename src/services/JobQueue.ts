/**
 * The queue root: every queue route (chat, completions, embeddings, audio, images, models) with the same
 * parameters as the `/v2` services, a long time-to-first-byte limit and its own idle limit. Interface 1.1.0
 * queues wait for capacity and answer the ordinary result; under 1.0.0 the queue is documented as
 * asynchronous without a retrieval route, so each answer is decoded as either the result (`Completed`) or an
 * accepted-with-handle body (`Accepted`).
 *
 * @example
 * ```ts
 * import { JobQueue, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the queue holds work until there is capacity, instead of answering 429
 * const program = Effect.gen(function*() {
 *   const queue = yield* JobQueue.JobQueue
 *   const result = yield* queue.chat({
 *     model: "Llama-3.3-70B-Instruct",
 *     messages: [{ role: "user", content: "Summarise the report." }]
 *   })
 *   return result._tag === "Completed"
 *     ? result.value.text
 *     : `queued as ${result.handle.handle} (${result.status})`
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
import type * as Stream from "effect/Stream"
import { Transcription, type TranscriptionParams } from "../schemas/Audio.js"
import { ChatCompletion, ChatCompletionChunk, type CreateChatCompletionParams } from "../schemas/Chat.js"
import { Completion, type CreateCompletionParams } from "../schemas/Completions.js"
import { type CreateEmbeddingParams, EmbeddingList } from "../schemas/Embeddings.js"
import type { ApiError } from "../schemas/Errors.js"
import { type CreateImageParams, type EditImageParams, ImagesResponse } from "../schemas/Images.js"
import { Accepted, Completed, type QueueHandle, type QueueResult, resultOrHandle } from "../schemas/JobQueue.js"
import { ModelList } from "../schemas/Models.js"
import { sendTranscription } from "./Audio.js"
import { sendEdit } from "./Images.js"
import { InferenceHttpClient, type RequestOptions, type WithResponse } from "./InferenceHttpClient.js"

export {
  /**
   * The queue accepted the work and answered a handle (see `JobQueueSchema.Accepted`).
   *
   * @since 0.1.0
   * @category models
   */
  Accepted,
  /**
   * The queue answered the ordinary result (see `JobQueueSchema.Completed`).
   *
   * @since 0.1.0
   * @category models
   */
  Completed,
  /**
   * A queue answer: `Completed` or `Accepted`.
   *
   * @since 0.1.0
   * @category models
   */
  type QueueResult
} from "../schemas/JobQueue.js"

/**
 * Time limits of queue requests.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * Time limit of a queued request, until its answer starts and to its end (the queue holds work until there is
   * capacity; default: the configuration's `queueTimeout`, `AIFS_QUEUE_TIMEOUT`, 30 minutes).
   */
  readonly timeout?: Duration.DurationInput | undefined
  /** Longest silence between stream chunks once a stream flows (default 2 minutes). */
  readonly idleTimeout?: Duration.DurationInput | undefined
}

/**
 * The queue.
 *
 * @example
 * ```ts
 * import { JobQueue, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // embeddings through the queue: a `Completed` result under interface 1.1.0, or an `Accepted` handle
 * const program = Effect.gen(function*() {
 *   const queue = yield* JobQueue.JobQueue
 *   const result = yield* queue.embeddings({ model: "text-embedding-bge-m3", input: ["first", "second"] })
 *   if (result._tag === "Accepted") return yield* Effect.fail(`not done yet: ${result.handle.handle}`)
 *   return result.value.vectors.length
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => 2
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class JobQueue extends Context.Tag("effect-aifs/JobQueue")<JobQueue, JobQueue.Service>() {}

/**
 * The types of the `JobQueue` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace JobQueue {
  /**
   * What `JobQueue` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** `POST /queue/chat/completions`. */
    readonly chat: (params: CreateChatCompletionParams) => Effect.Effect<QueueResult<ChatCompletion>, ApiError>
    /** `POST /queue/chat/completions` streamed (the stream starts once the queue admits the request). */
    readonly chatStream: (params: CreateChatCompletionParams) => Stream.Stream<ChatCompletionChunk, ApiError>
    /** `POST /queue/completions`. */
    readonly completions: (params: CreateCompletionParams) => Effect.Effect<QueueResult<Completion>, ApiError>
    /** `POST /queue/embeddings`. */
    readonly embeddings: (params: CreateEmbeddingParams) => Effect.Effect<QueueResult<EmbeddingList>, ApiError>
    /** `POST /queue/audio/transcriptions` (multipart). */
    readonly transcribe: (params: TranscriptionParams) => Effect.Effect<QueueResult<Transcription>, ApiError>
    /** `POST /queue/audio/translations` (multipart). */
    readonly translate: (params: TranscriptionParams) => Effect.Effect<QueueResult<Transcription>, ApiError>
    /** `POST /queue/images/generations`. */
    readonly generateImages: (params: CreateImageParams) => Effect.Effect<QueueResult<ImagesResponse>, ApiError>
    /** `POST /queue/images/edits` (multipart). */
    readonly editImages: (params: EditImageParams) => Effect.Effect<QueueResult<ImagesResponse>, ApiError>
    /** `GET /queue/models`. */
    readonly models: () => Effect.Effect<ModelList, ApiError>
  }
}

const settle = <A>(
  { response, value }: WithResponse<
    { readonly kind: "result"; readonly value: A } | { readonly kind: "handle"; readonly value: QueueHandle }
  >
): QueueResult<A> =>
  value.kind === "result"
    ? new Completed({ value: value.value })
    : new Accepted({ handle: value.value, status: response.status })

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<JobQueue.Service, never, InferenceHttpClient> =>
  Effect.gen(function*() {
    const http = yield* InferenceHttpClient
    // without a timeout of its own, the transport applies the configuration's queueTimeout on the queue base
    const limits: RequestOptions & { readonly base: "queue" } = {
      base: "queue",
      ...(options.timeout === undefined ? {} : { timeout: options.timeout, firstByteTimeout: options.timeout }),
      idleTimeout: options.idleTimeout ?? Duration.minutes(2)
    }
    /** A model request on the queue, in the span of a model operation, settled as a result or a handle. */
    const post = <A, I>(
      path: string,
      body: { readonly model: string },
      schema: Schema.Schema<A, I>,
      name: string,
      operation: string
    ) =>
      Effect.map(
        http.json(HttpClientRequest.post(path).pipe(HttpClientRequest.bodyUnsafeJson(body)), resultOrHandle(schema), {
          ...limits,
          model: body.model,
          span: { name, operation, params: body }
        }),
        settle
      )

    // each request's span is the transport's, opened when the request leaves the limiter's line
    const chat = (params: CreateChatCompletionParams) =>
      post("/chat/completions", params, ChatCompletion, "JobQueue.chat", "chat")
    const chatStream = (params: CreateChatCompletionParams) => {
      const body = { ...params, stream: true, stream_options: { include_usage: true, ...params.stream_options } }
      return http.jsonStream(
        HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(body)),
        ChatCompletionChunk,
        { ...limits, model: params.model, span: { name: "JobQueue.chatStream", operation: "chat", params: body } }
      )
    }
    const completions = (params: CreateCompletionParams) =>
      post("/completions", params, Completion, "JobQueue.completions", "text_completion")
    const embeddings = (params: CreateEmbeddingParams) =>
      post("/embeddings", params, EmbeddingList, "JobQueue.embeddings", "embeddings")
    const generateImages = (params: CreateImageParams) =>
      post("/images/generations", params, ImagesResponse, "JobQueue.generateImages", "images.generations")
    const transcribe = (params: TranscriptionParams) =>
      Effect.map(
        sendTranscription(http, "/audio/transcriptions", params, resultOrHandle(Transcription), {
          ...limits,
          span: { name: "JobQueue.transcribe", operation: "audio.transcriptions" }
        }),
        settle
      )
    const translate = (params: TranscriptionParams) =>
      Effect.map(
        sendTranscription(http, "/audio/translations", params, resultOrHandle(Transcription), {
          ...limits,
          span: { name: "JobQueue.translate", operation: "audio.translations" }
        }),
        settle
      )
    const editImages = (params: EditImageParams) =>
      Effect.map(
        sendEdit(http, params, resultOrHandle(ImagesResponse), {
          ...limits,
          span: { name: "JobQueue.editImages", operation: "images.edits" }
        }),
        settle
      )
    const models = () =>
      Effect.map(
        http.json(HttpClientRequest.get("/models"), ModelList, { ...limits, span: { name: "JobQueue.models" } }),
        (result) => result.value
      )
    return { chat, chatStream, completions, embeddings, transcribe, translate, generateImages, editImages, models }
  })

/**
 * The service with the default time limits, on an `InferenceHttpClient`.
 *
 * @example
 * ```ts
 * import { ClientConfig, InferenceHttp, JobQueue, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // JobQueue alone, on the Node HTTP client (its routes live on `/queue`, derived from `baseUrl`)
 * export const JobQueueLive: Layer.Layer<JobQueue.JobQueue> = JobQueue.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<JobQueue, never, InferenceHttpClient> = Layer.effect(JobQueue, make())

/**
 * The service with its own time limits.
 *
 * @example
 * ```ts
 * import { JobQueue, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // a queue that gives up after 2 minutes instead of the default 30
 * const QueueLive = JobQueue.layerWith({ timeout: "2 minutes", idleTimeout: "30 seconds" }).pipe(
 *   Layer.provide(Testing.layerEmulator())
 * )
 *
 * const program = Effect.flatMap(JobQueue.JobQueue, (queue) => queue.models()).pipe(
 *   Effect.map((models) => models.data.length > 0)
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(QueueLive))).then(console.log)
 * // => true
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options: Options): Layer.Layer<JobQueue, never, InferenceHttpClient> =>
  Layer.effect(JobQueue, make(options))
