/**
 * The CLI's logger: each log line on stderr (stdout holds the answers), one line each, as the library writes it
 * (`aifs: ...`), from the info level up, and the library's retries (logged at debug, for applications); with
 * `--verbose`, every debug line too, and each line with its cause. On a terminal a line first clears the progress bar
 * it would otherwise run into.
 *
 * @since 0.2.0
 */
import * as Cause from "effect/Cause"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { retryAnnotation } from "../internal/request/retry.js"

/** A log message (a value, or the values of one call) as one line. */
const oneLine = (message: unknown): string =>
  (Array.isArray(message) ? message : [message]).map((part) => String(part)).join(" ").replace(/\s*\n\s*/g, " ")

/**
 * The line a log entry prints: `aifs: ` before a message that does not start with it, the cause after it when
 * `verbose`.
 *
 * @since 0.2.0
 * @category formatting
 */
export const format = (message: unknown, cause: Cause.Cause<unknown>, verbose: boolean): string => {
  const text = oneLine(message)
  const line = text.startsWith("aifs") || text.startsWith("emulator") ? text : `aifs: ${text}`
  return verbose && !Cause.isEmpty(cause) ? `${line} (${oneLine(Cause.pretty(cause))})` : line
}

/**
 * Whether the CLI prints an entry: from the info level up, a retry's debug line, every debug line when `verbose`.
 *
 * @since 0.2.0
 * @category formatting
 */
export const shown = (
  entry: { readonly logLevel: LogLevel.LogLevel; readonly annotations: HashMap.HashMap<string, unknown> },
  verbose: boolean
): boolean =>
  verbose || LogLevel.greaterThanEqual(entry.logLevel, LogLevel.Info) || HashMap.has(entry.annotations, retryAnnotation)

/**
 * The CLI's logger and its least level.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (verbose: boolean): Layer.Layer<never> =>
  Layer.merge(
    Logger.replace(
      Logger.defaultLogger,
      Logger.make((entry) => {
        if (!shown(entry, verbose)) return
        const line = format(entry.message, entry.cause, verbose)
        process.stderr.write(`${process.stderr.isTTY === true ? "\r\u001b[K" : ""}${line}\n`)
      })
    ),
    Logger.minimumLogLevel(LogLevel.Debug)
  )
