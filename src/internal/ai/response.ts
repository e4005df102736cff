/**
 * Chat completions as `@effect/ai` response parts: a whole answer as parts, a stream of chunks as stream parts
 * (text, reasoning and tool-call pieces as they come, the calls and the finish at the end).
 * @internal
 */
import * as AiError from "@effect/ai/AiError"
import type * as Response from "@effect/ai/Response"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  isFunctionCall,
  type ToolCallDelta
} from "../../schemas/Chat.js"
import type { Usage } from "../../schemas/Shared.js"

/** The service's finish reason in `@effect/ai`'s words (no reason: `unknown`; one it does not know: `other`). */
export const finishReason = (reason: string | null | undefined): Response.FinishReason => {
  switch (reason) {
    case undefined:
    case null:
      return "unknown"
    case "stop":
    case "length":
      return reason
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case "content_filter":
      return "content-filter"
    default:
      return "other"
  }
}

/** Token usage in `@effect/ai`'s form (all undefined when the service sent none). */
export const usage = (u: Usage | null | undefined): typeof Response.Usage.Encoded => ({
  inputTokens: u?.prompt_tokens,
  outputTokens: u?.completion_tokens ?? undefined,
  totalTokens: u?.total_tokens,
  ...(typeof u?.completion_tokens_details?.reasoning_tokens === "number"
    ? { reasoningTokens: u.completion_tokens_details.reasoning_tokens }
    : {}),
  // read from the prompt cache, under OpenAI's name or an Anthropic-style proxy's
  ...(typeof u?.cacheReadTokens === "number" ? { cachedInputTokens: u.cacheReadTokens } : {})
})

/**
 * The finish part's fields: the reason, the usage and, where the answer reports a prompt-cache write (which
 * `@effect/ai`'s usage has no field for), `metadata.aifs.cacheWriteTokens`.
 */
const finish = (reason: Response.FinishReason, u: Usage | null | undefined) =>
  ({
    type: "finish",
    reason,
    usage: usage(u),
    ...(typeof u?.cacheWriteTokens === "number" ? { metadata: { aifs: { cacheWriteTokens: u.cacheWriteTokens } } } : {})
  }) as const

const metadata = (
  answer: { readonly id: string; readonly model: string; readonly created?: number | null | undefined }
) =>
  ({
    type: "response-metadata",
    ...(answer.id === "" ? {} : { id: answer.id }),
    ...(answer.model === "" ? {} : { modelId: answer.model }),
    ...(typeof answer.created === "number" ? { timestamp: new Date(answer.created * 1000).toISOString() } : {})
  }) as const

const parseArguments = (method: string, name: string, text: string): Effect.Effect<unknown, AiError.MalformedOutput> =>
  Effect.try({
    try: () => text.trim() === "" ? {} : JSON.parse(text) as unknown,
    catch: (cause) =>
      new AiError.MalformedOutput({
        module: "AifsLanguageModel",
        method,
        description: `the arguments of the call to ${name} are not JSON`,
        cause
      })
  })

/**
 * A whole answer as parts. A call to `objectTool` (the tool a structured output was asked through) is the object:
 * its arguments become the text that `generateObject` decodes.
 */
export const parts = (
  answer: ChatCompletion,
  objectTool: string | undefined
): Effect.Effect<Array<Response.PartEncoded>, AiError.MalformedOutput> =>
  Effect.gen(function*() {
    const out: Array<Response.PartEncoded> = [metadata(answer)]
    const choice = answer.choices[0]
    const message = choice?.message
    if (typeof message?.reasoning_content === "string" && message.reasoning_content !== "") {
      out.push({ type: "reasoning", text: message.reasoning_content })
    }
    if (typeof message?.content === "string" && message.content !== "") {
      out.push({ type: "text", text: message.content })
    }
    let reason = finishReason(choice?.finish_reason)
    // function calls only: a custom tool's call or one of a new kind has no toolkit tool to run
    for (const call of (message?.tool_calls ?? []).filter(isFunctionCall)) {
      if (call.function.name === objectTool) {
        out.push({ type: "text", text: call.function.arguments })
        reason = "stop"
        continue
      }
      const params = yield* parseArguments("generateText", call.function.name, call.function.arguments)
      out.push({ type: "tool-call", id: call.id, name: call.function.name, params, providerExecuted: false })
    }
    out.push(finish(reason, answer.usage))
    return out
  })

interface OpenCall {
  readonly id: string
  readonly name: string
  arguments: string
}

/** What a stream has opened so far: its text and reasoning blocks and its tool calls by index. */
class StreamState {
  started = false
  text = false
  reasoning = false
  reason: string | null | undefined = undefined
  usage: Usage | null | undefined = undefined
  readonly calls = new Map<number, OpenCall>()

  /** The parts of one chunk. */
  step(chunk: ChatCompletionChunk): Array<Response.StreamPartEncoded> {
    const out: Array<Response.StreamPartEncoded> = []
    if (!this.started) {
      this.started = true
      out.push(metadata(chunk))
    }
    if (chunk.usage) this.usage = chunk.usage
    const choice = chunk.choices[0]
    if (choice === undefined) return out
    const delta = choice.delta
    if (typeof delta.reasoning_content === "string" && delta.reasoning_content !== "") {
      if (!this.reasoning) out.push({ type: "reasoning-start", id: "reasoning_0" })
      this.reasoning = true
      out.push({ type: "reasoning-delta", id: "reasoning_0", delta: delta.reasoning_content })
    }
    if (typeof delta.content === "string" && delta.content !== "") {
      out.push(...this.endReasoning())
      if (!this.text) out.push({ type: "text-start", id: "text_0" })
      this.text = true
      out.push({ type: "text-delta", id: "text_0", delta: delta.content })
    }
    for (const piece of delta.tool_calls ?? []) out.push(...this.toolPiece(piece))
    if (choice.finish_reason) this.reason = choice.finish_reason
    return out
  }

  private endReasoning(): Array<Response.StreamPartEncoded> {
    if (!this.reasoning) return []
    this.reasoning = false
    return [{ type: "reasoning-end", id: "reasoning_0" }]
  }

  private toolPiece(piece: ToolCallDelta): Array<Response.StreamPartEncoded> {
    const open = this.calls.get(piece.index)
    const args = piece.function?.arguments ?? ""
    if (open === undefined) {
      const call = { id: piece.id ?? `call_${piece.index}`, name: piece.function?.name ?? "", arguments: args }
      this.calls.set(piece.index, call)
      return [
        { type: "tool-params-start", id: call.id, name: call.name },
        ...(args === "" ? [] : [{ type: "tool-params-delta" as const, id: call.id, delta: args }])
      ]
    }
    open.arguments += args
    return args === "" ? [] : [{ type: "tool-params-delta", id: open.id, delta: args }]
  }

  /** The parts that close the stream: open blocks ended, every tool call whole, the finish. */
  end(): Effect.Effect<Array<Response.StreamPartEncoded>, AiError.MalformedOutput> {
    return Effect.gen(this, function*() {
      const out: Array<Response.StreamPartEncoded> = this.endReasoning()
      if (this.text) out.push({ type: "text-end", id: "text_0" })
      for (const call of this.calls.values()) {
        out.push({ type: "tool-params-end", id: call.id })
        const params = yield* parseArguments("streamText", call.name, call.arguments)
        out.push({ type: "tool-call", id: call.id, name: call.name, params, providerExecuted: false })
      }
      out.push(finish(finishReason(this.reason), this.usage))
      return out
    })
  }
}

/** A stream of chunks as stream parts, each run with its own state. */
export const streamParts = <E, R>(
  chunks: Stream.Stream<ChatCompletionChunk, E, R>
): Stream.Stream<Response.StreamPartEncoded, E | AiError.MalformedOutput, R> =>
  Stream.suspend(() => {
    const state = new StreamState()
    return Stream.concat(
      Stream.mapConcat(chunks, (chunk) => state.step(chunk)),
      Stream.flattenIterables(Stream.fromEffect(Effect.suspend(() => state.end())))
    )
  })
