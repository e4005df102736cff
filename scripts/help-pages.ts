// Writes src/cli/helpPages.ts: every help page of the command line as it prints into a pipe, so that `aifs --help`
// and `aifs COMMAND --help` answer without loading the command line (Effect and @effect/cli take most of a second to
// load). test/cli/help.test.ts fails when the file and the command line disagree: run `npm run help-pages` then.
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import { writeFileSync } from "node:fs"
import { renderHelpPages } from "../src/cli/main.js"

const header = `/**
 * Every help page of the command line, by command path, as it prints into a pipe. Written by \`npm run help-pages\`
 * (scripts/help-pages.ts) from the command line itself; test/cli/help.test.ts checks that they agree.
 * @internal
 */
`

Effect.map(renderHelpPages, (pages) =>
  writeFileSync(
    new URL("../src/cli/helpPages.ts", import.meta.url),
    `${header}export const pages: Readonly<Record<string, string>> = ${JSON.stringify(pages, null, 2)}\n`
  )).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain)
