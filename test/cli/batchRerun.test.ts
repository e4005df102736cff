/**
 * `aifs batch` as a child process against the emulator: a rerun runs again what failed and leaves one line per
 * custom_id; `--keep-failed` keeps the failures; an output that cannot be written ends the run at once, one line.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Emulator from "../../src/emulator/Emulator.js"
import { aifs, cliEnv } from "../helpers/cli.js"
import { quotaBoundInput } from "../helpers/cli.js"
import { freePort } from "../helpers/redisServer.js"
import { tempDir } from "../helpers/tempDir.js"

const request = (id: string) =>
  JSON.stringify({
    custom_id: id,
    method: "POST",
    url: "/v1/chat/completions",
    body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: id }], max_tokens: 20 }
  })

interface Line {
  readonly custom_id: string
  readonly error: { readonly code: string } | null
}

const outputLines = (file: string): Array<Line> =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Line)

const batchFiles = (count: number) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("aifs-rerun-")
    const input = path.join(dir, "in.jsonl")
    const ids = Array.from({ length: count }, (_, i) => `r${i}`)
    fs.writeFileSync(input, ids.map((id) => `${request(id)}\n`).join(""))
    return { dir, input, output: path.join(dir, "out.jsonl"), ids }
  })

describe("aifs batch: reruns", { timeout: 90_000 }, () => {
  it.scopedLive("a rerun runs the failed lines again and ends with exactly one line per custom_id, the latest", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const { ids, input, output } = yield* batchFiles(12)
      const env = { AIFS_BASE_URL: emulator.baseUrl, AIFS_MAX_RETRIES: "0" }
      // the server down for chat: every line an error line, exit 1
      yield* emulator.setChaos([{ fault: { kind: "status", status: 503 }, route: "/v2/chat/completions" }])
      const first = yield* aifs(["batch", input, "--out", output], env)
      assert.strictEqual(first.code, 1, first.stderr)
      assert.deepStrictEqual(
        outputLines(output).map((l) => [l.custom_id, l.error?.code]),
        ids.map((id) => [id, "ServerError"])
      )

      // --keep-failed: nothing sent, the failures stay, exit 1
      yield* emulator.setChaos([])
      const kept = yield* aifs(["batch", input, "--out", output, "--keep-failed"], env)
      assert.strictEqual(kept.code, 1, kept.stderr)
      assert.include(kept.stderr, "0 succeeded, 0 failed")
      assert.include(kept.stderr, "12 already done (12 failed, kept by --keep-failed)")
      assert.strictEqual(outputLines(output).length, 12)

      // the server back: the rerun runs the 12 again, the output holds one line per id, each succeeded, exit 0
      const second = yield* aifs(["batch", input, "--out", output], env)
      assert.strictEqual(second.code, 0, second.stderr)
      assert.include(second.stderr, "12 succeeded, 0 failed, 12 of them failed before")
      const lines = outputLines(output)
      assert.deepStrictEqual(lines.map((l) => l.custom_id).sort(), [...ids].sort())
      assert.isTrue(lines.every((l) => l.error === null))
      assert.isFalse(fs.existsSync(`${output}.compacting`))

      // and a third run sends nothing
      const third = yield* aifs(["batch", input, "--out", output], env)
      assert.strictEqual(third.code, 0, third.stderr)
      assert.include(third.stderr, "0 succeeded, 0 failed, 12 already done")
    }).pipe(Effect.provide(Emulator.layer({ port: 0 }))))

  it.scopedLive("an output that cannot be written (a full disk) ends the run at once: one line naming it, exit 1", () =>
    Effect.gen(function*() {
      const { dir, input } = yield* batchFiles(3)
      const output = path.join(dir, "full.jsonl")
      fs.symlinkSync("/dev/full", output)
      const run = yield* aifs(["batch", input, "--out", output], {}, { timeoutMs: 30_000 })
      assert.strictEqual(run.code, 1, run.stderr)
      const errors = run.stderr.split("\n").filter((l) => l.startsWith("aifs: error"))
      assert.deepStrictEqual(errors.length, 1, run.stderr)
      assert.include(errors[0], `cannot write ${output}`)
      assert.include(errors[0], "ENOSPC")
      assert.notInclude(run.stderr, "    at ")
    }))

  it.scopedLive("an output in a folder that does not exist is one line naming it, exit 2, nothing sent", () =>
    Effect.gen(function*() {
      const { dir, input } = yield* batchFiles(3)
      const output = path.join(dir, "no-such-folder", "out.jsonl")
      const run = yield* aifs(["batch", input, "--out", output])
      assert.strictEqual(run.code, 2, run.stderr)
      assert.match(run.stderr.trim(), new RegExp(`^aifs: error: cannot lock ${output}: ENOENT`))
      assert.strictEqual(run.stderr.trim().split("\n").length, 1)
    }))
})

describe("aifs batch on a terminal", { timeout: 90_000 }, () => {
  it.scopedLive("a bar that says the limiter waits for the quota window; Ctrl-C typed on the terminal stops it, 130", () =>
    Effect.gen(function*() {
      const { input, output } = yield* batchFiles(0)
      quotaBoundInput(input)
      const command = `${process.execPath} --import tsx ${
        path.resolve("src/cli/bin.ts")
      } batch ${input} --out ${output}`
      // `script` runs the command on a pseudo-terminal (util-linux, in every Debian): stdin and stdout are the terminal's
      const child = yield* Effect.acquireRelease(
        Effect.sync(() => spawn("script", ["-qec", command, "/dev/null"], { env: cliEnv({}) })),
        (child) => Effect.sync(() => child.exitCode === null && child.kill("SIGKILL"))
      )
      let screen = ""
      child.stdout.on("data", (chunk: Buffer) => screen += chunk.toString())
      const exit = Effect.async<number | null>((resume) => {
        child.once("close", (code) => resume(Effect.succeed(code)))
      }).pipe(Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error(`no exit: ${screen}`) }))
      for (let i = 0; i < 1200 && !/waiting for the quota window \(\d+s\)/.test(screen); i++) {
        yield* Effect.sleep("50 millis")
      }
      // the budget that binds is named: the output tokens of the standard4000 plan's Llama row
      assert.match(
        screen,
        /\r\[#+\.*\] \d+\/200 \(0 failed\) \d+ req\/min \d+ tokens\/min, \d+ retries, \d+ waiting for the quota window \(\d+s\), limit 50000 output tokens \(plan\), ETA \d+:\d\d\u001b\[K/
      )
      // Ctrl-C as a terminal sends it: the interrupt character, to the foreground process
      child.stdin.write("\u0003")
      assert.strictEqual(yield* exit, 130)
      assert.include(screen, "aifs batch: stopping: no new requests")
      assert.include(screen, `the rest is left for a rerun: aifs batch ${input} --out ${output}`)
    }))

  it.scoped("nothing listening: a batch retries each request (and says so), unlike a command, then writes its error", () =>
    Effect.gen(function*() {
      const { input, output } = yield* batchFiles(2)
      const port = yield* Effect.promise(() => freePort())
      const run = yield* aifs(["batch", input, "--out", output, "--concurrency", "1"], {
        AIFS_API_KEY: "gen-test",
        AIFS_BASE_URL: `http://127.0.0.1:${port}/v2`,
        AIFS_MAX_RETRIES: "1"
      })
      assert.strictEqual(run.code, 1, run.stderr)
      const retries = run.stderr.split("\n").filter((line) =>
        / TransportError: .*ECONNREFUSED.*; retry 1 of 1 in /.test(line)
      )
      assert.lengthOf(retries, 2, run.stderr)
      assert.deepStrictEqual(outputLines(output).map((line) => line.error?.code), ["TransportError", "TransportError"])
    }))
})
