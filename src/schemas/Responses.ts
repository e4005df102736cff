/**
 * Wire schemas of `POST /responses`: input, flat function tools, `text.format` JSON-schema output, the
 * response with its `output[]`, and the typed stream events (unknown event types are the service's to skip).
 *
 * @example
 * ```ts
 * import * as ResponsesSchema from "effect-aifs/schemas/Responses"
 * import * as Schema from "effect/Schema"
 *
 * const response = Schema.decodeUnknownSync(ResponsesSchema.Response)({
 *   id: "resp_1",
 *   object: "response",
 *   model: "gpt-4.1",
 *   status: "completed",
 *   output: [
 *     { type: "reasoning", id: "rs_1" },
 *     { type: "message", id: "msg_1", role: "assistant", content: [{ type: "output_text", text: "Hello!" }] }
 *   ]
 * })
 *
 * // the text of the `output_text` parts, whatever else the output holds
 * console.log(response.text, ResponsesSchema.outputText(response))
 * // => Hello! Hello!
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Nullish, OpenEnum } from "./Shared.js"

/**
 * A part of an input message: text or an image.
 *
 * @since 0.1.0
 * @category schemas
 */
export const InputContent = Schema.Union(
  Schema.Struct({
    /** `input_text`. */
    type: Schema.Literal("input_text"),
    /** The text. */
    text: Schema.String
  }),
  Schema.Struct({
    /** `input_image`. */
    type: Schema.Literal("input_image"),
    /** An `https://` or `data:` URL. */
    image_url: Schema.String,
    /** `low`, `high` or `auto`. */
    detail: Schema.optional(Schema.String)
  })
)

/**
 * A message of the input.
 *
 * @since 0.1.0
 * @category schemas
 */
export const InputMessage = Schema.Struct({
  /** `message` (may be left out). */
  type: Schema.optional(Schema.Literal("message")),
  /** Who speaks. */
  role: Schema.Literal("user", "assistant", "system", "developer"),
  /** Text, or parts. */
  content: Schema.Union(Schema.String, Schema.Array(InputContent))
})

/**
 * The result of a function call, sent back to the model.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FunctionCallOutput = Schema.Struct({
  /** `function_call_output`. */
  type: Schema.Literal("function_call_output"),
  /** The `call_id` of the call it answers. */
  call_id: Schema.String,
  /** The result, usually JSON text. */
  output: Schema.String
})

/**
 * A function tool, in the flat form of this endpoint: `{"type": "function", "name", "parameters"}`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResponseFunctionTool = Schema.Struct({
  /** `function`. */
  type: Schema.Literal("function"),
  /** Function name. */
  name: Schema.String,
  /** What it does, for the model. */
  description: Schema.optional(Schema.String),
  /** JSON Schema of the arguments. */
  parameters: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** Enforce the schema exactly. */
  strict: Schema.optional(Schema.Boolean)
})

/**
 * The type of `ResponseFunctionTool`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ResponseFunctionTool = typeof ResponseFunctionTool.Type

/**
 * The output format of `text.format`: plain text, any JSON object, or JSON matching a schema.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TextFormat = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    /** `json_schema`. */
    type: Schema.Literal("json_schema"),
    /** Name of the schema. */
    name: Schema.String,
    /** The JSON Schema. */
    schema: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
    /** What the output is. */
    description: Schema.optional(Schema.String),
    /** Enforce the schema exactly. */
    strict: Schema.optional(Schema.Boolean)
  })
)

/**
 * Parameters of `POST /responses` (full support only on the proprietary OpenAI models).
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreateResponseParams = Schema.Struct({
  /** Model id, e.g. `gpt-4.1`. */
  model: Schema.String,
  /** A string, or messages and function-call outputs. */
  input: Schema.Union(Schema.String, Schema.Array(Schema.Union(InputMessage, FunctionCallOutput))),
  /** System-level instructions. */
  instructions: Schema.optional(Schema.String),
  /** Sampling temperature. */
  temperature: Schema.optional(Schema.Number),
  /** Nucleus sampling. */
  top_p: Schema.optional(Schema.Number),
  /** Most output tokens. */
  max_output_tokens: Schema.optional(Schema.Number),
  /** Function tools (flat form). */
  tools: Schema.optional(Schema.Array(ResponseFunctionTool)),
  /** `auto`, `none`, `required`, or a named function. */
  tool_choice: Schema.optional(Schema.Unknown),
  /** Output format: `{"format": {...}}`. */
  text: Schema.optional(Schema.Struct({ format: Schema.optional(TextFormat) })),
  /** Reasoning effort on reasoning models. */
  reasoning: Schema.optional(Schema.Struct({ effort: Schema.optional(Schema.String) })),
  /** Continue from a stored response. */
  previous_response_id: Schema.optional(Schema.String),
  /** Store the response server-side. */
  store: Schema.optional(Schema.Boolean),
  /** Free-form metadata. */
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
})

/**
 * The type of `CreateResponseParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreateResponseParams = typeof CreateResponseParams.Type

/**
 * A part of an output message: `output_text` (with annotations) or `refusal`; other types pass.
 *
 * @since 0.1.0
 * @category schemas
 */
export const OutputContent = Schema.Struct({
  /** `output_text`, `refusal`, ... */
  type: OpenEnum(["output_text", "refusal"], "Kind of output part."),
  /** The text of an `output_text` part. */
  text: Nullish(Schema.String),
  /** The refusal of a `refusal` part. */
  refusal: Nullish(Schema.String),
  /** Citations and the like. */
  annotations: Nullish(Schema.Array(Schema.Unknown))
})

/**
 * The type of `OutputContent`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type OutputContent = typeof OutputContent.Type

const outputItemFields = {
  /** Item id. */
  id: Nullish(Schema.String),
  /** `completed`, `in_progress`, `incomplete`. */
  status: Nullish(Schema.String),
  /** `assistant`, on messages. */
  role: Nullish(Schema.String),
  /** The parts of a message. */
  content: Nullish(Schema.Array(OutputContent)),
  /** The call id of a function call (answer it with a `function_call_output`). */
  call_id: Nullish(Schema.String),
  /** The function a call names. */
  name: Nullish(Schema.String),
  /** The arguments of a call, as JSON text. */
  arguments: Nullish(Schema.String),
  /** Reasoning summary parts. */
  summary: Nullish(Schema.Array(Schema.Unknown))
}

const knownOutputItemTypes = ["message", "function_call", "reasoning"] as const

/** Whether each field of an item fits `outputItemFields`, one decoder per field. */
const fitsField = Object.fromEntries(
  Object.entries(outputItemFields).map(([name, field]) => [name, Schema.is(Schema.Struct({ [name]: field }))])
) as Record<string, (u: unknown) => boolean>

/**
 * An item of a type this client does not know: its type, and every field that has the shape a known item gives it
 * (a tool search's `arguments` object, say, does not: it is left out); never a decode failure.
 */
const OtherOutputItem = Schema.transform(
  Schema.Struct(
    {
      type: Schema.String.pipe(Schema.filter((type) => !(knownOutputItemTypes as ReadonlyArray<string>).includes(type)))
    },
    Schema.Record({ key: Schema.String, value: Schema.Unknown })
  ),
  Schema.Struct({ type: Schema.String, ...outputItemFields }),
  {
    strict: false,
    decode: (item) =>
      Object.fromEntries(
        Object.entries(item).filter(([name, value]) =>
          name === "type" || (Object.hasOwn(fitsField, name) && fitsField[name]!({ [name]: value }))
        )
      ),
    encode: (item) => item
  }
)

/**
 * An item of `output[]`: a `message`, a `function_call`, `reasoning`, or a type this client does not know (kept
 * with its type and the fields that have the shape known items give them, never a decode failure).
 *
 * @since 0.1.0
 * @category schemas
 */
export const OutputItem = Schema.Union(
  Schema.Struct({
    /** `message`, `function_call`, `reasoning`. */
    type: Schema.Literal(...knownOutputItemTypes),
    ...outputItemFields
  }),
  OtherOutputItem
)

/**
 * The type of `OutputItem`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type OutputItem = typeof OutputItem.Type

/**
 * Token usage of a response.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResponseUsage = Schema.Struct({
  /** Input tokens. */
  input_tokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Output tokens. */
  output_tokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Both. */
  total_tokens: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Cached input tokens and the like. */
  input_tokens_details: Nullish(Schema.Unknown),
  /** Reasoning tokens and the like. */
  output_tokens_details: Nullish(Schema.Unknown)
})

/**
 * The text of every `output_text` part of the `message` items, joined: what clients read as `output_text`.
 *
 * @since 0.1.0
 * @category helpers
 */
export const outputText = (response: { readonly output: ReadonlyArray<OutputItem> }): string =>
  response.output.flatMap((item) =>
    item.type === "message"
      ? (item.content ?? []).flatMap((part) => part.type === "output_text" && part.text ? [part.text] : [])
      : []
  ).join("")

/**
 * A response.
 *
 * @since 0.1.0
 * @category schemas
 */
export class Response extends Schema.Class<Response>("Response")({
  /** Response id. */
  id: Schema.String,
  /** `response`. */
  object: Nullish(Schema.String),
  /** Creation time, epoch seconds. */
  created_at: Nullish(Schema.Number),
  /** Model that answered. */
  model: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** `completed`, `in_progress`, `failed`, `incomplete`, ... */
  status: Nullish(OpenEnum(["completed", "in_progress", "failed", "incomplete", "queued"], "State of a response.")),
  /** The output items. */
  output: Schema.optionalWith(Schema.Array(OutputItem), { default: () => [] }),
  /** Convenience text, when the server adds it (the SDKs compute it). */
  output_text: Nullish(Schema.String),
  /** Token usage. */
  usage: Nullish(ResponseUsage),
  /** Why it failed. */
  error: Nullish(Schema.Struct({ code: Nullish(Schema.String), message: Nullish(Schema.String) })),
  /** Why it is incomplete. */
  incomplete_details: Nullish(Schema.Struct({ reason: Nullish(Schema.String) })),
  /** The instructions used. */
  instructions: Nullish(Schema.Unknown),
  /** The id of the response this one continues. */
  previous_response_id: Nullish(Schema.String)
}) {
  /** The answer's text (the `output_text` parts of its messages). */
  get text(): string {
    return this.output.length > 0 ? outputText(this) : (this.output_text ?? "")
  }
  /** The function calls the model made. */
  get functionCalls(): ReadonlyArray<OutputItem> {
    return this.output.filter((item) => item.type === "function_call")
  }
}

const event = <Type extends string, Fields extends Schema.Struct.Fields>(type: Type, fields: Fields) =>
  Schema.Struct({
    /** The event type. */
    type: Schema.Literal(type),
    /** Order of the event in the stream. */
    sequence_number: Nullish(Schema.Number),
    ...fields
  }).annotations({ identifier: `${type} event` })

/**
 * The stream events this client knows. Others are skipped by `Responses.createStream` (with a debug log).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ResponseStreamEvent = Schema.Union(
  event("response.created", { response: Response }),
  event("response.in_progress", { response: Response }),
  event("response.completed", { response: Response }),
  event("response.failed", { response: Response }),
  event("response.incomplete", { response: Response }),
  event("response.output_item.added", { output_index: Nullish(Schema.Number), item: OutputItem }),
  event("response.output_item.done", { output_index: Nullish(Schema.Number), item: OutputItem }),
  event("response.content_part.added", {
    item_id: Nullish(Schema.String),
    output_index: Nullish(Schema.Number),
    content_index: Nullish(Schema.Number),
    part: OutputContent
  }),
  event("response.content_part.done", {
    item_id: Nullish(Schema.String),
    output_index: Nullish(Schema.Number),
    content_index: Nullish(Schema.Number),
    part: OutputContent
  }),
  event("response.output_text.delta", {
    item_id: Nullish(Schema.String),
    output_index: Nullish(Schema.Number),
    content_index: Nullish(Schema.Number),
    delta: Schema.String
  }),
  event("response.output_text.done", {
    item_id: Nullish(Schema.String),
    output_index: Nullish(Schema.Number),
    content_index: Nullish(Schema.Number),
    text: Schema.String
  }),
  event("response.function_call_arguments.delta", {
    item_id: Nullish(Schema.String),
    output_index: Nullish(Schema.Number),
    delta: Schema.String
  }),
  event("response.function_call_arguments.done", {
    item_id: Nullish(Schema.String),
    output_index: Nullish(Schema.Number),
    arguments: Schema.String
  }),
  event("error", { code: Nullish(Schema.String), message: Nullish(Schema.String), param: Nullish(Schema.String) })
)

/**
 * The type of `ResponseStreamEvent`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ResponseStreamEvent = typeof ResponseStreamEvent.Type

/**
 * The event types `ResponseStreamEvent` decodes.
 *
 * @since 0.1.0
 * @category schemas
 */
export const knownEventTypes: ReadonlySet<string> = new Set(
  ResponseStreamEvent.members.map((member) => member.fields.type.literals[0])
)

/**
 * An event of a type this client does not know: only its `type` is read (`Responses.createStream` skips it).
 *
 * @since 0.3.0
 * @category schemas
 */
export const UnknownStreamEvent = Schema.Struct({
  type: Schema.String.pipe(Schema.filter((type) => !knownEventTypes.has(type)))
}).annotations({ identifier: "an event of a type this client does not know" })

/**
 * What a stream's event decodes as: a known event, or an `UnknownStreamEvent`. A malformed known event is neither.
 *
 * @since 0.3.0
 * @category schemas
 */
export const AnyStreamEvent = Schema.Union(ResponseStreamEvent, UnknownStreamEvent).annotations({
  identifier: "a response stream event"
})

/**
 * Any event: its `type` and the rest, before it is told apart.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RawStreamEvent = Schema.Struct(
  { type: Schema.String },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)
