/**
 * The files of `aifs batch`: the input checked and read as numbered lines, the output opened for appending (one whole
 * line per write), what it holds from earlier runs, and its compaction when the run ends.
 *
 * @since 0.4.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import type * as Batch from "../../services/Batch.js"
import * as BatchOutput from "../batchOutput.js"
import { UsageError } from "../output.js"
import * as Plan from "./plan.js"
import * as Terminal from "./terminal.js"

/**
 * The usage errors found before anything is read or written: a missing input or a directory, a concurrency below 1,
 * the input given as the output.
 *
 * @since 0.4.0
 * @category checking
 */
export const check = (input: string, output: string, concurrency: number): Effect.Effect<void, UsageError> =>
  Effect.suspend(() => {
    if (!fs.existsSync(input)) return Effect.fail(new UsageError(`no such file: ${input}`))
    if (fs.statSync(input).isDirectory()) {
      return Effect.fail(new UsageError(`${input} is a directory: give the JSONL file of requests`))
    }
    if (concurrency < 1) return Effect.fail(new UsageError("--concurrency must be at least 1"))
    if (fs.existsSync(output) && fs.realpathSync(output) === fs.realpathSync(input)) {
      return Effect.fail(new UsageError(`--out ${output} is the input itself: give the results a file of their own`))
    }
    return Effect.void
  })

/**
 * The input's lines with their 1-based numbers.
 *
 * @since 0.4.0
 * @category reading
 */
export const lines = (input: string): Stream.Stream<readonly [string, number], UsageError> =>
  BatchOutput.readLines(input, (error) => new UsageError(`cannot read ${input}: ${BatchOutput.messageOf(error)}`))

/**
 * How many input lines a run will send (`Plan.counts`). An input that is not a file (a pipe, /dev/stdin) can be read
 * once only: its count is then 0, and the progress counts what has finished.
 *
 * @since 0.4.0
 * @category reading
 */
export const countToRun = (input: string, resume: Plan.Resume): Effect.Effect<number, UsageError> =>
  fs.statSync(input).isFile()
    ? Stream.runCount(Stream.filter(lines(input), ([text]) => Plan.counts(resume, text)))
    : Effect.succeed(0)

/**
 * What the output holds from earlier runs (a torn last line cut first).
 *
 * @since 0.4.0
 * @category reading
 */
export const resumeOf = (output: string, keepFailed: boolean): Effect.Effect<Plan.Resume, BatchOutput.OutputError> =>
  Effect.map(BatchOutput.scan(output), ({ failed, succeeded }) => ({ succeeded, failed, keepFailed }))

/**
 * The output opened for appending, closed with the scope.
 *
 * @since 0.4.0
 * @category writing
 */
export const open = (output: string): Effect.Effect<number, UsageError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => fs.openSync(output, "a"),
      catch: (error) => new UsageError(`cannot write ${output}: ${BatchOutput.messageOf(error)}`)
    }),
    (fd) => Effect.sync(() => fs.closeSync(fd))
  )

/**
 * Appends one result line with one write: appended atomically, never interleaved.
 *
 * @since 0.4.0
 * @category writing
 */
export const append = (
  fd: number,
  output: string,
  line: Batch.ResultLine
): Effect.Effect<void, BatchOutput.OutputError> =>
  Effect.try({
    try: () => BatchOutput.writeAll(fd, Buffer.from(`${JSON.stringify(line)}\n`)),
    catch: (error) =>
      new BatchOutput.OutputError({ message: `cannot write ${output}: ${BatchOutput.messageOf(error)}` })
  })

/**
 * Compacts the output to one line per id, the latest; a compaction that fails is said, and leaves a file a rerun
 * reads.
 *
 * @since 0.4.0
 * @category writing
 */
export const compact = (output: string): Effect.Effect<void> =>
  Effect.ignore(Effect.tapError(BatchOutput.compact(output), (error) => Terminal.line(`aifs batch: ${error.message}`)))
