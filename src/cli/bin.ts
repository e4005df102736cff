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
const page = last === "--help" || last === "-h" ? pages[args.slice(0, -1).join(" ")] : undefined

if (page === undefined) {
  void import("./cli.js")
} else {
  // a reader that stops early (`aifs --help | head`) is not an error
  process.stdout.on("error", () => {})
  process.stdout.write(page)
}
