/**
 * The prompt cache's counts on a call's span, from each form an answer reports them in: OpenAI's chat
 * (`prompt_tokens_details`) and Responses (`input_tokens_details`) details, else an Anthropic-style proxy's
 * `cache_read_input_tokens` and `cache_creation_input_tokens`; absent when the answer says nothing of them.
 */
import { assert, describe, it } from "@effect/vitest"
import { ResponseSummary } from "../../src/internal/telemetry.js"

const attributesOf = (...bodies: ReadonlyArray<unknown>) => {
  const summary = new ResponseSummary()
  for (const body of bodies) summary.observe(body)
  return summary.attributes()
}

const read = "gen_ai.usage.cache_read.input_tokens"
const written = "gen_ai.usage.cache_creation.input_tokens"

describe("the prompt cache's counts on the span", () => {
  it("chat: prompt_tokens_details' cached_tokens and cache_write_tokens", () => {
    const attributes = attributesOf({
      usage: {
        prompt_tokens: 100,
        completion_tokens: 5,
        prompt_tokens_details: { cached_tokens: 60, cache_write_tokens: 30 }
      }
    })
    assert.strictEqual(attributes[read], 60)
    assert.strictEqual(attributes[written], 30)
    assert.strictEqual(attributes["gen_ai.usage.input_tokens"], 100)
  })

  it("responses: input_tokens_details' cached_tokens", () => {
    const attributes = attributesOf({
      usage: { input_tokens: 9, output_tokens: 1, input_tokens_details: { cached_tokens: 4 } }
    })
    assert.strictEqual(attributes[read], 4)
    assert.notProperty(attributes, written)
  })

  it("an Anthropic-style proxy's names, when the details say nothing", () => {
    const attributes = attributesOf({
      usage: { prompt_tokens: 50, cache_read_input_tokens: 20, cache_creation_input_tokens: 10 }
    })
    assert.strictEqual(attributes[read], 20)
    assert.strictEqual(attributes[written], 10)
    // the details win where both are given
    const both = attributesOf({
      usage: {
        prompt_tokens: 50,
        prompt_tokens_details: { cached_tokens: 7, cache_write_tokens: 3 },
        cache_read_input_tokens: 20,
        cache_creation_input_tokens: 10
      }
    })
    assert.strictEqual(both[read], 7)
    assert.strictEqual(both[written], 3)
  })

  it("nothing said, nothing shown; a later chunk without them keeps the earlier counts; zeros are shown", () => {
    const none = attributesOf({ usage: { prompt_tokens: 5, completion_tokens: 1, prompt_tokens_details: null } })
    assert.notProperty(none, read)
    assert.notProperty(none, written)
    const kept = attributesOf(
      { usage: { prompt_tokens: 5, prompt_tokens_details: { cached_tokens: 2 } } },
      { usage: { prompt_tokens: 5, completion_tokens: 3 } }
    )
    assert.strictEqual(kept[read], 2)
    const zeros = attributesOf({
      usage: { prompt_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }
    })
    assert.strictEqual(zeros[read], 0)
    assert.strictEqual(zeros[written], 0)
  })
})
