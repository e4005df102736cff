/**
 * An `@effect/ai` request as a chat completion request: the prompt's messages, the toolkit's tools, the tool
 * choice and a structured-output format.
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import * as Tool from "@effect/ai/Tool"
import * as Effect from "effect/Effect"
import * as Encoding from "effect/Encoding"
import type {
  ChatMessage,
  ContentPart,
  CreateChatCompletionParams,
  FunctionTool,
  ToolChoice
} from "../../schemas/Chat.js"

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

const userContent = (
  parts: ReadonlyArray<Prompt.UserMessagePart>
): Effect.Effect<string | Array<ContentPart>, AiError.MalformedInput> => {
  if (parts.every((part) => part.type === "text")) return Effect.succeed(parts.map((part) => part.text).join(""))
  const out: Array<ContentPart> = []
  for (const part of parts) {
    if (part.type === "text") out.push({ type: "text", text: part.text })
    else if (part.mediaType.startsWith("image/")) out.push({ type: "image_url", image_url: { url: imageUrl(part) } })
    else return Effect.fail(malformed(`a file of type ${part.mediaType} cannot be sent: only images are`))
  }
  return Effect.succeed(out)
}

const assistantMessage = (message: Prompt.AssistantMessage): ChatMessage => {
  const text = message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("")
  const calls = message.content.flatMap((part) =>
    part.type === "tool-call" && !part.providerExecuted
      ? [{ id: part.id, type: "function", function: { name: part.name, arguments: JSON.stringify(part.params) } }]
      : []
  )
  return {
    role: "assistant",
    content: text === "" && calls.length > 0 ? null : text,
    ...(calls.length > 0 ? { tool_calls: calls } : {})
  }
}

const toolMessages = (message: Prompt.ToolMessage): Array<ChatMessage> =>
  message.content.map((part) => ({
    role: "tool",
    tool_call_id: part.id,
    content: typeof part.result === "string" ? part.result : JSON.stringify(part.result)
  }))

/** The prompt's messages in the chat completion's form (reasoning is not sent back). */
export const messages = (
  prompt: Prompt.Prompt
): Effect.Effect<Array<ChatMessage>, AiError.MalformedInput> =>
  Effect.map(
    Effect.forEach(prompt.content, (message): Effect.Effect<Array<ChatMessage>, AiError.MalformedInput> => {
      switch (message.role) {
        case "system":
          return Effect.succeed([{ role: "system", content: message.content }])
        case "user":
          return Effect.map(userContent(message.content), (content) => [{ role: "user", content }])
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
    }
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
  options: LanguageModel.ProviderOptions
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
