/**
 * Chat completions: `POST /chat/completions`, plain and streamed, and a fold of a chunk stream back into a
 * completion.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   const answer = yield* chat.create({
 *     model: "Llama-3.3-70B-Instruct",
 *     messages: [
 *       { role: "system", content: "Answer in one sentence." },
 *       { role: "user", content: "What is a rate limit?" }
 *     ],
 *     max_tokens: 60
 *   })
 *   return `${answer.text} (${answer.usage?.total_tokens} tokens)`
 * })
 *
 * // `Node.layerFromEnv` for the real service; here the emulator, on a loopback port
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import {
  type AssistantMessage,
  ChatCompletion,
  type ChatCompletionChunk,
  ChatCompletionChunkFromWire,
  ChatCompletionFromWire,
  type ChatCompletionMessage,
  type CreateChatCompletionParams,
  type ToolCall
} from "../schemas/Chat.js"
import type { ApiError } from "../schemas/Errors.js"
import type { Usage } from "../schemas/Shared.js"
import { InferenceHttpClient, withoutResponse, type WithResponse } from "./InferenceHttpClient.js"

/**
 * Chat completions.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Stream from "effect/Stream"
 *
 * // the answer as it is generated, chunk by chunk
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   const stream = chat.createStream({
 *     model: "Llama-3.3-70B-Instruct",
 *     messages: [{ role: "user", content: "Count to five." }]
 *   })
 *   return yield* stream.pipe(Stream.map((chunk) => chunk.text), Stream.mkString)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class Chat extends Context.Tag("effect-aifs/Chat")<Chat, Chat.Service>() {}

/**
 * The types of the `Chat` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Chat {
  /**
   * What `Chat` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Sends a conversation and returns the whole answer. */
    readonly create: (params: CreateChatCompletionParams) => Effect.Effect<ChatCompletion, ApiError>
    /** `create`, with the response metadata (status, request id, rate-limit headers). */
    readonly createWithResponse: (
      params: CreateChatCompletionParams
    ) => Effect.Effect<WithResponse<ChatCompletion>, ApiError>
    /**
     * Streams the answer chunk by chunk (with a final usage chunk). An `error` event mid-stream fails the
     * stream after the chunks before it.
     */
    readonly createStream: (params: CreateChatCompletionParams) => Stream.Stream<ChatCompletionChunk, ApiError>
  }
}

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Chat.Service, never, InferenceHttpClient> = Effect.gen(function*() {
  const http = yield* InferenceHttpClient
  // the span is the transport's, opened when the request leaves the limiter's line
  const createWithResponse = (params: CreateChatCompletionParams) =>
    http.json(
      HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(params)),
      // decodes as ChatCompletion, faster
      ChatCompletionFromWire,
      { model: params.model, span: { name: "Chat.create", operation: "chat", params } }
    )
  const createStream = (params: CreateChatCompletionParams): Stream.Stream<ChatCompletionChunk, ApiError> =>
    http.jsonStream(
      HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson({
        ...params,
        stream: true,
        stream_options: { include_usage: true, ...params.stream_options }
      })),
      // decodes as ChatCompletionChunk, faster: one chunk per token
      ChatCompletionChunkFromWire,
      { model: params.model, span: { name: "Chat.createStream", operation: "chat", params } }
    )
  return {
    create: (params) => withoutResponse(createWithResponse(params)),
    createWithResponse,
    createStream
  }
})

/**
 * The service, on an `InferenceHttpClient`.
 *
 * @example
 * ```ts
 * import { Chat, ClientConfig, InferenceHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // Chat alone (no other service, no proactive rate limiter), on the Node HTTP client
 * export const ChatLive: Layer.Layer<Chat.Chat> = Chat.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-...", tier: "standard4000" })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Chat, never, InferenceHttpClient> = Layer.effect(Chat, make)

interface ChoiceAccumulator {
  role: string
  content: string
  reasoning: string
  refusal: string
  toolCalls: Map<number, { id: string; type: string; name: string; arguments: string }>
  finishReason: string | null
}

/**
 * Folds the chunks of a stream into the completion a non-streamed call would have returned: text and
 * reasoning concatenated, tool-call pieces joined by index, usage from the usage chunk.
 *
 * @since 0.1.0
 * @category folding
 */
export const foldChunks = (chunks: Iterable<ChatCompletionChunk>): ChatCompletion => {
  let first: ChatCompletionChunk | undefined
  let usage: Usage | undefined
  let fingerprint: string | undefined
  const choices = new Map<number, ChoiceAccumulator>()
  for (const chunk of chunks) {
    first ??= chunk
    if (chunk.usage) usage = chunk.usage
    if (chunk.system_fingerprint) fingerprint = chunk.system_fingerprint
    for (const choice of chunk.choices) {
      let acc = choices.get(choice.index)
      if (acc === undefined) {
        acc = {
          role: "assistant",
          content: "",
          reasoning: "",
          refusal: "",
          toolCalls: new Map(),
          finishReason: null
        }
        choices.set(choice.index, acc)
      }
      const delta = choice.delta
      if (delta.role) acc.role = delta.role
      if (delta.content) acc.content += delta.content
      if (delta.reasoning_content) acc.reasoning += delta.reasoning_content
      if (delta.refusal) acc.refusal += delta.refusal
      for (const piece of delta.tool_calls ?? []) {
        const call = acc.toolCalls.get(piece.index) ?? { id: "", type: "function", name: "", arguments: "" }
        if (piece.id) call.id = piece.id
        if (piece.type) call.type = piece.type
        // a function's arguments, or a custom tool's input: both arrive in pieces
        if (piece.function?.name) call.name += piece.function.name
        if (piece.function?.arguments) call.arguments += piece.function.arguments
        if (piece.custom?.name) call.name += piece.custom.name
        if (piece.custom?.input) call.arguments += piece.custom.input
        acc.toolCalls.set(piece.index, call)
      }
      if (choice.finish_reason) acc.finishReason = choice.finish_reason
    }
  }
  const choiceList = [...choices.entries()].sort(([a], [b]) => a - b).map(([index, acc]) => {
    const toolCalls: Array<ToolCall> = [...acc.toolCalls.entries()].sort(([a], [b]) => a - b).map(([, c]) =>
      c.type === "custom"
        ? { id: c.id, type: "custom", custom: { name: c.name, input: c.arguments } }
        : { id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }
    )
    const message: ChatCompletionMessage = {
      role: acc.role,
      // a tool-call-only answer has content null, even when the stream opened with content ""
      content: acc.content !== "" || toolCalls.length === 0 ? acc.content : null,
      ...(acc.reasoning ? { reasoning_content: acc.reasoning } : {}),
      ...(acc.refusal ? { refusal: acc.refusal } : {}),
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {})
    }
    return { index, message, finish_reason: acc.finishReason }
  })
  return new ChatCompletion({
    id: first?.id ?? "",
    object: "chat.completion",
    created: first?.created ?? null,
    model: first?.model ?? "",
    choices: choiceList,
    ...(usage ? { usage } : {}),
    ...(fingerprint ? { system_fingerprint: fingerprint } : {})
  })
}

/**
 * Runs a chunk stream to its end and folds it into a completion.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // stream for the user, keep the whole completion for the log
 * const program = Effect.flatMap(Chat.Chat, (chat) =>
 *   Chat.collect(
 *     chat.createStream({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }] })
 *   )).pipe(Effect.map((answer) => `${answer.choices[0]?.finish_reason}: ${answer.usage?.completion_tokens} tokens`))
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category folding
 */
export const collect = <E, R>(stream: Stream.Stream<ChatCompletionChunk, E, R>): Effect.Effect<ChatCompletion, E, R> =>
  Effect.map(Stream.runCollect(stream), foldChunks)

/**
 * The assistant's answer as the next turn of the conversation: its text (`null` when it only called tools) and its
 * tool calls, as a request takes them back. An answer's own message (`role` a string, `tool_calls` maybe `null`,
 * `reasoning_content`) is not a request's message as it stands.
 *
 * @example
 * ```ts
 * import { Chat, type ChatSchema, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const model = "Llama-3.3-70B-Instruct"
 * const program = Effect.gen(function*() {
 *   const chat = yield* Chat.Chat
 *   const messages: Array<ChatSchema.ChatMessage> = [{ role: "user", content: "Name a prime." }]
 *   const first = yield* chat.create({ model, messages })
 *   messages.push(Chat.toMessage(first.choices[0]!.message), { role: "user", content: "And the next one?" })
 *   return (yield* chat.create({ model, messages })).text
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.3.0
 * @category conversation
 */
export const toMessage = (message: ChatCompletionMessage): AssistantMessage => ({
  role: "assistant",
  content: message.content ?? null,
  ...(message.tool_calls == null || message.tool_calls.length === 0 ? {} : { tool_calls: message.tool_calls })
})
