/**
 * Wire schemas of `POST /chat/completions`: messages, tools, the completion and its stream chunks
 * (with the service's quirks: `reasoning_content`, empty-`choices` usage chunks, streamed tool calls).
 *
 * @example
 * ```ts
 * import * as ChatSchema from "effect-aifs/schemas/Chat"
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 *
 * // an answer as the service sends it: `reasoning_content`, and a `finish_reason` this client may not know yet
 * const body = {
 *   id: "chatcmpl-1",
 *   object: "chat.completion",
 *   created: 1730000000,
 *   model: "gpt-oss-120b",
 *   choices: [{
 *     index: 0,
 *     message: { role: "assistant", content: "91 = 7 × 13.", reasoning_content: "Try small primes." },
 *     finish_reason: "a_new_reason"
 *   }],
 *   usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 }
 * }
 *
 * const program = Effect.map(Schema.decodeUnknown(ChatSchema.ChatCompletion)(body), (completion) =>
 *   `${completion.text} (${completion.choices[0]?.finish_reason}, ${completion.usage?.total_tokens} tokens)`)
 *
 * Effect.runPromise(program).then(console.log)
 * // => 91 = 7 × 13. (a_new_reason, 21 tokens)
 * ```
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import { Nullish, OpenEnum, Usage } from "./Shared.js"

/**
 * A prompt-cache breakpoint (`{"type": "ephemeral"}`): the prompt up to and including what carries it may be cached
 * and read back by later requests that start with the same prefix. The service's docs describe it for the Claude
 * models, on content parts, system messages and tool definitions (in that order: tools, system, messages); other
 * models ignore it. Sent as given: fields not named here pass too.
 *
 * @example
 * ```ts
 * import type * as ChatSchema from "effect-aifs/schemas/Chat"
 *
 * // a long system prompt cached for an hour, where the model offers it (five minutes without `ttl`)
 * const system: ChatSchema.ChatMessage = {
 *   role: "system",
 *   content: [{ type: "text", text: "You review contracts. ...", cache_control: { type: "ephemeral", ttl: "1h" } }]
 * }
 *
 * console.log(JSON.stringify(system.content))
 * ```
 *
 * @since 0.5.0
 * @category schemas
 */
export const CacheControl = Schema.Struct(
  {
    /** `ephemeral`, the kind the service's docs describe. */
    type: OpenEnum(["ephemeral"], "The kind of cache breakpoint."),
    /** How long the cached prefix lives: `5m` (the default) or `1h` (Anthropic's values), where offered. */
    ttl: Schema.optional(Schema.String)
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

/**
 * The type of `CacheControl`.
 *
 * @since 0.5.0
 * @category schemas
 */
export type CacheControl = typeof CacheControl.Type

/**
 * A text part of a message.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TextPart = Schema.Struct({
  /** `text`. */
  type: Schema.Literal("text"),
  /** The text. */
  text: Schema.String,
  /** A prompt-cache breakpoint after this part (Claude models). */
  cache_control: Schema.optional(CacheControl)
})

/**
 * An image part of a user message: an `http(s)` or `data:` URL.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ImagePart = Schema.Struct({
  /** `image_url`. */
  type: Schema.Literal("image_url"),
  /** The image. */
  image_url: Schema.Struct({
    /** An `https://` URL or a `data:image/png;base64,...` URL. */
    url: Schema.String,
    /** Resolution hint: `low`, `high`, `auto`. */
    detail: Schema.optional(Schema.String)
  }),
  /** A prompt-cache breakpoint after this part (Claude models). */
  cache_control: Schema.optional(CacheControl)
})

/**
 * A part of a user message.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentPart = Schema.Union(TextPart, ImagePart)

/**
 * The type of `ContentPart`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ContentPart = typeof ContentPart.Type

/**
 * A call of a function tool: a name and JSON arguments.
 *
 * @since 0.3.0
 * @category schemas
 */
export const FunctionToolCall = Schema.Struct({
  /** Call id, echoed back in the `tool` message that answers it. */
  id: Schema.String,
  /** `function` (the default when the server leaves it out). */
  type: Schema.optionalWith(Schema.Literal("function"), { default: () => "function" as const }),
  /** The function and its arguments. */
  function: Schema.Struct({
    /** Function name. */
    name: Schema.String,
    /** Arguments as a JSON string (parse it yourself: models may emit invalid JSON). */
    arguments: Schema.optionalWith(Schema.String, { default: () => "" })
  })
})

/**
 * A call of a custom tool (OpenAI's free-form tools): a name and its input as plain text.
 *
 * @since 0.3.0
 * @category schemas
 */
export const CustomToolCall = Schema.Struct({
  /** Call id. */
  id: Schema.String,
  /** `custom`. */
  type: Schema.Literal("custom"),
  /** The tool and its input. */
  custom: Schema.Struct({
    /** Tool name. */
    name: Schema.String,
    /** The input the model wrote, as text. */
    input: Schema.optionalWith(Schema.String, { default: () => "" })
  })
})

/**
 * A tool call of a kind this client does not know yet: kept whole (every field), so that a new kind of call does
 * not fail the answer it comes in.
 *
 * @since 0.3.0
 * @category schemas
 */
export const OtherToolCall = Schema.Struct(
  {
    /** Call id, when it has one. */
    id: Schema.optional(Schema.String),
    /** The kind: anything but `function` and `custom`. */
    type: Schema.String.pipe(Schema.filter((type) => type !== "function" && type !== "custom"))
  },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

/**
 * A tool call made by the model: a function call, a custom tool's call, or one of a kind not known yet. Narrow on
 * `type` (`"function"` has `function.name` and `function.arguments`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolCall = Schema.Union(FunctionToolCall, CustomToolCall, OtherToolCall)

/**
 * Whether a tool call is a function call (`call.function.name`, `call.function.arguments`).
 *
 * @example
 * ```ts
 * import { isFunctionCall, type ToolCall } from "effect-aifs/schemas/Chat"
 *
 * const calls: ReadonlyArray<ToolCall> = [
 *   { id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } },
 *   { id: "call_2", type: "custom", custom: { name: "shell", input: "ls" } }
 * ]
 * console.log(calls.filter(isFunctionCall).map((call) => call.function.name)) // ["get_weather"]
 * ```
 *
 * @since 0.3.0
 * @category guards
 */
export const isFunctionCall = (call: ToolCall): call is typeof FunctionToolCall.Type => call.type === "function"

/**
 * The type of `ToolCall`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ToolCall = typeof ToolCall.Type

/**
 * A system message.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SystemMessage = Schema.Struct({
  /** `system`. */
  role: Schema.Literal("system"),
  /** Instructions. */
  content: Schema.Union(Schema.String, Schema.Array(TextPart)),
  /** Optional participant name. */
  name: Schema.optional(Schema.String),
  /** A prompt-cache breakpoint after this message (Claude models; a content part's own is the documented place). */
  cache_control: Schema.optional(CacheControl)
})

/**
 * A developer message (the newer name of system messages on some models).
 *
 * @since 0.1.0
 * @category schemas
 */
export const DeveloperMessage = Schema.Struct({
  /** `developer`. */
  role: Schema.Literal("developer"),
  /** Instructions. */
  content: Schema.Union(Schema.String, Schema.Array(TextPart)),
  /** Optional participant name. */
  name: Schema.optional(Schema.String),
  /** A prompt-cache breakpoint after this message (Claude models; a content part's own is the documented place). */
  cache_control: Schema.optional(CacheControl)
})

/**
 * A user message: text, or parts with images.
 *
 * @since 0.1.0
 * @category schemas
 */
export const UserMessage = Schema.Struct({
  /** `user`. */
  role: Schema.Literal("user"),
  /** Text, or text and image parts. */
  content: Schema.Union(Schema.String, Schema.Array(ContentPart)),
  /** Optional participant name. */
  name: Schema.optional(Schema.String),
  /** A prompt-cache breakpoint after this message (Claude models; a content part's own is the documented place). */
  cache_control: Schema.optional(CacheControl)
})

/**
 * An earlier answer of the assistant, possibly with tool calls.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AssistantMessage = Schema.Struct({
  /** `assistant`. */
  role: Schema.Literal("assistant"),
  /** The answer text; `null` when it only called tools. */
  content: Schema.optional(Schema.NullOr(Schema.Union(Schema.String, Schema.Array(TextPart)))),
  /** Tool calls it made. */
  tool_calls: Schema.optional(Schema.Array(ToolCall)),
  /** Optional participant name. */
  name: Schema.optional(Schema.String),
  /** A prompt-cache breakpoint after this message (Claude models; a content part's own is the documented place). */
  cache_control: Schema.optional(CacheControl)
})

/**
 * The type of `AssistantMessage`.
 *
 * @since 0.3.0
 * @category schemas
 */
export type AssistantMessage = typeof AssistantMessage.Type

/**
 * The result of a tool call.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolMessage = Schema.Struct({
  /** `tool`. */
  role: Schema.Literal("tool"),
  /** The tool's output. */
  content: Schema.Union(Schema.String, Schema.Array(TextPart)),
  /** The `id` of the call it answers. */
  tool_call_id: Schema.String,
  /** A prompt-cache breakpoint after this message (Claude models; a content part's own is the documented place). */
  cache_control: Schema.optional(CacheControl)
})

/**
 * Any message of a conversation.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatMessage = Schema.Union(SystemMessage, DeveloperMessage, UserMessage, AssistantMessage, ToolMessage)

/**
 * The type of `ChatMessage`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChatMessage = typeof ChatMessage.Type

/**
 * A function the model may call.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FunctionTool = Schema.Struct({
  /** `function`. */
  type: Schema.Literal("function"),
  /** The function. */
  function: Schema.Struct({
    /** Name the model uses to call it. */
    name: Schema.String,
    /** What it does, for the model. */
    description: Schema.optional(Schema.String),
    /** JSON Schema of its arguments. */
    parameters: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
    /** Ask for strict schema adherence (proprietary models). */
    strict: Schema.optional(Schema.Boolean)
  }),
  /** A prompt-cache breakpoint after this tool's definition: the tools up to it are cached (Claude models). */
  cache_control: Schema.optional(CacheControl)
})

/**
 * The type of `FunctionTool`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type FunctionTool = typeof FunctionTool.Type

/**
 * Whether and which tool the model must call.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolChoice = Schema.Union(
  Schema.Literal("none", "auto", "required"),
  Schema.Struct({
    /** `function`. */
    type: Schema.Literal("function"),
    /** The function to call. */
    function: Schema.Struct({ name: Schema.String })
  })
)

/**
 * The type of `ToolChoice`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ToolChoice = typeof ToolChoice.Type

/**
 * Parameters of a chat completion. `stream` is set by the method (`create` or `createStream`), not here.
 *
 * @example
 * ```ts
 * import type * as ChatSchema from "effect-aifs/schemas/Chat"
 *
 * // a conversation with a tool the model may call
 * const params: ChatSchema.CreateChatCompletionParams = {
 *   model: "gpt-4.1",
 *   messages: [
 *     { role: "system", content: "You answer questions about the weather." },
 *     { role: "user", content: "Is it raining in Bonn?" }
 *   ],
 *   tools: [{
 *     type: "function",
 *     function: {
 *       name: "current_weather",
 *       description: "The weather now in a city",
 *       parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
 *     }
 *   }],
 *   tool_choice: "auto",
 *   max_tokens: 200
 * }
 *
 * console.log(params.tools?.length)
 * // => 1
 * ```
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreateChatCompletionParams = Schema.Struct({
  /** Model id, e.g. `Llama-3.3-70B-Instruct`. */
  model: Schema.String,
  /** The conversation so far. */
  messages: Schema.Array(ChatMessage),
  /** Sampling temperature. */
  temperature: Schema.optional(Schema.Number),
  /** Nucleus sampling mass. */
  top_p: Schema.optional(Schema.Number),
  /** Most tokens to generate (older name). */
  max_tokens: Schema.optional(Schema.Number),
  /** Most tokens to generate, reasoning included (newer name). */
  max_completion_tokens: Schema.optional(Schema.Number),
  /** Number of choices. */
  n: Schema.optional(Schema.Number),
  /** Stop sequences. */
  stop: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
  /** Seed for deterministic sampling. */
  seed: Schema.optional(Schema.Number),
  /** Presence penalty. */
  presence_penalty: Schema.optional(Schema.Number),
  /** Frequency penalty. */
  frequency_penalty: Schema.optional(Schema.Number),
  /** Functions the model may call. */
  tools: Schema.optional(Schema.Array(FunctionTool)),
  /** Whether and which tool to call. */
  tool_choice: Schema.optional(ToolChoice),
  /** Allow several tool calls in one answer. */
  parallel_tool_calls: Schema.optional(Schema.Boolean),
  /** Reasoning effort of reasoning models: `low`, `medium`, `high`. */
  reasoning_effort: Schema.optional(Schema.String),
  /** Output format, e.g. `{"type": "json_object"}` or a JSON schema. */
  response_format: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** End-user id for abuse monitoring. */
  user: Schema.optional(Schema.String),
  /** Streaming options; `createStream` sets `include_usage`. */
  stream_options: Schema.optional(Schema.Struct({ include_usage: Schema.optional(Schema.Boolean) }))
})

/**
 * The type of `CreateChatCompletionParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreateChatCompletionParams = typeof CreateChatCompletionParams.Type

/**
 * The assistant's answer in a completion.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatCompletionMessage = Schema.Struct({
  /** `assistant`. */
  role: Schema.optionalWith(Schema.String, { default: () => "assistant" }),
  /** The answer text; `null` when the model only called tools. */
  content: Nullish(Schema.String),
  /** The hidden reasoning of reasoning models, when the server returns it. */
  reasoning_content: Nullish(Schema.String),
  /** Tool calls. */
  tool_calls: Nullish(Schema.Array(ToolCall)),
  /** A refusal message, on proprietary models. */
  refusal: Nullish(Schema.String)
})

/**
 * The type of `ChatCompletionMessage`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChatCompletionMessage = typeof ChatCompletionMessage.Type

/**
 * Why generation stopped. Known: `stop`, `length`, `tool_calls`, `content_filter`; others pass.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FinishReason = OpenEnum(["stop", "length", "tool_calls", "content_filter"], "Why generation stopped.")

/**
 * One choice of a completion.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatCompletionChoice = Schema.Struct({
  /** Position among the choices. */
  index: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** The answer. */
  message: ChatCompletionMessage,
  /** Why generation stopped. */
  finish_reason: Nullish(FinishReason),
  /** Log probabilities, when asked for. */
  logprobs: Schema.optional(Schema.Unknown)
})

/**
 * The type of `ChatCompletionChoice`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChatCompletionChoice = typeof ChatCompletionChoice.Type

/**
 * A chat completion.
 *
 * @since 0.1.0
 * @category schemas
 */
export class ChatCompletion extends Schema.Class<ChatCompletion>("ChatCompletion")({
  /** Completion id. */
  id: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** `chat.completion`. */
  object: Nullish(Schema.String),
  /** Creation time in epoch seconds. */
  created: Nullish(Schema.Number),
  /** Model that answered. */
  model: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** The answers (one unless `n` > 1). */
  choices: Schema.Array(ChatCompletionChoice),
  /** Token usage. */
  usage: Nullish(Usage),
  /** Backend configuration fingerprint. */
  system_fingerprint: Nullish(Schema.String),
  /** Service tier that served it, on proprietary models. */
  service_tier: Nullish(Schema.String)
}) {
  /** The text of the first choice, or `""`. */
  get text(): string {
    return this.choices[0]?.message.content ?? ""
  }
}

/**
 * A piece of a tool call in a stream: the first delta for an `index` has `id` and `function.name`, later ones
 * append to `function.arguments`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolCallDelta = Schema.Struct({
  /** Which tool call this piece belongs to. */
  index: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Call id, on the first piece. */
  id: Nullish(Schema.String),
  /** `function` or `custom`, on the first piece. */
  type: Nullish(Schema.String),
  /** Name (first piece) and a fragment of the arguments. */
  function: Nullish(Schema.Struct({
    /** Function name, on the first piece. */
    name: Nullish(Schema.String),
    /** A fragment of the JSON arguments. */
    arguments: Nullish(Schema.String)
  })),
  /** A custom tool's name (first piece) and a fragment of its input. */
  custom: Nullish(Schema.Struct({
    /** Tool name, on the first piece. */
    name: Nullish(Schema.String),
    /** A fragment of the input. */
    input: Nullish(Schema.String)
  }))
})

/**
 * The type of `ToolCallDelta`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ToolCallDelta = typeof ToolCallDelta.Type

/**
 * What one stream chunk adds to a choice.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatCompletionDelta = Schema.Struct({
  /** `assistant`; the first chunk may or may not carry it. */
  role: Nullish(Schema.String),
  /** New answer text. */
  content: Nullish(Schema.String),
  /** New reasoning text, on reasoning models. */
  reasoning_content: Nullish(Schema.String),
  /** Tool call pieces. */
  tool_calls: Nullish(Schema.Array(ToolCallDelta)),
  /** Refusal text. */
  refusal: Nullish(Schema.String)
})

/**
 * The type of `ChatCompletionDelta`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChatCompletionDelta = typeof ChatCompletionDelta.Type

/**
 * One choice of a stream chunk.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatCompletionChunkChoice = Schema.Struct({
  /** Position among the choices. */
  index: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** What this chunk adds. */
  delta: Schema.optionalWith(ChatCompletionDelta, { default: () => ({}) }),
  /** Set on the last chunk of the choice. */
  finish_reason: Nullish(FinishReason),
  /** Log probabilities, when asked for. */
  logprobs: Schema.optional(Schema.Unknown)
})

/**
 * The type of `ChatCompletionChunkChoice`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChatCompletionChunkChoice = typeof ChatCompletionChunkChoice.Type

/**
 * One chunk of a streamed chat completion. `choices` may be empty (the usage chunk at the end, and some
 * keep-alive chunks).
 *
 * @since 0.1.0
 * @category schemas
 */
export class ChatCompletionChunk extends Schema.Class<ChatCompletionChunk>("ChatCompletionChunk")({
  /** Completion id (the same on every chunk). */
  id: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** `chat.completion.chunk`. */
  object: Nullish(Schema.String),
  /** Creation time in epoch seconds. */
  created: Nullish(Schema.Number),
  /** Model that answered. */
  model: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** The choice deltas; may be empty. */
  choices: Schema.optionalWith(Schema.Array(ChatCompletionChunkChoice), { default: () => [] }),
  /** Token usage, on the last chunk when `include_usage` was asked for. */
  usage: Nullish(Usage),
  /** Backend configuration fingerprint. */
  system_fingerprint: Nullish(Schema.String)
}) {
  /** The new answer text of the first choice, or `""`. */
  get text(): string {
    return this.choices[0]?.delta.content ?? ""
  }
}

const decodeUsage = Schema.decodeUnknownEither(Usage)

/** A chunk's choice with the defaults of its schema filled in (`undefined` and a missing key alike). */
const choiceWithDefaults = (
  { delta, ...choice }: typeof ChatCompletionChunkChoice.Encoded
): typeof ChatCompletionChunkChoice.Type =>
  ChatCompletionChunkChoice.make(
    {
      ...choice,
      ...(delta === undefined ? {} : {
        delta: delta.tool_calls === undefined || delta.tool_calls === null ? delta : {
          ...delta,
          tool_calls: delta.tool_calls.map((call) =>
            ToolCallDelta.make(call as Parameters<typeof ToolCallDelta.make>[0], true)
          )
        }
      })
    } as Parameters<typeof ChatCompletionChunkChoice.make>[0],
    true
  )

const nullish = (u: unknown) => u === undefined || u === null
const optionalString = (u: unknown) => u === undefined || typeof u === "string"
const optionalNumber = (u: unknown) => u === undefined || typeof u === "number"
const nullishString = (u: unknown) => nullish(u) || typeof u === "string"
const nullishNumber = (u: unknown) => nullish(u) || typeof u === "number"
const deltaKeys = ["role", "content", "reasoning_content", "refusal"] as const
const deltaFields = [...deltaKeys, "tool_calls"]
const choiceKeys = ["index", "finish_reason", "logprobs"]

/** The fields of `keys` that `from` has; undefined when one is set to `undefined` (the schema then decides). */
const pick = (from: Record<string, unknown>, keys: ReadonlyArray<string>): Record<string, unknown> | undefined => {
  const picked: Record<string, unknown> = {}
  for (const key of keys) {
    const value = from[key]
    if (value !== undefined) picked[key] = value
    else if (key in from) return undefined
  }
  return picked
}

/** A plain object (as `JSON.parse` makes them: no fields inherited from elsewhere), or undefined. */
const record = (u: unknown): Record<string, unknown> | undefined =>
  typeof u === "object" && u !== null && Object.getPrototypeOf(u) === Object.prototype
    ? u as Record<string, unknown>
    : undefined

const usageKeys = [
  "prompt_tokens",
  "completion_tokens",
  "total_tokens",
  "prompt_tokens_details",
  "completion_tokens_details",
  "cache_creation_input_tokens",
  "cache_read_input_tokens"
]

/**
 * The common usage (counts, Anthropic-style cache counts, no details), checked by hand and built by its class; the
 * class decodes any other.
 */
const usageOf = (u: unknown): Either.Either<Usage, ParseResult.ParseError> => {
  const usage = record(u)
  if (usage === undefined || !optionalNumber(usage.prompt_tokens) || !optionalNumber(usage.total_tokens)) {
    return decodeUsage(u)
  }
  const common = nullishNumber(usage.completion_tokens) && nullish(usage.prompt_tokens_details) &&
    nullish(usage.completion_tokens_details) && nullishNumber(usage.cache_creation_input_tokens) &&
    nullishNumber(usage.cache_read_input_tokens)
  const fields = common ? pick(usage, usageKeys) : undefined
  return fields === undefined
    ? decodeUsage(u)
    : Either.right(new Usage(fields as ConstructorParameters<typeof Usage>[0], true))
}

/** A choice of the common chunk (an index, a delta of text fields only), or undefined for any other. */
const commonChoice = (u: unknown): ChatCompletionChunkChoice | undefined => {
  const choice = record(u)
  const delta = record(choice?.delta)
  if (choice === undefined || delta === undefined || typeof choice.index !== "number") return undefined
  if (!nullishString(choice.finish_reason) || (delta.tool_calls !== undefined && delta.tool_calls !== null)) {
    return undefined
  }
  for (const key of deltaKeys) {
    if (!nullishString(delta[key])) return undefined
  }
  const picked = pick(choice, choiceKeys)
  const fields = pick(delta, deltaFields)
  if (picked === undefined || fields === undefined) return undefined
  picked.delta = fields
  return picked as ChatCompletionChunkChoice
}

const chunkKeys = ["id", "object", "created", "model", "system_fingerprint", "usage"]

/**
 * The common chunk (one per token: text deltas, no usage, no tool calls), checked by hand and built with only the
 * schema's fields; undefined for any other input, which the schema then decodes in full.
 */
const commonChunk = (u: unknown): ChatCompletionChunk | undefined => {
  const wire = record(u)
  if (wire === undefined || !Array.isArray(wire.choices) || !nullish(wire.usage)) {
    return undefined
  }
  if (!optionalString(wire.id) || !optionalString(wire.model)) return undefined
  if (!nullishString(wire.object) || !nullishNumber(wire.created) || !nullishString(wire.system_fingerprint)) {
    return undefined
  }
  const choices: Array<ChatCompletionChunkChoice> = []
  for (const each of wire.choices) {
    const choice = commonChoice(each)
    if (choice === undefined) return undefined
    choices.push(choice)
  }
  const fields = pick(wire, chunkKeys)
  if (fields === undefined) return undefined
  fields.choices = choices
  return new ChatCompletionChunk(fields as ConstructorParameters<typeof ChatCompletionChunk>[0], true)
}

const decodeWire = ParseResult.decodeUnknown(Schema.encodedSchema(ChatCompletionChunk))

/**
 * Decodes a chunk whose wire shape is checked: the usage by its class, the choices' defaults by their constructors
 * (no per-field default transformations, each of which checks both of its sides).
 */
const fromCheckedWire = (wire: typeof ChatCompletionChunk.Encoded, ast: SchemaAST.AST) => {
  // the usage chunk comes once per stream
  const usage = nullish(wire.usage) ? Either.right(wire.usage) : usageOf(wire.usage)
  if (Either.isLeft(usage)) return ParseResult.fail(new ParseResult.Type(ast, wire, "invalid usage"))
  const { choices, ...rest } = wire
  return ParseResult.succeed(
    new ChatCompletionChunk(
      {
        ...rest,
        ...(wire.usage === undefined ? {} : { usage: usage.right }),
        ...(choices === undefined ? {} : { choices: choices.map(choiceWithDefaults) })
      } as ConstructorParameters<typeof ChatCompletionChunk>[0],
      true
    )
  )
}

/**
 * Decodes exactly like `ChatCompletionChunk`, several times faster: the common chunk (one per token) is checked by
 * hand; any other has its wire shape (the class's encoded side) checked once, and the constructors fill in the
 * defaults. Streams decode one chunk per token, so they use this one.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatCompletionChunkFromWire: Schema.Schema<ChatCompletionChunk, typeof ChatCompletionChunk.Encoded> =
  Schema.transformOrFail(
    // the wire value, checked by the decoding below (by hand or by the class's encoded side)
    Schema.declare((_: unknown): _ is typeof ChatCompletionChunk.Encoded => true, {
      identifier: "ChatCompletionChunkWire",
      jsonSchema: JSONSchema.make(Schema.encodedSchema(ChatCompletionChunk))
    }),
    Schema.typeSchema(ChatCompletionChunk),
    {
      strict: true,
      decode: (input, options, ast) => {
        // excess fields refused or kept as asked: the schema's own decoding
        const common = options?.onExcessProperty === "error" || options?.onExcessProperty === "preserve"
          ? undefined
          : commonChunk(input)
        return common === undefined
          ? ParseResult.flatMap(decodeWire(input, options), (wire) => fromCheckedWire(wire, ast))
          : ParseResult.succeed(common)
      },
      encode: (chunk) => ParseResult.encode(ChatCompletionChunk)(chunk)
    }
  )

const messageKeys = ["role", "content", "reasoning_content", "refusal", "tool_calls"]
const completionChoiceKeys = ["index", "finish_reason", "logprobs"]
const completionKeys = ["id", "object", "created", "model", "system_fingerprint", "service_tier", "usage"]

/** The message of the common answer (text fields, no tool calls) with its defaults, or undefined for any other. */
const commonMessage = (u: unknown): ChatCompletionMessage | undefined => {
  const message = record(u)
  if (message === undefined || !optionalString(message.role)) return undefined
  if (!nullish(message.tool_calls)) return undefined
  if (!nullishString(message.content) || !nullishString(message.reasoning_content)) return undefined
  if (!nullishString(message.refusal)) return undefined
  const fields = pick(message, messageKeys)
  return fields === undefined
    ? undefined
    : ChatCompletionMessage.make(fields as Parameters<typeof ChatCompletionMessage.make>[0], true)
}

/** A choice of the common answer with its defaults, or undefined for any other. */
const commonCompletionChoice = (u: unknown): ChatCompletionChoice | undefined => {
  const choice = record(u)
  if (choice === undefined || !optionalNumber(choice.index)) return undefined
  if (!nullishString(choice.finish_reason)) return undefined
  const message = commonMessage(choice.message)
  const fields = pick(choice, completionChoiceKeys)
  if (message === undefined || fields === undefined) return undefined
  fields.message = message
  return ChatCompletionChoice.make(fields as Parameters<typeof ChatCompletionChoice.make>[0], true)
}

/**
 * The common answer (text messages, no tool calls), checked by hand and built with only the schema's fields and
 * its defaults; undefined for any other input, which the schema then decodes in full.
 */
const commonCompletion = (u: unknown): ChatCompletion | undefined => {
  const wire = record(u)
  if (wire === undefined || !Array.isArray(wire.choices)) return undefined
  if (!optionalString(wire.id) || !optionalString(wire.model)) return undefined
  if (!nullishString(wire.object) || !nullishNumber(wire.created) || !nullishString(wire.system_fingerprint)) {
    return undefined
  }
  if (!nullishString(wire.service_tier)) return undefined
  const usage = nullish(wire.usage) ? Either.right(wire.usage) : usageOf(wire.usage)
  const fields = pick(wire, completionKeys)
  if (Either.isLeft(usage) || fields === undefined) return undefined
  const choices: Array<ChatCompletionChoice> = []
  for (const each of wire.choices) {
    const choice = commonCompletionChoice(each)
    if (choice === undefined) return undefined
    choices.push(choice)
  }
  fields.choices = choices
  if (!nullish(usage.right)) fields.usage = usage.right
  return new ChatCompletion(fields as ConstructorParameters<typeof ChatCompletion>[0], true)
}

/**
 * Decodes exactly like `ChatCompletion`, about three times faster on the common answer (text messages, no tool
 * calls), which is checked by hand and built by the constructors; the schema decodes any other. `Chat.create`
 * decodes its answers with it.
 *
 * @since 0.3.0
 * @category schemas
 */
export const ChatCompletionFromWire: Schema.Schema<ChatCompletion, typeof ChatCompletion.Encoded> = Schema
  .transformOrFail(
    // the wire value, checked by the decoding below (by hand or by the class)
    Schema.declare((_: unknown): _ is typeof ChatCompletion.Encoded => true, {
      identifier: "ChatCompletionWire",
      jsonSchema: JSONSchema.make(Schema.encodedSchema(ChatCompletion))
    }),
    Schema.typeSchema(ChatCompletion),
    {
      strict: true,
      decode: (input, options) => {
        // excess fields refused or kept as asked: the schema's own decoding
        const common = options?.onExcessProperty === "error" || options?.onExcessProperty === "preserve"
          ? undefined
          : commonCompletion(input)
        return common === undefined
          ? ParseResult.decodeUnknown(ChatCompletion)(input, options)
          : ParseResult.succeed(common)
      },
      encode: (completion) => ParseResult.encode(ChatCompletion)(completion)
    }
  )
