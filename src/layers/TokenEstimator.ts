/**
 * How many tokens a request will cost before it is sent: the rate limiter reserves this much. Replace it
 * with a real tokenizer if your traffic needs more precision; the default needs no network and no
 * tokenizer tables.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import { type BodyEstimate, estimateBody, estimateText } from "../internal/tokens.js"

/**
 * The estimator.
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
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<TokenEstimator> = Layer.succeed(TokenEstimator, heuristic)
