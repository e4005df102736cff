/**
 * `aifs images` as a child process on the embedded emulator: images written where asked, several numbered, and an
 * edit never written over the image it edits.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { aifs } from "../helpers/cli.js"
import { tempDir } from "../helpers/tempDir.js"

describe("aifs images", { timeout: 90_000 }, () => {
  it.scoped("generate -n 2 writes two numbered files; edit writes beside its image and never over it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-images-")
      const fox = path.join(dir, "fox.png")
      const two = yield* aifs(["images", "generate", "a fox", "--out", fox, "-n", "2", "--size", "256x256"])
      assert.strictEqual(two.code, 0, two.stderr)
      assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["fox-1.png", "fox-2.png"])
      const one = yield* aifs(["images", "generate", "a fox", "--out", fox, "--size", "256x256"])
      assert.strictEqual(one.code, 0, one.stderr)
      const original = fs.readFileSync(fox)

      const edited = yield* aifs(["images", "edit", fox, "make it blue"])
      assert.strictEqual(edited.code, 0, edited.stderr)
      const beside = path.join(dir, "fox-edited.png")
      assert.include(edited.stdout, beside)
      assert.isAbove(fs.statSync(beside).size, 0)
      assert.deepStrictEqual(fs.readFileSync(fox), original)

      // asked to write over it (by another spelling of its path): refused before any request, the image kept
      const over = yield* aifs(["images", "edit", fox, "make it blue", "--out", path.join(dir, ".", "fox.png")])
      assert.strictEqual(over.code, 2, over.stderr)
      assert.match(
        over.stderr.trim(),
        /^aifs: error: --out is the image being edited \(.*fox\.png\): name another file$/
      )
      assert.deepStrictEqual(fs.readFileSync(fox), original)
    }))
})
