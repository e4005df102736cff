/**
 * A stop cuts what waits for the quota: `aifs batch` stopped while its requests wait for the quota window sends none
 * of them and exits at once, without waiting for the grace, which is only for requests on the wire (as a child process
 * against an emulator whose window is shorter than the grace); a rerun sends each of the rest once. Requests on the wire
 * get the grace, and a second signal quits at once. A key whose monthly budget runs out stops the run too:
 * the lines refused for it are not written, exit 3, and a rerun once the budget allows sends them.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Emulator from "../../src/emulator/Emulator.js"
import { budgetReachedDetail } from "../../src/emulator/spend.js"
import { aifs, aifsRunning } from "../helpers/cli.js"
import { tempDir } from "../helpers/tempDir.js"

const key = "gen-astopclosesthelineofthelimiterinthistest000000000"
const lines = 12

const outputIds = (file: string): Array<string> =>
  fs.existsSync(file)
    ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l).custom_id)
    : []

/** The result lines of `file`: each one's custom_id and error code (null for an answer). */
const outputErrors = (file: string): Array<readonly [string, string | null]> =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => {
    const line = JSON.parse(l) as { custom_id: string; error: { code: string } | null }
    return [line.custom_id, line.error?.code ?? null] as const
  })

/** `count` chat lines `${prefix}0`, `${prefix}1`, ... to Llama, five output tokens each, written to `input`. */
const chatLines = (input: string, prefix: string, count: number) =>
  fs.writeFileSync(
    input,
    Array.from({ length: count }, (_, i) =>
      JSON.stringify({
        custom_id: `${prefix}${i}`,
        url: "/v1/chat/completions",
        body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: `q${i}` }], max_tokens: 5 }
      })).join("\n") + "\n"
  )

describe("aifs batch, stopped while its requests wait in the limiter's line", { timeout: 90_000 }, () => {
  it.scopedLive("it stops at once and none of them is sent; a rerun sends the rest once", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const dir = yield* tempDir("aifs-stop-")
      const input = path.join(dir, "in.jsonl")
      const output = path.join(dir, "out.jsonl")
      chatLines(input, "s", lines)
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
      const signalled = performance.now()
      run.child.kill("SIGINT")
      assert.strictEqual(yield* run.exit, 130, run.stderr())
      // nothing is on the wire: the run waits neither for the grace (5 s) nor for the window (2 s) to send 4 more; the
      // bound leaves room for the process's own start of the stop and its exit on a busy machine (1 to 1.5 s measured
      // under load, the run's own part 0.2 s; the previous stop took 5.3 s)
      const stopMs = performance.now() - signalled
      assert.isBelow(stopMs, 3_000, run.stderr())
      assert.strictEqual((yield* emulator.stats).received, 4, run.stderr())
      assert.deepStrictEqual(outputIds(output).sort(), ["s0", "s1", "s2", "s3"])
      assert.include(
        run.stderr(),
        "aifs batch: stopping: no new requests; nothing in flight, the 4 waiting for the quota are not sent"
      )
      assert.notInclude(run.stderr(), "requests cut")

      const rerun = yield* aifs(["batch", input, "--out", output, "--concurrency", "4"], env)
      assert.strictEqual(rerun.code, 0, rerun.stderr)
      const ids = outputIds(output)
      assert.strictEqual(ids.length, lines)
      assert.strictEqual(new Set(ids).size, lines)
      // every line answered once: the rerun sends each of the 8 left, never one written before. A rerun that starts
      // within the stopped run's 2-second window may first meet 429s for what that run sent (a new process with
      // configured limits and no shared store cannot know it): those were refused, not answered, so not billed
      const stats = yield* emulator.stats
      assert.strictEqual(stats.received - stats.rateLimited, lines, JSON.stringify(stats))
      assert.isAtMost(stats.rateLimited, 4, JSON.stringify(stats))
    }).pipe(Effect.provide(Emulator.layer({
      window: "2 seconds",
      tiers: { tiny: { rpm: 4, tpm: 1_000_000 } },
      keys: [{ key, tier: "tiny" }]
    }))))
})

const slowKey = "gen-arunwhoserequestsareslowtoanswerinthistest0000000000"

describe("aifs batch, stopped while its requests are on the wire", { timeout: 90_000 }, () => {
  it.scopedLive("they get the grace; a second signal quits at once (exit 130), every line whole; a rerun completes", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const dir = yield* tempDir("aifs-second-")
      const input = path.join(dir, "in.jsonl")
      const output = path.join(dir, "out.jsonl")
      chatLines(input, "w", lines)
      // the first 4 requests are answered after 30 s: the run's 4 at once stay on the wire
      yield* emulator.setChaos([{ fault: { kind: "latency", delay: "30 seconds" }, times: 4 }])
      // limits known to the client: all 4 go at once (no probe of unknown limits)
      const env = { AIFS_API_KEY: slowKey, AIFS_BASE_URL: emulator.baseUrl, AIFS_LIMITS: "*=1000/1000000" }
      const run = yield* aifsRunning(["batch", input, "--out", output, "--concurrency", "4"], env, "30 seconds")
      for (let i = 0; i < 400 && (yield* emulator.stats).received < 4; i++) yield* Effect.sleep("25 millis")
      run.child.kill("SIGTERM")
      for (let i = 0; i < 400 && !run.stderr().includes("stopping:"); i++) yield* Effect.sleep("25 millis")
      assert.include(run.stderr(), "stopping: no new requests; the 4 in flight get 5s (Ctrl-C again to quit now)")
      run.child.kill("SIGINT")
      assert.strictEqual(yield* run.exit, 130, run.stderr())
      assert.notInclude(run.stderr(), "stopped;")
      assert.isFalse(fs.existsSync(`${output}.lock`), "the lock goes with the process")
      assert.deepStrictEqual(outputIds(output), [])

      const rerun = yield* aifs(["batch", input, "--out", output, "--concurrency", "4"], env)
      assert.strictEqual(rerun.code, 0, rerun.stderr)
      const ids = outputIds(output)
      assert.strictEqual(ids.length, lines)
      assert.strictEqual(new Set(ids).size, lines)
    }).pipe(Effect.provide(Emulator.layer({
      tiers: { roomy: { rpm: 1_000, tpm: 1_000_000 } },
      keys: [{ key: slowKey, tier: "roomy" }]
    }))))
})

const spentKey = "gen-abatchwhosekeyspendsitsmonthlybudgetmidway00000000"
const raisedKey = "gen-abatchrerunonakeywhosebudgetallowsit00000000000000"

describe("aifs batch, when the key's monthly budget runs out", { timeout: 90_000 }, () => {
  it.scopedLive("stops: the refused lines are not written, exit 3 with the rerun's command; a rerun sends them", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const dir = yield* tempDir("aifs-budget-")
      const input = path.join(dir, "in.jsonl")
      const output = path.join(dir, "out.jsonl")
      chatLines(input, "b", lines)
      // one line at a time: the run stops at the first refusal, so the server sees the answered lines and that one
      const run = yield* aifs(["batch", input, "--out", output, "--concurrency", "1"], {
        AIFS_API_KEY: spentKey,
        AIFS_BASE_URL: emulator.baseUrl
      })
      assert.strictEqual(run.code, 3, run.stderr)
      const written = outputErrors(output)
      const answered = written.length
      assert.isAtLeast(answered, 1, run.stderr)
      assert.isBelow(answered, lines, run.stderr)
      // only answers: no line refused for the budget is written (a rerun sends it)
      assert.deepStrictEqual(written, Array.from({ length: answered }, (_, i) => [`b${i}`, null] as const))
      assert.strictEqual((yield* emulator.stats).received, answered + 1, "nothing sent after the refusal, no retry")
      const left = lines - answered
      assert.include(
        run.stderr,
        `aifs batch: stopped: the key's monthly budget is spent (${budgetReachedDetail}); ${left} lines are left ` +
          `for a rerun once it is raised: aifs batch ${input} --out ${output}`
      )

      // a key whose budget allows it: the rerun sends exactly the lines left, and every line is answered once
      const rerun = yield* aifs(["batch", input, "--out", output, "--concurrency", "1"], {
        AIFS_API_KEY: raisedKey,
        AIFS_BASE_URL: emulator.baseUrl
      })
      assert.strictEqual(rerun.code, 0, rerun.stderr)
      assert.include(rerun.stderr, `${left} succeeded, 0 failed`)
      assert.strictEqual((yield* emulator.stats).received, answered + 1 + left)
      const all = outputErrors(output)
      assert.deepStrictEqual(
        [...all].sort(([a], [b]) => Number(a.slice(1)) - Number(b.slice(1))),
        Array.from({ length: lines }, (_, i) => [`b${i}`, null] as const)
      )
    }).pipe(Effect.provide(Emulator.layer({
      // a custom tier is priced at 1 EUR a million tokens (`defaultPrices`): a budget of 50 tokens, a few requests
      tiers: { roomy: { rpm: 1_000, tpm: 1_000_000 } },
      keys: [
        { key: spentKey, tier: "roomy", monthlyBudget: { eur: 0.00005 } },
        { key: raisedKey, tier: "roomy" }
      ]
    }))))
})
