/**
 * The `aifs` command line, run when this module loads (`bin.ts` loads it for everything but a help page).
 *
 * @since 0.3.0
 */
import * as CliConfig from "@effect/cli/CliConfig"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as RetryPolicy from "../layers/RetryPolicy.js"
import * as Help from "./help.js"
import * as Logger from "./logger.js"
import { run } from "./main.js"
import { handled } from "./output.js"
import * as Signals from "./signals.js"

Signals.watch()

// `--verbose`, anywhere: debug logs, each with its cause, and errors with every field
const verbose = process.argv.includes("--verbose")
const argv = process.argv.filter((arg) => arg !== "--verbose")

// typed at a terminal, a request that finds nothing listening fails at once (a batch retries: `batch.ts`)
const commands = RetryPolicy.failUnconnected(run(argv))

handled(Console.consoleWith((base) => Effect.withConsole(commands, Help.fitConsole(base, argv))), { verbose }).pipe(
  // every failure ends as `handled`'s one line: none is "unhandled" (Effect logs each failed fiber at debug level,
  // with its stack, which `--verbose` would show: a stream run by @effect/cli's commands ends in one)
  Effect.withUnhandledErrorLogLevel(Option.none()),
  Effect.provide(Layer.mergeAll(NodeContext.layer, Logger.layer(verbose), CliConfig.layer({ showBuiltIns: false }))),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    disablePrettyLogger: true,
    // Ctrl-C or SIGTERM (an interrupted main fiber) exits 130 or 143, as shells expect; otherwise the command's code
    teardown: (exit, onExit) =>
      onExit(
        Exit.isFailure(exit)
          ? Cause.isInterruptedOnly(exit.cause) ? Signals.exitCode() : 1
          : typeof process.exitCode === "number"
          ? process.exitCode
          : 0
      )
  })
)
