/**
 * Ids in paths (src/internal/pathSegment.ts), one by one: each id encoded as one segment, and each id no encoding can
 * carry refused before sending with the reason, in one line. The property over every operation is
 * test/properties/pathIds.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { segment } from "../../src/internal/pathSegment.js"

describe("an id as one path segment", () => {
  it.effect("encoded whole: a slash, a query, a fragment, a percent sign and spaces stay in the segment", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* segment("file-abc"), "file-abc")
      assert.strictEqual(yield* segment("a/../b?x=1#y 50%"), "a%2F..%2Fb%3Fx%3D1%23y%2050%25")
      assert.strictEqual(yield* segment("日本 🎉"), "%E6%97%A5%E6%9C%AC%20%F0%9F%8E%89")
      assert.strictEqual(yield* segment("..."), "...")
    }))

  it.effect("refused, nothing sent (status 0), with why: empty, a dot segment, a lone surrogate", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["", "an empty id would name the collection"],
        [".", "URLs resolve it away, encoded or not"],
        ["..", "URLs resolve it away, encoded or not"],
        ["a\uD800", "it is not well-formed Unicode (a lone surrogate)"],
        ["\uDC00b", "it is not well-formed Unicode (a lone surrogate)"]
      ]
      for (const [id, why] of cases) {
        const refused = yield* Effect.flip(segment(id))
        assert.strictEqual(refused._tag, "BadRequest")
        assert.strictEqual(refused.status, 0)
        assert.strictEqual(refused.message, `cannot send the id ${JSON.stringify(id)} in a URL path: ${why}`)
      }
    }))
})
