import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Batch from "../../src/services/Batch.js"
import { quotaBoundInput } from "../helpers/cli.js"
import { tempDir } from "../helpers/tempDir.js"

const bin = path.resolve("src/cli/bin.ts")

/**
 * Runs `aifs batch` without a key (the CLI's own emulator), stopped with the test's scope if it is still running
 * then; `stderr` piped when asked for (else ignored).
 */
const start = (args: ReadonlyArray<string>, stderr: "pipe" | "ignore" = "ignore") =>
  Effect.acquireRelease(
    Effect.sync((): ChildProcess =>
      // one process (node with tsx's loader), so that SIGKILL reaches the process that writes
      spawn(process.execPath, ["--import", "tsx", bin, "batch", ...args], {
        env: Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AIFS_"))),
        stdio: ["ignore", "ignore", stderr]
      })
    ),
    (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
  )

const exited = (child: ChildProcess, timeoutMs: number) =>
  Effect.async<number | null, Error>((resume) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      resume(Effect.fail(new Error(`aifs batch did not exit within ${timeoutMs} ms`)))
    }, timeoutMs)
    child.once("exit", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed(code))
    })
  })

const lineCount = (file: string): number =>
  fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").length : 0

describe("aifs batch", () => {
  it.scopedLive(
    "killed with SIGKILL mid-run and rerun, loses, duplicates and tears no line",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir("aifs-batch-")
        const input = path.join(dir, "in.jsonl")
        const output = path.join(dir, "out.jsonl")
        // 200 requests reserving 340 output tokens each: 147 fit the emulator's first minute, then the run
        // waits in the rate limiter, which is where it is killed
        quotaBoundInput(input)
        const first = yield* start([input, "--out", output, "--concurrency", "16"])
        const firstExit = exited(first, 60_000)
        for (let i = 0; i < 600 && lineCount(output) < 100; i++) yield* Effect.sleep("50 millis")
        first.kill("SIGKILL")
        yield* firstExit
        const afterKill = lineCount(output)
        assert.isAtLeast(afterKill, 100)
        assert.isBelow(afterKill, 200)
        // a torn line, as a crash in the middle of a write would leave it
        fs.appendFileSync(output, "{\"id\":\"batch_req_r19")

        const second = yield* start([input, "--out", output])
        const code = yield* exited(second, 60_000)
        assert.strictEqual(code, 0)
        const lines = fs.readFileSync(output, "utf8").split("\n").filter((l) => l !== "")
        const ids = lines.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id)
        assert.strictEqual(ids.length, 200)
        assert.strictEqual(new Set(ids).size, 200)
        for (const line of lines) assert.isNotNull((JSON.parse(line) as { response: unknown }).response)
      }),
    120_000
  )
})

describe("aifs batch, twice at once on one output", () => {
  it.scopedLive(
    "the second run refuses at once naming the first, whose file it leaves untouched",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir("aifs-batch-")
        const input = path.join(dir, "in.jsonl")
        const output = path.join(dir, "out.jsonl")
        quotaBoundInput(input)
        // 147 requests fit the emulator's first minute: the first run then waits in its limiter, holding the lock
        const first = yield* start([input, "--out", output, "--concurrency", "16"])
        const firstExit = exited(first, 60_000)
        for (let i = 0; i < 600 && lineCount(output) < 100; i++) yield* Effect.sleep("50 millis")
        assert.isTrue(fs.existsSync(`${output}.lock`), "the first run holds the lock")
        const before = fs.readFileSync(output, "utf8")
        const second = yield* start([input, "--out", output], "pipe")
        let stderr = ""
        second.stderr!.on("data", (chunk: Buffer) => stderr += chunk.toString())
        assert.strictEqual(yield* exited(second, 30_000), 2)
        const lines = stderr.split("\n").filter((l) => l.trim() !== "")
        assert.lengthOf(lines, 1, stderr)
        assert.include(lines[0], `pid ${first.pid}`)
        // the first run's file is as it was, and grows on: nothing cut, nothing written twice
        first.kill("SIGINT")
        assert.strictEqual(yield* firstExit, 130)
        const after = fs.readFileSync(output, "utf8")
        assert.isTrue(after.startsWith(before) && after.endsWith("\n"))
        const ids = after.split("\n").filter((l) => l !== "").map((l) =>
          (JSON.parse(l) as { custom_id: string }).custom_id
        )
        assert.strictEqual(new Set(ids).size, ids.length)
        assert.isFalse(fs.existsSync(`${output}.lock`), "the lock is gone with its run")
      }),
    120_000
  )
})

/** The ids of an output's lines, each parsed whole (a torn line fails the parse). */
const outputIds = (output: string) =>
  fs.readFileSync(output, "utf8").split("\n").filter((l) => l !== "").map((l) =>
    (JSON.parse(l) as { custom_id: string }).custom_id
  )

/**
 * A run of 200 quota-bound requests, once it waits in its limiter (past the window's first 147): the requests in
 * flight then would take the whole grace after a stop.
 */
const waitingRun = Effect.gen(function*() {
  const dir = yield* tempDir("aifs-batch-")
  const input = path.join(dir, "in.jsonl")
  const output = path.join(dir, "out.jsonl")
  quotaBoundInput(input)
  const child = yield* start([input, "--out", output, "--concurrency", "16"], "pipe")
  const run = { input, output, child, stderr: "", exit: exited(child, 60_000) }
  child.stderr!.on("data", (chunk: Buffer) => run.stderr += chunk.toString())
  for (let i = 0; i < 600 && lineCount(output) < 147; i++) yield* Effect.sleep("50 millis")
  return run
})

/** Each line whole and once; a rerun then completes the 200 with exit 0, each once. */
const rerunCompletes = (input: string, output: string) =>
  Effect.gen(function*() {
    const firstIds = outputIds(output)
    assert.isBelow(firstIds.length, 200)
    assert.strictEqual(new Set(firstIds).size, firstIds.length)
    assert.strictEqual(yield* exited(yield* start([input, "--out", output]), 60_000), 0)
    const ids = outputIds(output)
    assert.strictEqual(ids.length, 200)
    assert.strictEqual(new Set(ids).size, 200)
  })

describe("aifs batch, stopped by a signal", () => {
  it.scopedLive.each([["SIGINT", 130], ["SIGTERM", 143]] as const)(
    "%s while it waits on its quota: stops within the grace, whole lines, the summary and the resume command; exit %i",
    ([signal, expected]) =>
      Effect.gen(function*() {
        const run = yield* waitingRun
        run.child.kill(signal)
        assert.strictEqual(yield* run.exit, expected)
        assert.include(run.stderr, "aifs batch: stopping: no new requests")
        assert.include(
          run.stderr,
          `the rest is left for a rerun: aifs batch ${run.input} --out ${run.output} --concurrency 16\n`
        )
        assert.match(run.stderr, /aifs batch: \d+ succeeded, 0 failed/)
        assert.notInclude(run.stderr, "    at ")
        yield* rerunCompletes(run.input, run.output)
      }),
    120_000
  )
})

describe("Batch.parseLine", () => {
  it("accepts the three endpoints with or without a version prefix and keeps extra body fields", () => {
    const parsed = Batch.parseLine(
      JSON.stringify({
        custom_id: "a",
        method: "POST",
        url: "/v1/chat/completions",
        body: { model: "m", messages: [{ role: "user", content: "hi" }], logprobs: true }
      }),
      1
    )
    assert.isTrue(Either.isRight(parsed))
    if (Either.isRight(parsed)) {
      assert.strictEqual(parsed.right.endpoint, "chat")
      assert.strictEqual((parsed.right.body as Record<string, unknown>).logprobs, true)
    }
    assert.strictEqual(Batch.endpointOf("/embeddings"), "embeddings")
    assert.strictEqual(Batch.endpointOf("/v2/completions"), "completions")
  })

  it("reports bad lines with their number and why", () => {
    const reason = (text: string) =>
      Either.match(Batch.parseLine(text, 7), { onLeft: (bad) => `${bad.line}: ${bad.reason}`, onRight: () => "ok" })
    assert.strictEqual(reason("{not json"), "7: not JSON")
    assert.strictEqual(reason(JSON.stringify({ url: "/v1/embeddings", body: {} })), "7: missing custom_id")
    assert.match(reason(JSON.stringify({ custom_id: "x", url: "/v1/images", body: {} })), /^7: unknown url/)
    assert.match(reason(JSON.stringify({ custom_id: "x", method: "GET", url: "/v1/embeddings", body: {} })), /POST/)
    assert.match(
      reason(JSON.stringify({ custom_id: "x", url: "/v1/embeddings", body: { model: "e" } })),
      /^7: invalid body: input/
    )
  })
})
