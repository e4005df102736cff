/**
 * `aifs batch IN.jsonl --out OUT.jsonl`: runs a file of requests in the OpenAI batch format at the rate the
 * quota allows, with progress, and resumes where it stopped: a rerun skips the requests that succeeded and runs
 * again those that failed (unless `--keep-failed`). The output is a log read and written as streams (see
 * batchOutput.ts): each result appended as one whole line, a later line for an id replacing the earlier, and the
 * file compacted to one line per id when a run ends. Ctrl-C finishes what is in flight, then stops; a second
 * Ctrl-C quits. One run at a time writes an output (`OUT.lock`, see outputLock.ts): a second one refuses.
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as ClientConfig from "../layers/ClientConfig.js"
import { Admitting } from "../layers/RateLimiter.js"
import * as Batch from "../services/Batch.js"
import * as BatchOutput from "./batchOutput.js"
import { client } from "./environment.js"
import { withDefault } from "./help.js"
import { describe, UsageError } from "./output.js"
import { lockOutput } from "./outputLock.js"
import * as Progress from "./progress.js"
import * as Signals from "./signals.js"

/**
 * How many input lines a run will send: those not blank and not done before. A bad line among them is taken off
 * when it is read (`report`), by the same rule, so that the count ends exact and never below the lines finished.
 */
const countToRun = (path: string, done: (id: string) => boolean): Effect.Effect<number, UsageError> =>
  Stream.runCount(Stream.filter(lines(path), ([line]) => line.trim() !== "" && !done(BatchOutput.customIdOf(line))))

const cannotRead = (path: string, error: unknown) =>
  new UsageError(`cannot read ${path}: ${BatchOutput.messageOf(error)}`)

const lines = (path: string): Stream.Stream<readonly [string, number], UsageError> =>
  BatchOutput.readLines(path, (error) => cannotRead(path, error))

const totalTokens = (line: Batch.ResultLine): number => {
  const usage = (line.response?.body as { usage?: { total_tokens?: unknown } } | undefined)?.usage
  return typeof usage?.total_tokens === "number" ? usage.total_tokens : 0
}

/**
 * Options of a run.
 *
 * @since 0.2.0
 * @category models
 */
export interface RunOptions {
  /** Leave the requests whose latest result failed as they are, instead of running them again. */
  readonly keepFailed?: boolean
  /** How long the requests in flight may take after a stop (Ctrl-C, SIGTERM): 5 seconds by default. */
  readonly grace?: Duration.Duration
  /** The command that resumes the run, printed when it stops. */
  readonly resumeCommand?: string
}

/**
 * The command that resumes a run, for a POSIX shell: its input, output and the flags that differ from the defaults.
 *
 * @since 0.2.0
 * @category commands
 */
export const resumeCommand = (input: string, output: string, concurrency: number, keepFailed: boolean): string =>
  [
    `aifs batch ${shellQuote(input)} --out ${shellQuote(output)}`,
    ...(concurrency === 32 ? [] : [`--concurrency ${concurrency}`]),
    ...(keepFailed ? ["--keep-failed"] : [])
  ].join(" ")

/**
 * A word for a POSIX shell: as it is when it is safe, single-quoted otherwise.
 *
 * @since 0.2.0
 * @category commands
 */
export const shellQuote = (word: string): string =>
  /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`

/**
 * Runs the requests of `input`, appending their result lines to `output`, with progress and a summary on stderr;
 * the exit code is 1 when a request failed or a line was bad. The caller holds the output's lock (`lockOutput`).
 */
export const runBatch = (input: string, output: string, concurrency: number, options: RunOptions = {}) =>
  Effect.gen(function*() {
    if (!fs.existsSync(input)) return yield* Effect.fail(new UsageError(`no such file: ${input}`))
    if (concurrency < 1) return yield* Effect.fail(new UsageError("--concurrency must be at least 1"))
    if (fs.existsSync(output) && fs.realpathSync(output) === fs.realpathSync(input)) {
      return yield* Effect.fail(
        new UsageError(`--out ${output} is the input itself: give the results a file of their own`)
      )
    }
    const before = yield* BatchOutput.scan(output)
    // an id is done when its latest line succeeded, or failed and the user keeps failures (--keep-failed)
    const done = (id: string) => before.succeeded.has(id) || (options.keepFailed === true && before.failed.has(id))
    const seen = new Set<string>()
    let bad = 0
    let skipped = 0
    let keptFailed = 0
    let retried = 0
    const tty = process.stderr.isTTY === true
    // an input that is not a file (a pipe, /dev/stdin) can be read once only: its total is then what has finished
    const total = fs.statSync(input).isFile() ? yield* countToRun(input, done) : 0
    const progress: Progress.Progress = {
      total,
      done: 0,
      failed: 0,
      tokens: 0,
      requestMs: 0,
      started: yield* Clock.currentTimeMillis,
      concurrency
    }
    const retriesBefore = yield* Progress.retriesSoFar
    const windowMs = Duration.toMillis(
      yield* ClientConfig.positiveDuration("AIFS_LIMITER_WINDOW").pipe(Config.withDefault(Duration.minutes(1)))
    )
    const render = Effect.gen(function*() {
      const retries = (yield* Progress.retriesSoFar) - retriesBefore
      const quota = yield* Progress.quotaState(windowMs)
      return Progress.render(progress, yield* Clock.currentTimeMillis, tty, retries, quota)
    })
    const fd = yield* Effect.try({
      try: () => fs.openSync(output, "a"),
      catch: (error) => new UsageError(`cannot write ${output}: ${BatchOutput.messageOf(error)}`)
    })
    const stop = yield* Deferred.make<void>()
    // the gate the transport was built with, when the caller gave it one: closed at a stop
    const line = yield* Effect.serviceOption(Admitting)

    const requests = lines(input).pipe(
      Stream.interruptWhen(Deferred.await(stop)),
      Stream.filterMap(([text, line]) => {
        if (text.trim() === "") return Option.none()
        const parsed = Batch.parseLine(text, line)
        const report = (reason: string) => {
          bad++
          if (!done(BatchOutput.customIdOf(text))) progress.total--
          process.stderr.write(`${tty ? "\r\u001b[K" : ""}aifs batch: line ${line}: ${reason}\n`)
          return Option.none()
        }
        if (Either.isLeft(parsed)) return report(parsed.left.reason)
        const id = parsed.right.custom_id
        if (seen.has(id)) return report(`duplicate custom_id "${id}"`)
        seen.add(id)
        if (done(id)) {
          skipped++
          if (before.failed.has(id)) keptFailed++
          return Option.none()
        }
        if (before.failed.has(id)) retried++
        return Option.some(parsed.right)
      })
    )

    // a request read before a stop but not started yet is not sent (the next run sends it)
    let inFlight = 0
    // the key's budget is spent (the service said so, or the limiter refuses for it): the run stops spending, and
    // the lines refused for it are not written, so that a rerun sends them (even with --keep-failed)
    let spent: string | undefined
    const results = requests.pipe(
      Stream.mapEffect(
        (request) =>
          Effect.unlessEffect(
            Effect.gen(function*() {
              inFlight++
              const sent = yield* Clock.currentTimeMillis
              return yield* Effect.ensuring(
                Batch.execute(request),
                Effect.map(Clock.currentTimeMillis, (now) => {
                  inFlight--
                  progress.requestMs += now - sent
                })
              )
            }),
            Deferred.isDone(stop)
          ),
        { concurrency, unordered: true }
      ),
      Stream.filterMap(identity),
      Stream.filterEffect((line) => {
        if (line.error?.code !== "QuotaExceeded") return Effect.succeed(true)
        spent ??= line.error.message
        return Effect.as(Deferred.succeed(stop, undefined), false)
      }),
      Stream.runForEach((line) =>
        Effect.try({
          // one write of one whole line: appended atomically, never interleaved
          try: () => BatchOutput.writeAll(fd, Buffer.from(`${JSON.stringify(line)}\n`)),
          catch: (error) =>
            new BatchOutput.OutputError({
              message: `cannot write ${output}: ${BatchOutput.messageOf(error)}`
            })
        }).pipe(Effect.tap(() => {
          if (line.error === null) progress.done++
          else progress.failed++
          progress.tokens += totalTokens(line)
        }))
      ),
      Effect.ensuring(Effect.sync(() => fs.closeSync(fd)))
    )

    const reporter = Effect.flatMap(render, (line) => Effect.sync(() => process.stderr.write(line))).pipe(
      Effect.repeat(Schedule.spaced(tty ? Duration.millis(200) : Duration.seconds(5)))
    )

    // after a stop, the requests in flight get `grace`; those not done by then are cut (and left for the rerun)
    let cut = 0
    const graceOver = Deferred.await(stop).pipe(
      Effect.zipRight(Effect.sleep(options.grace ?? Duration.seconds(5))),
      Effect.zipRight(Effect.sync(() => {
        cut = inFlight
      }))
    )
    const summary = Effect.gen(function*() {
      process.stderr.write((yield* render) + (tty ? "\n" : ""))
      const elapsed = ((yield* Clock.currentTimeMillis) - progress.started) / 1000
      const retriedText = retried > 0 ? `, ${retried} of them failed before` : ""
      const keptText = keptFailed > 0 ? ` (${keptFailed} failed, kept by --keep-failed)` : ""
      yield* Console.error(
        `aifs batch: ${progress.done} succeeded, ${progress.failed} failed${retriedText} (error lines in ${output}), ` +
          `${skipped} already done${keptText}, ${bad} bad input lines; ${progress.tokens} tokens in ` +
          Progress.formatDuration(elapsed)
      )
    })
    // from here a stop can only land in the join below, where it is handled (never between the fork and the join,
    // where it would leave the worker writing while the output is compacted)
    yield* Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const worker = yield* Effect.forkDaemon(Effect.interruptible(
          // the first to end, success or failure (a write error ends the run at once)
          Effect.raceFirst(results, Effect.raceFirst(Effect.asVoid(reporter), graceOver))
        ))
        // a second signal quits at once (the lock goes with the process, every line written stays whole)
        let signals = 0
        const onSignal = (signal: Signals.StopSignal) => () => {
          if (++signals > 1) process.exit(Signals.exitCode(signal))
        }
        const onSigint = onSignal("SIGINT")
        const onSigterm = onSignal("SIGTERM")
        process.on("SIGINT", onSigint)
        process.on("SIGTERM", onSigterm)
        yield* restore(Fiber.join(worker)).pipe(
          Effect.onInterrupt(() =>
            Effect.gen(function*() {
              process.stderr.write(
                `${tty ? "\n" : ""}aifs batch: stopping: no new requests; the ${inFlight} in flight get ` +
                  `${Duration.format(options.grace ?? Duration.seconds(5))} (Ctrl-C again to quit now)\n`
              )
              yield* Deferred.succeed(stop, undefined)
              // what waits in the limiter's line is not sent any more: only what was sent finishes in the grace
              if (Option.isSome(line)) line.value.open = false
              const ended = yield* Fiber.await(worker)
              // a write that failed during the grace is said, as it would be without a stop
              if (Exit.isFailure(ended) && !Cause.isInterruptedOnly(ended.cause)) {
                yield* Console.error(`aifs: error: ${describe(Cause.squash(ended.cause))}`)
              }
              yield* summary
              const left = cut > 0 ? `${cut} requests cut (sent, or waiting for the quota); ` : ""
              yield* Console.error(
                `aifs batch: stopped; ${left}the rest is left for a rerun: ${
                  options.resumeCommand ?? `aifs batch ${shellQuote(input)} --out ${shellQuote(output)}`
                }`
              )
            })
          ),
          Effect.ensuring(Effect.sync(() => {
            process.off("SIGINT", onSigint)
            process.off("SIGTERM", onSigterm)
          }))
        )
      })
    )
    yield* summary
    if (progress.failed > 0 || keptFailed > 0 || bad > 0) process.exitCode = 1
    if (spent !== undefined) {
      const left = Math.max(0, progress.total - progress.done - progress.failed)
      yield* Console.error(
        `aifs batch: stopped: the key's monthly budget is spent (${spent}); ${left} lines are left for a rerun once ` +
          `it is raised: ${options.resumeCommand ?? `aifs batch ${shellQuote(input)} --out ${shellQuote(output)}`}`
      )
      process.exitCode = Signals.budgetSpentExitCode
    }
  }).pipe(
    // one line per custom_id, the latest, however the run ended (a failed compaction leaves a file a rerun reads)
    Effect.ensuring(Effect.ignore(
      Effect.tapError(BatchOutput.compact(output), (error) => Console.error(`aifs batch: ${error.message}`))
    ))
  )

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
      Options.withDescription("Requests in flight at once (the rate limiter paces them)"),
      withDefault(32)
    ),
    keepFailed: Options.boolean("keep-failed").pipe(
      Options.withDescription("On a rerun, leave the requests that failed as they are instead of running them again")
    )
  },
  ({ concurrency, input, keepFailed, out }) => {
    const output = Option.getOrElse(out, () => input.replace(/(\.jsonl)?$/, ".out.jsonl"))
    // before anything touches the output or starts: a second run on it refuses at once, and never cuts the first
    // one's last line
    return Effect.scoped(
      Effect.zipRight(
        lockOutput(output),
        runBatch(input, output, concurrency, {
          keepFailed,
          resumeCommand: resumeCommand(input, output, concurrency, keepFailed)
        }).pipe(Effect.provide(client), Effect.provideService(Admitting, { open: true }))
      )
    )
  }
).pipe(Command.withDescription("Run a JSONL file of requests at the rate the quota allows; resumable"))
