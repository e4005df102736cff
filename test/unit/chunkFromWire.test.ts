/**
 * `ChatCompletionChunkFromWire` (the streams' fast decoder) decodes exactly like `ChatCompletionChunk`: the same
 * value for every valid chunk, and a failure for exactly the inputs the class refuses.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import { ChatCompletionChunk, ChatCompletionChunkFromWire } from "../../src/schemas/Chat.js"
import { decodesLike } from "../helpers/fromWire.js"

const { inherited, same, underOptions } = decodesLike(ChatCompletionChunk, ChatCompletionChunkFromWire)

describe("ChatCompletionChunkFromWire", () => {
  it("decodes every valid chunk (any fields, defaults left out, extra fields) to the same value", () => {
    const wire = Arbitrary.make(Schema.encodedSchema(ChatCompletionChunk))
    const extra = FastCheck.dictionary(FastCheck.string({ maxLength: 8 }), FastCheck.jsonValue({ maxDepth: 2 }), {
      maxKeys: 3
    })
    FastCheck.assert(
      FastCheck.property(wire, extra, (chunk, more) => same(JSON.parse(JSON.stringify({ ...more, ...chunk })))),
      { numRuns: 400 }
    )
  })

  it("the common chunk (checked by hand: text deltas, no usage, no tool calls) too, extra fields at every level", () => {
    const text = FastCheck.option(FastCheck.string({ maxLength: 6 }), { nil: null })
    const extra = FastCheck.dictionary(FastCheck.constantFrom("x", "tool", "id2"), FastCheck.jsonValue({ maxDepth: 1 }))
    const delta = FastCheck.record(
      { role: text, content: text, reasoning_content: text, refusal: text, tool_calls: FastCheck.constant(null) },
      { requiredKeys: [] }
    )
    const choice = FastCheck.record({
      index: FastCheck.nat(3),
      delta: FastCheck.tuple(extra, delta).map(([more, d]) => ({ ...more, ...d })),
      finish_reason: FastCheck.option(FastCheck.constantFrom("stop", "length", "other"), { nil: null }),
      logprobs: FastCheck.jsonValue({ maxDepth: 1 })
    }, { requiredKeys: ["index", "delta"] })
    const chunk = FastCheck.record({
      id: FastCheck.string({ maxLength: 4 }),
      object: text,
      created: FastCheck.option(FastCheck.nat(), { nil: null }),
      model: FastCheck.string({ maxLength: 4 }),
      system_fingerprint: text,
      usage: FastCheck.constant(null),
      choices: FastCheck.array(FastCheck.tuple(extra, choice).map(([more, c]) => ({ ...more, ...c })), { maxLength: 3 })
    }, { requiredKeys: ["choices"] })
    FastCheck.assert(
      FastCheck.property(extra, chunk, (more, c) => same(JSON.parse(JSON.stringify({ ...more, ...c })))),
      { numRuns: 400 }
    )
    // a field of the wrong type is refused by both, wherever it is
    for (
      const wrong of [{ id: 1 }, { model: null }, { created: "1" }, { choices: [{ index: 0, delta: { content: 1 } }] }]
    ) {
      same({ choices: [], ...wrong })
    }
    // a field set to undefined (never from JSON, but a value a user may decode) is left to the schema
    for (
      const input of [{ id: undefined }, { object: undefined }, { choices: [{ index: 0, delta: { role: undefined } }] }]
    ) {
      same({ choices: [], ...input })
    }
  })

  it("decodes as the class under the caller's options, and never reads an inherited field", () => {
    underOptions({ id: "c", choices: [{ index: 0, delta: { content: "x", extra: 1 } }], extra: 2 })
    inherited()
  })

  it("refuses what the class refuses, accepts what it accepts, for arbitrary JSON", () => {
    FastCheck.assert(FastCheck.property(FastCheck.jsonValue({ maxDepth: 4 }), same), { numRuns: 400 })
  })

  it("fills the defaults the class fills: id, model, choices, index, delta, tool call index", () => {
    const inputs = [
      {},
      { choices: [{}] },
      { choices: [{ delta: { tool_calls: [{ function: { arguments: "{" } }] } }] },
      { id: "c", model: "m", choices: [{ index: 1, delta: { content: "x" }, finish_reason: "stop" }] },
      { choices: [], usage: { prompt_tokens: 3, total_tokens: 5 } },
      { choices: null },
      { usage: { prompt_tokens: "three" } }
    ]
    for (const input of inputs) same(input)
    const decoded = Schema.decodeUnknownSync(ChatCompletionChunkFromWire)({
      choices: [{ delta: { tool_calls: [{ function: { arguments: "{" } }] } }]
    })
    assert.strictEqual(decoded.id, "")
    assert.strictEqual(decoded.choices[0]?.index, 0)
    assert.strictEqual(decoded.choices[0]?.delta.tool_calls?.[0]?.index, 0)
  })
})
