/**
 * Two parts of `aifs batch` on their own: its files (`src/cli/batch/files.ts`: the usage errors found before anything
 * is read, the numbered lines, the count to run, whole lines appended) and its runner (`src/cli/batch/runner.ts`:
 * steps in, results out, the tally and the progress kept, a spent budget stopping the run), on the scripted transport.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Files from "../../src/cli/batch/files.js"
import type * as Plan from "../../src/cli/batch/plan.js"
import * as Report from "../../src/cli/batch/report.js"
import * as Runner from "../../src/cli/batch/runner.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Batch from "../../src/services/Batch.js"
import { tempDir } from "../helpers/tempDir.js"
import { terminal } from "../helpers/terminal.js"
import { chatCompletionBody, recorder } from "./helpers.js"

/** The input line of a chat request `id`. */
const line = (id: string) =>
  JSON.stringify({
    custom_id: id,
    url: "/v1/chat/completions",
    body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: id }] }
  })

/** The request of that line, as the plan has it. */
const request = (id: string): Batch.BatchRequest => Either.getOrThrow(Batch.parseLine(line(id), 1))

const nothingDone: Plan.Resume = { succeeded: new Set(), failed: new Set(), keepFailed: false }

const resultIds = (file: string) =>
  fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => {
    const line = JSON.parse(l) as Batch.ResultLine
    return [line.custom_id, line.error?.code ?? null] as const
  })

describe("aifs batch's files", () => {
  it.scoped("refuse a missing input, a directory, a concurrency below 1 and the input as its own output", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-batch-files-")
      const input = path.join(dir, "in.jsonl")
      fs.writeFileSync(input, "{}\n")
      const link = path.join(dir, "link.jsonl")
      fs.symlinkSync(input, link)
      const refusal = (i: string, o: string, concurrency: number) =>
        Effect.map(Effect.flip(Files.check(i, o, concurrency)), (error) => error.message)
      assert.strictEqual(yield* refusal(`${input}.none`, "o", 1), `no such file: ${input}.none`)
      assert.strictEqual(yield* refusal(dir, "o", 1), `${dir} is a directory: give the JSONL file of requests`)
      assert.strictEqual(yield* refusal(input, "o", 0), "--concurrency must be at least 1")
      // the same file by another name too
      assert.strictEqual(
        yield* refusal(input, link, 1),
        `--out ${link} is the input itself: give the results a file of their own`
      )
      yield* Files.check(input, path.join(dir, "out.jsonl"), 1)
    }))

  it.scoped("read the input as numbered lines, and count those the plan runs; a pipe counts 0", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-batch-files-")
      const input = path.join(dir, "in.jsonl")
      fs.writeFileSync(input, `${line("a")}\n\n${line("done")}\n{bad\n${line("b")}\n`)
      const lines = Chunk.toReadonlyArray(yield* Stream.runCollect(Files.lines(input)))
      assert.deepStrictEqual(lines.map(([, n]) => n), [1, 2, 3, 4, 5])
      assert.strictEqual(lines[3]![0], "{bad")
      const resume: Plan.Resume = { ...nothingDone, succeeded: new Set(["done"]) }
      // a, b and the bad line (its id is not done); not the blank line, not the done one
      assert.strictEqual(yield* Files.countToRun(input, resume), 3)
      assert.strictEqual(yield* Files.countToRun("/dev/null", resume), 0)
      const unreadable = yield* Effect.flip(Stream.runDrain(Files.lines(dir)))
      assert.match(unreadable.message, /^cannot read .*: EISDIR/)
    }))

  it.scoped("append each result as one whole line, after what the output held", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-batch-files-")
      const output = path.join(dir, "out.jsonl")
      fs.writeFileSync(output, `${JSON.stringify({ id: "r0", custom_id: "x", response: null, error: null })}\n`)
      const fd = yield* Files.open(output)
      for (const id of ["a", "b"]) {
        yield* Files.append(fd, output, { id: `r-${id}`, custom_id: id, response: null, error: null })
      }
      assert.deepStrictEqual(resultIds(output), [["x", null], ["a", null], ["b", null]])
      const cannot = yield* Effect.flip(Files.open(path.join(dir, "no", "out.jsonl")))
      assert.match(cannot.message, /^cannot write .*out\.jsonl: /)
    }))
})

/** A run of `steps` into a fresh output, on a server that answers each request with `respond`. */
const runSteps = (
  steps: ReadonlyArray<Plan.Step>,
  respond: Parameters<typeof recorder>[0] = () => ({ body: chatCompletionBody })
) =>
  Effect.gen(function*() {
    const screen = yield* terminal(false)
    const dir = yield* tempDir("aifs-batch-runner-")
    const output = path.join(dir, "out.jsonl")
    const server = yield* recorder(respond)
    const run: Runner.Run = {
      steps: Stream.fromIterable(steps),
      output,
      fd: yield* Files.open(output),
      concurrency: 2,
      flights: yield* Batch.makeFlights,
      display: yield* Report.makeDisplay(steps.length, 2),
      tally: { bad: 0, skipped: 0, keptFailed: 0, retried: 0, spent: undefined }
    }
    const exit = yield* Effect.exit(
      Runner.run(run).pipe(Effect.provide(Testing.layerHttp(server.handler, {
        retry: { maxRetries: 0 }
      })))
    )
    return { exit, run, output, screen, sent: yield* server.count }
  })

describe("aifs batch's runner", () => {
  it.scoped("runs each Run step and writes its result; counts the skipped, the kept failures, the retried and the bad", () =>
    Effect.gen(function*() {
      const { exit, output, run, screen, sent } = yield* runSteps([
        { _tag: "Blank" },
        { _tag: "Run", request: request("a"), retried: false },
        { _tag: "Bad", line: 3, reason: "not JSON", counted: true },
        { _tag: "Skip", id: "done", keptFailed: false },
        { _tag: "Skip", id: "kept", keptFailed: true },
        { _tag: "Run", request: request("again"), retried: true },
        { _tag: "Bad", line: 7, reason: "no custom_id", counted: false }
      ])
      assert.strictEqual(exit._tag, "Success", String(exit))
      assert.strictEqual(sent, 2)
      assert.deepStrictEqual(resultIds(output).sort(), [["a", null], ["again", null]])
      assert.deepStrictEqual(run.tally, { bad: 2, skipped: 2, keptFailed: 1, retried: 1, spent: undefined })
      // 7 steps counted at first; the counted bad line leaves the total
      assert.strictEqual(run.display.progress.total, 6)
      assert.strictEqual(run.display.progress.done, 2)
      assert.strictEqual(run.display.progress.failed, 0)
      assert.strictEqual(run.display.progress.tokens, 2 * chatCompletionBody.usage.total_tokens)
      assert.deepStrictEqual(screen.written, ["aifs batch: line 3: not JSON\n", "aifs batch: line 7: no custom_id\n"])
    }))

  it.scoped("writes a failure as an error line and counts it failed", () =>
    Effect.gen(function*() {
      const { output, run } = yield* runSteps(
        [{ _tag: "Run", request: request("gone"), retried: false }],
        () => ({ status: 404, body: { detail: "no such model" } })
      )
      assert.deepStrictEqual(resultIds(output), [["gone", "NotFound"]])
      assert.strictEqual(run.display.progress.failed, 1)
      assert.strictEqual(run.display.progress.done, 0)
    }))

  it.scoped("a spent budget stops the run: the refused line is not written, and no later line is sent", () =>
    Effect.gen(function*() {
      const detail = "Your project reached its monthly budget limit."
      const steps: Array<Plan.Step> = Array.from({ length: 6 }, (_, i) => ({
        _tag: "Run",
        request: request(`r${i}`),
        retried: false
      }))
      const { output, run, sent } = yield* runSteps(
        steps,
        (_, n) => n === 1 ? { body: chatCompletionBody } : { status: 429, body: { detail } }
      )
      assert.strictEqual(run.tally.spent, detail)
      const written = resultIds(output)
      assert.isTrue(written.every(([, error]) => error === null), JSON.stringify(written))
      assert.isBelow(written.length, 2)
      // at most the two in flight when the refusal came
      assert.isAtMost(sent, 3)
    }))
})
