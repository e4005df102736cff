/**
 * The runner of `aifs batch`: the plan's requests through `Batch.run`, with the run's flights (which a stop cuts), each
 * result appended to the output as it comes, the progress and the tally kept. A key whose monthly budget is spent
 * stops the run: the lines refused for it are not written, so that a rerun sends them (even with `--keep-failed`).
 *
 * @since 0.4.0
 */
import * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Batch from "../../services/Batch.js"
import type { Chat } from "../../services/Chat.js"
import type { Completions } from "../../services/Completions.js"
import type { Embeddings } from "../../services/Embeddings.js"
import type { OutputError } from "../batchOutput.js"
import type { UsageError } from "../output.js"
import * as Files from "./files.js"
import type * as Plan from "./plan.js"
import * as Report from "./report.js"
import * as Terminal from "./terminal.js"

/**
 * A run: its steps, its output (path and open descriptor), how many requests at once, its flights, display and
 * tally.
 *
 * @since 0.4.0
 * @category models
 */
export interface Run {
  readonly steps: Stream.Stream<Plan.Step, UsageError>
  readonly output: string
  readonly fd: number
  readonly concurrency: number
  readonly flights: Batch.Flights
  readonly display: Report.Display
  readonly tally: Report.Tally
}

/** Counts a step, says a bad line, and passes the request of a step to run on. */
const note = ({ display, tally }: Run) => (step: Plan.Step): Effect.Effect<Option.Option<Batch.BatchRequest>> =>
  Effect.suspend(() => {
    switch (step._tag) {
      case "Blank":
        return Effect.succeedNone
      case "Bad":
        tally.bad++
        if (step.counted) display.progress.total--
        return Effect.as(Terminal.write(Report.badLine(display.tty, step.line, step.reason)), Option.none())
      case "Skip":
        tally.skipped++
        if (step.keptFailed) tally.keptFailed++
        return Effect.succeedNone
      case "Run":
        if (step.retried) tally.retried++
        return Effect.succeedSome(step.request)
    }
  })

/** The refusals of a spent budget: the service's (`QuotaExceeded`) and the client's own (`AIFS_BUDGET`). */
const budgetSpent = new Set(["QuotaExceeded", "BudgetExceeded"])

/** Whether a result is written: not a refusal for the spent budget, which stops the run instead. */
const unlessSpent = ({ flights, tally }: Run) => (line: Batch.ResultLine): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const error = line.error
    if (error === null || !budgetSpent.has(error.code)) return Effect.succeed(true)
    tally.spent ??= error.message
    return Effect.as(flights.stop, false)
  })

const totalTokens = (line: Batch.ResultLine): number => {
  const usage = (line.response?.body as { usage?: { total_tokens?: unknown } } | undefined)?.usage
  return typeof usage?.total_tokens === "number" ? usage.total_tokens : 0
}

/** Appends a result to the output, then counts it. */
const record = (run: Run) => (line: Batch.ResultLine): Effect.Effect<void, OutputError> =>
  Effect.zipRight(
    Files.append(run.fd, run.output, line),
    Effect.map(run.flights.tookMs, (tookMs) => {
      const progress = run.display.progress
      if (line.error === null) progress.done++
      else progress.failed++
      progress.tokens += totalTokens(line)
      progress.requestMs = tookMs
    })
  )

/**
 * Runs the steps to their end (or to a stop of the flights), writing each result; a write that fails ends the run at
 * once.
 *
 * @since 0.4.0
 * @category running
 */
export const run = (run: Run): Effect.Effect<void, UsageError | OutputError, Chat | Completions | Embeddings> =>
  Batch.run(Stream.filterMap(Stream.mapEffect(run.steps, note(run)), identity), {
    concurrency: run.concurrency,
    flights: run.flights
  }).pipe(
    Stream.filterEffect(unlessSpent(run)),
    Stream.runForEach(record(run))
  )
