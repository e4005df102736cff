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
  fitsContext,
  type LimitMode,
  reject,
  requireModel,
  sseResponse
} from "../http.js"
import type { CacheUse } from "../promptCache.js"
import type { EmulatorState } from "../state.js"

const ChatRequest = Schema.extend(
  CreateChatCompletionParams,
  Schema.Struct({ stream: Schema.optional(Schema.NullOr(Schema.Boolean)) })
)

// bodies are written as their encoded (wire) types: checked by the compiler, with no per-request validation
/** The usage of an answer; a Claude model's adds what its prompt cache read and wrote, as Anthropic-style proxies do. */
const usageOf = (plan: ChatPlan, cache: CacheUse | undefined): typeof Usage.Encoded => {
  const counts = {
    prompt_tokens: plan.promptTokens,
    completion_tokens: plan.completionTokens,
    total_tokens: plan.promptTokens + plan.completionTokens
  }
  if (cache === undefined) return counts
  // both within the prompt's tokens, which include them
  const read = Math.min(cache.read, plan.promptTokens)
  const written = Math.min(cache.written, plan.promptTokens - read)
  return {
    ...counts,
    prompt_tokens_details: { cached_tokens: read },
    cache_creation_input_tokens: written,
    cache_read_input_tokens: read
  }
}

const completion = (
  id: string,
  created: number,
  model: CatalogueModel,
  plan: ChatPlan,
  usage: typeof Usage.Encoded
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
  usage
})

const chunks = (
  id: string,
  created: number,
  model: CatalogueModel,
  plan: ChatPlan,
  usage: typeof Usage.Encoded | undefined
) => {
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
    ...(choices ? {} : { usage })
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
  if (usage !== undefined) out.push(chunk({}, null, false))
  return out
}

const handler = (state: EmulatorState, mode: LimitMode) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const params = yield* decodeBody(ChatRequest)
    if (params.messages.length === 0) return yield* reject(400, "messages must contain at least one message")
    yield* checkSampling(params)
    const model = yield* requireModel(params.model, "chat", "chat completions", key)
    const plan = planChat(model, params)
    yield* fitsContext(model, plan.promptTokens, params.max_completion_tokens ?? params.max_tokens)
    const headers = yield* admit(state, key, model, { input: plan.promptTokens, output: plan.completionTokens }, mode)
    const n = state.next()
    const id = `chatcmpl-${n.toString(36).padStart(6, "0")}`
    const now = yield* Clock.currentTimeMillis
    const created = Math.floor(now / 1000)
    // an admitted request reads and writes the prompt cache, streamed or not
    const usage = usageOf(plan, state.promptCache.use(key.key, model.id, params, now))
    if (params.stream === true) {
      const last = params.stream_options?.include_usage === true ? usage : undefined
      return sseResponse(chunks(id, created, model, plan, last), headers, state.streamChunkDelayMs)
    }
    return HttpServerResponse.unsafeJson(completion(id, created, model, plan, usage), { headers })
  })

/**
 * The chat route, answering 429 (`reject`) or waiting (`wait`) when the key is over its limit.
 *
 * @since 0.1.0
 * @category routers
 */
export const router = (state: EmulatorState, mode: LimitMode) =>
  HttpRouter.empty.pipe(HttpRouter.post("/chat/completions", handler(state, mode)))
