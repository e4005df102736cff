/**
 * `POST /responses` of the emulator (the proprietary OpenAI models only, as on the service): text, function
 * calls, `text.format` JSON-schema output, plain or as typed SSE events without a `[DONE]` terminator.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { ChatMessage, CreateChatCompletionParams, FunctionTool } from "../../schemas/Chat.js"
import { CreateResponseParams } from "../../schemas/Responses.js"
import type { CatalogueModel } from "../catalogue.js"
import { type ChatPlan, exampleOf, planChat } from "../generate.js"
import {
  admit,
  authenticate,
  checkSampling,
  decodeBody,
  fitsContext,
  type LimitMode,
  reject,
  requireModel
} from "../http.js"
import type { EmulatorState } from "../state.js"
import { countTokens } from "../text.js"

const ResponseRequest = Schema.extend(
  CreateResponseParams,
  Schema.Struct({ stream: Schema.optional(Schema.NullOr(Schema.Boolean)) })
)

type ResponseRequest = typeof ResponseRequest.Type

const isOpenAIModel = (id: string) => /^(gpt-|o\d)/.test(id)

const toMessages = (params: ResponseRequest): Array<ChatMessage> => {
  const messages: Array<ChatMessage> = []
  if (params.instructions) messages.push({ role: "system", content: params.instructions })
  if (typeof params.input === "string") return [...messages, { role: "user", content: params.input }]
  for (const item of params.input) {
    if (item.type === "function_call_output") {
      messages.push({ role: "tool", tool_call_id: item.call_id, content: item.output })
      continue
    }
    const content = typeof item.content === "string"
      ? item.content
      : item.content.map((part) => part.type === "input_text" ? part.text : "").join("")
    messages.push(
      item.role === "assistant"
        ? { role: "assistant", content }
        : item.role === "system"
        ? { role: "system", content }
        : item.role === "developer"
        ? { role: "developer", content }
        : { role: "user", content }
    )
  }
  return messages
}

const toChat = (params: ResponseRequest): CreateChatCompletionParams => {
  const tools: Array<FunctionTool> = (params.tools ?? []).map((tool) => ({
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      ...(tool.parameters === undefined ? {} : { parameters: tool.parameters })
    }
  }))
  const choice = params.tool_choice
  const toolChoice = typeof choice === "string"
    ? choice
    : typeof choice === "object" && choice !== null && "name" in choice
    ? { type: "function", function: { name: String((choice as { name: unknown }).name) } }
    : undefined
  return {
    model: params.model,
    messages: toMessages(params),
    ...(tools.length > 0 ? { tools } : {}),
    ...(toolChoice === undefined ? {} : { tool_choice: toolChoice as CreateChatCompletionParams["tool_choice"] }),
    ...(params.max_output_tokens === undefined ? {} : { max_tokens: params.max_output_tokens })
  }
}

interface Plan {
  readonly chat: ChatPlan
  /** The output text pieces (the JSON of a schema format in one piece). */
  readonly pieces: ReadonlyArray<string>
  readonly outputTokens: number
}

const plan = (model: CatalogueModel, params: ResponseRequest): Plan => {
  const chat = planChat(model, toChat(params))
  const format = params.text?.format
  if (chat.toolCall === undefined && format !== undefined && format.type !== "text") {
    const json = JSON.stringify(
      format.type === "json_schema" ? exampleOf(format.schema) : { answer: chat.content.join("") }
    )
    return { chat, pieces: [json], outputTokens: countTokens(json) }
  }
  return { chat, pieces: chat.content, outputTokens: chat.completionTokens }
}

const responseBody = (
  id: string,
  created: number,
  model: CatalogueModel,
  params: ResponseRequest,
  p: Plan,
  status: "in_progress" | "completed"
) => {
  const call = p.chat.toolCall
  const output = status === "in_progress" ? [] : call
    ? [{
      type: "function_call",
      id: `fc_${id.slice(5)}`,
      call_id: call.id,
      name: call.name,
      arguments: call.arguments,
      status: "completed"
    }]
    : [
      ...(p.chat.reasoning.length > 0 ? [{ type: "reasoning", id: `rs_${id.slice(5)}`, summary: [] }] : []),
      {
        type: "message",
        id: `msg_${id.slice(5)}`,
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: p.pieces.join(""), annotations: [], logprobs: [] }]
      }
    ]
  const incomplete = status === "completed" && p.chat.finishReason === "length"
  return {
    id,
    object: "response",
    created_at: created,
    model: model.id,
    status: incomplete ? "incomplete" : status,
    output,
    instructions: params.instructions ?? null,
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    error: null,
    // the request's settings, echoed as OpenAI does
    tools: (params.tools ?? []).map((tool) => ({ strict: null, description: null, parameters: null, ...tool })),
    tool_choice: params.tool_choice ?? "auto",
    parallel_tool_calls: true,
    temperature: params.temperature ?? 1,
    top_p: params.top_p ?? 1,
    max_output_tokens: params.max_output_tokens ?? null,
    metadata: params.metadata ?? {},
    // no usage until it is done (the document has no null for it)
    ...(status === "in_progress" ? {} : {
      usage: {
        input_tokens: p.chat.promptTokens,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens: p.outputTokens,
        output_tokens_details: { reasoning_tokens: p.chat.reasoning.reduce((n, piece) => n + countTokens(piece), 0) },
        total_tokens: p.chat.promptTokens + p.outputTokens
      }
    })
  }
}

const events = (id: string, created: number, model: CatalogueModel, params: ResponseRequest, p: Plan) => {
  const out: Array<Record<string, unknown>> = []
  const emit = (type: string, body: Record<string, unknown>) => out.push({ type, sequence_number: out.length, ...body })
  emit("response.created", { response: responseBody(id, created, model, params, p, "in_progress") })
  emit("response.in_progress", { response: responseBody(id, created, model, params, p, "in_progress") })
  // reasoning summaries are events this client does not model: they show that unknown types are skipped
  for (const piece of p.chat.reasoning) {
    emit("response.reasoning_summary_text.delta", { item_id: `rs_${id.slice(5)}`, output_index: 0, delta: piece })
  }
  const final = responseBody(id, created, model, params, p, "completed")
  const item = final.output[final.output.length - 1]!
  const index = final.output.length - 1
  if (p.chat.toolCall) {
    emit("response.output_item.added", { output_index: index, item: { ...item, arguments: "", status: "in_progress" } })
    const args = p.chat.toolCall.arguments
    const size = Math.max(1, Math.ceil(args.length / 3))
    for (let i = 0; i < args.length; i += size) {
      emit("response.function_call_arguments.delta", {
        item_id: item.id,
        output_index: index,
        delta: args.slice(i, i + size)
      })
    }
    emit("response.function_call_arguments.done", { item_id: item.id, output_index: index, arguments: args })
  } else {
    emit("response.output_item.added", { output_index: index, item: { ...item, content: [], status: "in_progress" } })
    const part = { item_id: item.id, output_index: index, content_index: 0 }
    emit("response.content_part.added", {
      ...part,
      part: { type: "output_text", text: "", annotations: [], logprobs: [] }
    })
    for (const piece of p.pieces) emit("response.output_text.delta", { ...part, delta: piece, logprobs: [] })
    const text = p.pieces.join("")
    emit("response.output_text.done", { ...part, text, logprobs: [] })
    emit("response.content_part.done", { ...part, part: { type: "output_text", text, annotations: [], logprobs: [] } })
  }
  emit("response.output_item.done", { output_index: index, item })
  emit(final.status === "incomplete" ? "response.incomplete" : "response.completed", { response: final })
  return out
}

const handler = (state: EmulatorState, mode: LimitMode) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const params = yield* decodeBody(ResponseRequest)
    const model = yield* requireModel(params.model, "chat", "responses", key)
    if (!isOpenAIModel(model.id)) {
      return yield* reject(
        400,
        `Model '${model.id}' does not support the Responses API: use an OpenAI model such as gpt-4.1`
      )
    }
    if (typeof params.input !== "string" && params.input.length === 0) {
      return yield* reject(400, "input must not be empty")
    }
    yield* checkSampling(params)
    const p = plan(model, params)
    yield* fitsContext(model, p.chat.promptTokens, params.max_output_tokens)
    const headers = yield* admit(state, key, model, { input: p.chat.promptTokens, output: p.outputTokens }, mode)
    const id = `resp_${state.next().toString(36).padStart(8, "0")}`
    const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    if (params.stream === true) {
      const lines = Stream.fromIterable(
        events(id, created, model, params, p).map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`)
      )
      const paced = state.streamChunkDelayMs > 0
        ? Stream.tap(lines, () => Effect.sleep(state.streamChunkDelayMs))
        : lines
      return HttpServerResponse.stream(Stream.encodeText(paced), {
        contentType: "text/event-stream",
        headers: { ...headers, "cache-control": "no-cache" }
      })
    }
    return HttpServerResponse.unsafeJson(responseBody(id, created, model, params, p, "completed"), { headers })
  })

/**
 * The responses route.
 *
 * @since 0.1.0
 * @category routers
 */
export const router = (state: EmulatorState, mode: LimitMode) =>
  HttpRouter.empty.pipe(HttpRouter.post("/responses", handler(state, mode)))
