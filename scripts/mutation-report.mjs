// The mutation score of every mutated module, from Stryker's JSON reports of the groups (mutation/mutation-<group>.json),
// with the mutants judged equivalent (a `// Stryker disable` comment with its reason) listed apart. Fails when a module
// scores below the threshold (stryker.config.mjs `thresholds.break`): Stryker's own threshold is on a run's total.
//
//   node scripts/mutation-report.mjs [group...]             the table, and the equivalent mutants
//   node scripts/mutation-report.mjs --survivors [group...] every mutant that survived or has no test, with its place
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import config, { deferred, groups, leftOut } from "../stryker.config.mjs"

const asked = process.argv.slice(2).filter((a) => !a.startsWith("--"))
const chosen = asked.length > 0 ? asked : Object.keys(groups).filter((g) => !(g in deferred))
const files = {}
for (const group of chosen) {
  const path = new URL(`../mutation/mutation-${group}.json`, import.meta.url)
  if (!existsSync(path)) {
    console.error(`no report of the group ${group}: run \`npm run mutation -- ${group}\``)
    process.exit(1)
  }
  // only the group's own modules: a report can carry results of modules the group no longer mutates
  const root = new URL("..", import.meta.url).pathname
  for (const [file, result] of Object.entries(JSON.parse(readFileSync(path, "utf8")).files)) {
    if (groups[group].includes(file.replace(root, ""))) files[file] = result
  }
}
const report = { files }
const threshold = config.thresholds.break
const root = new URL("..", import.meta.url).pathname

const detected = new Set(["Killed", "Timeout"])
const undetected = new Set(["Survived", "NoCoverage"])
const isStatic = (mutant) => mutant.status === "Ignored" && /static/i.test(mutant.statusReason ?? "")

const rows = Object.entries(report.files).map(([file, { mutants }]) => {
  const count = (test) => mutants.filter(test).length
  const killed = count((m) => detected.has(m.status))
  const survived = count((m) => undetected.has(m.status))
  return {
    file: file.replace(root, ""),
    killed,
    survived,
    equivalent: mutants.filter((m) => m.status === "Ignored" && !isStatic(m)),
    statics: count(isStatic),
    score: killed + survived === 0 ? 100 : (100 * killed) / (killed + survived),
    open: mutants.filter((m) => undetected.has(m.status))
  }
}).sort((a, b) => a.file.localeCompare(b.file))

const table = [
  `| module | score | killed | survived or untested | equivalent (ignored) | static (not run) |`,
  `| --- | --- | --- | --- | --- | --- |`,
  ...rows.map((r) =>
    `| \`${r.file}\` | ${r.score.toFixed(1)}% | ${r.killed} | ${r.survived} | ${r.equivalent.length} | ${r.statics} |`
  )
]
console.log(table.join("\n"))

const place = (file, m) => `${file}:${m.location.start.line}:${m.location.start.column}`
const equivalents = rows.flatMap((r) =>
  r.equivalent.map((m) => `- ${place(r.file, m)} ${m.mutatorName}: ${m.statusReason}`)
)
if (equivalents.length > 0) console.log(`\nEquivalent mutants (ignored, with the reason):\n${equivalents.join("\n")}`)

const survivors = rows.flatMap((r) =>
  r.open.map((m) => {
    const replacement = (m.replacement ?? "").replace(/\s+/g, " ").slice(0, 100)
    return `- ${m.status} ${place(r.file, m)} ${m.mutatorName}: \`${replacement.replace(/`/g, "'")}\``
  })
)
if (process.argv.includes("--survivors")) console.log(`\nSurvivors:\n${survivors.join("\n")}`)

// --write: the table, the equivalent mutants and the survivors in docs/mutation.md
if (process.argv.includes("--write")) {
  const doc = [
    "# Mutation testing: the latest scores",
    "",
    "Written by `node scripts/mutation-report.mjs --write` from the groups' reports of `npm run mutation` (StrykerJS,",
    "vitest runner, per-test coverage). A module fails the run below " + `${threshold}%.`,
    "",
    ...table,
    "",
    ...Object.entries(deferred).flatMap(([group, why]) => [
      `Deferred: the group \`${group}\` (${groups[group].map((f) => `\`${f}\``).join(", ")}): ${why}.`,
      ""
    ]),
    "Not mutated, with the reason (stryker.config.mjs's `leftOut`):",
    "",
    ...leftOut.map(({ modules, reason }) => `- ${modules}: ${reason}.`),
    "",
    "## Equivalent mutants (listed in stryker.config.mjs, with the reason)",
    "",
    ...equivalents,
    "",
    "## Survivors (not killed by any test)",
    "",
    ...(survivors.length > 0 ? survivors : ["None."]),
    ""
  ].join("\n")
  writeFileSync(new URL("../docs/mutation.md", import.meta.url), doc)
}

const below = rows.filter((r) => r.score < threshold)
if (below.length > 0) {
  console.error(`\nbelow ${threshold}%: ${below.map((r) => `${r.file} (${r.score.toFixed(1)}%)`).join(", ")}`)
  process.exit(1)
}
