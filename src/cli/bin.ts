#!/usr/bin/env node
/**
 * Entry point of the `aifs` binary.
 *
 * @since 0.1.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import { run } from "./main.js"
import { handled } from "./output.js"

handled(run(process.argv)).pipe(
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true, disablePrettyLogger: true })
)
