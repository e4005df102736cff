/**
 * `POST /chat/completions` of the emulator, plain and SSE, standard (429 when over the limit) or queued
 * (waits for capacity).
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { type ChatCompletion, type ChatCompletionChunk, CreateChatCompletionParams } from "../../schemas/Chat.js"
import { type Usage } from "../../schemas/Shared.js"
import type { CatalogueModel } from "../catalogue.js"
import { type ChatPlan, planChat } from "../generate.js"
import {
  admit,
  authenticate,
  checkSampling,
  decodeBody,
  type LimitMode,
  reject,
  requireModel,
  sseResponse
} from "../http.js"
import type { EmulatorState } from "../state.js"

const ChatRequest = Schema.extend(
  CreateChatCompletionParams,
  Schema.Struct({ stream: Schema.optional(Schema.NullOr(Schema.Boolean)) })
)

// bodies are written as their encoded (wire) types: checked by the compiler, with no per-request validation
const usageOf = (plan: ChatPlan): typeof Usage.Encoded => ({
  prompt_tokens: plan.promptTokens,
  completion_tokens: plan.completionTokens,
  total_tokens: plan.promptTokens + plan.completionTokens
})

const completion = (
  id: string,
  created: number,
  model: CatalogueModel,
  plan: ChatPlan
): typeof ChatCompletion.Encoded => ({
  id,
  object: "chat.completion",
  created,
  model: model.id,
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: plan.toolCall ? null : plan.content.join(""),
      refusal: null,
      ...(plan.reasoning.length > 0 ? { reasoning_content: plan.reasoning.join("") } : {}),
      ...(plan.toolCall
        ? {
          tool_calls: [{
            id: plan.toolCall.id,
            type: "function",
            function: { name: plan.toolCall.name, arguments: plan.toolCall.arguments }
          }]
        }
        : {})
    },
    logprobs: null,
    finish_reason: plan.finishReason
  }],
  usage: usageOf(plan)
})

const chunks = (id: string, created: number, model: CatalogueModel, plan: ChatPlan, includeUsage: boolean) => {
  const chunk = (
    delta: NonNullable<NonNullable<typeof ChatCompletionChunk.Encoded["choices"]>[number]["delta"]>,
    finish: string | null = null,
    choices = true
  ): typeof ChatCompletionChunk.Encoded => ({
    id,
    object: "chat.completion.chunk",
    created,
    model: model.id,
    choices: choices ? [{ index: 0, delta, finish_reason: finish }] : [],
    ...(choices ? {} : { usage: usageOf(plan) })
  })
  const out: Array<unknown> = [chunk({ role: "assistant", content: plan.toolCall ? null : "" })]
  for (const piece of plan.reasoning) out.push(chunk({ reasoning_content: piece }))
  if (plan.toolCall) {
    const call = plan.toolCall
    out.push(chunk({
      tool_calls: [{ index: 0, id: call.id, type: "function", function: { name: call.name, arguments: "" } }]
    }))
    // the arguments arrive in pieces, as real servers stream them
    const size = Math.max(1, Math.ceil(call.arguments.length / 3))
    for (let i = 0; i < call.arguments.length; i += size) {
      out.push(chunk({ tool_calls: [{ index: 0, function: { arguments: call.arguments.slice(i, i + size) } }] }))
    }
  }
  for (const piece of plan.content) out.push(chunk({ content: piece }))
  out.push(chunk({}, plan.finishReason))
  if (includeUsage) out.push(chunk({}, null, false))
  return out
}

const handler = (state: EmulatorState, mode: LimitMode) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const params = yield* decodeBody(ChatRequest)
    if (params.messages.length === 0) return yield* reject(400, "messages must contain at least one message")
    yield* checkSampling(params)
    const model = yield* requireModel(params.model, "chat", "chat completions")
    const plan = planChat(model, params)
    const headers = yield* admit(state, key, model, { input: plan.promptTokens, output: plan.completionTokens }, mode)
    const n = state.next()
    const id = `chatcmpl-${n.toString(36).padStart(6, "0")}`
    const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    if (params.stream === true) {
      const includeUsage = params.stream_options?.include_usage === true
      return sseResponse(chunks(id, created, model, plan, includeUsage), headers, state.streamChunkDelayMs)
    }
    return HttpServerResponse.unsafeJson(completion(id, created, model, plan), { headers })
  })

/**
 * The chat route, answering 429 (`reject`) or waiting (`wait`) when the key is over its limit.
 *
 * @since 0.1.0
 * @category routers
 */
export const router = (state: EmulatorState, mode: LimitMode) =>
  HttpRouter.empty.pipe(HttpRouter.post("/chat/completions", handler(state, mode)))
