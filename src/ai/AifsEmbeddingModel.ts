/**
 * `@effect/ai`'s `EmbeddingModel` over the service's embeddings. `embed` calls batch themselves: those made
 * within one window (10 ms by default) go out as one request per `maxBatchSize` inputs, through the
 * `Embeddings` service (rate limiter, retries, typed errors kept as the `AiError`'s `cause`).
 *
 * @example
 * ```ts
 * import { EmbeddingModel } from "@effect/ai"
 * import { AifsEmbeddingModel } from "effect-aifs/ai"
 * import { Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // 100 calls from anywhere in the program: one request
 * const program = Effect.forEach(
 *   Array.from({ length: 100 }, (_, i) => `document ${i}`),
 *   (text) => EmbeddingModel.EmbeddingModel.pipe(Effect.flatMap((model) => model.embed(text))),
 *   { concurrency: "unbounded" }
 * ).pipe(Effect.provide(AifsEmbeddingModel.model("text-embedding-bge-m3")))
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then((vectors) =>
 *   console.log(vectors.length, vectors[0]!.length)
 * )
 * ```
 *
 * @since 0.3.0
 */
import * as EmbeddingModel from "@effect/ai/EmbeddingModel"
import * as AiModel from "@effect/ai/Model"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { toAiError } from "../internal/ai/errors.js"
import type { CreateEmbeddingParams } from "../schemas/Embeddings.js"
import { Embeddings } from "../services/Embeddings.js"

/**
 * The largest number of inputs one request carries by default: OpenAI's documented limit for `input`, which the
 * emulator enforces too.
 *
 * @since 0.3.0
 * @category configuration
 */
export const defaultMaxBatchSize = 2048

/**
 * How a model batches and what it asks for.
 *
 * @since 0.3.0
 * @category configuration
 */
export interface Config extends Partial<Omit<CreateEmbeddingParams, "model" | "input">> {
  /**
   * `data-loader` (default): calls made within `window` of each other, from any fiber, share requests.
   * `batched`: only the calls of one `embedMany` or of one batched `Effect.forEach` share them, with no wait.
   */
  readonly mode?: "data-loader" | "batched" | undefined
  /** How long the data loader collects calls before it sends them (default 10 ms). */
  readonly window?: Duration.DurationInput | undefined
  /** The most inputs in one request (default 2048). */
  readonly maxBatchSize?: number | undefined
}

/**
 * Builds the service on the `Embeddings` service (scoped: the data loader's collecting fiber ends with it).
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (options: {
  readonly model: string
  readonly config?: Config | undefined
}) =>
  Effect.gen(function*() {
    const embeddings = yield* Embeddings
    const { maxBatchSize = defaultMaxBatchSize, mode = "data-loader", window = "10 millis", ...params } =
      options.config ?? {}
    const embedMany = (input: ReadonlyArray<string>) =>
      embeddings.create({ ...params, model: options.model, input }).pipe(
        Effect.mapError(toAiError("AifsEmbeddingModel", "embedMany")),
        Effect.map((list) => list.data.map(({ embedding, index }) => ({ index, embeddings: [...embedding] })))
      )
    return yield* mode === "batched"
      ? EmbeddingModel.make({ embedMany, maxBatchSize })
      : EmbeddingModel.makeDataLoader({ embedMany, window, maxBatchSize })
  })

/**
 * The service as a layer on the `Embeddings` service.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = (options: {
  readonly model: string
  readonly config?: Config | undefined
}): Layer.Layer<EmbeddingModel.EmbeddingModel, never, Embeddings> =>
  Layer.scoped(EmbeddingModel.EmbeddingModel, make(options))

/**
 * A model of the service, for `Effect.provide`. Needs only `Embeddings`, which `Node.layerFromEnv` and
 * `Testing.layerEmulator` provide.
 *
 * @since 0.3.0
 * @category models
 */
export const model = (
  model: string,
  config?: Config
): AiModel.Model<"aifs", EmbeddingModel.EmbeddingModel, Embeddings> => AiModel.make("aifs", layer({ model, config }))
