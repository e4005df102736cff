import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Tracer from "effect/Tracer"
import { annotateResponse } from "../../src/internal/spans.js"

/** The attributes `annotateResponse(body)` leaves on a fresh span. */
const attributesAfter = (body: unknown) =>
  Effect.gen(function*() {
    const span = yield* Effect.makeSpan("test")
    yield* Effect.withParentSpan(annotateResponse(body), span)
    return Object.fromEntries((span as Tracer.Span).attributes)
  })

describe("annotateResponse", () => {
  it.effect("reads the model and the usage of chat, completions and responses bodies", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(
        yield* attributesAfter({ model: "m", usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } }),
        { "gen_ai.response.model": "m", "gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 4 }
      )
      assert.deepStrictEqual(
        yield* attributesAfter({ model: "m", usage: { input_tokens: 5, output_tokens: 6, total_tokens: 11 } }),
        { "gen_ai.response.model": "m", "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 6 }
      )
      // embeddings count no output
      assert.deepStrictEqual(yield* attributesAfter({ usage: { prompt_tokens: 8, total_tokens: 8 } }), {
        "gen_ai.usage.input_tokens": 8,
        "gen_ai.usage.output_tokens": 0
      })
    }))

  it.effect("leaves bodies without them alone, whatever their shape", () =>
    Effect.gen(function*() {
      for (const body of [null, undefined, "text", 42, [], [1, 2], { usage: null }, { usage: "x", model: 7 }, {}]) {
        assert.deepStrictEqual(yield* attributesAfter(body), {})
      }
    }))
})
