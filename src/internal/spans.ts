/**
 * OpenTelemetry `gen_ai.*` attributes for operation spans. Never the key, never the prompt.
 * @internal
 */
import * as Effect from "effect/Effect"
import type { Usage } from "../schemas/Shared.js"

/** The attributes of an operation on a model. */
export const requestAttributes = (operation: string, model: string | undefined): Record<string, unknown> => ({
  "gen_ai.system": "aifs",
  "gen_ai.operation.name": operation,
  ...(model === undefined ? {} : { "gen_ai.request.model": model })
})

/** Annotates the current span with the operation and model. */
export const annotateRequest = (operation: string, model: string | undefined) =>
  Effect.annotateCurrentSpan(requestAttributes(operation, model))

/** Annotates the current span with the response's model and token usage, where a decoded body has them. */
export const annotateResponse = (response: unknown): Effect.Effect<void> => {
  if (typeof response !== "object" || response === null) return Effect.void
  const { model, usage } = response as { readonly model?: unknown; readonly usage?: Partial<Usage> | null }
  return Effect.annotateCurrentSpan({
    ...(typeof model === "string" && model !== "" ? { "gen_ai.response.model": model } : {}),
    ...(typeof usage === "object" && usage !== null && typeof usage.prompt_tokens === "number"
      ? {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens ?? 0
      }
      : {})
  })
}
