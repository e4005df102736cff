// `npm run mutation [-- group...]`: the mutation run of every group of stryker.config.mjs (or of those named), one
// after the other, each on its incremental file, then the per-module report (scripts/mutation-report.mjs), which
// fails when a module scores below the threshold. A group whose run fails before its report (its dry run met a
// failing test, or Stryker stopped) is run once more; one that fails twice fails the whole. What went wrong is said
// again at the very end, with the lines Stryker printed about it, since a CI log keeps only its tail.
import { spawn, spawnSync } from "node:child_process"
import { existsSync, statSync } from "node:fs"
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

/** What a failed run said of its failure: each ERROR line of Stryker's with the lines after it, and its last lines. */
const why = (lines) => {
  const picked = new Set(lines.map((_, i) => i).slice(-15))
  lines.forEach((line, i) => {
    if (/\bERROR\b/.test(line)) { for (let j = i; j < Math.min(lines.length, i + 12); j++) picked.add(j) }
  })
  // the last 80 of them: the end is what a CI log keeps
  return [...picked].sort((a, b) => a - b).slice(-80).map((i) => lines[i])
}

/** One Stryker run of `group`, its output passed through; resolves to its exit code and its output's lines. */
const runOnce = (group) =>
  new Promise((resolve) => {
    const child = spawn("npx", ["stryker", "run"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, MUTATION_RUN: group }
    })
    let output = ""
    child.stdout.setEncoding("utf8")
    child.stderr.setEncoding("utf8")
    child.stdout.on("data", (text) => (process.stdout.write(text), (output += text)))
    child.stderr.on("data", (text) => (process.stderr.write(text), (output += text)))
    // npx that cannot start: a failed run, said like any other
    child.on("error", (error) => (output += `\nERROR cannot start stryker: ${error.message}\n`))
    child.on("close", (code, signal) => resolve({ code: code ?? signal ?? 1, lines: output.split("\n") }))
  })

const failures = []
for (const group of chosen) {
  for (let attempt = 1; attempt <= 2; attempt++) {
    const started = Date.now()
    console.log(`\n== mutation: ${group} (${groups[group].join(", ")})${attempt > 1 ? ", again" : ""} ==`)
    const { code, lines } = await runOnce(group)
    console.log(`== ${group}: exit ${code} after ${Math.round((Date.now() - started) / 1000)} s ==`)
    if (code === 0) break
    // a run that wrote its report failed on its score: the report judges it, running it again would not change it
    const report = `mutation/mutation-${group}.json`
    if (existsSync(report) && statSync(report).mtimeMs >= started) break
    failures.push({ group, attempt, code, said: why(lines) })
  }
}
const failedTwice = chosen.filter((g) => failures.filter((f) => f.group === g).length === 2)
for (const { group, attempt, code, said } of failures) {
  console.error(`\n== ${group} failed (run ${attempt}, exit ${code}); what it said of it: ==\n${said.join("\n")}`)
}
if (failedTwice.length > 0) {
  console.error(`\nmutation groups that failed twice: ${failedTwice.join(", ")}`)
  process.exit(1)
}
const report = spawnSync(process.execPath, ["scripts/mutation-report.mjs", ...chosen], { stdio: "inherit" })
process.exit(report.status !== 0 ? 1 : 0)
