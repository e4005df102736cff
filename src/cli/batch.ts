/**
 * `aifs batch IN.jsonl --out OUT.jsonl`: runs a file of requests in the OpenAI batch format at the rate the
 * quota allows, with progress, and resumes where it stopped: a rerun skips the requests that succeeded and runs
 * again those that failed (unless `--keep-failed`). The output is a log read and written as streams (see
 * batchOutput.ts): each result appended as one whole line, a later line for an id replacing the earlier, and the
 * file compacted to one line per id when a run ends. Ctrl-C cuts what waits for the quota, gives what is on the wire
 * a grace, then stops; a second Ctrl-C quits. One run at a time writes an output (`OUT.lock`, see outputLock.ts): a
 * second one refuses.
 *
 * This module wires the parts under `batch/`: the plan of the input's lines (`plan.ts`), the runner over `Batch.run`
 * (`runner.ts`), the graceful stop (`stop.ts`), what the run says (`report.ts`) on its terminal (`terminal.ts`), and
 * its files (`files.ts`).
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Cause from "effect/Cause"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { Admitting } from "../layers/RateLimiter.js"
import * as RetryPolicy from "../layers/RetryPolicy.js"
import * as Batch from "../services/Batch.js"
import type { Chat } from "../services/Chat.js"
import type { Completions } from "../services/Completions.js"
import type { Embeddings } from "../services/Embeddings.js"
import * as Files from "./batch/files.js"
import * as Plan from "./batch/plan.js"
import * as Report from "./batch/report.js"
import * as Runner from "./batch/runner.js"
import * as Stop from "./batch/stop.js"
import * as Terminal from "./batch/terminal.js"
import type { OutputError } from "./batchOutput.js"
import { client } from "./environment.js"
import { withDefault } from "./help.js"
import { describe, type UsageError } from "./output.js"
import { lockOutput } from "./outputLock.js"
import * as Signals from "./signals.js"

/**
 * Options of a run.
 *
 * @since 0.2.0
 * @category models
 */
export interface RunOptions {
  /** Leave the requests whose latest result failed as they are, instead of running them again. */
  readonly keepFailed?: boolean
  /** How long the requests on the wire may take after a stop (Ctrl-C, SIGTERM): 5 seconds by default. */
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
 * The exit code of a run that ended: 3 when the key's spent budget stopped it, 1 when a request failed, a failure was
 * kept or a line was bad, 0 otherwise.
 *
 * @since 0.4.0
 * @category running
 */
export const exitCodeOf = (progress: Runner.Run["display"]["progress"], tally: Report.Tally): number =>
  tally.spent !== undefined
    ? Signals.budgetSpentExitCode
    : progress.failed > 0 || tally.keptFailed > 0 || tally.bad > 0
    ? 1
    : 0

/** What a stopped run says once its work has ended: a write that failed, the summary, how to resume. */
const afterStop = (run: Runner.Run, resume: string) => (exit: Exit.Exit<void, unknown>, cut: number) =>
  Effect.gen(function*() {
    if (Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) {
      yield* Terminal.line(`aifs: error: ${describe(Cause.squash(exit.cause))}`)
    }
    yield* Report.writeSummary(run.display, run.tally, run.output)
    yield* Terminal.line(Report.stopped(cut, resume))
  })

/** What a run that ended says (the summary, and the spent budget's stop), and its exit code. */
const ended = ({ display, output, tally }: Runner.Run, resume: string): Effect.Effect<number> =>
  Effect.gen(function*() {
    yield* Report.writeSummary(display, tally, output)
    if (tally.spent !== undefined) {
      const left = Math.max(0, display.progress.total - display.progress.done - display.progress.failed)
      yield* Terminal.line(Report.spent(tally.spent, left, resume))
    }
    return exitCodeOf(display.progress, tally)
  })

/** A run of `input` into `output`, its files checked and opened, with the scope the output is open for. */
const prepare = (input: string, output: string, concurrency: number, keepFailed: boolean) =>
  Effect.gen(function*() {
    yield* Files.check(input, output, concurrency)
    const resume = yield* Files.resumeOf(output, keepFailed)
    const display = yield* Report.makeDisplay(yield* Files.countToRun(input, resume), concurrency)
    const tally: Report.Tally = { bad: 0, skipped: 0, keptFailed: 0, retried: 0, spent: undefined }
    const steps = Plan.steps(Files.lines(input), resume)
    const fd = yield* Files.open(output)
    return { steps, output, fd, concurrency, flights: yield* Batch.makeFlights, display, tally } satisfies Runner.Run
  })

/**
 * Runs the requests of `input`, appending their result lines to `output`, with progress and a summary on the
 * terminal (stderr); returns the exit code (`exitCodeOf`). Stopped (interrupted: Ctrl-C, SIGTERM), it stops
 * gracefully (`Stop.graceful`) and ends interrupted. The caller holds the output's lock (`lockOutput`).
 */
export const runBatch = (
  input: string,
  output: string,
  concurrency: number,
  options: RunOptions = {}
): Effect.Effect<number, UsageError | OutputError | ConfigError.ConfigError, Chat | Completions | Embeddings> =>
  Effect.scoped(Effect.gen(function*() {
    const run = yield* prepare(input, output, concurrency, options.keepFailed === true)
    const resume = options.resumeCommand ?? `aifs batch ${shellQuote(input)} --out ${shellQuote(output)}`
    const grace = options.grace ?? Duration.seconds(5)
    yield* Stop.graceful(Effect.raceFirst(Runner.run(run), Report.reporter(run.display)), {
      flights: run.flights,
      grace,
      // the gate the transport was built with, when the caller gave it one
      gate: yield* Effect.serviceOption(Admitting),
      stopping: (count) => Terminal.write(Report.stopping(run.display.tty, count, grace)),
      stopped: afterStop(run, resume)
    })
    return yield* ended(run, resume)
  })).pipe(
    // one line per custom_id, the latest, however the run ended (a failed compaction leaves a file a rerun reads)
    Effect.ensuring(Files.compact(output))
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
        }).pipe(
          Effect.provide(client),
          Effect.provideService(Admitting, { open: true }),
          // unlike a command typed at a terminal, a batch rides out a server that is away: its requests retry
          Effect.locally(RetryPolicy.retryUnconnected, true)
        )
      )
    ).pipe(Effect.tap((code) =>
      Effect.sync(() => {
        if (code !== 0) process.exitCode = code
      })
    ))
  }
).pipe(Command.withDescription("Run a JSONL file of requests at the rate the quota allows; resumable"))
