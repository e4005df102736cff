/**
 * `ChatCompletionFromWire` (`Chat.create`'s fast decoder) decodes exactly like `ChatCompletion`: the same value for
 * every valid answer, and a failure for exactly the inputs the class refuses.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import { ChatCompletion, ChatCompletionFromWire } from "../../src/schemas/Chat.js"
import { Usage } from "../../src/schemas/Shared.js"
import { decodesLike } from "../helpers/fromWire.js"

const { fast, inherited, same, underOptions } = decodesLike(ChatCompletion, ChatCompletionFromWire)

const text = FastCheck.option(FastCheck.string({ maxLength: 6 }), { nil: null })
const extra = FastCheck.dictionary(FastCheck.constantFrom("x", "tool", "id2"), FastCheck.jsonValue({ maxDepth: 1 }))
const withExtra = <A extends object>(value: FastCheck.Arbitrary<A>) =>
  FastCheck.tuple(extra, value).map(([more, v]) => ({ ...more, ...v }))

describe("ChatCompletionFromWire", () => {
  it("decodes every valid answer (any fields, tool calls, defaults left out, extra fields) to the same value", () => {
    const wire = Arbitrary.make(Schema.encodedSchema(ChatCompletion))
    FastCheck.assert(
      FastCheck.property(withExtra(wire), (answer) => same(JSON.parse(JSON.stringify(answer)))),
      { numRuns: 400 }
    )
  })

  it("the common answer (checked by hand: text messages, no tool calls) too, extra fields at every level", () => {
    const message = FastCheck.record(
      {
        role: FastCheck.constantFrom("assistant", "other"),
        content: text,
        reasoning_content: text,
        refusal: text,
        tool_calls: FastCheck.constant(null)
      },
      { requiredKeys: [] }
    )
    const choice = FastCheck.record({
      index: FastCheck.nat(3),
      message: withExtra(message),
      finish_reason: FastCheck.option(FastCheck.constantFrom("stop", "length", "other"), { nil: null }),
      logprobs: FastCheck.jsonValue({ maxDepth: 1 })
    }, { requiredKeys: ["message"] })
    const usage = FastCheck.record({
      prompt_tokens: FastCheck.nat(),
      completion_tokens: FastCheck.option(FastCheck.nat(), { nil: null }),
      total_tokens: FastCheck.nat()
    }, { requiredKeys: [] })
    const answer = FastCheck.record({
      id: FastCheck.string({ maxLength: 4 }),
      object: text,
      created: FastCheck.option(FastCheck.nat(), { nil: null }),
      model: FastCheck.string({ maxLength: 4 }),
      system_fingerprint: text,
      service_tier: text,
      usage: FastCheck.option(withExtra(usage), { nil: null }),
      choices: FastCheck.array(withExtra(choice), { maxLength: 3 })
    }, { requiredKeys: ["choices"] })
    FastCheck.assert(
      FastCheck.property(withExtra(answer), (a) => same(JSON.parse(JSON.stringify(a)))),
      { numRuns: 400 }
    )
  })

  it("refuses a field of the wrong type wherever it is, and leaves a field set to undefined to the schema", () => {
    const wrong = [
      { id: 1 },
      { model: null },
      { created: "1" },
      { object: 1 },
      { service_tier: 2 },
      { system_fingerprint: false },
      { usage: { prompt_tokens: "three" } },
      { usage: 1 },
      { choices: [{ message: { content: 1 } }] },
      { choices: [{ message: { role: null } }] },
      { choices: [{ index: "0", message: {} }] },
      { choices: [{ finish_reason: 1, message: {} }] },
      { choices: [{}] },
      { choices: [1] },
      { choices: {} }
    ]
    for (const input of wrong) {
      assert.isTrue(Either.isLeft(fast({ choices: [], ...input })), JSON.stringify(input))
      same({ choices: [], ...input })
    }
    for (
      const input of [
        { id: undefined },
        { usage: undefined },
        { choices: [{ index: undefined, message: {} }] },
        { choices: [{ message: { role: undefined } }] }
      ]
    ) {
      same({ choices: [], ...input })
    }
  })

  it("decodes as the class under the caller's options, and never reads an inherited field", () => {
    underOptions({ id: "c", choices: [{ index: 0, message: { content: "x", extra: 1 } }], extra: 2 })
    inherited()
  })

  it("refuses what the class refuses, accepts what it accepts, for arbitrary JSON", () => {
    FastCheck.assert(FastCheck.property(FastCheck.jsonValue({ maxDepth: 4 }), same), { numRuns: 400 })
  })

  it("fills the defaults the class fills: id, model, index, role, the usage's counts; and encodes back", () => {
    const decoded = Schema.decodeUnknownSync(ChatCompletionFromWire)({
      choices: [{ message: { content: "Hello." } }],
      usage: { completion_tokens: 2 }
    })
    assert.strictEqual(decoded.id, "")
    assert.strictEqual(decoded.model, "")
    assert.strictEqual(decoded.choices[0]?.index, 0)
    assert.strictEqual(decoded.choices[0]?.message.role, "assistant")
    assert.strictEqual(decoded.text, "Hello.")
    assert.instanceOf(decoded.usage, Usage)
    assert.deepStrictEqual([decoded.usage?.prompt_tokens, decoded.usage?.total_tokens], [0, 0])
    assert.deepStrictEqual(
      Schema.encodeSync(ChatCompletionFromWire)(decoded),
      Schema.encodeSync(ChatCompletion)(decoded)
    )
  })
})
