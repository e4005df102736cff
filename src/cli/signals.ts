/**
 * The signal that stopped the CLI, for its exit code: 130 after SIGINT (Ctrl-C), 143 after SIGTERM (what a container
 * runtime or systemd sends), as shells report them. The runtime (`NodeRuntime.runMain`) turns either into an
 * interruption of the main fiber; this module remembers which came first, and quits at a second one while a command
 * stops gracefully.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"

/**
 * The signals that stop the CLI.
 *
 * @since 0.2.0
 * @category models
 */
export type StopSignal = "SIGINT" | "SIGTERM"

let first: StopSignal | undefined

/**
 * Remembers the first stop signal (call once, at start, before the runtime's own listeners).
 *
 * @since 0.2.0
 * @category signals
 */
export const watch = (): void => {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      first ??= signal
    })
  }
}

/**
 * The exit code of a run stopped by `signal` (the first one seen when none is given; SIGINT when none was).
 *
 * @since 0.2.0
 * @category signals
 */
export const exitCode = (signal: StopSignal | undefined = first): number => (signal === "SIGTERM" ? 143 : 130)

/**
 * Runs `effect` so that a second stop signal quits the process at once, with that signal's exit code: the first one
 * is the runtime's (it interrupts the main fiber, where a graceful stop begins). The listeners go with the effect.
 *
 * @since 0.4.0
 * @category signals
 */
export const quitOnRepeat = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      let signals = 0
      return (["SIGINT", "SIGTERM"] as const).map((signal) => {
        const listener = () => {
          if (++signals > 1) process.exit(exitCode(signal))
        }
        process.on(signal, listener)
        return [signal, listener] as const
      })
    }),
    () => effect,
    (listeners) => Effect.sync(() => listeners.forEach(([signal, listener]) => process.off(signal, listener)))
  )

/**
 * The exit code of a batch that stopped because the key's monthly budget is spent: the lines not sent are left for a
 * rerun once the budget is raised (distinct from 1, a failure, so that scripts can wait for the budget instead).
 *
 * @since 0.4.0
 * @category signals
 */
export const budgetSpentExitCode = 3
