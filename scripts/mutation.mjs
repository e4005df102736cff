// `npm run mutation [-- group...]`: the mutation run of every group of stryker.config.mjs (or of those named), one
// after the other, each on its incremental file, then the per-module report (scripts/mutation-report.mjs), which
// fails when a module scores below the threshold. A group that fails to run fails the whole.
import { spawnSync } from "node:child_process"
import { deferred, groups } from "../stryker.config.mjs"

const asked = process.argv.slice(2).filter((a) => a !== "--")
const unknown = asked.filter((g) => !(g in groups))
if (unknown.length > 0) {
  console.error(`unknown mutation group(s): ${unknown.join(", ")}; known: ${Object.keys(groups).join(", ")}`)
  process.exit(2)
}
// a run that names no group runs every group but the deferred ones, and says which it leaves out and why
const chosen = asked.length > 0 ? asked : Object.keys(groups).filter((g) => !(g in deferred))
for (const group of Object.keys(groups).filter((g) => asked.length === 0 && g in deferred)) {
  console.log(`== mutation: ${group} deferred (run it by name): ${deferred[group]} ==`)
}
let failed = false
for (const group of chosen) {
  const started = Date.now()
  console.log(`\n== mutation: ${group} (${groups[group].join(", ")}) ==`)
  const run = spawnSync("npx", ["stryker", "run"], { stdio: "inherit", env: { ...process.env, MUTATION_RUN: group } })
  console.log(`== ${group}: exit ${run.status} after ${Math.round((Date.now() - started) / 1000)} s ==`)
  if (run.status !== 0) failed = true
}
const report = spawnSync(process.execPath, ["scripts/mutation-report.mjs", ...chosen], { stdio: "inherit" })
process.exit(failed || report.status !== 0 ? 1 : 0)
