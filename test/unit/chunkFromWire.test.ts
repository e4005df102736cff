/**
 * `ChatCompletionChunkFromWire` (the streams' fast decoder) decodes exactly like `ChatCompletionChunk`: the same
 * value for every valid chunk, and a failure for exactly the inputs the class refuses.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import { ChatCompletionChunk, ChatCompletionChunkFromWire } from "../../src/schemas/Chat.js"

const options = { onExcessProperty: "ignore" } as const
const slow = Schema.decodeUnknownEither(ChatCompletionChunk, options)
const fast = Schema.decodeUnknownEither(ChatCompletionChunkFromWire, options)

const same = (input: unknown) => {
  const a = slow(input)
  const b = fast(input)
  assert.strictEqual(Either.isRight(b), Either.isRight(a), `one decoder accepted ${JSON.stringify(input)}`)
  if (Either.isRight(a) && Either.isRight(b)) {
    assert.instanceOf(b.right, ChatCompletionChunk)
    assert.deepStrictEqual(b.right, a.right)
    assert.strictEqual(b.right.text, a.right.text)
  }
}

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
