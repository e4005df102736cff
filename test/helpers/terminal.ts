/**
 * What `aifs batch` says, read by a test: a terminal (or a pipe) of the test's own for the rest of its scope, which
 * keeps each write in order, with the lines said through Effect's `Console.error` among them. Nothing of the process
 * (stderr, console) is patched.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Terminal from "../../src/cli/batch/terminal.js"

/** What was written to a test's terminal. */
export interface Written {
  /** Every write so far, in order. */
  readonly written: Array<string>
  /** Waits for the next write (after those `until` has already passed) that `matches`, and returns it. */
  readonly until: (matches: (text: string) => boolean) => Effect.Effect<string>
}

/** A terminal (`tty`) or a pipe for the rest of the scope. */
export const terminal = (tty: boolean): Effect.Effect<Written, never, Scope.Scope> =>
  Effect.gen(function*() {
    const written: Array<string> = []
    const writes = yield* Queue.unbounded<string>()
    const keep = (text: string) =>
      Effect.suspend(() => {
        written.push(text)
        return Queue.offer(writes, text)
      })
    const service: Terminal.Terminal.Service = { tty, write: (text) => Effect.asVoid(keep(text)) }
    yield* Effect.locallyScopedWith(FiberRef.currentContext, Context.add(Terminal.Terminal, service))
    const base = yield* Effect.console
    yield* Effect.withConsoleScoped({ ...base, error: (...args) => Effect.asVoid(keep(`${args.join(" ")}\n`)) })
    const until = (matches: (text: string) => boolean): Effect.Effect<string> =>
      Effect.flatMap(Queue.take(writes), (text) => matches(text) ? Effect.succeed(text) : until(matches))
    return { written, until }
  })
