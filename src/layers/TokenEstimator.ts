/**
 * How many tokens a request will cost before it is sent: the rate limiter reserves this much. Replace it
 * with a real tokenizer if your traffic needs more precision; the default needs no network and no
 * tokenizer tables.
 *
 * @example
 * ```ts
 * import { TokenEstimator } from "effect-aifs"
 *
 * const estimate = TokenEstimator.heuristic.estimate("/chat/completions", {
 *   model: "Llama-3.3-70B-Instruct",
 *   messages: [{ role: "user", content: "How many tokens is this?" }],
 *   max_tokens: 100
 * })
 *
 * console.log(estimate.model, estimate.promptTokens, estimate.maxOutputTokens)
 * console.log(TokenEstimator.countText("Hello, world"))
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import { type BodyEstimate, estimateBody, estimateText } from "../internal/tokens.js"

/**
 * The estimator.
 *
 * @example
 * ```ts
 * import { LimiterStore, RateLimiter, TokenEstimator } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // a more cautious estimator for text that tokenizes badly (code, non-Latin scripts): 30% more input tokens
 * const Cautious = Layer.succeed(TokenEstimator.TokenEstimator, {
 *   estimate: (path, body) => {
 *     const estimate = TokenEstimator.heuristic.estimate(path, body)
 *     return { ...estimate, promptTokens: Math.ceil(estimate.promptTokens * 1.3) }
 *   }
 * })
 *
 * // the limiter reserves that much (plus the output cap) for every request
 * const LimiterLive = RateLimiter.layerWith({ tier: "standard4000" }).pipe(
 *   Layer.provide(Layer.merge(LimiterStore.layerMemory, Cautious))
 * )
 *
 * const program = Effect.map(RateLimiter.RateLimiter, (limiter) =>
 *   limiter.cost("/chat/completions", {
 *     model: "Llama-3.3-70B-Instruct",
 *     messages: [{ role: "user", content: "const x = [1, 2, 3].map((n) => n * 2)" }],
 *     max_tokens: 50
 *   }))
 *
 * Effect.runPromise(program.pipe(Effect.provide(LimiterLive))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class TokenEstimator
  extends Context.Tag("effect-aifs/TokenEstimator")<TokenEstimator, TokenEstimator.Service>()
{}

/**
 * The types of the `TokenEstimator` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace TokenEstimator {
  /**
   * What `TokenEstimator` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Estimates the cost of a JSON request body sent to `path` (`/chat/completions`, `/embeddings`, ...). */
    readonly estimate: (path: string, body: unknown) => Estimate
  }
}

/**
 * An estimate: the model, the input tokens, and the output cap the body sets.
 *
 * @since 0.1.0
 * @category models
 */
export type Estimate = BodyEstimate

/**
 * The default estimator: letters and digits one token per four characters, punctuation one each, the chat
 * format's per-message overhead, 85 tokens per image.
 *
 * @since 0.1.0
 * @category constructors
 */
export const heuristic: TokenEstimator.Service = { estimate: estimateBody }

/**
 * Counts the tokens of a text with the default heuristic.
 *
 * @since 0.1.0
 * @category utils
 */
export const countText: (text: string) => number = estimateText

/**
 * The default estimator as a layer.
 *
 * @example
 * ```ts
 * import { LimiterStore, RateLimiter, TokenEstimator } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the default estimator, next to a limiter store of your own
 * export const LimiterLive: Layer.Layer<RateLimiter.RateLimiter> = RateLimiter.layerWith({ tier: "basic" }).pipe(
 *   Layer.provide(Layer.merge(LimiterStore.layerMemory, TokenEstimator.layer))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<TokenEstimator> = Layer.succeed(TokenEstimator, heuristic)
