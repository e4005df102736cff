/**
 * OpenTelemetry `gen_ai.*` attributes for operation spans. Never the key, never the prompt.
 * @internal
 */
import * as Effect from "effect/Effect"

/** The attributes of an operation on a model. */
export const requestAttributes = (operation: string, model: string | undefined): Record<string, unknown> => ({
  "gen_ai.system": "aifs",
  "gen_ai.operation.name": operation,
  ...(model === undefined ? {} : { "gen_ai.request.model": model })
})

/** Annotates the current span with the operation and model. */
export const annotateRequest = (operation: string, model: string | undefined) =>
  Effect.annotateCurrentSpan(requestAttributes(operation, model))

/**
 * Annotates the current span with the response's model and token usage, where a decoded body has them (chat and
 * completions count `prompt_tokens` / `completion_tokens`, responses `input_tokens` / `output_tokens`).
 */
export const annotateResponse = (response: unknown): Effect.Effect<void> => {
  if (typeof response !== "object" || response === null) return Effect.void
  const { model, usage } = response as { readonly model?: unknown; readonly usage?: Record<string, unknown> | null }
  const count = (key: string) => typeof usage?.[key] === "number" ? usage[key] : undefined
  const input = count("prompt_tokens") ?? count("input_tokens")
  return Effect.annotateCurrentSpan({
    ...(typeof model === "string" && model !== "" ? { "gen_ai.response.model": model } : {}),
    ...(input === undefined ? {} : {
      "gen_ai.usage.input_tokens": input,
      "gen_ai.usage.output_tokens": count("completion_tokens") ?? count("output_tokens") ?? 0
    })
  })
}
