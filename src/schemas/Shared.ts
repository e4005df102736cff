/**
 * Schema building blocks shared by every endpoint group: tolerant optional fields, token usage,
 * validation issues.
 *
 * @example
 * ```ts
 * import * as Shared from "effect-aifs/schemas/Shared"
 * import * as Schema from "effect/Schema"
 *
 * // tolerant decoding: a field that may be missing or null, an enumeration that accepts new values
 * const Answer = Schema.Struct({
 *   status: Shared.OpenEnum(["completed", "failed"], "Where the work ended."),
 *   usage: Shared.Nullish(Shared.Usage)
 * })
 *
 * console.log(Schema.decodeUnknownSync(Answer)({ status: "paused", usage: null }))
 * // => { status: 'paused', usage: null }
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A field that real servers may omit or send as `null`: decodes to `A | null | undefined`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const Nullish = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(schema))

/**
 * An open enumeration: the known values are documented, any other string is accepted so that a new value
 * on the server never breaks decoding.
 *
 * @since 0.1.0
 * @category combinators
 */
export const OpenEnum = <const Known extends ReadonlyArray<string>>(known: Known, description: string) =>
  Schema.String.annotations({ description: `${description} Known values: ${known.join(", ")}; others pass.` })

/**
 * Breakdown of prompt tokens (cached tokens, audio tokens) when the server reports it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PromptTokensDetails = Schema.Struct({
  /** Tokens served from the prompt cache (read). */
  cached_tokens: Nullish(Schema.Number),
  /** Tokens written to the prompt cache (OpenAI's name for a cache write). */
  cache_write_tokens: Nullish(Schema.Number),
  /** Audio input tokens. */
  audio_tokens: Nullish(Schema.Number)
})

/**
 * Breakdown of completion tokens (reasoning tokens) when the server reports it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CompletionTokensDetails = Schema.Struct({
  /** Tokens spent on hidden reasoning. */
  reasoning_tokens: Nullish(Schema.Number),
  /** Audio output tokens. */
  audio_tokens: Nullish(Schema.Number)
})

/**
 * Token usage of one request. Embedding responses carry only `prompt_tokens` and `total_tokens`. Prompt caching is
 * reported under OpenAI's names (`prompt_tokens_details`) or Anthropic's (`cache_*_input_tokens`): `cacheReadTokens`
 * and `cacheWriteTokens` read whichever came.
 *
 * @since 0.1.0
 * @category schemas
 */
export class Usage extends Schema.Class<Usage>("Usage")({
  /** Tokens in the input. */
  prompt_tokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Tokens generated. Absent on embeddings. */
  completion_tokens: Nullish(Schema.Number),
  /** Input plus output tokens. */
  total_tokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Breakdown of the prompt tokens. */
  prompt_tokens_details: Nullish(PromptTokensDetails),
  /** Breakdown of the completion tokens. */
  completion_tokens_details: Nullish(CompletionTokensDetails),
  /** Tokens written to the prompt cache, as Anthropic-style proxies report it (Claude models). */
  cache_creation_input_tokens: Nullish(Schema.Number),
  /** Tokens read from the prompt cache, as Anthropic-style proxies report it (Claude models). */
  cache_read_input_tokens: Nullish(Schema.Number)
}) {
  /**
   * Of `prompt_tokens`, those read from the prompt cache: `prompt_tokens_details.cached_tokens`, else
   * `cache_read_input_tokens`; `undefined` when the server reported neither.
   */
  get cacheReadTokens(): number | undefined {
    return this.prompt_tokens_details?.cached_tokens ?? this.cache_read_input_tokens ?? undefined
  }

  /**
   * Of `prompt_tokens`, those written to the prompt cache: `prompt_tokens_details.cache_write_tokens`, else
   * `cache_creation_input_tokens`; `undefined` when the server reported neither.
   */
  get cacheWriteTokens(): number | undefined {
    return this.prompt_tokens_details?.cache_write_tokens ?? this.cache_creation_input_tokens ?? undefined
  }
}

/**
 * One entry of a FastAPI validation error list: `{"loc": [...], "msg": "...", "type": "..."}`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ValidationIssue = Schema.Struct({
  /** Where in the request the problem is, e.g. `["body", "messages"]`. */
  loc: Schema.optionalWith(Schema.Array(Schema.Union(Schema.String, Schema.Number)), { default: () => [] }),
  /** Human-readable description. */
  msg: Schema.String,
  /** Machine-readable kind, e.g. `missing`. */
  type: Schema.optional(Schema.String)
})

/**
 * The type of `ValidationIssue`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ValidationIssue = typeof ValidationIssue.Type

/**
 * `{"detail": "..."}` or `{"detail": [issues]}`: the FastAPI error body, the service's primary form.
 *
 * @since 0.1.0
 * @category schemas
 */
export const DetailErrorBody = Schema.Struct({
  /** A message, or a list of validation issues. */
  detail: Schema.Union(Schema.String, Schema.Array(ValidationIssue))
})

/**
 * `{"error": {"message", "type", "code"}}`: the OpenAI-style error body of proxied proprietary models.
 * `code` may be a string (`"429"`, `"rate_limit_exceeded"`) or a number.
 *
 * @since 0.1.0
 * @category schemas
 */
export const OpenAIErrorBody = Schema.Struct({
  /** The error object. */
  error: Schema.Struct({
    /** Human-readable message. */
    message: Schema.optionalWith(Schema.String, { default: () => "" }),
    /** Error class, e.g. `invalid_request_error`, `tokens`, `requests`. */
    type: Nullish(Schema.String),
    /** Error code, a string or a number. */
    code: Nullish(Schema.Union(Schema.String, Schema.Number)),
    /** The offending parameter, if any. */
    param: Nullish(Schema.String)
  })
})
