/**
 * Runs the benchmarks (all, or those named: `npm run bench -- goodput overhead`; `--profile` adds the CPU
 * profile of the overhead loops, by package, and where the memory bench's waiting calls allocated their heap),
 * prints a table per benchmark and writes its section of BENCHMARKS.md (sections of benchmarks not run are kept),
 * with its charts (goodput, shared, learning) drawn to docs/charts/<name>.svg and shown at the top of the section.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { type Chart, markdownTable, type Report, textTable } from "./common.js"

const benches: Record<string, () => Promise<Report>> = {
  goodput: () => import("./goodput.js").then((m) => m.run()),
  overhead: () => import("./overhead.js").then((m) => m.run()),
  streaming: () => import("./streaming.js").then((m) => m.run()),
  memory: () => import("./memory.js").then((m) => m.run()),
  upload: () => import("./upload.js").then((m) => m.run()),
  soak: () => import("./soak.js").then((m) => m.run()),
  shared: () => import("./shared.js").then((m) => m.run()),
  learning: () => import("./learning.js").then((m) => m.run())
}

const file = new URL("../BENCHMARKS.md", import.meta.url)
/** Where the charts go; BENCHMARKS.md and the docs link them there. */
const charts = new URL("../docs/charts/", import.meta.url)
const machine =
  `${os.cpus().length} CPUs (${os.cpus()[0]?.model.trim() ?? "unknown"}), ${os.platform()} ${os.release()}, ` +
  `Node.js ${process.version}`

const section = (report: Report, date: string): string =>
  [
    `<!-- bench:${report.name}:start -->`,
    `## ${report.title} (\`npm run bench -- ${report.name}\`)`,
    "",
    `Run ${date} on ${machine}.`,
    "",
    ...(report.charts ?? []).flatMap((chart) => [`![${chart.alt}](docs/charts/${chart.name}.svg)`, ""]),
    markdownTable(report.headers, report.rows),
    "",
    markdownTable(
      ["target", "met", "this run"],
      report.targets.map((t) => [t.target, t.met ? "yes" : "**no**", t.detail])
    ),
    "",
    `**How measured.** ${report.how}`,
    ...(report.notes ?? []).map((n) => `\n${n}`),
    `<!-- bench:${report.name}:end -->`
  ].join("\n")

const writeChart = (chart: Chart): void => {
  mkdirSync(charts, { recursive: true })
  writeFileSync(new URL(`${chart.name}.svg`, charts), chart.svg)
  console.log(`drew docs/charts/${chart.name}.svg`)
}

const writeSection = (report: Report, date: string): void => {
  const text = section(report, date)
  const current = existsSync(file)
    ? readFileSync(file, "utf8")
    : "# Benchmarks\n\nFigures of one run each of `npm run bench` (see bench/); each section says when and where it ran.\n"
  const start = `<!-- bench:${report.name}:start -->`
  const end = `<!-- bench:${report.name}:end -->`
  const from = current.indexOf(start)
  const to = current.indexOf(end)
  const next = from >= 0 && to > from
    ? current.slice(0, from) + text + current.slice(to + end.length)
    : `${current.trimEnd()}\n\n${text}\n`
  writeFileSync(file, next)
}

const main = async () => {
  // flags (`--profile`) are read by the benchmarks that take them
  const asked = process.argv.slice(2).filter((a) => !a.startsWith("--"))
  const unknown = asked.filter((a) => !(a in benches))
  if (unknown.length > 0) {
    console.error(`unknown benchmark(s): ${unknown.join(", ")}; known: ${Object.keys(benches).join(", ")}`)
    process.exit(2)
  }
  const names = asked.length > 0 ? asked : Object.keys(benches)
  let failed = false
  for (const name of names) {
    console.log(`\n== ${name} ==`)
    try {
      const report = await benches[name]!()
      console.log(textTable(report.headers, report.rows))
      for (const t of report.targets) console.log(`${t.met ? "MET    " : "NOT MET"} ${t.target}: ${t.detail}`)
      for (const chart of report.charts ?? []) writeChart(chart)
      writeSection(report, new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC")
    } catch (error) {
      failed = true
      console.error(`${name} failed:`, error)
    }
  }
  console.log(`\nwrote ${file.pathname}`)
  // servers and sockets are closed by each bench; exit anyway so that a stray timer cannot hold the process
  process.exit(failed ? 1 : 0)
}

void main()
