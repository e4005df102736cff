/**
 * `aifs batch` in the test's process, on the scripted transport and the `TestClock`: one result line in the output
 * per request run, bad input lines on stderr with their number, ids already done skipped, the summary's counts and
 * the exit code; the progress line (done of total, failures, rate, tokens per minute, ETA) every 5 seconds on a pipe
 * and as a bar every 200 ms on a terminal; Ctrl-C finishes the requests in flight, then stops.
 */
import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it, vi } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as TestClock from "effect/TestClock"
import { appendFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { batchCommand, exitCodeOf, resumeCommand, runBatch, shellQuote } from "../../src/cli/batch.js"
import { OutputError } from "../../src/cli/batchOutput.js"
import { UsageError } from "../../src/cli/output.js"
import { retriesSoFar } from "../../src/cli/progress.js"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import { openDescriptors } from "../helpers/descriptors.js"
import { waitUntil } from "../helpers/emulator.js"
import { tempDir } from "../helpers/tempDir.js"
import { terminal } from "../helpers/terminal.js"
import { chatCompletionBody, recorder } from "./helpers.js"

const chat = (customId: string) =>
  JSON.stringify({
    custom_id: customId,
    method: "POST",
    url: "/v1/chat/completions",
    body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: customId }] }
  })

const result = (customId: string) => JSON.stringify({ id: `batch_req_${customId}`, custom_id: customId, error: null })

const files = (input: ReadonlyArray<string>, output?: string) =>
  Effect.gen(function*() {
    const dir = yield* tempDir("aifs-batch-cli-")
    const paths = { input: join(dir, "in.jsonl"), output: join(dir, "out.jsonl") }
    writeFileSync(paths.input, input.map((line) => `${line}\n`).join(""))
    if (output !== undefined) writeFileSync(paths.output, output)
    return paths
  })

const outputIds = (path: string) =>
  readFileSync(path, "utf8").split("\n").filter((line) => line !== "").map((line) =>
    (JSON.parse(line) as { custom_id: string }).custom_id
  )

const contentOf = (request: Testing.ScriptedRequest) =>
  (request.body as { messages: Array<{ content: string }> }).messages[0]!.content

/** Each request answered after `seconds`; the ids in `failing` with a 404. */
const slowServer = (seconds: number, failing: ReadonlyArray<string> = []) =>
  recorder((request) =>
    Effect.as(
      Effect.sleep(`${seconds} seconds`),
      failing.includes(contentOf(request))
        ? { status: 404, body: { detail: "no such model" } }
        : { body: chatCompletionBody }
    )
  )

/**
 * Waits until the server has been called `n` times more, and a turn of the event loop longer: the handlers' sleeps
 * on the `TestClock` start before the test moves it.
 */
const calls = (server: { readonly calls: Queue.Dequeue<unknown> }, n: number) =>
  Effect.replicateEffect(Queue.take(server.calls), n).pipe(
    Effect.zipLeft(Effect.promise(() => new Promise((resolve) => setImmediate(resolve))))
  )

// a clock that does not start at zero: an elapsed time taken from the epoch instead of the start is caught
const start = 1_700_000_000_000

// each test takes well under a second: a run that never ends (a broken change) fails in 5 s, not the default 30
describe("aifs batch", { timeout: 5_000 }, () => {
  it.scoped("one result line per request; bad lines, duplicates and ids already done are reported and counted", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const paths = yield* files(
        [chat("a"), "{not json", "", "   ", chat("b"), chat("a"), chat("done"), chat("c")],
        `${result("done")}\n{"id":"batch_req_c","cus`
      )
      const server = yield* recorder((request) =>
        contentOf(request) === "b" ? { status: 404, body: { detail: "no such model" } } : { body: chatCompletionBody }
      )
      const code = yield* runBatch(paths.input, paths.output, 4).pipe(Effect.provide(Testing.layerHttp(server.handler)))

      // the torn line is gone, the done line kept, one line per request run
      const ids = outputIds(paths.output)
      assert.strictEqual(ids[0], "done")
      assert.deepStrictEqual(ids.slice(1).sort(), ["a", "b", "c"])
      assert.strictEqual(yield* server.count, 3)
      const lines = readFileSync(paths.output, "utf8").split("\n")
      assert.strictEqual(lines.length, 5)
      assert.strictEqual(lines[4], "")
      const failed = lines.map((line) => line === "" ? undefined : JSON.parse(line)).find((line) =>
        line?.custom_id === "b"
      )
      assert.deepStrictEqual(failed.error, { code: "NotFound", message: "no such model", status: 404 })

      assert.include(t.written, "aifs batch: line 2: not JSON\n")
      assert.include(t.written, "aifs batch: line 6: duplicate custom_id \"a\"\n")
      assert.strictEqual(t.written.filter((text) => text.includes(": line ")).length, 2)
      assert.strictEqual(
        t.written.at(-1),
        `aifs batch: 2 succeeded, 1 failed (error lines in ${paths.output}), 1 already done, 2 bad input lines; 38 tokens ` +
          "in 0:00\n"
      )
      // 6 lines that are not blank, 1 done, 2 bad: 3 to run, in no time (the elapsed time counts as 1 ms at least)
      assert.strictEqual(
        t.written.at(-2),
        "aifs batch: 3/3 (1 failed) 180000 req/min 2280000 tokens/min, 0 retries, ETA 0:00\n"
      )
      assert.strictEqual(code, 1)
      assert.strictEqual(openDescriptors(paths.output), 0)
    }))

  it.scoped("a lone carriage return is not a line break: bad lines are numbered as the file's lines, CRLF is one break", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const dir = yield* tempDir("aifs-batch-cli-")
      const paths = { input: join(dir, "in.jsonl"), output: join(dir, "out.jsonl") }
      // line 2 holds a stray CR; line 3 is good JSON with a CR between its fields (JSON whitespace); line 4 is bad
      const withCr = chat("b").replace(",", ",\r")
      writeFileSync(paths.input, `${chat("a")}\r\n{not json\rstill line 2\r\n${withCr}\n[]\r\n${chat("c")}`)
      const server = yield* recorder(() => ({ body: chatCompletionBody }))
      yield* runBatch(paths.input, paths.output, 1).pipe(Effect.provide(Testing.layerHttp(server.handler)))
      assert.deepStrictEqual(outputIds(paths.output).sort(), ["a", "b", "c"])
      assert.deepStrictEqual(t.written.filter((text) => text.includes(": line ")), [
        "aifs batch: line 2: not JSON\n",
        "aifs batch: line 4: missing custom_id\n"
      ])
      assert.include(t.written.at(-1), "3 succeeded, 0 failed")
      assert.include(t.written.at(-1), "2 bad input lines")
    }))

  it.scoped("a run where every request succeeds and every line is good leaves the exit code alone", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const paths = yield* files([chat("a"), chat("b")])
      const server = yield* recorder(() => ({ body: chatCompletionBody }))
      const code = yield* runBatch(paths.input, paths.output, 1).pipe(Effect.provide(Testing.layerHttp(server.handler)))
      assert.deepStrictEqual(outputIds(paths.output).sort(), ["a", "b"])
      assert.strictEqual(
        t.written.at(-1),
        `aifs batch: 2 succeeded, 0 failed, 0 already done, 0 bad input lines; 38 tokens ` +
          "in 0:00\n"
      )
      assert.strictEqual(code, 0)
    }))

  it.scoped("a bad line alone, or a failed request alone, sets exit code 1", () =>
    Effect.gen(function*() {
      const runs = [[[chat("a"), "[]"], "1 succeeded, 0 failed"], [[chat("x")], "0 succeeded, 1 failed"]] as const
      for (const [input, summary] of runs) {
        const t = yield* terminal(false)
        const paths = yield* files(input)
        const server = yield* recorder((request) =>
          contentOf(request) === "x" ? { status: 404, body: { detail: "no" } } : { body: chatCompletionBody }
        )
        const code = yield* runBatch(paths.input, paths.output, 1).pipe(
          Effect.provide(Testing.layerHttp(server.handler))
        )
        assert.include(t.written.at(-1), summary)
        assert.strictEqual(code, 1, summary)
      }
    }))

  it.scoped("the total counts the lines to run: ids done that the input lacks, or on a bad line, take nothing off", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const t = yield* terminal(true)
      const bad = JSON.stringify({ custom_id: "a", method: "GET", url: "/v1/embeddings", body: {} })
      const paths = yield* files([bad, chat("b"), chat("c")], `${result("x")}\n${result("y")}\n${result("a")}\n`)
      const server = yield* slowServer(1)
      const fiber = yield* runBatch(paths.input, paths.output, 1).pipe(
        Effect.provide(Testing.layerHttp(server.handler)),
        Effect.fork
      )
      yield* calls(server, 1)
      yield* TestClock.adjust("1 second")
      yield* calls(server, 1)
      yield* TestClock.adjust("200 millis")
      // 1 of 2 in 1.2 s (with 2 taken off for ids done, the count would be 1 of 1)
      assert.strictEqual(
        t.written.filter((text) => text.startsWith("\r[")).at(-1),
        "\r[############............] 1/2 (0 failed) 50 req/min 950 tokens/min, 0 retries, ETA 0:01\u001b[K"
      )
      yield* TestClock.adjust("800 millis")
      yield* Fiber.join(fiber)
      const end = t.written.findIndex((text) => text.includes("succeeded"))
      assert.strictEqual(
        t.written[end - 1],
        "\r[########################] 2/2 (0 failed) 60 req/min 1140 tokens/min, 0 retries, ETA 0:00\u001b[K\n"
      )
      assert.strictEqual(
        t.written[end],
        `aifs batch: 2 succeeded, 0 failed, 0 already done, 1 bad input lines; 38 tokens ` +
          "in 0:02\n"
      )
    }))

  it.scoped("lines added to the input during the run are run, and the count of lines to run grows with them", () =>
    Effect.gen(function*() {
      const t = yield* terminal(true)
      // lines the reader has not reached while the first request is in flight: 600 kB, which Node reads by 64 kB
      // and stops reading while 1024 lines wait
      const filler = Array.from({ length: 3000 }, () => `-${" x".repeat(100)}`)
      const paths = yield* files([chat("r0"), chat("r1"), chat("r2"), ...filler])
      const appended = yield* Deferred.make<void>()
      const server = yield* recorder((_, n) =>
        n === 1 ? Effect.as(Deferred.await(appended), { body: chatCompletionBody }) : { body: chatCompletionBody }
      )
      const fiber = yield* runBatch(paths.input, paths.output, 1).pipe(
        Effect.provide(Testing.layerHttp(server.handler)),
        Effect.fork
      )
      yield* calls(server, 1)
      appendFileSync(paths.input, `${chat("late1")}\n${chat("late2")}\n`)
      yield* Deferred.succeed(appended, undefined)
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(outputIds(paths.output).sort(), ["late1", "late2", "r0", "r1", "r2"])
      const end = t.written.findIndex((text) => text.includes("succeeded"))
      assert.match(t.written[end - 1]!, /^\r\[#{24}\] 5\/5 \(0 failed\)/)
    }))

  it.scoped("a rerun with every line done sends nothing and shows a full bar", () =>
    Effect.gen(function*() {
      const t = yield* terminal(true)
      const paths = yield* files([chat("a"), chat("b")], `${result("a")}\n${result("b")}\n`)
      const server = yield* recorder(() => ({ body: chatCompletionBody }))
      const code = yield* runBatch(paths.input, paths.output, 1).pipe(Effect.provide(Testing.layerHttp(server.handler)))
      assert.strictEqual(yield* server.count, 0)
      assert.deepStrictEqual(t.written.slice(-2), [
        "\r[########################] 0/0 (0 failed) 0 req/min 0 tokens/min, 0 retries, ETA --:--\u001b[K\n",
        `aifs batch: 0 succeeded, 0 failed, 2 already done, 0 bad input lines; 0 tokens ` +
        "in 0:00\n"
      ])
      assert.strictEqual(code, 0)
    }))

  it.scoped("a rerun runs the failed lines again and compacts the output to one line per id, the latest", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const failedLine = (id: string) =>
        JSON.stringify({ custom_id: id, response: null, error: { code: "ServerError" } })
      const paths = yield* files(
        [chat("a"), chat("b"), chat("c"), chat("d")],
        `${failedLine("a")}\n${result("c")}\n${failedLine("b")}\n`
      )
      const server = yield* recorder(() => ({ body: chatCompletionBody }))
      const code = yield* runBatch(paths.input, paths.output, 1).pipe(Effect.provide(Testing.layerHttp(server.handler)))
      assert.strictEqual(yield* server.count, 3)
      const lines = readFileSync(paths.output, "utf8").split("\n").filter((line) => line !== "").map((line) =>
        JSON.parse(line) as { custom_id: string; error: unknown }
      )
      assert.deepStrictEqual(lines.map((line) => line.custom_id), ["c", "a", "b", "d"])
      assert.isTrue(lines.every((line) => line.error === null))
      assert.strictEqual(
        t.written.at(-1),
        `aifs batch: 3 succeeded, 0 failed, 2 of them failed before, 1 already done, ` +
          "0 bad input lines; 57 tokens in 0:00\n"
      )
      assert.strictEqual(code, 0)
    }))

  it.scoped("--keep-failed leaves the failed lines as they are, and the run still ends with exit code 1", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const failedLine = JSON.stringify({ custom_id: "a", response: null, error: { code: "ServerError" } })
      const paths = yield* files([chat("a"), chat("b")], `${failedLine}\n`)
      const server = yield* recorder(() => ({ body: chatCompletionBody }))
      const code = yield* runBatch(paths.input, paths.output, 1, { keepFailed: true }).pipe(
        Effect.provide(Testing.layerHttp(server.handler))
      )
      assert.strictEqual(yield* server.count, 1)
      assert.deepStrictEqual(outputIds(paths.output), ["a", "b"])
      assert.strictEqual(
        t.written.at(-1),
        `aifs batch: 1 succeeded, 0 failed, 1 already done (1 failed, kept by ` +
          "--keep-failed), 0 bad input lines; 19 tokens in 0:00\n"
      )
      assert.strictEqual(code, 1)
    }))

  it.scoped("an output that cannot be opened is a usage error naming it; one that cannot be written ends the run", () =>
    Effect.gen(function*() {
      yield* terminal(false)
      const paths = yield* files([chat("a"), chat("b")])
      const server = yield* recorder(() => ({ body: chatCompletionBody }))
      const run = (output: string) =>
        Effect.flip(runBatch(paths.input, output, 1).pipe(Effect.provide(Testing.layerHttp(server.handler))))
      const missing = join(paths.input, "..", "no-such-folder", "out.jsonl")
      const unopened = yield* run(missing)
      assert.instanceOf(unopened, UsageError)
      assert.match(unopened.message, new RegExp(`^cannot write ${missing}: ENOENT`))
      assert.strictEqual(yield* server.count, 0)
      const full = join(paths.input, "..", "full.jsonl")
      symlinkSync("/dev/full", full)
      const unwritten = yield* run(full)
      assert.instanceOf(unwritten, OutputError)
      assert.match(unwritten.message, new RegExp(`^cannot write ${full}: ENOSPC`))
      assert.strictEqual(openDescriptors(full), 0)
    }))

  it.scoped("the input given as the output is refused before anything is read or written", () =>
    Effect.gen(function*() {
      yield* terminal(false)
      const paths = yield* files([chat("a")])
      const server = yield* recorder(() => ({ body: chatCompletionBody }))
      const before = readFileSync(paths.input, "utf8")
      const error = yield* runBatch(paths.input, paths.input, 1).pipe(
        Effect.provide(Testing.layerHttp(server.handler)),
        Effect.flip
      )
      assert.instanceOf(error, UsageError)
      assert.strictEqual(
        error.message,
        `--out ${paths.input} is the input itself: give the results a file of their own`
      )
      assert.strictEqual(readFileSync(paths.input, "utf8"), before)
      assert.strictEqual(yield* server.count, 0)
    }))

  it.scoped("a write that fails during the grace after a stop is said in one line, before the summary", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const t = yield* terminal(false)
      const paths = yield* files([chat("a"), chat("b")])
      const full = join(paths.input, "..", "full.jsonl")
      symlinkSync("/dev/full", full)
      const server = yield* slowServer(1)
      const fiber = yield* runBatch(paths.input, full, 2).pipe(
        Effect.provide(Testing.layerHttp(server.handler)),
        Effect.fork
      )
      yield* calls(server, 2)
      const interrupter = yield* Fiber.interrupt(fiber).pipe(Effect.fork)
      yield* TestClock.adjust("1 second")
      assert.isTrue(Exit.isInterrupted(yield* Fiber.join(interrupter)))
      const errors = t.written.filter((text) => text.startsWith("aifs: error: "))
      assert.strictEqual(errors.length, 1, t.written.join(""))
      assert.match(errors[0]!, new RegExp(`^aifs: error: OutputError: cannot write ${full}: ENOSPC`))
      assert.include(t.written.at(-1), "aifs batch: stopped;")
    }))

  it.scoped("a compaction that fails is said in one line; the run itself stands, its output a log a rerun reads", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const failedLine = JSON.stringify({ custom_id: "a", response: null, error: { code: "ServerError" } })
      const paths = yield* files([chat("a")], `${failedLine}\n`)
      mkdirSync(`${paths.output}.compacting`)
      const server = yield* recorder(() => ({ body: chatCompletionBody }))
      const code = yield* runBatch(paths.input, paths.output, 1).pipe(Effect.provide(Testing.layerHttp(server.handler)))
      assert.match(t.written.at(-1)!, new RegExp(`^aifs batch: cannot compact ${paths.output}: EISDIR`))
      assert.deepStrictEqual(outputIds(paths.output), ["a", "a"])
      assert.strictEqual(code, 0)
    }))

  it("the resume command: input and output quoted for a shell where they need it, the flags that differ", () => {
    assert.strictEqual(
      resumeCommand("in.jsonl", "/tmp/out.jsonl", 32, false),
      "aifs batch in.jsonl --out /tmp/out.jsonl"
    )
    assert.strictEqual(
      resumeCommand("my in.jsonl", "it's.jsonl", 8, true),
      "aifs batch 'my in.jsonl' --out 'it'\\''s.jsonl' --concurrency 8 --keep-failed"
    )
    assert.strictEqual(shellQuote("a b"), "'a b'")
    assert.strictEqual(shellQuote("x;y"), "'x;y'")
    assert.strictEqual(shellQuote("$HOME/a"), "'$HOME/a'")
    assert.strictEqual(shellQuote("dir/a-b_c.1@x%y+z=w:v,u"), "dir/a-b_c.1@x%y+z=w:v,u")
  })

  it.scoped("a missing or unreadable input file and a concurrency below 1 are usage errors, before any request", () =>
    Effect.gen(function*() {
      yield* terminal(false)
      const paths = yield* files([chat("a")])
      const server = yield* recorder(() => ({ body: chatCompletionBody }))
      const layer = Testing.layerHttp(server.handler)
      const missing = yield* runBatch(`${paths.input}.none`, paths.output, 1).pipe(Effect.provide(layer), Effect.flip)
      assert.instanceOf(missing, UsageError)
      assert.strictEqual(missing.message, `no such file: ${paths.input}.none`)
      const zero = yield* runBatch(paths.input, paths.output, 0).pipe(Effect.provide(layer), Effect.flip)
      assert.strictEqual(zero.message, "--concurrency must be at least 1")
      assert.isFalse(existsSync(paths.output))
      assert.strictEqual(yield* server.count, 0)
      // a directory (`aifs batch .`): said as such, and no output beside it
      const dir = yield* tempDir("aifs-batch-cli-")
      const folder = yield* runBatch(dir, `${dir}.out.jsonl`, 1).pipe(Effect.provide(layer), Effect.flip)
      assert.instanceOf(folder, UsageError)
      assert.strictEqual(folder.message, `${dir} is a directory: give the JSONL file of requests`)
      assert.isFalse(existsSync(`${dir}.out.jsonl`))
      assert.strictEqual(yield* server.count, 0)
      // 1 is enough
      yield* runBatch(paths.input, paths.output, 1).pipe(Effect.provide(layer))
      assert.deepStrictEqual(outputIds(paths.output), ["a"])
    }))

  it.scoped("on a pipe: a progress line every 5 seconds with done of total, failures, rate, tokens per minute, ETA", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const t = yield* terminal(false)
      const paths = yield* files(Array.from({ length: 9 }, (_, i) => chat(`r${i}`)))
      const server = yield* slowServer(4, ["r1"])
      const fiber = yield* runBatch(paths.input, paths.output, 3).pipe(
        Effect.provide(Testing.layerHttp(server.handler, { retry: { maxRetries: 0 } })),
        Effect.fork
      )
      yield* calls(server, 3)
      assert.deepStrictEqual(t.written, ["aifs batch: 0/9 (0 failed) 0 req/min 0 tokens/min, 0 retries, ETA --:--\n"])
      yield* TestClock.adjust("4 seconds")
      yield* calls(server, 3)
      assert.strictEqual(t.written.length, 1)
      yield* TestClock.adjust("1 second")
      // 3 done in 5 s, one of them failed (no tokens), each in 4 s: 6 left, 3 at once, take 8 s
      assert.strictEqual(t.written[1], "aifs batch: 3/9 (1 failed) 36 req/min 456 tokens/min, 0 retries, ETA 0:08\n")
      yield* TestClock.adjust("3 seconds")
      yield* calls(server, 3)
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual(t.written[2], "aifs batch: 6/9 (1 failed) 36 req/min 570 tokens/min, 0 retries, ETA 0:04\n")
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(t.written.slice(3), [
        "aifs batch: 9/9 (1 failed) 45 req/min 760 tokens/min, 0 retries, ETA 0:00\n",
        `aifs batch: 8 succeeded, 1 failed (error lines in ${paths.output}), 0 already done, 0 bad input lines; 152 tokens ` +
        "in 0:12\n"
      ])
    }))

  it.scoped("on a terminal: a bar every 200 ms over one line, and the last one ends the line", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const t = yield* terminal(true)
      const paths = yield* files(["oops", ...Array.from({ length: 8 }, (_, i) => chat(`r${i}`))])
      const server = yield* slowServer(0.3)
      const fiber = yield* runBatch(paths.input, paths.output, 2).pipe(
        Effect.provide(Testing.layerHttp(server.handler)),
        Effect.fork
      )
      yield* calls(server, 2)
      yield* TestClock.adjust("200 millis")
      yield* TestClock.adjust("100 millis")
      yield* calls(server, 2)
      yield* TestClock.adjust("100 millis")
      const bars = t.written.filter((text) => text.startsWith("\r["))
      assert.strictEqual(bars.length, 3)
      assert.deepStrictEqual(bars.slice(1), [
        "\r[........................] 0/8 (0 failed) 0 req/min 0 tokens/min, 0 retries, ETA --:--\u001b[K",
        // 2 of 8 in 0.4 s: 300 a minute, 19 tokens each; 6 left of 0.3 s each, 2 at once
        "\r[######..................] 2/8 (0 failed) 300 req/min 5700 tokens/min, 0 retries, ETA 0:01\u001b[K"
      ])
      // a bad line clears the bar's line before it is reported
      assert.include(t.written, "\r\u001b[Kaifs batch: line 1: not JSON\n")
      yield* TestClock.adjust("200 millis")
      yield* calls(server, 2)
      yield* TestClock.adjust("300 millis")
      yield* calls(server, 2)
      yield* TestClock.adjust("300 millis")
      yield* Fiber.join(fiber)
      const end = t.written.findIndex((text) => text.includes("succeeded"))
      assert.strictEqual(
        t.written[end - 1],
        "\r[########################] 8/8 (0 failed) 400 req/min 7600 tokens/min, 0 retries, ETA 0:00\u001b[K\n"
      )
    }))

  it.scoped("the ETA in minutes and seconds, the seconds on two digits", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const t = yield* terminal(false)
      const paths = yield* files(Array.from({ length: 26 }, (_, i) => chat(`r${i}`)))
      const server = yield* slowServer(4)
      const fiber = yield* runBatch(paths.input, paths.output, 1).pipe(
        Effect.provide(Testing.layerHttp(server.handler)),
        Effect.fork
      )
      yield* calls(server, 1)
      yield* TestClock.adjust("5 seconds")
      // 1 of 26 in 5 s, each taking 4 s, one at a time: 25 left take 100 s
      assert.strictEqual(t.written[1], "aifs batch: 1/26 (0 failed) 12 req/min 228 tokens/min, 0 retries, ETA 1:40\n")
      const interrupter = yield* Fiber.interrupt(fiber).pipe(Effect.fork)
      yield* TestClock.adjust("10 seconds")
      yield* Fiber.join(interrupter)
    }))

  it.scoped("stopped (Ctrl-C, SIGTERM): the requests in flight finish within the grace and are written, no other starts", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const t = yield* terminal(false)
      const paths = yield* files(Array.from({ length: 10 }, (_, i) => chat(`r${i}`)))
      const server = yield* slowServer(4)
      const before = process.listeners("SIGINT")
      const beforeTerm = process.listeners("SIGTERM")
      const fiber = yield* runBatch(paths.input, paths.output, 3, { resumeCommand: "aifs batch in --out out" }).pipe(
        Effect.provide(Testing.layerHttp(server.handler)),
        Effect.fork
      )
      yield* calls(server, 3)
      assert.strictEqual(process.listeners("SIGINT").filter((listener) => !before.includes(listener)).length, 1)
      assert.strictEqual(process.listeners("SIGTERM").filter((listener) => !beforeTerm.includes(listener)).length, 1)
      const interrupter = yield* Fiber.interrupt(fiber).pipe(Effect.fork)
      yield* TestClock.adjust("1 second")
      assert.include(
        t.written,
        "aifs batch: stopping: no new requests; the 3 in flight get 5s (Ctrl-C again to quit now)\n"
      )
      yield* TestClock.adjust("3 seconds")
      const exit = yield* Fiber.join(interrupter)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.deepStrictEqual(outputIds(paths.output).sort(), ["r0", "r1", "r2"])
      assert.strictEqual(yield* server.count, 3)
      assert.deepStrictEqual(t.written.slice(-3), [
        "aifs batch: 3/10 (0 failed) 45 req/min 855 tokens/min, 0 retries, ETA 0:10\n",
        `aifs batch: 3 succeeded, 0 failed, 0 already done, 0 bad input lines; 57 tokens ` +
        "in 0:04\n",
        "aifs batch: stopped; the rest is left for a rerun: aifs batch in --out out\n"
      ])
      assert.deepStrictEqual(process.listeners("SIGINT"), before)
      assert.deepStrictEqual(process.listeners("SIGTERM"), beforeTerm)
      assert.strictEqual(openDescriptors(paths.output), 0)
    }))

  it.scoped("stopped: requests still in flight when the grace ends are cut, not written, and counted in the summary", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const t = yield* terminal(false)
      const paths = yield* files(Array.from({ length: 4 }, (_, i) => chat(`r${i}`)))
      // r0 answers in 1 s, the others in 30
      const server = yield* recorder((request) =>
        Effect.as(Effect.sleep(contentOf(request) === "r0" ? "1 second" : "30 seconds"), { body: chatCompletionBody })
      )
      const fiber = yield* runBatch(paths.input, paths.output, 2, { grace: Duration.seconds(2) }).pipe(
        Effect.provide(Testing.layerHttp(server.handler)),
        Effect.fork
      )
      yield* calls(server, 2)
      yield* TestClock.adjust("1 second")
      yield* calls(server, 1)
      const interrupter = yield* Fiber.interrupt(fiber).pipe(Effect.fork)
      yield* TestClock.adjust("1 second")
      // r0 done: r1 and r2 in flight
      assert.include(
        t.written,
        "aifs batch: stopping: no new requests; the 2 in flight get 2s (Ctrl-C again to quit now)\n"
      )
      assert.isTrue(Option.isNone(yield* Fiber.poll(interrupter)))
      yield* TestClock.adjust("1 second")
      assert.isTrue(Exit.isInterrupted(yield* Fiber.join(interrupter)))
      assert.deepStrictEqual(outputIds(paths.output), ["r0"])
      assert.strictEqual(
        t.written.at(-1),
        `aifs batch: stopped; 2 requests in flight cut at the end of the grace; the rest is left for a rerun: aifs batch ${paths.input} --out ${paths.output}\n`
      )
    }))

  it.scoped("on a terminal, the stop message starts a new line and the last bar ends its own", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(start)
      const t = yield* terminal(true)
      const paths = yield* files(Array.from({ length: 4 }, (_, i) => chat(`r${i}`)))
      const server = yield* slowServer(1)
      const fiber = yield* runBatch(paths.input, paths.output, 2).pipe(
        Effect.provide(Testing.layerHttp(server.handler)),
        Effect.fork
      )
      yield* calls(server, 2)
      yield* Fiber.interrupt(fiber).pipe(Effect.fork)
      yield* TestClock.adjust("1 second")
      yield* Fiber.await(fiber)
      assert.include(
        t.written,
        "\naifs batch: stopping: no new requests; the 2 in flight get 5s (Ctrl-C again to quit now)\n"
      )
      assert.include(
        t.written,
        "\r[############............] 2/4 (0 failed) 120 req/min 2280 tokens/min, 0 retries, ETA 0:01\u001b[K\n"
      )
    }))

  it.scoped("a spent budget ends the run with 3, the summary, and how many lines are left for the rerun", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const detail = "Your project reached its monthly budget limit."
      const paths = yield* files(["a", "b", "c", "d", "e"].map(chat))
      // one at a time: a fails, b succeeds, c meets the spent budget, and d and e are never sent
      const server = yield* recorder((request) =>
        contentOf(request) === "a"
          ? { status: 404, body: { detail: "no such model" } }
          : contentOf(request) === "b"
          ? { body: chatCompletionBody }
          : { status: 429, body: { detail } }
      )
      const code = yield* runBatch(paths.input, paths.output, 1, { resumeCommand: "aifs batch again" }).pipe(
        Effect.provide(Testing.layerHttp(server.handler))
      )
      assert.strictEqual(code, 3)
      assert.strictEqual(yield* server.count, 3)
      assert.deepStrictEqual(outputIds(paths.output).sort(), ["a", "b"])
      // five lines, one done, one failed: three left, the refused one among them
      assert.strictEqual(
        t.written.at(-1),
        `aifs batch: stopped: the key's monthly budget is spent (${detail}); 3 lines are left for a rerun once it is ` +
          "raised: aifs batch again\n"
      )
    }))

  it("the exit code: 3 for a spent budget before anything else, 1 for a failure, a kept failure or a bad line", () => {
    const progress = { total: 4, done: 4, failed: 0, tokens: 0, requestMs: 0, started: 0, concurrency: 1 }
    const tally = { bad: 0, skipped: 0, keptFailed: 0, retried: 0, spent: undefined }
    assert.strictEqual(exitCodeOf(progress, tally), 0)
    assert.strictEqual(exitCodeOf(progress, { ...tally, spent: "spent" }), 3)
    assert.strictEqual(exitCodeOf({ ...progress, failed: 1 }, { ...tally, bad: 1, spent: "spent" }), 3)
    assert.strictEqual(exitCodeOf({ ...progress, failed: 1 }, tally), 1)
    assert.strictEqual(exitCodeOf(progress, { ...tally, keptFailed: 1 }), 1)
    assert.strictEqual(exitCodeOf(progress, { ...tally, bad: 1 }), 1)
  })

  it.scoped("a second signal quits at once: 130 after Ctrl-C, 143 after SIGTERM", () =>
    Effect.gen(function*() {
      yield* terminal(false)
      const exit = vi.spyOn(process, "exit").mockImplementation((() => undefined) as typeof process.exit)
      yield* Effect.addFinalizer(() => Effect.sync(() => exit.mockRestore()))
      const paths = yield* files([chat("a")])
      const server = yield* slowServer(1)
      const before = { SIGINT: process.listeners("SIGINT"), SIGTERM: process.listeners("SIGTERM") }
      const fiber = yield* runBatch(paths.input, paths.output, 1).pipe(
        Effect.provide(Testing.layerHttp(server.handler)),
        Effect.fork
      )
      yield* calls(server, 1)
      const added = (signal: "SIGINT" | "SIGTERM") =>
        process.listeners(signal).filter((listener) => !before[signal].includes(listener))[0]!
      added("SIGTERM")("SIGTERM")
      assert.strictEqual(exit.mock.calls.length, 0)
      added("SIGINT")("SIGINT")
      assert.deepStrictEqual(exit.mock.calls, [[130]])
      added("SIGTERM")("SIGTERM")
      assert.deepStrictEqual(exit.mock.calls, [[130], [143]])
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
    }))

  it.scoped("the command rides out a server that is away, under failUnconnected as the CLI runs every command", () =>
    Effect.gen(function*() {
      yield* terminal(false)
      const dir = yield* tempDir("aifs-batch-cli-")
      const input = join(dir, "in.jsonl")
      writeFileSync(input, `${chat("a")}\n`)
      // a loopback port nothing listens on, until the emulator starts there (closed and bound again: another
      // process taking it in between fails the test with EADDRINUSE, never passes it)
      const port = yield* Effect.async<number>((resume) => {
        const probe = createServer().listen(0, "127.0.0.1", () => {
          const { port } = probe.address() as AddressInfo
          probe.close(() => resume(Effect.succeed(port)))
        })
      })
      const retriesBefore = yield* retriesSoFar
      const fiber = yield* Command.run(batchCommand, { name: "aifs", version: "0" })(["node", "aifs", input]).pipe(
        Effect.provide(NodeContext.layer),
        Effect.withConfigProvider(
          ConfigProvider.fromMap(new Map([["AIFS_BASE_URL", `http://127.0.0.1:${port}/v2`], ["AIFS_CACHE_DIR", ""]]))
        ),
        // as the CLI runs every command
        RetryPolicy.failUnconnected,
        Effect.fork
      )
      // the refused connection is retried (a run that fails it instead ends here)
      yield* waitUntil(
        "the refused request is retried, or the run ends",
        Effect.zipWith(retriesSoFar, fiber.poll, (retries, done) => retries > retriesBefore || Option.isSome(done)),
        { deadlineMillis: 3_000 }
      )
      yield* Layer.build(Emulator.layer({ port }))
      yield* TestClock.adjust("1 minute")
      yield* Fiber.join(fiber)
      assert.deepStrictEqual(
        readFileSync(join(dir, "in.out.jsonl"), "utf8").split("\n").filter((l) => l !== "").map((l) =>
          JSON.parse(l).error
        ),
        [null]
      )
      assert.notOk(process.exitCode)
    }))

  it.scoped("the command: results in IN.out.jsonl (IN with .jsonl dropped) unless --out names a file; no key: the emulator", () =>
    Effect.gen(function*() {
      const t = yield* terminal(false)
      const dir = yield* tempDir("aifs-batch-cli-")
      const input = join(dir, "in.jsonl")
      const other = join(dir, "requests.txt")
      writeFileSync(input, `${chat("a")}\n${chat("b")}\n`)
      writeFileSync(other, `${chat("c")}\n`)
      const aifsBatch = (...args: ReadonlyArray<string>) =>
        Command.run(batchCommand, { name: "aifs", version: "0" })(["node", "aifs", ...args]).pipe(
          Effect.provide(NodeContext.layer),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["AIFS_CACHE_DIR", ""]])))
        )
      yield* aifsBatch(input)
      assert.deepStrictEqual(outputIds(join(dir, "in.out.jsonl")).sort(), ["a", "b"])
      assert.isTrue(t.written.some((text) => text.includes("using the embedded emulator")))
      yield* aifsBatch(other)
      assert.deepStrictEqual(outputIds(join(dir, "requests.txt.out.jsonl")), ["c"])
      yield* aifsBatch("--out", join(dir, "elsewhere.jsonl"), "--concurrency", "1", input)
      assert.deepStrictEqual(outputIds(join(dir, "elsewhere.jsonl")).sort(), ["a", "b"])
      assert.notOk(process.exitCode)
      // a bad line: the run's code is the process's, left for it to exit with once its output is flushed
      yield* Effect.addFinalizer(() => Effect.sync(() => (process.exitCode = undefined)))
      writeFileSync(other, `${chat("d")}\n{not json\n`)
      yield* aifsBatch(other)
      assert.strictEqual(process.exitCode, 1)
      assert.deepStrictEqual(outputIds(join(dir, "requests.txt.out.jsonl")).sort(), ["c", "d"])
    }))
})
