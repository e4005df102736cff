/**
 * Where `aifs batch` says what it does (progress, bad lines, the stop, the summary): stderr unless the caller provides
 * another terminal, as tests do to read it.
 *
 * @since 0.4.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/**
 * The types of the `Terminal` tag.
 *
 * @since 0.4.0
 * @category models
 */
export declare namespace Terminal {
  /**
   * A terminal: whether it is one (a bar redrawn over its line) or a pipe (plain lines), and how to write to it.
   *
   * @since 0.4.0
   * @category models
   */
  export interface Service {
    readonly tty: boolean
    readonly write: (text: string) => Effect.Effect<void>
  }
}

/**
 * Process stderr, read when it is used (a test may stand in for it).
 *
 * @since 0.4.0
 * @category terminals
 */
export const stderr: Terminal.Service = {
  get tty() {
    return process.stderr.isTTY === true
  },
  write: (text) => Effect.sync(() => void process.stderr.write(text))
}

/**
 * The terminal of `aifs batch`: stderr by default.
 *
 * @since 0.4.0
 * @category tags
 */
export class Terminal extends Context.Reference<Terminal>()("effect-aifs/cli/Terminal", {
  defaultValue: (): Terminal.Service => stderr
}) {}

/**
 * Writes `text` as it is (a bar redrawn over its line).
 *
 * @since 0.4.0
 * @category writing
 */
export const write = (text: string): Effect.Effect<void> => Effect.flatMap(Terminal, (terminal) => terminal.write(text))

/**
 * Writes one line.
 *
 * @since 0.4.0
 * @category writing
 */
export const line = (text: string): Effect.Effect<void> => write(`${text}\n`)

/**
 * Whether the terminal is one (not a pipe).
 *
 * @since 0.4.0
 * @category reading
 */
export const isTTY: Effect.Effect<boolean> = Effect.map(Terminal, (terminal) => terminal.tty)
