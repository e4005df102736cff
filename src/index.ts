/**
 * effect-aifs: an Effect client for T-Systems AI Foundation Services, with a local emulator.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   const answer = yield* chat.create({
 *     model: "Llama-3.3-70B-Instruct",
 *     messages: [{ role: "user", content: "Explain rate limits in one sentence." }]
 *   })
 *   return answer.text
 * }).pipe(
 *   Effect.catchTag("RateLimited", (error) => Effect.succeed(`still rate limited after retries: ${error.message}`))
 * )
 *
 * // `Node.layerFromEnv` (AIFS_API_KEY=gen-...) for the real service; here the local emulator, no key needed
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */

/**
 * Chat completions.
 *
 * @since 0.1.0
 */
export * as Chat from "./services/Chat.js"
/**
 * Text completions.
 *
 * @since 0.1.0
 */
export * as Completions from "./services/Completions.js"
/**
 * Embeddings.
 *
 * @since 0.1.0
 */
export * as Embeddings from "./services/Embeddings.js"
/**
 * The model catalogue.
 *
 * @since 0.1.0
 */
export * as Models from "./services/Models.js"
/**
 * Speech to text.
 *
 * @since 0.1.0
 */
export * as Audio from "./services/Audio.js"
/**
 * Image generation and edits.
 *
 * @since 0.1.0
 */
export * as Images from "./services/Images.js"
/**
 * The Responses API.
 *
 * @since 0.1.0
 */
export * as Responses from "./services/Responses.js"
/**
 * Files.
 *
 * @since 0.1.0
 */
export * as Files from "./services/Files.js"
/**
 * Fine-tuning jobs (interface 1.0.0).
 *
 * @since 0.1.0
 */
export * as FineTuning from "./services/FineTuning.js"
/**
 * Vector stores.
 *
 * @since 0.1.0
 */
export * as VectorStores from "./services/VectorStores.js"
/**
 * The queue root.
 *
 * @since 0.1.0
 */
export * as JobQueue from "./services/JobQueue.js"
/**
 * Batch jobs in the OpenAI batch format.
 *
 * @since 0.1.0
 */
export * as Batch from "./services/Batch.js"
/**
 * The transport every inference service sends through.
 *
 * @since 0.1.0
 */
export * as InferenceHttpClient from "./services/InferenceHttpClient.js"

/**
 * Client configuration.
 *
 * @since 0.1.0
 */
export * as ClientConfig from "./layers/ClientConfig.js"
/**
 * Client metrics.
 *
 * @since 0.1.0
 */
export * as ClientMetrics from "./layers/ClientMetrics.js"
/**
 * The proactive rate limiter.
 *
 * @since 0.1.0
 */
export * as RateLimiter from "./layers/RateLimiter.js"
/**
 * The limiter's store.
 *
 * @since 0.1.0
 */
export * as LimiterStore from "./layers/LimiterStore.js"
/**
 * Token estimates before sending.
 *
 * @since 0.1.0
 */
export * as TokenEstimator from "./layers/TokenEstimator.js"
/**
 * Retry policy.
 *
 * @since 0.1.0
 */
export * as RetryPolicy from "./layers/RetryPolicy.js"
/**
 * The HTTP stack behind the transport.
 *
 * @since 0.1.0
 */
export * as InferenceHttp from "./layers/InferenceHttp.js"
/**
 * All inference services in one layer.
 *
 * @since 0.1.0
 */
export * as Inference from "./layers/Inference.js"
/**
 * Node.js wiring.
 *
 * @since 0.1.0
 */
export * as Node from "./layers/Node.js"
/**
 * Test doubles.
 *
 * @since 0.1.0
 */
export * as Testing from "./layers/Testing.js"
/**
 * The local emulator.
 *
 * @since 0.1.0
 */
export * as Emulator from "./emulator/Emulator.js"

/**
 * Typed errors.
 *
 * @since 0.1.0
 */
export * as Errors from "./schemas/Errors.js"
/**
 * Rate-limit information.
 *
 * @since 0.1.0
 */
export * as RateLimit from "./schemas/RateLimit.js"
/**
 * Shared schemas.
 *
 * @since 0.1.0
 */
export * as Shared from "./schemas/Shared.js"
/**
 * Chat schemas.
 *
 * @since 0.1.0
 */
export * as ChatSchema from "./schemas/Chat.js"
/**
 * Completion schemas.
 *
 * @since 0.1.0
 */
export * as CompletionsSchema from "./schemas/Completions.js"
/**
 * Embedding schemas.
 *
 * @since 0.1.0
 */
export * as EmbeddingsSchema from "./schemas/Embeddings.js"
/**
 * Model schemas.
 *
 * @since 0.1.0
 */
export * as ModelsSchema from "./schemas/Models.js"
/**
 * Audio schemas.
 *
 * @since 0.1.0
 */
export * as AudioSchema from "./schemas/Audio.js"
/**
 * Image schemas.
 *
 * @since 0.1.0
 */
export * as ImagesSchema from "./schemas/Images.js"
/**
 * Responses schemas.
 *
 * @since 0.1.0
 */
export * as ResponsesSchema from "./schemas/Responses.js"
/**
 * File schemas.
 *
 * @since 0.1.0
 */
export * as FilesSchema from "./schemas/Files.js"
/**
 * Fine-tuning schemas.
 *
 * @since 0.1.0
 */
export * as FineTuningSchema from "./schemas/FineTuning.js"
/**
 * Vector-store schemas.
 *
 * @since 0.1.0
 */
export * as VectorStoresSchema from "./schemas/VectorStores.js"
/**
 * Queue answers (result or handle).
 *
 * @since 0.1.0
 */
export * as JobQueueSchema from "./schemas/JobQueue.js"
/**
 * Upload inputs (bytes, path, stream, blob).
 *
 * @since 0.1.0
 */
export * as Upload from "./schemas/Upload.js"

/**
 * The authenticated retrieval-gateway client and its `request` escape hatch.
 *
 * @since 0.1.0
 */
export * as Gateway from "./services/gateway/Gateway.js"
/**
 * Gateway authentication: login, token reuse and refresh.
 *
 * @since 0.1.0
 */
export * as Auth from "./services/gateway/Auth.js"
/**
 * Gateway config manager.
 *
 * @since 0.1.0
 */
export * as ConfigManager from "./services/gateway/ConfigManager.js"
/**
 * Gateway user manager.
 *
 * @since 0.1.0
 */
export * as UserManager from "./services/gateway/UserManager.js"
/**
 * Gateway file manager.
 *
 * @since 0.1.0
 */
export * as FileManager from "./services/gateway/FileManager.js"
/**
 * Gateway ingest master.
 *
 * @since 0.1.0
 */
export * as IngestMaster from "./services/gateway/IngestMaster.js"
/**
 * Gateway chat sessions.
 *
 * @since 0.1.0
 */
export * as ChatSessions from "./services/gateway/ChatSessions.js"
/**
 * Gateway query pipeline.
 *
 * @since 0.1.0
 */
export * as QueryPipeline from "./services/gateway/QueryPipeline.js"
/**
 * The retrieval workflow: ingest, open a session, ask.
 *
 * @since 0.1.0
 */
export * as Rag from "./services/gateway/Rag.js"
/**
 * The transport of the gateway.
 *
 * @since 0.1.0
 */
export * as GatewayHttpClient from "./services/gateway/GatewayHttpClient.js"
/**
 * Gateway configuration.
 *
 * @since 0.1.0
 */
export * as GatewayConfig from "./layers/GatewayConfig.js"
/**
 * The HTTP stack behind the gateway transport.
 *
 * @since 0.1.0
 */
export * as GatewayHttp from "./layers/GatewayHttp.js"
/**
 * All gateway services in one layer.
 *
 * @since 0.1.0
 */
export * as GatewayLayer from "./layers/Gateway.js"
/**
 * Gateway schemas.
 *
 * @since 0.1.0
 */
export * as GatewaySchema from "./schemas/Gateway.js"
