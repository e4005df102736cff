/**
 * How the CLI reports: one line per failure on stderr, never a stack trace, and the exit codes of
 * DESIGN.md (0 success, 1 the service or network failed, 2 bad usage or configuration: a port that cannot be
 * listened on among them).
 *
 * @since 0.1.0
 */
import * as ValidationError from "@effect/cli/ValidationError"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as Cause from "effect/Cause"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { isApiError } from "../schemas/Errors.js"
import * as Signals from "./signals.js"

/**
 * A failure the user caused (bad flags, bad input): exit code 2.
 *
 * @since 0.1.0
 * @category errors
 */
export class UsageError extends Error {
  override readonly name = "UsageError"
}

/**
 * One line describing a failure.
 *
 * @since 0.1.0
 * @category formatting
 */
export const describe = (error: unknown, verbose = false): string => {
  if (isApiError(error)) {
    const wait = error._tag === "RateLimited" && error.retryAfter !== undefined
      ? ` (the server asked to wait ${Duration.format(error.retryAfter)})`
      : ""
    return `${error._tag}: ${detailed(error.message, verbose)}${wait}${verbose ? fieldsOf(error) : ""}`
  }
  if (ConfigError.isConfigError(error)) return `configuration: ${String(telling(error)).replace(/\s+/g, " ")}`
  if (error instanceof UsageError) return error.message
  if (error instanceof HttpServerError.ServeError) {
    return `cannot listen: ${error.cause instanceof Error ? error.cause.message : String(error.cause)}`
  }
  if (error instanceof Error) return `${error.name}: ${detailed(error.message, verbose)}`
  return String(error)
}

/**
 * A configuration error without the accounts of sources that had no value where another source had a wrong one: a
 * value that does not parse reads as that alone, not "(Missing data ... from the map) or (Invalid data ...)".
 */
const telling = (error: ConfigError.ConfigError): ConfigError.ConfigError => {
  if (ConfigError.isAnd(error)) return ConfigError.And(telling(error.left), telling(error.right))
  if (!ConfigError.isOr(error)) return error
  const [left, right] = [telling(error.left), telling(error.right)]
  const missing = [ConfigError.isMissingDataOnly(left), ConfigError.isMissingDataOnly(right)]
  return missing[0] && !missing[1] ? right : missing[1] && !missing[0] ? left : ConfigError.Or(left, right)
}

/**
 * A message of several lines (a decoding error's tree) on one: its first line, and a pointer to `--verbose`, which
 * shows them all, joined.
 */
const detailed = (message: string, verbose: boolean): string => {
  const lines = message.split("\n").map((line) => line.trim()).filter((line) => line !== "")
  if (lines.length <= 1) return message
  return verbose ? lines.join(" | ") : `${lines[0]} (${lines.length - 1} more lines with --verbose)`
}

/** An error's own fields but its tag and message, as ` {name=value ...}` (empty when it has none). */
const fieldsOf = (error: object): string => {
  const fields = Object.entries(error).filter(([name, value]) =>
    name !== "_tag" && name !== "message" && value !== undefined
  )
  return fields.length === 0
    ? ""
    : ` {${fields.map(([name, value]) => `${name}=${json(value)}`).join(" ")}}`
}

const json = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    // a value that JSON cannot hold (a cycle)
    return String(value)
  }
}

/**
 * The exit code of a failure.
 *
 * @since 0.1.0
 * @category formatting
 */
export const exitCode = (error: unknown): number =>
  ValidationError.isValidationError(error) || ConfigError.isConfigError(error) || error instanceof UsageError ||
    error instanceof HttpServerError.ServeError
    ? 2
    : 1

/**
 * Runs a CLI program: failures become one stderr line and an exit code, defects too (with no stack).
 *
 * @since 0.1.0
 * @category running
 */
export const handled = <R>(
  program: Effect.Effect<void, unknown, R>,
  options: { readonly verbose?: boolean } = {}
): Effect.Effect<void, never, R> =>
  program.pipe(
    Effect.catchAllCause((cause) =>
      Effect.sync(() => {
        if (Cause.isInterruptedOnly(cause)) {
          process.exitCode = Signals.exitCode()
          return
        }
        const failure = Cause.failureOption(cause)
        const error = failure._tag === "Some" ? failure.value : Cause.squash(cause)
        // @effect/cli has already printed its own help for usage errors
        if (!ValidationError.isValidationError(error)) {
          // on a terminal, over a progress bar's line rather than after it
          const clear = process.stderr.isTTY === true ? "\r\u001b[K" : ""
          process.stderr.write(`${clear}aifs: error: ${describe(error, options.verbose)}\n`)
        }
        process.exitCode = exitCode(error)
      })
    )
  )
