#!/usr/bin/env node
/**
 * Entry point of the `aifs` binary.
 *
 * @since 0.1.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { run } from "./main.js"
import { handled } from "./output.js"
import * as Signals from "./signals.js"

Signals.watch()

handled(run(process.argv)).pipe(
  Effect.provide(NodeContext.layer),
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
