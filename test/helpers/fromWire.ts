/**
 * Checks that a fast decoder (`...FromWire`) decodes exactly like the class it stands for: the same value or the same
 * refusal, under the caller's options, never reading an inherited field.
 */
import { assert } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

export const decodesLike = <A extends { readonly text: string }, I>(
  schema: Schema.Schema<A, I> & (new(...args: Array<never>) => A),
  fromWire: Schema.Schema<A, I>
) => {
  const options = { onExcessProperty: "ignore" } as const
  const slow = Schema.decodeUnknownEither(schema, options)
  const fast = Schema.decodeUnknownEither(fromWire, options)

  /** Both accept `input` with equal values (an instance of the class), or both refuse it. */
  const same = (input: unknown) => {
    const a = slow(input)
    const b = fast(input)
    assert.strictEqual(Either.isRight(b), Either.isRight(a), `one decoder accepted ${JSON.stringify(input)}`)
    if (Either.isRight(a) && Either.isRight(b)) {
      assert.isTrue(b.right instanceof schema, "an instance of the class")
      assert.deepStrictEqual(b.right, a.right)
      assert.strictEqual(b.right.text, a.right.text)
    }
  }

  /** `common`, with extra fields at two levels, decodes alike under each `onExcessProperty`. */
  const underOptions = (common: unknown) => {
    for (const onExcessProperty of ["error", "preserve", "ignore"] as const) {
      const slowWith = Schema.decodeUnknownEither(schema, { onExcessProperty })(common)
      const fastWith = Schema.decodeUnknownEither(fromWire, { onExcessProperty })(common)
      assert.strictEqual(fastWith._tag, slowWith._tag, onExcessProperty)
      if (Either.isRight(slowWith) && Either.isRight(fastWith)) assert.deepStrictEqual(fastWith.right, slowWith.right)
    }
  }

  /** An object whose `id` and `model` are inherited and whose `choices` are its own: the fields are not read. */
  const inherited = () => {
    const input = Object.create({ id: "inherited", model: "inherited" }, { choices: { value: [], enumerable: true } })
    same(input)
    const decoded = Schema.decodeUnknownSync(fromWire)(input) as unknown as { readonly id: string }
    assert.strictEqual(decoded.id, "")
  }

  return { fast, same, underOptions, inherited }
}
