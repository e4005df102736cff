/**
 * `POST /completions` of the emulator (open-source models only), plain and SSE.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Completion, CreateCompletionParams } from "../../schemas/Completions.js"
import { Usage } from "../../schemas/Shared.js"
import { planCompletion } from "../generate.js"
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
import type { EmulatorState } from "../state.js"
import { countTokens } from "../text.js"

const CompletionRequest = Schema.extend(
  CreateCompletionParams,
  Schema.Struct({ stream: Schema.optional(Schema.NullOr(Schema.Boolean)) })
)

const handler = (state: EmulatorState, mode: LimitMode) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const params = yield* decodeBody(CompletionRequest)
    const model = yield* requireModel(params.model, "chat", "text completions", key)
    if (model.proprietary) return yield* reject(400, `Model '${model.id}' does not support /completions`)
    yield* checkSampling(params)
    const prompts = typeof params.prompt === "string" ? [params.prompt] : params.prompt
    if (prompts.length === 0) return yield* reject(400, "prompt must not be empty")
    // each prompt is its own sequence: each must fit the window with the cap
    yield* Effect.forEach(prompts, (prompt) => fitsContext(model, countTokens(prompt), params.max_tokens), {
      discard: true
    })
    const plans = prompts.map((prompt) => planCompletion(model, prompt, params.max_tokens))
    const promptTokens = prompts.reduce((n, p) => n + countTokens(p), 0)
    const completionTokens = plans.reduce((n, p) => n + p.tokens, 0)
    const usage = new Usage({
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens
    })
    const headers = yield* admit(state, key, model, { input: promptTokens, output: completionTokens }, mode)
    const id = `cmpl-${state.next().toString(36).padStart(6, "0")}`
    const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const encode = (choices: Completion["choices"], withUsage: boolean) =>
      Schema.encodeSync(Completion)(
        new Completion({
          id,
          object: "text_completion",
          created,
          model: model.id,
          choices,
          ...(withUsage ? { usage } : {})
        })
      )
    if (params.stream === true) {
      const out: Array<unknown> = []
      plans.forEach((plan, index) => {
        for (const text of plan.pieces) out.push(encode([{ index, text, logprobs: null, finish_reason: null }], false))
        out.push(encode([{ index, text: "", logprobs: null, finish_reason: plan.finishReason }], false))
      })
      if (params.stream_options?.include_usage === true) out.push(encode([], true))
      return sseResponse(out, headers, state.streamChunkDelayMs)
    }
    return HttpServerResponse.unsafeJson(
      encode(
        plans.map((plan, index) => ({
          index,
          text: plan.pieces.join(""),
          logprobs: null,
          finish_reason: plan.finishReason
        })),
        true
      ),
      { headers }
    )
  })

/**
 * The completions route.
 *
 * @since 0.1.0
 * @category routers
 */
export const router = (state: EmulatorState, mode: LimitMode) =>
  HttpRouter.empty.pipe(HttpRouter.post("/completions", handler(state, mode)))
