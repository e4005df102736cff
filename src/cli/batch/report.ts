/**
 * What `aifs batch` says on its terminal: the progress (a bar redrawn every 200 ms on a terminal, a line every 5 s on a
 * pipe), bad input lines, the stop, the summary and how to resume. The texts are pure functions; the rest writes them.
 *
 * @since 0.4.0
 */
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as ClientConfig from "../../layers/ClientConfig.js"
import type * as Batch from "../../services/Batch.js"
import * as Progress from "../progress.js"
import * as Terminal from "./terminal.js"

/**
 * What a run counts besides its progress: bad lines, lines skipped (done before, and of those the failures kept),
 * requests run again after a failure, and why the key's budget stopped the run, if it did.
 *
 * @since 0.4.0
 * @category models
 */
export interface Tally {
  bad: number
  skipped: number
  keptFailed: number
  retried: number
  spent: string | undefined
}

/**
 * A run's progress and how it is shown: on a terminal or a pipe, the limiter's window (for the ETA), the client's
 * retries before the run (the progress counts the run's own).
 *
 * @since 0.4.0
 * @category models
 */
export interface Display {
  readonly progress: Progress.Progress
  readonly tty: boolean
  readonly windowMs: number
  readonly retriesBefore: number
}

/**
 * The display of a run of `total` lines to run, from now.
 *
 * @since 0.4.0
 * @category constructors
 */
export const makeDisplay = (total: number, concurrency: number): Effect.Effect<Display, ConfigError.ConfigError> =>
  Effect.gen(function*() {
    const window = ClientConfig.positiveDuration("AIFS_LIMITER_WINDOW").pipe(Config.withDefault(Duration.minutes(1)))
    return {
      progress: {
        total,
        done: 0,
        failed: 0,
        tokens: 0,
        requestMs: 0,
        started: yield* Clock.currentTimeMillis,
        concurrency
      },
      tty: yield* Terminal.isTTY,
      windowMs: Duration.toMillis(yield* window),
      retriesBefore: yield* Progress.retriesSoFar
    }
  })

/** The progress as it is now. */
const render = (display: Display): Effect.Effect<string> =>
  Effect.gen(function*() {
    const retries = (yield* Progress.retriesSoFar) - display.retriesBefore
    const quota = yield* Progress.quotaState(display.windowMs)
    return Progress.render(display.progress, yield* Clock.currentTimeMillis, display.tty, retries, quota)
  })

/**
 * The progress, now and then at every tick, until interrupted.
 *
 * @since 0.4.0
 * @category writing
 */
export const reporter = (display: Display): Effect.Effect<never> =>
  Effect.flatMap(render(display), Terminal.write).pipe(
    Effect.repeat(Schedule.spaced(display.tty ? Duration.millis(200) : Duration.seconds(5))),
    Effect.zipRight(Effect.never)
  )

/**
 * A bad input line, over the bar's line on a terminal.
 *
 * @since 0.4.0
 * @category texts
 */
export const badLine = (tty: boolean, line: number, reason: string): string =>
  `${tty ? "\r\u001b[K" : ""}aifs batch: line ${line}: ${reason}\n`

/**
 * What a stop does, said when it starts: the requests on the wire get the grace, those waiting for the quota are not
 * sent. On a terminal, on a line of its own.
 *
 * @since 0.4.0
 * @category texts
 */
export const stopping = (tty: boolean, count: Batch.FlightCount, grace: Duration.Duration): string => {
  const sent = count.sent > 0 ? `the ${count.sent} in flight get ${Duration.format(grace)}` : "nothing in flight"
  const waiting = count.waiting > 0 ? `, the ${count.waiting} waiting for the quota are not sent` : ""
  return `${tty ? "\n" : ""}aifs batch: stopping: no new requests; ${sent}${waiting} (Ctrl-C again to quit now)\n`
}

/**
 * The summary's line.
 *
 * @since 0.4.0
 * @category texts
 */
export const summary = (progress: Progress.Progress, tally: Tally, output: string, seconds: number): string => {
  const retried = tally.retried > 0 ? `, ${tally.retried} of them failed before` : ""
  const errors = progress.failed > 0 ? ` (error lines in ${output})` : ""
  const kept = tally.keptFailed > 0 ? ` (${tally.keptFailed} failed, kept by --keep-failed)` : ""
  return `aifs batch: ${progress.done} succeeded, ${progress.failed} failed${retried}${errors}, ` +
    `${tally.skipped} already done${kept}, ${tally.bad} bad input lines; ${progress.tokens} tokens in ` +
    Progress.formatDuration(seconds)
}

/**
 * The last progress (ending its line on a terminal) and the summary.
 *
 * @since 0.4.0
 * @category writing
 */
export const writeSummary = (display: Display, tally: Tally, output: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* Terminal.write((yield* render(display)) + (display.tty ? "\n" : ""))
    const seconds = ((yield* Clock.currentTimeMillis) - display.progress.started) / 1000
    yield* Terminal.line(summary(display.progress, tally, output, seconds))
  })

/**
 * How a stopped run ended: the requests cut at the end of the grace, and the command that resumes.
 *
 * @since 0.4.0
 * @category texts
 */
export const stopped = (cut: number, resume: string): string =>
  `aifs batch: stopped; ${cut > 0 ? `${cut} requests in flight cut at the end of the grace; ` : ""}` +
  `the rest is left for a rerun: ${resume}`

/**
 * A run stopped by the key's spent budget: why, the lines left, and the command that resumes.
 *
 * @since 0.4.0
 * @category texts
 */
export const spent = (why: string, left: number, resume: string): string =>
  `aifs batch: stopped: the key's monthly budget is spent (${why}); ${left} lines are left for a rerun once it is ` +
  `raised: ${resume}`
