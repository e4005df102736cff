// Type-checks every ```ts block of the hand-written Markdown (README.md, CONTRIBUTING.md, BENCHMARKS.md and
// docs/*.md; not the generated docs/modules/, docs/examples/, docs/index.md, docs/mutation.md, docs/plan-tables.md),
// as scripts/docs-examples.mjs does for the JSDoc examples, and checks that no table cell of those pages is longer
// than 120 characters. Each block becomes a module of its own in .markdown-examples/ (`export {}` appended), with
// `effect-aifs` and its subpaths mapped to src/ by the paths of tsconfig.base.json; one `tsc --noEmit` runs over
// all of them, and an error is reported at the Markdown file and line of the block. A block that cannot compile
// (a fragment) says so in its fence: ```ts nocheck. The folder is removed afterwards (`--keep` leaves it).
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const outDir = join(root, ".markdown-examples")
const keep = process.argv.includes("--keep")
const maxCell = 120

const generated = new Set(["index.md", "mutation.md", "plan-tables.md"])
const docs = readdirSync(join(root, "docs")).filter((file) => file.endsWith(".md") && !generated.has(file)).sort()
const pages = [
  ...["README.md", "CONTRIBUTING.md", "BENCHMARKS.md"].filter((file) => existsSync(join(root, file))),
  ...docs.map((file) => `docs/${file}`)
]
// BENCHMARKS.md is written by `npm run bench` (its tables hold the runs' long target lines): its blocks are
// checked, its tables are not
const tablePages = pages.filter((page) => page !== "BENCHMARKS.md")

/** The fenced blocks of a page: language, the words after it, the line of the opening fence (1-based), the text. */
const blocksOf = (text) => {
  const lines = text.split("\n")
  const blocks = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)([^`]*)$/.exec(lines[i])
    if (open === null) continue
    const [, fence, lang, rest] = open
    const body = []
    let j = i + 1
    for (; j < lines.length; j++) {
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[j])
      if (close !== null && close[1][0] === fence[0] && close[1].length >= fence.length) break
      body.push(lines[j])
    }
    blocks.push({
      lang: lang.toLowerCase(),
      words: rest.trim().split(/\s+/).filter((w) => w !== ""),
      line: i + 1,
      body
    })
    i = j
  }
  return blocks
}

/** The cells of a page's tables longer than `maxCell`, outside code blocks; pipes split cells unless escaped. */
const longCells = (page, text) => {
  const found = []
  let fence
  text.split("\n").forEach((line, i) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)
    if (marker !== null) {
      if (fence === undefined) fence = marker[1]
      else if (marker[1][0] === fence[0] && marker[1].length >= fence.length) fence = undefined
      return
    }
    if (fence !== undefined || !line.trim().startsWith("|")) return
    const cells = line.trim().replace(/^\|/, "").replace(/\|$/, "").split(/(?<!\\)\|/).map((c) => c.trim())
    for (const cell of cells) {
      if (cell.length > maxCell) found.push(`${page}:${i + 1}: a table cell of ${cell.length} characters: ${cell}`)
    }
  })
  return found
}

const main = () => {
  const checked = []
  const skipped = []
  const cells = []
  for (const page of pages) {
    const text = readFileSync(join(root, page), "utf8")
    if (tablePages.includes(page)) cells.push(...longCells(page, text))
    for (const block of blocksOf(text)) {
      if (block.lang !== "ts" && block.lang !== "typescript") continue
      if (block.words.includes("nocheck")) skipped.push(`${page}:${block.line}`)
      else checked.push({ page, ...block, file: `${page.replace(/[/.]/g, "-")}-L${block.line}.ts` })
    }
  }
  let failed = false
  if (cells.length > 0) {
    process.stderr.write(`markdown-examples: table cells over ${maxCell} characters\n${cells.join("\n")}\n`)
    failed = true
  }

  rmSync(outDir, { recursive: true, force: true })
  mkdirSync(outDir, { recursive: true })
  try {
    // line n of a block's file is line (fence + n) of its page; `export {}` makes even an import-free block a module
    for (const block of checked) writeFileSync(join(outDir, block.file), `${block.body.join("\n")}\nexport {}\n`)
    writeFileSync(
      join(outDir, "tsconfig.json"),
      JSON.stringify(
        {
          extends: "../tsconfig.base.json",
          compilerOptions: { noEmit: true, declaration: false, declarationMap: false, sourceMap: false },
          include: ["*.ts"]
        },
        null,
        2
      )
    )
    const tsc = spawnSync(
      process.execPath,
      [
        join(root, "node_modules", "typescript", "bin", "tsc"),
        "-p",
        join(outDir, "tsconfig.json"),
        "--pretty",
        "false"
      ],
      { cwd: root, encoding: "utf8" }
    )
    if (tsc.status !== 0) {
      const byFile = new Map(checked.map((block) => [block.file, block]))
      const report = `${tsc.stdout}${tsc.stderr}`.split("\n").map((line) => {
        const error = /^(?:\.markdown-examples[/\\])?([^(]+\.ts)\((\d+),(\d+)\): (.*)$/.exec(line)
        const block = error === null ? undefined : byFile.get(error[1])
        return block === undefined ? line : `${block.page}:${block.line + Number(error[2])}:${error[3]}: ${error[4]}`
      })
      process.stderr.write(`markdown-examples: type errors\n${report.join("\n")}\n`)
      failed = true
    }
  } finally {
    if (keep) process.stderr.write(`markdown-examples: kept ${relative(root, outDir)}/\n`)
    else rmSync(outDir, { recursive: true, force: true })
  }
  process.stdout.write(
    `markdown-examples: ${checked.length} ts block(s) type-checked from ${pages.length} pages` +
      (skipped.length > 0 ? `, ${skipped.length} marked nocheck (${skipped.join(", ")})` : "") +
      `; table cells within ${maxCell} characters in ${tablePages.length} pages${failed ? ": FAILED" : ""}\n`
  )
  return failed ? 1 : 0
}

process.exitCode = main()
