/**
 * `aifs batch IN.jsonl --out OUT.jsonl`: runs a file of requests in the OpenAI batch format at the rate the
 * quota allows, with progress, and resumes where it stopped. Each result is appended as one whole line with
 * one `write`, so a crash (even `kill -9`) leaves at most a torn last line, which the next run removes before
 * it skips the `custom_id`s already done. Ctrl-C finishes what is in flight, then stops; a second Ctrl-C quits.
 * One run at a time writes an output (`OUT.lock`, see outputLock.ts): a second one refuses, naming the first.
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as readline from "node:readline"
import * as Batch from "../services/Batch.js"
import { client } from "./environment.js"
import { UsageError } from "./output.js"
import { lockOutput } from "./outputLock.js"

/**
 * Reads the `custom_id`s already in the output, first cutting a torn last line left by a crash (at its byte
 * offset, found in the bytes: the text before it may hold characters of several bytes, or bytes that are not UTF-8).
 */
export const resumeFrom = (path: string): Set<string> => {
  const done = new Set<string>()
  if (!fs.existsSync(path)) return done
  const bytes = fs.readFileSync(path)
  const end = bytes.lastIndexOf(0x0a) + 1
  // to its own length when no line is torn: a no-op
  fs.truncateSync(path, end)
  // a whole but unreadable line cannot come from this tool; it is left in place and not counted
  for (const line of bytes.subarray(0, end).toString("utf8").split("\n")) {
    const id = customIdOf(line)
    if (id !== "") done.add(id)
  }
  return done
}

/** The `custom_id` of a line, "" when it has none (never a valid one: a batch line needs a non-empty id). */
const customIdOf = (line: string): string => {
  try {
    const id = (JSON.parse(line) as { custom_id?: unknown } | null)?.custom_id
    return typeof id === "string" ? id : ""
  } catch {
    return ""
  }
}

/**
 * How many input lines a run will send: those not blank and not done before. A bad line among them is taken off
 * when it is read (`report`), by the same rule, so that the count ends exact and never below the lines finished.
 */
const countToRun = (path: string, done: ReadonlySet<string>): number => {
  let count = 0
  for (const line of fs.readFileSync(path, "utf8").split("\n")) {
    if (line.trim() !== "" && !done.has(customIdOf(line))) count++
  }
  return count
}

const cannotRead = (path: string, error: unknown) =>
  // node:fs and readline fail with Error objects only: String() is there for the type's unknown
  // Stryker disable next-line ConditionalExpression: the instanceof test is true in every reachable run
  new UsageError(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`)

const lines = (path: string): Stream.Stream<readonly [string, number], UsageError> =>
  Stream.fromAsyncIterable(
    readline.createInterface({ input: fs.createReadStream(path), crlfDelay: Infinity }),
    (error) => cannotRead(path, error)
  ).pipe(Stream.zipWithIndex, Stream.map(([text, index]) => [text, index + 1] as const))

interface Progress {
  total: number
  done: number
  failed: number
  tokens: number
  readonly started: number
}

const formatEta = (seconds: number): string => {
  if (!Number.isFinite(seconds)) return "--:--"
  const s = Math.round(seconds)
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`
}

const render = (p: Progress, now: number, tty: boolean): string => {
  const elapsed = Math.max(1, now - p.started) / 1000
  const finished = p.done + p.failed
  // never fewer than finished, even if the input grew during the run
  const total = Math.max(p.total, finished)
  const rate = finished / elapsed
  // before the first result the rate is 0: the ETA is then Infinity, or NaN with nothing to do, and shows as --:--
  const eta = (total - finished) / rate
  const tpm = Math.round((p.tokens / elapsed) * 60)
  const stats = `${finished}/${total} (${p.failed} failed) ${rate.toFixed(1)} req/s ${tpm} tokens/min ETA ${
    formatEta(eta)
  }`
  if (!tty) return `aifs batch: ${stats}\n`
  const width = 24
  const filled = total === 0 ? width : Math.round((finished / total) * width)
  return `\r[${"#".repeat(filled)}${".".repeat(width - filled)}] ${stats}\u001b[K`
}

const totalTokens = (line: Batch.ResultLine): number => {
  const usage = (line.response?.body as { usage?: { total_tokens?: unknown } } | undefined)?.usage
  return typeof usage?.total_tokens === "number" ? usage.total_tokens : 0
}

/**
 * Runs the requests of `input`, appending their result lines to `output`, with progress and a summary on stderr;
 * the exit code is 1 when a request failed or a line was bad. The caller holds the output's lock (`lockOutput`).
 */
export const runBatch = (input: string, output: string, concurrency: number) =>
  Effect.gen(function*() {
    if (!fs.existsSync(input)) return yield* Effect.fail(new UsageError(`no such file: ${input}`))
    if (concurrency < 1) return yield* Effect.fail(new UsageError("--concurrency must be at least 1"))
    const done = resumeFrom(output)
    const seen = new Set<string>()
    let bad = 0
    let skipped = 0
    const tty = process.stderr.isTTY === true
    const total = yield* Effect.try({ try: () => countToRun(input, done), catch: (error) => cannotRead(input, error) })
    const progress: Progress = {
      total,
      done: 0,
      failed: 0,
      tokens: 0,
      started: yield* Clock.currentTimeMillis
    }
    const fd = fs.openSync(output, "a")
    const stop = yield* Deferred.make<void>()

    const requests = lines(input).pipe(
      Stream.interruptWhen(Deferred.await(stop)),
      Stream.filterMap(([text, line]) => {
        if (text.trim() === "") return Option.none()
        const parsed = Batch.parseLine(text, line)
        const report = (reason: string) => {
          bad++
          if (!done.has(customIdOf(text))) progress.total--
          process.stderr.write(`${tty ? "\r\u001b[K" : ""}aifs batch: line ${line}: ${reason}\n`)
          return Option.none()
        }
        if (Either.isLeft(parsed)) return report(parsed.left.reason)
        const id = parsed.right.custom_id
        if (seen.has(id)) return report(`duplicate custom_id "${id}"`)
        seen.add(id)
        if (done.has(id)) {
          skipped++
          return Option.none()
        }
        return Option.some(parsed.right)
      })
    )

    // a request read before Ctrl-C but not started yet is not sent (the next run sends it): only those in flight finish
    const results = requests.pipe(
      Stream.mapEffect(
        (request) => Effect.unlessEffect(Batch.execute(request), Deferred.isDone(stop)),
        { concurrency, unordered: true }
      ),
      Stream.filterMap(identity),
      Stream.runForEach((line) =>
        Effect.sync(() => {
          // one write of one whole line: appended atomically, never interleaved
          fs.writeSync(fd, `${JSON.stringify(line)}\n`)
          if (line.error === null) progress.done++
          else progress.failed++
          progress.tokens += totalTokens(line)
        })
      ),
      Effect.ensuring(Effect.sync(() => fs.closeSync(fd)))
    )

    const reporter = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.sync(() => process.stderr.write(render(progress, now, tty)))).pipe(
        Effect.repeat(Schedule.spaced(tty ? Duration.millis(200) : Duration.seconds(5)))
      )

    const worker = yield* Effect.forkDaemon(Effect.raceFirst(results, Effect.asVoid(reporter)))
    let interrupts = 0
    const onSigint = () => {
      interrupts++
      if (interrupts > 1) {
        process.exit(130)
      }
    }
    process.on("SIGINT", onSigint)
    yield* Fiber.join(worker).pipe(
      Effect.onInterrupt(() =>
        Effect.gen(function*() {
          process.stderr.write(
            `${tty ? "\n" : ""}aifs batch: stopping after the requests in flight (Ctrl-C again to quit now)\n`
          )
          yield* Deferred.succeed(stop, undefined)
          yield* Fiber.await(worker)
          process.stderr.write(render(progress, yield* Clock.currentTimeMillis, tty) + (tty ? "\n" : ""))
        })
      ),
      Effect.ensuring(Effect.sync(() =>
        process.off("SIGINT", onSigint)
      ))
    )
    const now = yield* Clock.currentTimeMillis
    process.stderr.write(render(progress, now, tty) + (tty ? "\n" : ""))
    yield* Console.error(
      `aifs batch: ${progress.done} succeeded, ${progress.failed} failed (error lines in ${output}), ` +
        `${skipped} already done, ${bad} bad input lines`
    )
    if (progress.failed > 0 || bad > 0) process.exitCode = 1
  })

/**
 * The `batch` command.
 *
 * @since 0.1.0
 * @category commands
 */
export const batchCommand = Command.make(
  "batch",
  {
    input: Args.text({ name: "IN.jsonl" }).pipe(Args.withDescription("Requests in the OpenAI batch format")),
    out: Options.text("out").pipe(
      Options.optional,
      Options.withDescription("Where results are appended (default: IN.out.jsonl); rerun to resume")
    ),
    concurrency: Options.integer("concurrency").pipe(
      Options.withDefault(32),
      Options.withDescription("Requests in flight at once (the rate limiter paces them)")
    )
  },
  ({ concurrency, input, out }) => {
    const output = Option.getOrElse(out, () => input.replace(/(\.jsonl)?$/, ".out.jsonl"))
    // before anything touches the output or starts: a second run on it refuses at once, and never cuts the first
    // one's last line
    return Effect.scoped(
      Effect.zipRight(lockOutput(output), runBatch(input, output, concurrency).pipe(Effect.provide(client)))
    )
  }
).pipe(Command.withDescription("Run a JSONL file of requests at the rate the quota allows; resumable"))
