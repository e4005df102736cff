#!/usr/bin/env node
/**
 * Entry point of the `aifs` binary. `aifs --help` and `aifs COMMAND --help` print their page at once, from
 * `helpPages.ts` (written from the command line itself); anything else loads the command line (`cli.ts`), which
 * takes most of a second (Effect and @effect/cli).
 *
 * @since 0.1.0
 */
import { pages } from "./helpPages.js"

const args = process.argv.slice(2)
const last = args[args.length - 1]
const path = args.slice(0, -1).join(" ")
const page = (last === "--help" || last === "-h") && Object.hasOwn(pages, path) ? pages[path] : undefined

if (page === undefined) {
  import("./cli.js").catch((error: unknown) => {
    process.stderr.write(`aifs: error: cannot load the command line: ${String(error)}\n`)
    process.exitCode = 1
  })
} else {
  // a reader that stops early (`aifs --help | head`) is not an error
  process.stdout.on("error", () => {})
  process.stdout.write(page)
}
