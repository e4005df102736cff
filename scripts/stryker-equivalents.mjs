// A Stryker ignore plugin (`ignorers: ["equivalents"]` in stryker.config.mjs) that marks the equivalent mutants that
// `equivalents` in stryker.config.mjs lists, so that `src/` holds no mutation-tool directive: each entry names a
// module, the text of one line in it (whole, trimmed, found once: test/unit/mutationConfig.test.ts checks), the
// mutators whose mutants there are equivalent, and why. On entering a module, the plugin puts the directive Stryker
// reads in source (`Stryker disable next-line <mutators>: <why>`) on the first node of each listed line, so that
// only those mutators' mutants of that line are ignored, with the reason in the report, as a comment would. One kind
// is ignored wherever it is, not by line: the mutants of Effect's `{ discard: true }` option (see `discardReason`).
import { declareValuePlugin, PluginKind } from "@stryker-mutator/api/plugin"
import * as fs from "node:fs"
import * as path from "node:path"
import { equivalents } from "../stryker.config.mjs"

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..")

/** The entries of the module at `filename` (absolute, in the project or in a sandbox copy of it). */
const entriesOf = (filename) => {
  const relative = filename.split(path.sep).join("/")
  return equivalents.filter((entry) => relative.endsWith(`/${entry.file}`))
}

/** Puts each entry's directive on the first node that starts on its line (the outermost: a whole statement). */
const markLines = (program, filename) => {
  const entries = entriesOf(filename)
  if (entries.length === 0) return
  const text = program.hub?.file?.code ?? fs.readFileSync(path.resolve(root, filename), "utf8")
  const lines = text.split("\n").map((line) => line.trim())
  const byLine = new Map(entries.map((entry) => [lines.indexOf(entry.line) + 1, entry]))
  program.traverse({
    enter(node) {
      const line = node.node.loc?.start.line
      const entry = byLine.get(line)
      if (entry === undefined) return
      byLine.delete(line)
      const directive = ` Stryker disable next-line ${entry.mutators.join(",")}: ${entry.reason}`
      // with the line's place: Stryker names it when it warns about a directive (a mutator it does not know)
      const comment = { type: "CommentLine", value: directive, loc: node.node.loc }
      node.node.leadingComments = [...(node.node.leadingComments ?? []), comment]
    }
  })
}

/**
 * Effect's `{ discard: true }` option (`Effect.forEach`, `Effect.all`): without it the same effects run in the same
 * order and only their results, which nobody reads, are kept. One kind of equivalent everywhere, so not listed by line.
 */
export const discardReason =
  "{ discard: true } only spares collecting results nobody reads: the same effects run, in order"

const isDiscardOption = (node) =>
  node.isObjectExpression() && node.node.properties.length === 1 &&
  node.node.properties[0].type === "ObjectProperty" && node.node.properties[0].key.type === "Identifier" &&
  node.node.properties[0].key.name === "discard" && node.node.properties[0].value.type === "BooleanLiteral" &&
  node.node.properties[0].value.value === true

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, "equivalents", {
    shouldIgnore(node) {
      if (node.isProgram()) markLines(node, node.hub?.file?.opts?.filename ?? "")
      return isDiscardOption(node) ? discardReason : undefined
    }
  })
]
