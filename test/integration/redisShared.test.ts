/**
 * One key's budget shared by several processes through the Redis limiter store, as users run it: `aifs batch`
 * child processes with `AIFS_LIMITER_REDIS_URL`, against one emulator that strictly enforces its window and sends
 * no rate-limit headers (an open-source model). Every line written once, and not one 429; with Redis stopped in
 * the middle of a run, every line still written.
 */
import { assert, describe, inject, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Emulator from "../../src/emulator/Emulator.js"
import { startRedis } from "../helpers/redisServer.js"
import { tempDir } from "../helpers/tempDir.js"

const url = inject("redisUrl")
const bin = path.resolve("src/cli/bin.ts")
let prefixes = 0

interface Run {
  readonly child: ChildProcess
  /** Resolves with the exit code and what the process printed; kills it after `timeoutMs`. */
  readonly exit: Promise<{ readonly code: number | null; readonly output: string }>
}

/** `aifs batch IN --out OUT` as a child process, with `env` over an environment without AIFS_* variables. */
const batch = (input: string, output: string, env: Record<string, string>, timeoutMs = 90_000): Run => {
  const child = spawn(process.execPath, ["--import", "tsx", bin, "batch", input, "--out", output], {
    env: {
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AIFS_"))),
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output_ = ""
  child.stdout!.on("data", (chunk: Buffer) => output_ += chunk.toString())
  child.stderr!.on("data", (chunk: Buffer) => output_ += chunk.toString())
  const exit = new Promise<{ code: number | null; output: string }>((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.once("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, output: output_ })
    })
  })
  return { child, exit }
}

const requests = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      custom_id: `${prefix}${i}`,
      url: "/v1/chat/completions",
      body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: `q${i}` }], max_tokens: 50 }
    })).join("\n") + "\n"

/** The output's lines by `custom_id`: each must appear once, answered with 200. */
const resultsOf = (output: string) => {
  const lines = fs.readFileSync(output, "utf8").split("\n").filter((l) => l !== "")
  return lines.map((l) => JSON.parse(l) as { custom_id: string; response: { status_code: number } | null })
}

/** An emulator for the test's scope. */
const serve = (options: Emulator.ServeOptions) =>
  Effect.map(Layer.build(Emulator.layer(options)), Context.get(Emulator.Emulator))

const lineCount = (file: string): number =>
  fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").length : 0

describe.skipIf(url === undefined)("one key shared by several processes through Redis", () => {
  it.scopedLive(
    "four aifs batch processes on one basic key: every line once, zero 429s from a strict server",
    () =>
      Effect.gen(function*() {
        // 20 requests per 3-second window for the basic key: 40 requests need two windows, which the four processes
        // share; each alone would send its 10 at once, and together they would meet 20 429s
        const emulator = yield* serve({ window: "3 seconds" })
        const dir = yield* tempDir("aifs-shared-")
        const prefix = `shared${++prefixes}-${process.pid}`
        const env = {
          AIFS_API_KEY: Emulator.keyOf("basic"),
          AIFS_TIER: "basic",
          AIFS_CACHE_DIR: "",
          AIFS_BASE_URL: emulator.baseUrl,
          AIFS_LIMITER_REDIS_URL: url!,
          AIFS_LIMITER_REDIS_PREFIX: prefix,
          AIFS_LIMITER_WINDOW: "3s"
        }
        const runs = Array.from({ length: 4 }, (_, p) => {
          const input = path.join(dir, `in${p}.jsonl`)
          fs.writeFileSync(input, requests(`p${p}-`, 10))
          return { output: path.join(dir, `out${p}.jsonl`), run: batch(input, path.join(dir, `out${p}.jsonl`), env) }
        })
        const exits = yield* Effect.promise(() => Promise.all(runs.map((r) => r.run.exit)))
        for (const [p, exit] of exits.entries()) assert.strictEqual(exit.code, 0, `process ${p}: ${exit.output}`)
        for (const [p, { output }] of runs.entries()) {
          const results = resultsOf(output)
          assert.sameMembers(results.map((r) => r.custom_id), Array.from({ length: 10 }, (_, i) => `p${p}-${i}`))
          for (const result of results) assert.strictEqual(result.response?.status_code, 200)
        }
        const stats = yield* emulator.stats
        assert.strictEqual(stats.rateLimited, 0, "no request met a full window")
        assert.strictEqual(stats.received, 40)
      }),
    120_000
  )

  it.scopedLive(
    "four processes, Redis killed and restarted: each goes on under its own limiter in the outage, every line written",
    () =>
      Effect.gen(function*() {
        // 40 requests per 2-second window on the key (configured alike in every process): 4 x 60 lines need six
        // windows together, so that most processes still have lines to write in the outage, where each counts alone
        // and each must make progress
        const perProcess = 60
        const emulator = yield* serve({
          window: "2 seconds",
          tiers: { shared: { rpm: 40, tpm: 10_000_000 } },
          keys: [{ key: Emulator.developmentKey("shared"), tier: "shared" }]
        })
        // stopped in the middle of the test, and again (a no-op) at its end, however it ends
        const first = yield* Effect.acquireRelease(Effect.promise(() => startRedis()), (r) => Effect.promise(r.stop))
        const dir = yield* tempDir("aifs-shared-")
        const env = {
          AIFS_API_KEY: Emulator.developmentKey("shared"),
          AIFS_LIMITS: "*=40/10000000",
          AIFS_CACHE_DIR: "",
          AIFS_BASE_URL: emulator.baseUrl,
          AIFS_LIMITER_REDIS_URL: first.url,
          AIFS_LIMITER_WINDOW: "2s"
        }
        const runs = Array.from({ length: 4 }, (_, p) => {
          const input = path.join(dir, `in${p}.jsonl`)
          fs.writeFileSync(input, requests(`o${p}-`, perProcess))
          const output = path.join(dir, `out${p}.jsonl`)
          return { output, run: batch(input, output, env) }
        })
        const written = () => runs.map((r) => lineCount(r.output))
        const total = () => written().reduce((a, b) => a + b, 0)
        // Redis goes once every process is under way (each wrote a line: a process still starting would only show
        // how long Node takes to start under load, which on a busy machine is seconds), at most 30 s from the start
        for (let i = 0; i < 1_500 && written().some((count) => count === 0); i++) yield* Effect.sleep("20 millis")
        yield* Effect.promise(first.stop)
        assert.isBelow(total(), 4 * perProcess, "Redis goes in the middle of the runs")
        // what was sent before Redis went is answered within half a window: what is written after that was admitted
        // in the outage
        yield* Effect.sleep("1 second")
        const before = written()
        // the outage lasts until every process wrote a line admitted in it (a stalled process never does: the bug
        // this test stands for stalled 10 s and more), at most eight seconds, four windows; one that wrote all its
        // lines already has none left to write
        const progressed = () => written().every((count, p) => count > before[p]! || before[p] === perProcess)
        for (let i = 0; i < 400 && !progressed(); i++) yield* Effect.sleep("20 millis")
        const during = written()
        for (const [p, count] of during.entries()) {
          if (before[p] === perProcess) continue
          assert.isAbove(count, before[p]!, `process ${p} made no progress in the outage (${before} -> ${during})`)
        }
        const second = yield* Effect.acquireRelease(
          Effect.promise(() => startRedis({ port: first.port })),
          (r) => Effect.promise(r.stop)
        )
        assert.strictEqual(second.url, first.url)
        const exits = yield* Effect.promise(() => Promise.all(runs.map((r) => r.run.exit)))
        for (const [p, exit] of exits.entries()) assert.strictEqual(exit.code, 0, `process ${p}: ${exit.output}`)
        for (const [p, { output }] of runs.entries()) {
          const results = resultsOf(output)
          assert.sameMembers(
            results.map((r) => r.custom_id),
            Array.from({ length: perProcess }, (_, i) => `o${p}-${i}`)
          )
        }
      }),
    120_000
  )

  it.scopedLive(
    "Redis stopped in the middle of a run: the process counts in memory, says so once, writes every line",
    () =>
      Effect.gen(function*() {
        const emulator = yield* serve({ window: "2 seconds" })
        const redis = yield* Effect.acquireRelease(Effect.promise(() => startRedis()), (r) => Effect.promise(r.stop))
        const dir = yield* tempDir("aifs-shared-")
        const input = path.join(dir, "in.jsonl")
        const output = path.join(dir, "out.jsonl")
        // 50 requests at 20 per 2-second window: the run lasts about five seconds, Redis goes after the first 10
        fs.writeFileSync(input, requests("r", 50))
        const run = batch(input, output, {
          AIFS_API_KEY: Emulator.keyOf("basic"),
          AIFS_TIER: "basic",
          AIFS_CACHE_DIR: "",
          AIFS_BASE_URL: emulator.baseUrl,
          AIFS_LIMITER_REDIS_URL: redis.url,
          AIFS_LIMITER_WINDOW: "2s"
        })
        for (let i = 0; i < 600 && lineCount(output) < 10; i++) yield* Effect.sleep("50 millis")
        assert.isAtLeast(lineCount(output), 10)
        assert.isBelow(lineCount(output), 50, "Redis stops in the middle of the run")
        yield* Effect.promise(redis.stop)
        const exit = yield* Effect.promise(() => run.exit)
        assert.strictEqual(exit.code, 0, exit.output)
        const results = resultsOf(output)
        assert.sameMembers(results.map((r) => r.custom_id), Array.from({ length: 50 }, (_, i) => `r${i}`))
        for (const result of results) assert.strictEqual(result.response?.status_code, 200)
        const warnings = exit.output.split("\n").filter((l) => l.includes("counting in this process's memory"))
        assert.strictEqual(warnings.length, 1, exit.output)
        assert.notInclude(exit.output, Emulator.keyOf("basic"))
      }),
    120_000
  )
})
