import { assert, describe, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import { estimateText } from "../../src/internal/tokens.js"

/** The estimate as first written: every match classified by a second expression (slower, plainly right). */
const reference = (text: string): number => {
  let total = 0
  for (const match of text.matchAll(/[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu)) {
    total += /^[\p{L}\p{N}]/u.test(match[0]) ? Math.ceil(match[0].length / 4) : 1
  }
  return total
}

describe("the token estimate of a text", () => {
  it("a quarter of each word (rounded up), one per other visible character, nothing for spaces", () => {
    assert.strictEqual(estimateText(""), 0)
    assert.strictEqual(estimateText(" \t\n"), 0)
    assert.strictEqual(estimateText("Say hello."), 1 + 2 + 1)
    assert.strictEqual(estimateText("Grüße, 世界! 12345"), 2 + 1 + 1 + 1 + 2)
    assert.strictEqual(estimateText("🎉🎉"), 2)
  })

  it("agrees with the reference on any text, and again when called twice (no state left between calls)", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.string({ unit: "binary", maxLength: 60 }), (text) => {
        assert.strictEqual(estimateText(text), reference(text))
        assert.strictEqual(estimateText(text), reference(text))
      }),
      { numRuns: 500 }
    )
  })
})
