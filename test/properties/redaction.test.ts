/**
 * The redactor (src/internal/redact.ts) on secrets with astral characters (outside the Basic Multilingual Plane: two
 * UTF-16 units each), where the behaviour lives: a server echoes the secret as is, JSON-escaped, as Python's JSON
 * writes it (every character past printable ASCII as `\uXXXX`, an astral one as its two surrogates, lower-case hex),
 * or with `<`, `>`, `&` escaped (Go's); no form of it is left in the text, and the JSON message read back from a
 * redacted body holds no trace of it. The escaping below is written here, apart from the redactor's own, and each
 * unit of a surrogate pair is escaped on its own, as Python does. Until now only the decoder properties (a unit
 * suite) saw astral characters.
 */
import { assert, describe, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import * as Redacted from "effect/Redacted"
import { makeRedactor } from "../../src/internal/redact.js"

/** `text` as Python's `json.dumps` writes a string's inside (ensure_ascii): each UTF-16 unit on its own. */
const pythonJson = (text: string): string => {
  let out = ""
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    const c = text[i]!
    if (c === "\"" || c === "\\") out += `\\${c}`
    else if (c === "\n") out += "\\n"
    else if (c === "\r") out += "\\r"
    else if (c === "\t") out += "\\t"
    else if (unit >= 0x20 && unit <= 0x7e) out += c
    else out += `\\u${unit.toString(16).padStart(4, "0")}`
  }
  return out
}

/** `text` as Go's `encoding/json` writes it: JSON, with `<`, `>`, `&`, U+2028 and U+2029 as `\u00XX`. */
const goJson = (text: string): string =>
  JSON.stringify(text).slice(1, -1).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`
  )

const astral = FastCheck.constantFrom(
  "\u{1F600}",
  "\u{1D11E}",
  "\u{1F004}",
  "\u{10FFFF}",
  "\u{1F1E9}\u{1F1EA}",
  "\u{20000}"
)

/** A secret of at least four characters with one astral character or more. */
const secret = FastCheck.tuple(
  FastCheck.string({ unit: FastCheck.constantFrom(..."aZ9-_. \"\\<&\u00e9\u20ac"), maxLength: 6 }),
  FastCheck.array(astral, { minLength: 1, maxLength: 3 }),
  FastCheck.string({ unit: FastCheck.constantFrom(..."aZ9-_.\u00e9"), maxLength: 6 })
).map(([before, middle, after]) => `${before}${middle.join("")}${after}`).filter((s) => s.length >= 4)

const around = FastCheck.string({ unit: FastCheck.constantFrom(..."abc :,.\u00e9\u{1F600}"), maxLength: 12 })

describe("the redactor, on astral characters", () => {
  it("no form of the secret is left, and a JSON message read back holds none of it", () => {
    FastCheck.assert(
      FastCheck.property(secret, around, around, (key, before, after) => {
        const redact = makeRedactor([Redacted.make(key)])
        const forms = [key, JSON.stringify(key).slice(1, -1), pythonJson(key), goJson(key)]
        for (const form of forms) {
          const story = `${JSON.stringify(key)} as ${JSON.stringify(form)}`
          const text = `${before}${form}${after}`
          assert.notInclude(redact(text), form, story)
          assert.include(redact(text), "<redacted>", story)
          // a body written by a server: the message parsed from the redacted body holds nothing of the secret
          const body = `{"detail": "${pythonJson(before)}${form === key ? pythonJson(key) : form}${pythonJson(after)}"}`
          const message = (JSON.parse(redact(body)) as { readonly detail: string }).detail
          assert.notInclude(message, key, story)
        }
      }),
      { numRuns: 300 }
    )
  })
})
