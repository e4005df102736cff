/**
 * A batch's output as a log: a torn last line is cut at the byte where the last whole line ends, whatever the text
 * holds (characters of two, three and four bytes, lines longer than a read); the latest line of an id is its result;
 * compaction leaves one line per id, the latest, and touches nothing when there is nothing to drop. Lines break at LF
 * only (a CRLF is one break), so that line numbers are the file's.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { join } from "node:path"
import * as BatchOutput from "../../src/cli/batchOutput.js"
import { openDescriptors } from "../helpers/descriptors.js"
import { tempDir } from "../helpers/tempDir.js"

const line = (customId: string, content: string) =>
  `${JSON.stringify({ custom_id: customId, response: { status_code: 200, body: { content } }, error: null })}\n`

const errorLine = (customId: string) =>
  `${JSON.stringify({ custom_id: customId, response: null, error: { code: "ServerError", message: "down" } })}\n`

const succeeded = (file: string) => Effect.map(BatchOutput.scan(file), (c) => [...c.succeeded].sort())

const outFile = Effect.map(tempDir("aifs-resume-"), (dir) => join(dir, "out.jsonl"))

describe("batch resume", () => {
  it.scoped("a torn last line cut at any byte is removed, byte for byte, and the whole lines are done", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      const whole = Buffer.from(line("a", "Grüße aus Köln") + line("b", "日本語のテキスト 🎉"))
      const torn = Buffer.from(line("c", "naïve café ✓ 𝄞"))
      // every cut of the last line that leaves it torn: from its first byte to all but its closing brace
      for (let cut = 1; cut < torn.length - 1; cut++) {
        writeFileSync(file, Buffer.concat([whole, torn.subarray(0, cut)]))
        assert.deepStrictEqual(yield* succeeded(file), ["a", "b"], `cut at byte ${cut}`)
        assert.isTrue(readFileSync(file).equals(whole), `the file after a cut at byte ${cut}`)
      }
      // whole but for its line break (a file edited by hand): kept, and given its line break
      writeFileSync(file, Buffer.concat([whole, torn.subarray(0, torn.length - 1)]))
      assert.deepStrictEqual(yield* succeeded(file), ["a", "b", "c"])
      assert.isTrue(readFileSync(file).equals(Buffer.concat([whole, torn])))
    }))

  it.scoped("a torn line longer than one read (64 KiB) is cut where the last whole line ends, chunks before", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      for (const length of [64 * 1024 - 1, 64 * 1024, 64 * 1024 + 1, 200 * 1024]) {
        const whole = Buffer.from(line("a", "x"))
        writeFileSync(file, Buffer.concat([whole, Buffer.from(`{"custom_id":"b","x":"${"é".repeat(length / 2)}`)]))
        assert.deepStrictEqual(yield* succeeded(file), ["a"], `a torn line of ${length} bytes`)
        assert.isTrue(readFileSync(file).equals(whole), `the file after a torn line of ${length} bytes`)
      }
      // a file of one torn line and no line break at all is emptied
      writeFileSync(file, "x".repeat(150 * 1024))
      assert.deepStrictEqual(yield* succeeded(file), [])
      assert.strictEqual(statSync(file).size, 0)
    }))

  it.scoped("a whole line with bytes that are not UTF-8 does not move the cut", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      // "café" in Latin-1: one byte 0xe9, which a UTF-8 decoding widens to three
      const whole = Buffer.concat([
        Buffer.from("{\"custom_id\":\"caf"),
        Buffer.from([0xe9]),
        Buffer.from("\",\"error\":null}\n"),
        Buffer.from(line("a", "ok"))
      ])
      writeFileSync(file, Buffer.concat([whole, Buffer.from("{\"custom_id\":\"b")]))
      assert.deepStrictEqual(yield* succeeded(file), ["a", "caf\ufffd"])
      assert.isTrue(readFileSync(file).equals(whole))
    }))

  it.scoped("a file of whole lines is left as it is; a missing file, or one not regular, is a fresh start", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      const content = line("a", "é") + "\n" + line("b", "ok")
      writeFileSync(file, content)
      assert.deepStrictEqual(yield* succeeded(file), ["a", "b"])
      assert.strictEqual(readFileSync(file, "utf8"), content)
      for (const none of [`${file}.none`, "/dev/null", "/dev/zero"]) {
        assert.deepStrictEqual(yield* BatchOutput.scan(none), {
          succeeded: new Set<string>(),
          failed: new Set<string>(),
          replaced: 0
        })
        assert.strictEqual(yield* BatchOutput.compact(none), 0)
      }
    }))

  it.scoped("a whole line that is not a result (not JSON, no custom_id) is kept in place and not counted", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      const content = `not json\n${JSON.stringify({ id: 1 })}\n${line("z", "ok")}`
      writeFileSync(file, content)
      assert.deepStrictEqual(yield* succeeded(file), ["z"])
      assert.strictEqual(readFileSync(file, "utf8"), content)
    }))

  it.scoped("an id's latest line is its result: a failure retried and answered succeeded, and the other way", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      writeFileSync(file, errorLine("a") + line("b", "1") + line("a", "2") + errorLine("b") + errorLine("c"))
      const contents = yield* BatchOutput.scan(file)
      assert.deepStrictEqual([...contents.succeeded], ["a"])
      assert.deepStrictEqual([...contents.failed].sort(), ["b", "c"])
      assert.strictEqual(contents.replaced, 2)
    }))

  it.scoped("compaction keeps each id's latest line in their order, and lines with no id in place", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      writeFileSync(
        file,
        errorLine("a") + line("b", "1") + "not json\n" + line("a", "2") + errorLine("b") + line("c", "3")
      )
      // a side file left by a compaction that crashed is replaced
      writeFileSync(`${file}.compacting`, "stale")
      assert.strictEqual(yield* BatchOutput.compact(file), 2)
      assert.strictEqual(readFileSync(file, "utf8"), "not json\n" + line("a", "2") + errorLine("b") + line("c", "3"))
      assert.isFalse(existsSync(`${file}.compacting`))
      assert.strictEqual((yield* BatchOutput.scan(file)).replaced, 0)
    }))

  it.scoped("compaction with nothing to drop leaves the file itself untouched (same inode, same bytes)", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      const content = line("a", "1") + line("b", "2")
      writeFileSync(file, content)
      const inode = statSync(file).ino
      assert.strictEqual(yield* BatchOutput.compact(file), 0)
      assert.strictEqual(statSync(file).ino, inode)
      assert.strictEqual(readFileSync(file, "utf8"), content)
      assert.isFalse(existsSync(`${file}.compacting`))
    }))

  it.scoped("compaction of many lines writes them all, in order (more lines than one write takes)", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      const ids = Array.from({ length: 1000 }, (_, i) => `r${i}`)
      writeFileSync(file, ids.map(errorLine).join("") + ids.map((id) => line(id, id)).join(""))
      assert.strictEqual(yield* BatchOutput.compact(file), 1000)
      assert.strictEqual(readFileSync(file, "utf8"), ids.map((id) => line(id, id)).join(""))
    }))

  it.scoped("a short torn line after more whole lines than one read holds is cut after the last of them", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      const whole = Buffer.from(Array.from({ length: 3000 }, (_, i) => line(`r${i}`, "x")).join(""))
      assert.isAbove(whole.length, 2 * 64 * 1024)
      writeFileSync(file, Buffer.concat([whole, Buffer.from("{\"custom_id\":\"torn")]))
      assert.strictEqual((yield* BatchOutput.scan(file)).succeeded.size, 3000)
      assert.isTrue(readFileSync(file).equals(whole))
    }))

  it.scoped("lines without an id never ask for a compaction: one line per id is left untouched", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      const content = "not json\n" + line("a", "1") + "null\n" + "not json\n" + line("b", "2")
      writeFileSync(file, content)
      const inode = statSync(file).ino
      assert.strictEqual(yield* BatchOutput.compact(file), 0)
      assert.strictEqual(statSync(file).ino, inode)
      assert.strictEqual(readFileSync(file, "utf8"), content)
    }))

  it.scoped("a compaction that cannot write fails naming the output, which it leaves as it was", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      const content = errorLine("a") + line("a", "1")
      for (
        const [prepare, reason] of [
          [() => symlinkSync("/dev/full", `${file}.compacting`), "ENOSPC"],
          [() => mkdirSync(`${file}.compacting`), "EISDIR"]
        ] as const
      ) {
        writeFileSync(file, content)
        prepare()
        const error = yield* Effect.flip(BatchOutput.compact(file))
        assert.strictEqual(error._tag, "OutputError")
        assert.match(error.message, new RegExp(`^cannot compact ${file}: ${reason}`))
        assert.strictEqual(readFileSync(file, "utf8"), content)
        rmSync(`${file}.compacting`, { recursive: true, force: true })
      }
    }))

  it.scoped("a line with a custom_id but neither response nor error (a request, not a result) is not counted", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      writeFileSync(
        file,
        `${JSON.stringify({ custom_id: "q", url: "/v1/chat/completions", body: {} })}\n` + line("a", "1")
      )
      const contents = yield* BatchOutput.scan(file)
      assert.deepStrictEqual([...contents.succeeded], ["a"])
      assert.strictEqual(contents.failed.size, 0)
    }))

  it.scoped("a result is a line with a string custom_id and a response or an error; no error, or null, succeeded", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      writeFileSync(
        file,
        [
          { custom_id: "answered", response: { status_code: 200 } },
          { custom_id: "refused", error: { code: "NotFound" } },
          { custom_id: 7, response: { status_code: 200 }, error: null },
          { custom_id: null, error: { code: "NotFound" } }
        ].map((result) => `${JSON.stringify(result)}\n`).join("") + "null\n"
      )
      const contents = yield* BatchOutput.scan(file)
      assert.deepStrictEqual([...contents.succeeded], ["answered"])
      assert.deepStrictEqual([...contents.failed], ["refused"])
    }))

  it("a line's custom_id: its string, or \"\" when it has none, another type, or is no JSON", () => {
    assert.strictEqual(BatchOutput.customIdOf(JSON.stringify({ custom_id: "a", method: "POST" })), "a")
    for (const line of [JSON.stringify({ custom_id: 5 }), "{}", "null", "{not json", ""]) {
      assert.strictEqual(BatchOutput.customIdOf(line), "", line)
    }
  })

  it.scoped("compaction leaves no descriptor open on the output or its side file", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      writeFileSync(file, errorLine("a") + line("a", "1") + line("b", "2"))
      assert.strictEqual(yield* BatchOutput.compact(file), 1)
      assert.strictEqual(readFileSync(file, "utf8"), line("a", "1") + line("b", "2"))
      assert.strictEqual(openDescriptors(file), 0)
      assert.strictEqual(openDescriptors(`${file}.compacting`), 0)
    }))

  it.scoped("compaction cuts a torn last line first, keeps the file's permissions, and compacts a link's target", () =>
    Effect.gen(function*() {
      const file = yield* outFile
      writeFileSync(file, errorLine("a") + line("a", "1") + "{\"custom_id\":\"b\",\"resp")
      chmodSync(file, 0o600)
      const link = `${file}.link`
      symlinkSync(file, link)
      assert.strictEqual(yield* BatchOutput.compact(link), 1)
      assert.isTrue(lstatSync(link).isSymbolicLink())
      assert.strictEqual(readFileSync(file, "utf8"), line("a", "1"))
      assert.strictEqual(statSync(file).mode & 0o777, 0o600)
    }))
})

describe("the lines of a file", () => {
  const split = (...chunks: Array<string | Uint8Array>) =>
    Effect.promise(async () => {
      const lines: Array<string> = []
      for await (
        const line of BatchOutput.splitLines((async function*() {
          yield* chunks
        })())
      ) lines.push(line)
      return lines
    })

  it.effect("break at LF only: a CRLF is one break, a lone CR stays in its line; a last line needs no break", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* split("a\r\nb\rstill b\nc\r", "\nd"), ["a", "b\rstill b", "c", "d"])
      assert.deepStrictEqual(yield* split("a\n\n", "b\n"), ["a", "", "b"])
      assert.deepStrictEqual(yield* split(""), [])
      // a CRLF cut between two reads, and a character of several bytes cut between two reads
      const euro = Buffer.from("€\n")
      assert.deepStrictEqual(yield* split("x\r", "\ny", euro.subarray(0, 1), euro.subarray(1)), ["x", "y€"])
    }))

  it.scoped("readLines numbers them as the file's lines", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-lines-")
      const file = join(dir, "in.jsonl")
      writeFileSync(file, "one\r\ntwo\rstill two\nthree")
      const lines = yield* Stream.runCollect(BatchOutput.readLines(file, String))
      assert.deepStrictEqual(Chunk.toReadonlyArray(lines), [["one", 1], ["two\rstill two", 2], ["three", 3]])
      // a reader that stops early closes the file as its stream ends
      const first = yield* Stream.runCollect(Stream.take(BatchOutput.readLines(file, String), 1))
      assert.deepStrictEqual(Chunk.toReadonlyArray(first), [["one", 1]])
      assert.strictEqual(openDescriptors(file), 0)
    }))
})
