/**
 * Wire schemas of `POST /completions` (legacy text completion, open-source models only).
 *
 * @example
 * ```ts
 * import * as CompletionsSchema from "effect-aifs/schemas/Completions"
 * import * as Schema from "effect/Schema"
 *
 * const completion = Schema.decodeUnknownSync(CompletionsSchema.Completion)({
 *   id: "cmpl-1",
 *   object: "text_completion",
 *   model: "Llama-3.3-70B-Instruct",
 *   choices: [{ index: 0, text: " red, yellow and blue.", finish_reason: "stop" }]
 * })
 *
 * console.log(completion.choices[0]?.text)
 * // => red, yellow and blue.
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Nullish, OpenEnum, Usage } from "./Shared.js"

/**
 * Parameters of a text completion. `stream` is set by the service method, not here.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreateCompletionParams = Schema.Struct({
  /** Model id. */
  model: Schema.String,
  /** The prompt: one string or several. */
  prompt: Schema.Union(Schema.String, Schema.Array(Schema.String)),
  /** Most tokens to generate. */
  max_tokens: Schema.optional(Schema.Number),
  /** Sampling temperature. */
  temperature: Schema.optional(Schema.Number),
  /** Nucleus sampling mass. */
  top_p: Schema.optional(Schema.Number),
  /** Number of completions. */
  n: Schema.optional(Schema.Number),
  /** Stop sequences. */
  stop: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
  /** Seed for deterministic sampling. */
  seed: Schema.optional(Schema.Number),
  /** Echo the prompt back in the text. */
  echo: Schema.optional(Schema.Boolean),
  /** End-user id for abuse monitoring. */
  user: Schema.optional(Schema.String),
  /** Streaming options (`include_usage`). */
  stream_options: Schema.optional(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) }))
})

/**
 * The type of `CreateCompletionParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreateCompletionParams = typeof CreateCompletionParams.Type

/**
 * One generated text.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CompletionChoice = Schema.Struct({
  /** Position among the choices. */
  index: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** The generated text (in a stream chunk: the new text only). */
  text: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** Why generation stopped. */
  finish_reason: Nullish(OpenEnum(["stop", "length", "content_filter"], "Why generation stopped.")),
  /** Log probabilities, when asked for. */
  logprobs: Schema.optional(Schema.Unknown)
})

/**
 * The type of `CompletionChoice`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CompletionChoice = typeof CompletionChoice.Type

/**
 * A text completion, and each chunk of a streamed one (`object` tells them apart).
 *
 * @since 0.1.0
 * @category schemas
 */
export class Completion extends Schema.Class<Completion>("Completion")({
  /** Completion id. */
  id: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** `text_completion`. */
  object: Nullish(Schema.String),
  /** Creation time in epoch seconds. */
  created: Nullish(Schema.Number),
  /** Model that answered. */
  model: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** The generated texts. */
  choices: Schema.optionalWith(Schema.Array(CompletionChoice), { default: () => [] }),
  /** Token usage (in a stream: the last chunk, when asked for). */
  usage: Nullish(Usage),
  /** Backend configuration fingerprint. */
  system_fingerprint: Nullish(Schema.String)
}) {}
