/**
 * What the emulator answers to a chat or completion request: deterministic reasoning, text or a tool call,
 * and the token counts the usage reports.
 *
 * @since 0.1.0
 */
import type { ChatMessage, CreateChatCompletionParams, FunctionTool } from "../schemas/Chat.js"
import type { CatalogueModel } from "./catalogue.js"
import { countTokens, generatePieces, hash, naturalLength } from "./text.js"

/**
 * Tokens an image part costs (the low-detail price).
 *
 * @since 0.5.0
 * @category tokens
 */
export const imageTokens = 85

const messageText = (message: ChatMessage): { text: string; images: number } => {
  const content = message.content
  if (content === undefined || content === null) return { text: "", images: 0 }
  if (typeof content === "string") return { text: content, images: 0 }
  let text = ""
  let images = 0
  for (const part of content) {
    if (part.type === "text") text += part.text
    else images++
  }
  return { text, images }
}

/**
 * Prompt tokens of a conversation: 3 per message plus its text, 3 to prime the reply, tool definitions as
 * JSON, 85 per image.
 *
 * @since 0.1.0
 * @category tokens
 */
export const chatPromptTokens = (params: CreateChatCompletionParams): number => {
  let total = 3
  for (const message of params.messages) {
    const { images, text } = messageText(message)
    total += 3 + countTokens(text) + images * imageTokens
    if ("name" in message && message.name) total += 1
    if (message.role === "assistant" && message.tool_calls) total += countTokens(JSON.stringify(message.tool_calls))
  }
  if (params.tools && params.tools.length > 0) total += countTokens(JSON.stringify(params.tools))
  return total
}

/**
 * A planned tool call.
 *
 * @since 0.1.0
 * @category models
 */
export interface PlannedToolCall {
  readonly id: string
  readonly name: string
  readonly arguments: string
}

/**
 * A planned answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface ChatPlan {
  readonly reasoning: ReadonlyArray<string>
  readonly content: ReadonlyArray<string>
  readonly toolCall: PlannedToolCall | undefined
  readonly finishReason: "stop" | "length" | "tool_calls"
  readonly promptTokens: number
  readonly completionTokens: number
}

const lastUserText = (messages: ReadonlyArray<ChatMessage>): string => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!
    if (message.role === "user") return messageText(message).text
  }
  return ""
}

const mentions = (text: string, tool: FunctionTool): boolean => {
  const lower = text.toLowerCase()
  const name = tool.function.name.toLowerCase()
  return lower.includes(name) || lower.includes(name.replace(/_/g, " "))
}

const chooseTool = (params: CreateChatCompletionParams): FunctionTool | undefined => {
  const tools = params.tools ?? []
  const last = params.messages[params.messages.length - 1]
  if (tools.length === 0 || last === undefined || last.role === "tool" || params.tool_choice === "none") {
    return undefined
  }
  const choice = params.tool_choice
  if (typeof choice === "object") return tools.find((t) => t.function.name === choice.function.name)
  const text = lastUserText(params.messages)
  const mentioned = tools.find((t) => mentions(text, t))
  if (choice === "required") return mentioned ?? tools[0]
  return mentioned
}

const exampleValue = (schema: unknown, word: string): unknown => {
  const s = (typeof schema === "object" && schema !== null ? schema : {}) as Record<string, unknown>
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0]
  switch (s.type) {
    case "number":
    case "integer":
      return 1
    case "boolean":
      return true
    case "array":
      return []
    case "object":
      return exampleArguments(s, word)
    default:
      return word
  }
}

const exampleArguments = (parameters: Record<string, unknown> | undefined, word: string): Record<string, unknown> => {
  const properties = (parameters?.properties ?? {}) as Record<string, unknown>
  return Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, exampleValue(schema, word)]))
}

/** The word a tool call passes for string arguments: the last capitalised word of the request, else the longest. */
const salientWord = (text: string): string => {
  const words = text.match(/[\p{L}\p{N}]+/gu) ?? []
  const capitalised = words.filter((w) => /^\p{Lu}/u.test(w))
  return capitalised[capitalised.length - 1] ?? [...words].sort((a, b) => b.length - a.length)[0] ?? "example"
}

/**
 * A value of a JSON schema's shape, so that structured output parses and validates.
 *
 * @since 0.3.0
 * @category generation
 */
export const exampleOf = (schema: unknown, depth = 0, root: unknown = schema): unknown => {
  const s = (typeof schema === "object" && schema !== null ? schema : {}) as Record<string, unknown>
  if (depth > 8) return null
  if (typeof s.$ref === "string") return exampleOf(resolveRef(root, s.$ref), depth + 1, root)
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0]
  if ("const" in s) return s.const
  const alternatives = s.anyOf ?? s.oneOf
  if (Array.isArray(alternatives) && alternatives.length > 0) return exampleOf(alternatives[0], depth + 1, root)
  switch (s.type) {
    case "object": {
      const properties = (s.properties ?? {}) as Record<string, unknown>
      return Object.fromEntries(
        Object.entries(properties).map(([name, sub]) => [name, exampleOf(sub, depth + 1, root)])
      )
    }
    case "array":
      return [exampleOf(s.items, depth + 1, root)]
    case "number":
      return 1.5
    case "integer":
      return 1
    case "boolean":
      return true
    case "null":
      return null
    default:
      return "example"
  }
}

/** The schema a local `$ref` (`#/$defs/Name`) points at in `root`, or none. */
const resolveRef = (root: unknown, ref: string): unknown => {
  let at: unknown = root
  for (const key of ref.replace(/^#\//, "").split("/")) {
    at = typeof at === "object" && at !== null ? (at as Record<string, unknown>)[key] : undefined
  }
  return at
}

/** The content of an answer that must be JSON (`response_format` `json_schema` or `json_object`), if it must. */
const structuredContent = (params: CreateChatCompletionParams, text: string): string | undefined => {
  const format = params.response_format
  if (format?.type === "json_schema") {
    const spec = format.json_schema as { readonly schema?: unknown } | undefined
    return JSON.stringify(exampleOf(spec?.schema))
  }
  return format?.type === "json_object" ? JSON.stringify({ answer: text }) : undefined
}

/**
 * Plans the answer to a chat request, deterministically from its content.
 *
 * @since 0.1.0
 * @category generation
 */
export const planChat = (model: CatalogueModel, params: CreateChatCompletionParams): ChatPlan => {
  const promptTokens = chatPromptTokens(params)
  const seed = hash(`${model.id}\u0000${JSON.stringify(params.messages)}`)
  const budget = params.max_completion_tokens ?? params.max_tokens ?? Number.POSITIVE_INFINITY
  const tool = chooseTool(params)
  if (tool !== undefined) {
    const args = JSON.stringify(exampleArguments(tool.function.parameters, salientWord(lastUserText(params.messages))))
    return {
      reasoning: [],
      content: [],
      toolCall: { id: `call_${seed.toString(16).padStart(8, "0")}`, name: tool.function.name, arguments: args },
      finishReason: "tool_calls",
      promptTokens,
      completionTokens: countTokens(tool.function.name) + countTokens(args) + 3
    }
  }
  const reasoning = model.reasoning
    ? generatePieces(seed ^ 0x5bd1e995, "The user asks something; I answer briefly. ", Math.min(16, budget))
    : []
  const reasoningTokens = reasoning.reduce((n, p) => n + countTokens(p), 0)
  const topic = lastUserText(params.messages).split(/\s+/).filter(Boolean).slice(0, 6).join(" ")
  const natural = naturalLength(seed)
  const room = Math.max(0, Math.min(natural, budget - reasoningTokens))
  const generated = generatePieces(seed, topic ? `On "${topic}": ` : "", room)
  const json = structuredContent(params, generated.join(""))
  const content = json === undefined ? generated : [json]
  const contentTokens = content.reduce((n, p) => n + countTokens(p), 0)
  return {
    reasoning,
    content,
    toolCall: undefined,
    finishReason: budget < natural + reasoningTokens ? "length" : "stop",
    promptTokens,
    completionTokens: reasoningTokens + contentTokens
  }
}

/**
 * Plans a text completion of one prompt (default `max_tokens` 16, as OpenAI's legacy endpoint).
 *
 * @since 0.1.0
 * @category generation
 */
export const planCompletion = (
  model: CatalogueModel,
  prompt: string,
  maxTokens: number | undefined
): { readonly pieces: ReadonlyArray<string>; readonly tokens: number; readonly finishReason: "stop" | "length" } => {
  const seed = hash(`${model.id}\u0000${prompt}`)
  const natural = naturalLength(seed)
  const budget = maxTokens ?? 16
  const pieces = generatePieces(seed, " ", Math.min(natural, budget))
  return {
    pieces,
    tokens: pieces.reduce((n, p) => n + countTokens(p), 0),
    finishReason: budget < natural ? "length" : "stop"
  }
}
