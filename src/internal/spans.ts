/**
 * OpenTelemetry `gen_ai.*` attributes for operation spans. Never the key, never the prompt.
 * @internal
 */
import * as Effect from "effect/Effect"
import type { Usage } from "../schemas/Shared.js"

/** Annotates the current span with the operation and model. */
export const annotateRequest = (operation: string, model: string | undefined) =>
  Effect.annotateCurrentSpan({
    "gen_ai.system": "aifs",
    "gen_ai.operation.name": operation,
    ...(model === undefined ? {} : { "gen_ai.request.model": model })
  })

/** Annotates the current span with the response's model and token usage. */
export const annotateResponse = (response: {
  readonly model?: string | undefined
  readonly usage?: Usage | null | undefined
}) =>
  Effect.annotateCurrentSpan({
    ...(response.model ? { "gen_ai.response.model": response.model } : {}),
    ...(response.usage
      ? {
        "gen_ai.usage.input_tokens": response.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": response.usage.completion_tokens ?? 0
      }
      : {})
  })
