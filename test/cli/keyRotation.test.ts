/**
 * `aifs batch` with `AIFS_API_KEY_FILE`, as a child process against the emulator: the key is rotated in the middle
 * of the run (the emulator revokes it and issues another; the secret file is swapped for one with the new key), and
 * the run goes on with the new key, losing no line and doubling none, the key never printed.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Emulator from "../../src/emulator/Emulator.js"
import { aifsRunning } from "../helpers/cli.js"
import { tempDir } from "../helpers/tempDir.js"

const lines = 60

const linesIn = (file: string): Array<{ custom_id: string; error: unknown }> =>
  fs.existsSync(file)
    ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
    : []

describe("aifs batch: key rotation", { timeout: 90_000 }, () => {
  it.scopedLive("the key rotated mid-run: read again from AIFS_API_KEY_FILE on the 401, every line once, exit 0", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      // each answer a little slow, so that the rotation lands in the middle of the run
      yield* emulator.setChaos([{ fault: { kind: "latency", delay: "100 millis" }, route: "/v2/chat/completions" }])
      const dir = yield* tempDir("aifs-rotate-")
      const [input, output, keyFile] = [path.join(dir, "in.jsonl"), path.join(dir, "out.jsonl"), path.join(dir, "key")]
      const first = emulator.keyFor("standard4000")!
      fs.writeFileSync(keyFile, `${first}\n`)
      fs.writeFileSync(
        input,
        Array.from({ length: lines }, (_, i) =>
          JSON.stringify({
            custom_id: `k${i}`,
            url: "/v1/chat/completions",
            body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: `q${i}` }], max_tokens: 5 }
          })).join("\n") + "\n"
      )
      const run = yield* aifsRunning(["batch", input, "--out", output, "--concurrency", "4"], {
        AIFS_API_KEY_FILE: keyFile,
        AIFS_BASE_URL: emulator.baseUrl
      })

      for (let i = 0; i < 600 && linesIn(output).length < 8; i++) yield* Effect.sleep("20 millis")
      const before = linesIn(output).length
      assert.isAtLeast(before, 8, run.stderr())
      assert.isBelow(before, lines, "the rotation must land before the run ends")
      const rotated = yield* emulator.rotateKey(first)
      // as a secret mount swaps its file: a new file renamed over the old
      fs.writeFileSync(`${keyFile}.new`, rotated)
      fs.renameSync(`${keyFile}.new`, keyFile)

      assert.strictEqual(yield* run.exit, 0, run.stderr())
      const written = linesIn(output)
      assert.deepStrictEqual(
        written.map((l) => l.custom_id).sort(),
        Array.from({ length: lines }, (_, i) => `k${i}`).sort()
      )
      assert.isTrue(written.every((l) => l.error === null), run.stderr())
      assert.include(run.stderr(), "the API key was refused (401): a new one was read from its source")
      assert.include(run.stderr(), `${lines} succeeded, 0 failed`)
      assert.notInclude(run.stderr(), first)
      assert.notInclude(run.stderr(), rotated)
    }).pipe(Effect.provide(Emulator.layer())))
})
