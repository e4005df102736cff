/**
 * All inference services in one layer, on an `InferenceHttpClient` or on a platform `HttpClient` plus
 * configuration.
 *
 * @since 0.1.0
 */
import type * as HttpClient from "@effect/platform/HttpClient"
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
 * @since 0.1.0
 * @category layers
 */
export const layerHttpLimited = (
  options: RateLimiter.Options | false = {}
): Layer.Layer<Services | InferenceHttpClient | RateLimiter.RateLimiter, never, HttpClient.HttpClient | ClientConfig> =>
  layer.pipe(
    Layer.provideMerge(InferenceHttp.layer),
    Layer.provideMerge(Layer.merge(
      RetryPolicy.layerFromClientConfig,
      options === false ? RateLimiter.layerDisabled : RateLimiter.layerFromClientConfig(options)
    ))
  )
