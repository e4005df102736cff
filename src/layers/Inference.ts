/**
 * All inference services in one layer, on an `InferenceHttpClient` or on a platform `HttpClient` plus
 * configuration.
 *
 * @example
 * ```ts
 * import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
 * import { ClientConfig, Emulator, Inference, Models } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * const program = Effect.flatMap(Models.Models, (models) => models.list()).pipe(
 *   Effect.map((list) => `${list.data.length} models`)
 * )
 *
 * // every inference service on any platform `HttpClient`: here `fetch` (browsers, Deno, Bun, edge runtimes)
 * const main = Effect.gen(function*() {
 *   const emulator = yield* Emulator.Emulator
 *   const ClientLive = Inference.layerHttp.pipe(
 *     Layer.provide(FetchHttpClient.layer),
 *     Layer.provide(ClientConfig.layer({ apiKey: Emulator.keyOf("basic"), baseUrl: emulator.baseUrl }))
 *   )
 *   return yield* program.pipe(Effect.provide(ClientLive))
 * })
 *
 * Effect.runPromise(main.pipe(Effect.provide(Emulator.layer()))).then(console.log)
 * // => 15 models
 * ```
 *
 * @since 0.1.0
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Audio from "../services/Audio.js"
import * as Chat from "../services/Chat.js"
import * as Completions from "../services/Completions.js"
import * as Embeddings from "../services/Embeddings.js"
import * as Files from "../services/Files.js"
import * as FineTuning from "../services/FineTuning.js"
import * as Images from "../services/Images.js"
import type { InferenceHttpClient } from "../services/InferenceHttpClient.js"
import * as JobQueue from "../services/JobQueue.js"
import * as Models from "../services/Models.js"
import * as Responses from "../services/Responses.js"
import * as VectorStores from "../services/VectorStores.js"
import type { ClientConfig } from "./ClientConfig.js"
import * as InferenceHttp from "./InferenceHttp.js"
import * as LimiterStore from "./LimiterStore.js"
import * as RateLimiter from "./RateLimiter.js"
import * as RetryPolicy from "./RetryPolicy.js"

/**
 * Every inference service this layer provides.
 *
 * @since 0.1.0
 * @category models
 */
export type Services =
  | Models.Models
  | Chat.Chat
  | Completions.Completions
  | Embeddings.Embeddings
  | Files.Files
  | VectorStores.VectorStores
  | Audio.Audio
  | Images.Images
  | Responses.Responses
  | FineTuning.FineTuning
  | JobQueue.JobQueue

/**
 * The services, on an `InferenceHttpClient` you provide (a real one, or `Testing`'s scripted one).
 *
 * @example
 * ```ts
 * import { ClientConfig, Inference, InferenceHttp, Node, RetryPolicy } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the services on a transport you assemble: your retry policy, a configuration, an HTTP client
 * export const ClientLive: Layer.Layer<Inference.Services> = Inference.layer.pipe(
 *   Layer.provide(InferenceHttp.layer),
 *   Layer.provide(RetryPolicy.layer({ maxRetries: 2, budget: "30 seconds" })),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Services, never, InferenceHttpClient> = Layer.mergeAll(
  Models.layer,
  Chat.layer,
  Completions.layer,
  Embeddings.layer,
  Files.layer,
  VectorStores.layer,
  Audio.layer,
  Images.layer,
  Responses.layer,
  FineTuning.layer,
  JobQueue.layer
)

/**
 * The services and their transport (default retry policy), on a platform `HttpClient` and a `ClientConfig`.
 *
 * @example
 * ```ts
 * import { ClientConfig, Inference, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the services and their transport with the default retry policy, no proactive rate limiter
 * export const ClientLive: Layer.Layer<Inference.Services> = Inference.layerHttp.pipe(
 *   Layer.provide(Node.httpClient),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-...", maxRetries: 3 }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHttp: Layer.Layer<Services | InferenceHttpClient, never, HttpClient.HttpClient | ClientConfig> = layer
  .pipe(Layer.provideMerge(InferenceHttp.layerDefaultRetry))

/**
 * The services and their transport with the proactive rate limiter (tier from the `ClientConfig`, settings
 * from `options`; `false` for none) and the default retry policy. The limiter is provided too, for its
 * `snapshot`/`changes`.
 *
 * @example
 * ```ts
 * import { ClientConfig, Inference, Node, RateLimiter } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the limiter's tier from the configuration, and a lower budget for one model shared with another process
 * export const ClientLive: Layer.Layer<Inference.Services | RateLimiter.RateLimiter> = Inference.layerHttpLimited({
 *   limits: { "gpt-4o": { rpm: 100, tpm: 30_000 } }
 * }).pipe(
 *   Layer.provide(Node.httpClient),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-...", tier: "standard4000" }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHttpLimited = (
  options: RateLimiter.Options | false = {}
): Layer.Layer<Services | InferenceHttpClient | RateLimiter.RateLimiter, never, HttpClient.HttpClient | ClientConfig> =>
  options === false
    ? withLimiter(RateLimiter.layerDisabled)
    : layerHttpLimitedWith(options).pipe(Layer.provide(LimiterStore.layerMemory))

/**
 * `layerHttpLimited` on a `LimiterStore` you provide: the Redis store of `effect-aifs/redis` shares one key's
 * budget between every process on it.
 *
 * @example
 * ```ts
 * import { ClientConfig, Inference, LimiterStore, Node, RateLimiter } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the limiter on a store of your choice: here the memory store; `RedisLimiterStore.layer(url)` shares it
 * export const ClientLive: Layer.Layer<Inference.Services | RateLimiter.RateLimiter> = Inference.layerHttpLimitedWith({
 *   window: "1 minute"
 * }).pipe(
 *   Layer.provide(LimiterStore.layerMemory),
 *   Layer.provide(Node.httpClient),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." }))
 * )
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layerHttpLimitedWith = (
  options: RateLimiter.Options = {}
): Layer.Layer<
  Services | InferenceHttpClient | RateLimiter.RateLimiter,
  never,
  HttpClient.HttpClient | ClientConfig | LimiterStore.LimiterStore
> => withLimiter(RateLimiter.layerFromClientConfigWith(options))

const withLimiter = <R>(
  limiter: Layer.Layer<RateLimiter.RateLimiter, never, R>
): Layer.Layer<
  Services | InferenceHttpClient | RateLimiter.RateLimiter,
  never,
  HttpClient.HttpClient | ClientConfig | R
> =>
  Layer.merge(layer, modelsTeachingLimiter).pipe(
    Layer.provideMerge(InferenceHttp.layer),
    Layer.provideMerge(Layer.merge(RetryPolicy.layerFromClientConfig, limiter))
  )

/**
 * `Models`, whose listings teach the limiter each model's context window and output cap (`max_sequence_length`,
 * `max_output_length`): a request that cannot fit its window is refused before sending from then on.
 */
const modelsTeachingLimiter: Layer.Layer<Models.Models, never, InferenceHttpClient | RateLimiter.RateLimiter> = Layer
  .effect(
    Models.Models,
    Effect.gen(function*() {
      const models = yield* Models.make
      const limiter = yield* RateLimiter.RateLimiter
      return {
        ...models,
        list: () => Effect.tap(models.list(), limiter.learnModels),
        listWithResponse: () => Effect.tap(models.listWithResponse(), ({ value }) => limiter.learnModels(value))
      }
    })
  )
