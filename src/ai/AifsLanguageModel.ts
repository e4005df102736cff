/**
 * `@effect/ai`'s `LanguageModel` over the service's chat completions: `generateText`, `streamText`,
 * `generateObject`, tools from a `Toolkit`, images, reasoning, prompt-cache hints (`cache_control` on the wire, cached
 * tokens in the usage). Every request goes through the `Chat` service, so the rate limiter, the retry policy, the
 * queue routing and the typed errors apply; an error reaches the caller as an `AiError` whose `cause` is the
 * client's own error (a `RateLimited` stays a `RateLimited`).
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { AifsLanguageModel } from "effect-aifs/ai"
 * import { Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = LanguageModel.generateText({ prompt: "Explain rate limits in one sentence." }).pipe(
 *   Effect.map((response) => response.text),
 *   Effect.provide(AifsLanguageModel.model("Llama-3.3-70B-Instruct", { temperature: 0.2 }))
 * )
 *
 * // `Node.layerFromEnv` for the real service; the embedded emulator here
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.3.0
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as AiModel from "@effect/ai/Model"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { toAiError } from "../internal/ai/errors.js"
import * as Request from "../internal/ai/prompt.js"
import { parts, streamParts } from "../internal/ai/response.js"
import type { CacheControl as CacheControlWire, CreateChatCompletionParams } from "../schemas/Chat.js"
import { Chat } from "../services/Chat.js"

/** The cache hint a message or part of a prompt may carry for this provider. */
interface AifsCacheOptions {
  readonly aifs?: {
    /** A prompt-cache breakpoint after this message or part: `cache_control` on the wire (Claude models). */
    readonly cacheControl?: CacheControlWire | undefined
  } | undefined
}

declare module "@effect/ai/Prompt" {
  /** This provider's options of a system message. */
  export interface SystemMessageOptions extends AifsCacheOptions {}
  /** This provider's options of a user message. */
  export interface UserMessageOptions extends AifsCacheOptions {}
  /** This provider's options of an assistant message. */
  export interface AssistantMessageOptions extends AifsCacheOptions {}
  /** This provider's options of a tool message. */
  export interface ToolMessageOptions extends AifsCacheOptions {}
  /** This provider's options of a text part. */
  export interface TextPartOptions extends AifsCacheOptions {}
  /** This provider's options of a file part. */
  export interface FilePartOptions extends AifsCacheOptions {}
  /** This provider's options of a tool call part. */
  export interface ToolCallPartOptions extends AifsCacheOptions {}
  /** This provider's options of a tool result part. */
  export interface ToolResultPartOptions extends AifsCacheOptions {}
}

/**
 * A tool annotation: a prompt-cache breakpoint after the tool's definition, sent as its `cache_control` (the tools
 * up to it are cached, on the Claude models). Messages and parts take theirs from `options`:
 * `{ aifs: { cacheControl: { type: "ephemeral" } } }` (or `anthropic`, where `@effect/ai-anthropic` reads it).
 *
 * @example
 * ```ts
 * import { Tool } from "@effect/ai"
 * import { AifsLanguageModel } from "effect-aifs/ai"
 * import * as Schema from "effect/Schema"
 *
 * export const Search = Tool.make("search", { parameters: { query: Schema.String }, success: Schema.String })
 *   .annotate(AifsLanguageModel.CacheControl, { type: "ephemeral" })
 * ```
 *
 * @since 0.5.0
 * @category annotations
 */
export const CacheControl: typeof Request.ToolCacheControl = Request.ToolCacheControl

/**
 * The request parameters a model is created with, or given for a part of a program with `withConfigOverride`:
 * any chat completion parameter the service takes (`temperature`, `max_tokens`, `reasoning_effort`, `seed`...),
 * and how `generateObject` asks for its object.
 *
 * @since 0.3.0
 * @category configuration
 */
export class Config extends Context.Tag("effect-aifs/AifsLanguageModel/Config")<Config, Config.Service>() {
  /**
   * The configuration in the current context, if any.
   *
   * @since 0.3.0
   */
  static readonly getOrUndefined: Effect.Effect<Config.Service | undefined> = Effect.map(
    Effect.context<never>(),
    (context) => context.unsafeMap.get(Config.key)
  )
}

/**
 * The types of the `Config` tag.
 *
 * @since 0.3.0
 * @category configuration
 */
export declare namespace Config {
  /**
   * The parameters: a chat completion's, without the conversation, the tools and the output format (the prompt,
   * the toolkit and `generateObject` set those).
   *
   * @since 0.3.0
   * @category configuration
   */
  export interface Service extends
    Partial<
      Omit<
        CreateChatCompletionParams,
        "model" | "messages" | "tools" | "tool_choice" | "response_format" | "stream_options"
      >
    >
  {
    /**
     * How `generateObject` asks for its object: `json_schema` (a JSON-schema `response_format`) or `tool` (one
     * forced tool call whose arguments are the object). Default: `json_schema` for the OpenAI models (`gpt-*`,
     * `o1`...`o4`), which document it; `tool` for every other model, since tool calls are served by all of them.
     */
    readonly structuredOutput?: "json_schema" | "tool" | undefined
  }
}

/** The structured-output mode a model takes without a configured one. */
const defaultStructuredOutput = (model: string): "json_schema" | "tool" =>
  /^(gpt-|o\d)/.test(model) ? "json_schema" : "tool"

/**
 * Builds the service on the `Chat` service.
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (options: {
  readonly model: string
  readonly config?: Config.Service | undefined
}): Effect.Effect<LanguageModel.Service, never, Chat> =>
  Effect.gen(function*() {
    const chat = yield* Chat

    const prepare = (provider: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        const { structuredOutput, ...params } = { ...options.config, ...(yield* Config.getOrUndefined) }
        const mode = structuredOutput ?? defaultStructuredOutput(options.model)
        const request: CreateChatCompletionParams = {
          ...params,
          model: options.model,
          messages: yield* Request.messages(provider.prompt),
          ...(yield* Request.tools(provider)),
          ...Request.structuredOutput(provider, mode)
        }
        const objectTool = mode === "tool" && provider.responseFormat.type === "json"
          ? provider.responseFormat.objectName
          : undefined
        return { request, objectTool }
      })

    return yield* LanguageModel.make({
      generateText: (provider) =>
        Effect.flatMap(prepare(provider), ({ objectTool, request }) =>
          chat.create(request).pipe(
            Effect.mapError(toAiError("AifsLanguageModel", "generateText")),
            Effect.flatMap((answer) => parts(answer, objectTool))
          )),
      streamText: (provider) =>
        Stream.unwrap(Effect.map(prepare(provider), ({ request }) =>
          streamParts(chat.createStream(request).pipe(Stream.mapError(toAiError("AifsLanguageModel", "streamText"))))))
    })
  })

/**
 * The service as a layer on the `Chat` service.
 *
 * @since 0.3.0
 * @category layers
 */
export const layer = (options: {
  readonly model: string
  readonly config?: Config.Service | undefined
}): Layer.Layer<LanguageModel.LanguageModel, never, Chat> => Layer.effect(LanguageModel.LanguageModel, make(options))

/**
 * A model of the service, for `Effect.provide` (a layer) or to pick at run time (`yield*` it for its layer).
 * Needs only `Chat`, which `Node.layerFromEnv` and `Testing.layerEmulator` provide.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
 * import { AifsLanguageModel } from "effect-aifs/ai"
 * import * as Effect from "effect/Effect"
 *
 * export const answer = LanguageModel.generateText({ prompt: "Hello" }).pipe(
 *   Effect.provide(AifsLanguageModel.model("Llama-3.3-70B-Instruct", { max_tokens: 256 }))
 * )
 * ```
 *
 * @since 0.3.0
 * @category models
 */
export const model = (
  model: string,
  config?: Config.Service
): AiModel.Model<"aifs", LanguageModel.LanguageModel, Chat> => AiModel.make("aifs", layer({ model, config }))

/**
 * Runs `self` with these request parameters over the model's own (for example a higher `max_tokens` for one
 * call).
 *
 * @since 0.3.0
 * @category configuration
 */
export const withConfigOverride: {
  (config: Config.Service): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, config: Config.Service): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, overrides: Config.Service): Effect.Effect<A, E, R> =>
    Effect.flatMap(Config.getOrUndefined, (config) => Effect.provideService(self, Config, { ...config, ...overrides }))
)
