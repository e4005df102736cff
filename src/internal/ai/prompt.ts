/**
 * An `@effect/ai` request as a chat completion request: the prompt's messages, the toolkit's tools, the tool
 * choice, a structured-output format, and the prompt's cache hints as `cache_control` breakpoints.
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import * as Tool from "@effect/ai/Tool"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Encoding from "effect/Encoding"
import * as Option from "effect/Option"
import type {
  CacheControl,
  ChatMessage,
  ContentPart,
  CreateChatCompletionParams,
  FunctionTool,
  TextPart,
  ToolChoice
} from "../../schemas/Chat.js"

/** A tool annotation: a prompt-cache breakpoint after the tool's definition (`cache_control` on the wire). */
export class ToolCacheControl
  extends Context.Tag("effect-aifs/AifsLanguageModel/CacheControl")<ToolCacheControl, CacheControl>()
{}

/**
 * The cache hint of a message or part: `options.aifs.cacheControl`, else `options.anthropic.cacheControl` (where
 * `@effect/ai-anthropic` reads it, so that a prompt written for it keeps its breakpoints); a hint that is no object
 * with a string `type` is none.
 */
export const cacheHint = (options: Prompt.ProviderOptions): CacheControl | undefined => {
  const hint = options.aifs?.cacheControl ?? options.anthropic?.cacheControl
  return typeof hint === "object" && hint !== null && typeof (hint as { type?: unknown }).type === "string"
    ? hint as CacheControl
    : undefined
}

/** `{ cache_control }` when there is a hint, else nothing. */
const breakpoint = (hint: CacheControl | undefined) => hint === undefined ? {} : { cache_control: hint }

/** The hint of the `i`th of `count` parts: its own, else (the last part) its message's, as Anthropic reads them. */
const partHint = (
  part: { readonly options: Prompt.ProviderOptions },
  i: number,
  count: number,
  message: CacheControl | undefined
): CacheControl | undefined => cacheHint(part.options) ?? (i === count - 1 ? message : undefined)

/** How `generateObject` asks for its object: a JSON-schema `response_format`, or one forced tool call. */
export type StructuredOutput = "json_schema" | "tool"

const malformed = (description: string) =>
  new AiError.MalformedInput({ module: "AifsLanguageModel", method: "prepare", description })

/** An image part as the `image_url` the service reads: a URL as it is, bytes or base64 as a `data:` URL. */
const imageUrl = (part: Prompt.FilePart): string => {
  if (part.data instanceof URL) return part.data.toString()
  const base64 = typeof part.data === "string" ? part.data : Encoding.encodeBase64(part.data)
  return /^(https?|data):/.test(base64) ? base64 : `data:${part.mediaType};base64,${base64}`
}

/** A user message's content: its text, or parts when it has images or cache breakpoints (which sit on parts). */
const userContent = (
  message: Prompt.UserMessage
): Effect.Effect<string | Array<ContentPart>, AiError.MalformedInput> => {
  const parts = message.content
  const hint = cacheHint(message.options)
  const hints = parts.map((part, i) => partHint(part, i, parts.length, hint))
  if (parts.every((part) => part.type === "text") && hints.every((h) => h === undefined)) {
    return Effect.succeed(parts.map((part) => part.text).join(""))
  }
  const out: Array<ContentPart> = []
  for (const [i, part] of parts.entries()) {
    if (part.type === "text") out.push({ type: "text", text: part.text, ...breakpoint(hints[i]) })
    else if (part.mediaType.startsWith("image/")) {
      out.push({ type: "image_url", image_url: { url: imageUrl(part) }, ...breakpoint(hints[i]) })
    } else return Effect.fail(malformed(`a file of type ${part.mediaType} cannot be sent: only images are`))
  }
  return Effect.succeed(out)
}

/** Text with a cache breakpoint as the one text part that carries it; text alone as it is. */
const textContent = (text: string, hint: CacheControl | undefined): string | Array<typeof TextPart.Type> =>
  hint === undefined ? text : [{ type: "text", text, cache_control: hint }]

/**
 * An assistant message: its text and its function calls. A cache hint (its own, or its last part's) puts the
 * breakpoint on its text, or on the message when it only called tools.
 */
const assistantMessage = (message: Prompt.AssistantMessage): ChatMessage => {
  const text = message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("")
  const calls = message.content.flatMap((part) =>
    part.type === "tool-call" && !part.providerExecuted
      ? [{ id: part.id, type: "function", function: { name: part.name, arguments: JSON.stringify(part.params) } }]
      : []
  )
  const last = message.content[message.content.length - 1]
  const hint = cacheHint(message.options) ?? (last === undefined ? undefined : cacheHint(last.options))
  const onlyCalls = text === "" && calls.length > 0
  return {
    role: "assistant",
    content: onlyCalls ? null : textContent(text, hint),
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...(onlyCalls ? breakpoint(hint) : {})
  }
}

const toolMessages = (message: Prompt.ToolMessage): Array<ChatMessage> => {
  const hint = cacheHint(message.options)
  return message.content.map((part, i) => ({
    role: "tool",
    tool_call_id: part.id,
    content: textContent(
      typeof part.result === "string" ? part.result : JSON.stringify(part.result),
      partHint(part, i, message.content.length, hint)
    )
  }))
}

/** The prompt's messages in the chat completion's form (reasoning is not sent back). */
export const messages = (
  prompt: Prompt.Prompt
): Effect.Effect<Array<ChatMessage>, AiError.MalformedInput> =>
  Effect.map(
    Effect.forEach(prompt.content, (message): Effect.Effect<Array<ChatMessage>, AiError.MalformedInput> => {
      switch (message.role) {
        case "system":
          return Effect.succeed([{ role: "system", content: textContent(message.content, cacheHint(message.options)) }])
        case "user":
          return Effect.map(userContent(message), (content) => [{ role: "user", content }])
        case "assistant":
          return Effect.succeed([assistantMessage(message)])
        case "tool":
          return Effect.succeed(toolMessages(message))
      }
    }),
    (groups) => groups.flat()
  )

const functionTool = (tool: Tool.Any): Effect.Effect<FunctionTool, AiError.MalformedInput> => {
  if (Tool.isProviderDefined(tool)) {
    return Effect.fail(malformed(`the provider-defined tool ${tool.name} is not served by AIFS`))
  }
  const description = tool.description ?? Tool.getDescriptionFromSchemaAst(tool.parametersSchema.ast)
  return Effect.succeed({
    type: "function",
    function: {
      name: tool.name,
      ...(description === undefined ? {} : { description }),
      parameters: Tool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast) as unknown as Record<string, unknown>
    },
    ...breakpoint(Option.getOrUndefined(Context.getOption(tool.annotations, ToolCacheControl)))
  })
}

const toolChoice = (choice: LanguageModel.ToolChoice<string>): ToolChoice =>
  typeof choice === "string"
    ? choice
    : "tool" in choice
    ? { type: "function", function: { name: choice.tool } }
    : choice.mode === "required"
    ? "required"
    : "auto"

/** The fields of a request that carry the toolkit's tools and the choice among them (none without tools). */
export const tools = (
  options: Pick<LanguageModel.ProviderOptions, "tools" | "toolChoice">
): Effect.Effect<Pick<CreateChatCompletionParams, "tools" | "tool_choice">, AiError.MalformedInput> =>
  options.tools.length === 0
    ? Effect.succeed({})
    : Effect.map(Effect.forEach(options.tools, functionTool), (list) => ({
      tools: list,
      tool_choice: toolChoice(options.toolChoice)
    }))

/** The JSON schema of a structured output, as `@effect/ai` makes it for tools. */
const objectSchema = (schema: LanguageModel.ProviderOptions["responseFormat"] & { readonly type: "json" }) =>
  Tool.getJsonSchemaFromSchemaAst(schema.schema.ast) as unknown as Record<string, unknown>

/**
 * The fields that ask for a structured output: a JSON-schema `response_format`, or (mode `tool`) a tool of the
 * object's name, the only one offered and forced, whose arguments are the object.
 */
export const structuredOutput = (
  options: LanguageModel.ProviderOptions,
  mode: StructuredOutput
): Partial<CreateChatCompletionParams> => {
  const format = options.responseFormat
  if (format.type !== "json") return {}
  const schema = objectSchema(format)
  return mode === "json_schema"
    ? { response_format: { type: "json_schema", json_schema: { name: format.objectName, schema } } }
    : {
      tools: [{ type: "function", function: { name: format.objectName, parameters: schema } }],
      tool_choice: { type: "function", function: { name: format.objectName } }
    }
}
