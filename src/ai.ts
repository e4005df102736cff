/**
 * An `@effect/ai` provider: `AifsLanguageModel` (a `LanguageModel` over chat completions) and
 * `AifsEmbeddingModel` (an `EmbeddingModel` over embeddings), both on the client's services, so the rate
 * limiter, the retry policy and the queue routing apply to every call.
 *
 * Needs the optional peer `@effect/ai` on the Effect 3 line (`npm install @effect/ai@0.37`); nothing of it
 * is loaded by the main entry.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { AifsLanguageModel, apiError } from "effect-aifs/ai"
 * import { Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = LanguageModel.generateText({ prompt: "What is an RPM quota?" }).pipe(
 *   Effect.map((response) => response.text),
 *   // the AiError keeps the client's error: a rate limit stays recognisable
 *   Effect.catchAll((error) =>
 *     apiError(error)?._tag === "RateLimited" ? Effect.succeed("try again later") : Effect.fail(error)
 *   ),
 *   Effect.provide(AifsLanguageModel.model("Llama-3.3-70B-Instruct"))
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.3.0
 */
import { type ApiError, isApiError } from "./schemas/Errors.js"

/**
 * The language model.
 *
 * @since 0.3.0
 */
export * as AifsLanguageModel from "./ai/AifsLanguageModel.js"

/**
 * The embedding model.
 *
 * @since 0.3.0
 */
export * as AifsEmbeddingModel from "./ai/AifsEmbeddingModel.js"

/**
 * The client's own error behind an `AiError` from these models (`RateLimited`, `Unauthorized`, ...), or
 * `undefined` when the error came from elsewhere (a tool's handler, a tool's own failure, a schema). Takes any
 * error, so that a program whose tools fail with errors of their own can ask it of every one.
 *
 * @since 0.3.0
 * @category errors
 */
export const apiError = (error: unknown): ApiError | undefined =>
  typeof error === "object" && error !== null && "cause" in error && isApiError(error.cause) ? error.cause : undefined
