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

/** The peers the command line loads, with the version to install (the Effect 3 line). */
const peers: Record<string, string> = {
  "@effect/cli": "@effect/cli@^0.77.2",
  "@effect/platform-node": "@effect/platform-node@^0.108.2"
}

/** One line for a load that failed: a missing optional peer named with its install command, else the error's text. */
const loadFailure = (error: unknown): string => {
  const text = error instanceof Error ? error.message : String(error)
  const missing = Object.keys(peers).find((name) =>
    (error as { code?: unknown })?.code === "ERR_MODULE_NOT_FOUND" && text.includes(`'${name}'`)
  )
  return missing === undefined
    ? `cannot load the command line: ${text.split("\n")[0]}`
    : `the command line needs the optional peer ${missing}, which is not installed: npm install ${peers[missing]}`
}

if (page === undefined) {
  import("./cli.js").catch((error: unknown) => {
    process.stderr.write(`aifs: error: ${loadFailure(error)}\n`)
    process.exitCode = 1
  })
} else {
  // a reader that stops early (`aifs --help | head`) is not an error
  process.stdout.on("error", () => {})
  process.stdout.write(page)
}
