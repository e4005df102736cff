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

handled(run(process.argv)).pipe(
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    disablePrettyLogger: true,
    // Ctrl-C (an interrupted main fiber) exits 130, as shells expect; otherwise the code the command set
    teardown: (exit, onExit) =>
      onExit(
        Exit.isFailure(exit)
          ? Cause.isInterruptedOnly(exit.cause) ? 130 : 1
          : typeof process.exitCode === "number"
          ? process.exitCode
          : 0
      )
  })
)
