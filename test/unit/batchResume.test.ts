/**
 * Resuming a batch's output after a crash: a torn last line is cut at the byte where the last whole line ends,
 * whatever the text holds (characters of two, three and four bytes), and the whole lines' ids are done.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { resumeFrom } from "../../src/cli/batch.js"
import { tempDir } from "../helpers/tempDir.js"

const line = (customId: string, content: string) =>
  `${JSON.stringify({ custom_id: customId, response: { status_code: 200, body: { content } }, error: null })}\n`

describe("batch resume", () => {
  it.scoped("a torn last line cut at any byte is removed, byte for byte, and the whole lines are done", () =>
    Effect.gen(function*() {
      const file = join(yield* tempDir("aifs-resume-"), "out.jsonl")
      const whole = Buffer.from(line("a", "Grüße aus Köln") + line("b", "日本語のテキスト 🎉"))
      const torn = Buffer.from(line("c", "naïve café ✓ 𝄞"))
      // every cut of the last line that leaves it torn: from its first byte to all but its line break
      for (let cut = 1; cut < torn.length; cut++) {
        writeFileSync(file, Buffer.concat([whole, torn.subarray(0, cut)]))
        const done = resumeFrom(file)
        assert.deepStrictEqual([...done].sort(), ["a", "b"], `cut at byte ${cut}`)
        assert.isTrue(readFileSync(file).equals(whole), `the file after a cut at byte ${cut}`)
      }
    }))

  it.scoped("a whole line with bytes that are not UTF-8 does not move the cut", () =>
    Effect.gen(function*() {
      const file = join(yield* tempDir("aifs-resume-"), "out.jsonl")
      // "café" in Latin-1: one byte 0xe9, which a UTF-8 decoding widens to three
      const whole = Buffer.concat([
        Buffer.from("{\"custom_id\":\"caf"),
        Buffer.from([0xe9]),
        Buffer.from("\"}\n"),
        Buffer.from(line("a", "ok"))
      ])
      writeFileSync(file, Buffer.concat([whole, Buffer.from("{\"custom_id\":\"b")]))
      assert.deepStrictEqual([...resumeFrom(file)].sort(), ["a", "caf\ufffd"])
      assert.isTrue(readFileSync(file).equals(whole))
    }))

  it.scoped("a file of whole lines is left as it is; a missing file is a fresh start", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-resume-")
      const file = join(dir, "out.jsonl")
      const content = line("a", "é") + "\n" + line("b", "ok")
      writeFileSync(file, content)
      assert.deepStrictEqual([...resumeFrom(file)].sort(), ["a", "b"])
      assert.strictEqual(readFileSync(file, "utf8"), content)
      assert.strictEqual(resumeFrom(join(dir, "none.jsonl")).size, 0)
    }))

  it.scoped("a whole line that is not a result (not JSON, no custom_id) is kept in place and not counted", () =>
    Effect.gen(function*() {
      const file = join(yield* tempDir("aifs-resume-"), "out.jsonl")
      const content = `not json\n${JSON.stringify({ id: 1 })}\n${line("z", "ok")}`
      writeFileSync(file, content)
      assert.deepStrictEqual([...resumeFrom(file)], ["z"])
      assert.strictEqual(readFileSync(file, "utf8"), content)
    }))
})
