// `node scripts/mutation-stale.mjs [group...]`: which mutation groups' incremental files (mutation/) no longer match the
// sources and tests they were made from, so that CI's run would test their mutants again: for each group, the mutated
// modules and the test files whose text changed since its last run, with the mutants of the changed modules (an upper
// bound: Stryker re-tests only mutants in changed code or covered by changed tests). Run it before committing a change
// to a mutated module; exit 1 when a group that CI runs is stale.
import { existsSync, readFileSync } from "node:fs"
import { deferred, groups } from "../stryker.config.mjs"

const asked = process.argv.slice(2).filter((a) => a !== "--")
const chosen = asked.length > 0 ? asked : Object.keys(groups)

/** The files of `recorded` ({ path: { source } }) whose text differs from the working tree's, or that are gone. */
const changed = (recorded) =>
  Object.entries(recorded ?? {}).filter(([path, { source }]) =>
    !existsSync(path) || readFileSync(path, "utf8") !== source
  )

let stale = false
for (const group of chosen) {
  const file = `mutation/stryker-incremental-${group}.json`
  const tag = group in deferred ? " (deferred)" : ""
  if (!existsSync(file)) {
    console.log(`${group}${tag}: no incremental file: every mutant runs`)
    if (!(group in deferred)) stale = true
    continue
  }
  const report = JSON.parse(readFileSync(file, "utf8"))
  const missing = groups[group].filter((path) => !(path in report.files))
  const modules = changed(report.files)
  const tests = changed(report.testFiles)
  const mutants = modules.reduce((n, [, { mutants }]) => n + mutants.length, 0)
  if (missing.length + modules.length + tests.length === 0) {
    console.log(`${group}${tag}: fresh`)
    continue
  }
  if (!(group in deferred)) stale = true
  console.log(`${group}${tag}: stale`)
  for (const path of missing) console.log(`  new module (all its mutants run): ${path}`)
  for (const [path, { mutants: m }] of modules) console.log(`  changed module: ${path} (${m.length} mutants)`)
  for (const [path] of tests) console.log(`  changed test: ${path}`)
  if (mutants > 0) console.log(`  at most ${mutants} mutants of changed modules, plus those the changed tests cover`)
}
process.exit(stale ? 1 : 0)
