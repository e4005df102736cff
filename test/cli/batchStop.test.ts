/**
 * A stop closes the limiter's line: `aifs batch` stopped while its requests wait for the quota window sends none of
 * them during the grace, even when the window frees within it (as a child process against an emulator whose window is
 * shorter than the grace); a rerun sends each of the rest once.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Emulator from "../../src/emulator/Emulator.js"
import { aifs, aifsRunning } from "../helpers/cli.js"
import { tempDir } from "../helpers/tempDir.js"

const key = "gen-astopclosesthelineofthelimiterinthistest000000000"
const lines = 12

const outputIds = (file: string): Array<string> =>
  fs.existsSync(file)
    ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l).custom_id)
    : []

describe("aifs batch, stopped while its requests wait in the limiter's line", { timeout: 90_000 }, () => {
  it.scopedLive("none of them is sent in the grace, though the window frees in it; a rerun sends the rest once", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const dir = yield* tempDir("aifs-stop-")
      const input = path.join(dir, "in.jsonl")
      const output = path.join(dir, "out.jsonl")
      fs.writeFileSync(
        input,
        Array.from({ length: lines }, (_, i) =>
          JSON.stringify({
            custom_id: `s${i}`,
            url: "/v1/chat/completions",
            body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: `q${i}` }], max_tokens: 5 }
          })).join("\n") + "\n"
      )
      // 4 requests per 2-second window, known to the client: the 5th and later wait in its line
      const env = {
        AIFS_API_KEY: key,
        AIFS_BASE_URL: emulator.baseUrl,
        AIFS_LIMITS: "*=4/1000000",
        AIFS_LIMITER_WINDOW: "2s"
      }
      const run = yield* aifsRunning(["batch", input, "--out", output, "--concurrency", "4"], env, "30 seconds")

      for (let i = 0; i < 400 && outputIds(output).length < 4; i++) yield* Effect.sleep("25 millis")
      const atStop = (yield* emulator.stats).received
      assert.strictEqual(outputIds(output).length, 4, run.stderr())
      assert.strictEqual(atStop, 4, "the first window's 4, and the rest waiting in the client's line")
      run.child.kill("SIGINT")
      // the grace (5 s) outlasts the window (2 s): an open line would have sent 4 more in it
      assert.strictEqual(yield* run.exit, 130, run.stderr())
      assert.strictEqual((yield* emulator.stats).received, 4, run.stderr())
      assert.deepStrictEqual(outputIds(output).sort(), ["s0", "s1", "s2", "s3"])
      assert.include(run.stderr(), "4 requests cut (sent, or waiting for the quota)")

      const rerun = yield* aifs(["batch", input, "--out", output, "--concurrency", "4"], env)
      assert.strictEqual(rerun.code, 0, rerun.stderr)
      const ids = outputIds(output)
      assert.strictEqual(ids.length, lines)
      assert.strictEqual(new Set(ids).size, lines)
      assert.strictEqual((yield* emulator.stats).received, lines)
    }).pipe(Effect.provide(Emulator.layer({
      window: "2 seconds",
      tiers: { tiny: { rpm: 4, tpm: 1_000_000 } },
      keys: [{ key, tier: "tiny" }]
    }))))
})
