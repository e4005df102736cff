// Type-checks and runs the @example blocks that @effect/docgen 0.5.2 renders but never compiles: those of
// classes (service tags, errors, schema classes) and of re-exported names. docgen itself checks the examples
// of modules, functions, constants, interfaces, type aliases, namespaces and class methods; run this after it
// (`docgen && node scripts/docs-examples.mjs`). Same rules as docgen: the examples go to docs/examples with
// `effect-aifs` imports pointed at src/, the compiler options of docgen.json, `tsc` then `tsx` on an index
// that imports them all; a type error, a failed example or one that does not finish in time fails the run.
import { spawnSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { basename, delimiter, dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const packageJson = JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
const docgen = JSON.parse(readFileSync(join(root, "docgen.json"), "utf8"))
const outDir = join(root, docgen.outDir ?? "docs", "examples")

// the public modules: the package's exports map, as tshy builds it (`./src/x.ts` or `./src/dir/*.ts`)
const modules = packageJson.tshy.exports.flatMap((entry) => {
  const path = entry.replace(/^\.\//, "")
  if (!path.endsWith("/*.ts")) return [path]
  const dir = path.slice(0, -"/*.ts".length)
  return readdirSync(join(root, dir)).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts")).map((f) =>
    `${dir}/${f}`
  )
})

const fence = /^(```|~~~)[^\n]*\n([\s\S]*)\n(```|~~~)$/

/** The @example bodies of a JSDoc comment, as docgen reads them (tag text up to the next tag, fences off). */
const examplesOf = (comment) => {
  const lines = comment.replace(/^\/\*\*/, "").replace(/\*\/$/, "").split("\n").map((l) => l.replace(/^\s*\* ?/, ""))
  const examples = []
  let current
  for (const line of lines) {
    if (/^@\w+/.test(line)) {
      if (current !== undefined) examples.push(current)
      current = line.startsWith("@example") ? [line.slice("@example".length).trim()].filter((l) => l !== "") : undefined
    } else if (current !== undefined) current.push(line)
  }
  if (current !== undefined) examples.push(current)
  return examples.map((example) => {
    const text = example.join("\n").trim()
    return fence.exec(text)?.[2] ?? text
  })
}

const jsDocBefore = (text, pos, pick) => {
  const ranges = (ts.getLeadingCommentRanges(text, pos) ?? []).filter((r) => text.startsWith("/**", r.pos))
  const range = pick === "first" ? ranges[0] : ranges[ranges.length - 1]
  return range === undefined ? "" : text.slice(range.pos, range.end)
}

const isExported = (node) => (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)

const found = []
for (const module of modules) {
  const text = readFileSync(join(root, module), "utf8")
  const source = ts.createSourceFile(module, text, ts.ScriptTarget.Latest, true)
  const prefix = module.split("/").join("-")
  const add = (name, comment) =>
    examplesOf(comment).forEach((body, i) => found.push({ file: `${prefix}-${name}-${i}.ts`, body, where: module }))
  for (const statement of source.statements) {
    // docgen reads a class's last JSDoc, and the first comment before a re-exported name
    if (ts.isClassDeclaration(statement) && statement.name && isExported(statement)) {
      add(`class-${statement.name.text}`, jsDocBefore(text, statement.pos, "last"))
    } else if (
      ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)
    ) {
      for (const specifier of statement.exportClause.elements) {
        add(`export-${specifier.name.text}`, jsDocBefore(text, specifier.pos, "first"))
      }
    }
  }
}

// as docgen: `from "effect-aifs/x"` becomes `from '../../src/x'`, and `assert.` brings its import
const rewrite = (body) => {
  const code = body.replace(
    new RegExp(`from (['"])${packageJson.name}(?:/lib)?(?:/(.*?))?\\1`, "g"),
    (_, _quote, path) => `from '../../src${path ? `/${path}` : ""}'`
  )
  return code.includes("assert.") ? `import * as assert from 'assert'\n${code}` : code
}

const main = () => {
  rmSync(outDir, { recursive: true, force: true })
  if (found.length === 0) {
    process.stdout.write("docs-examples: no class or re-export examples\n")
    return 0
  }
  mkdirSync(outDir, { recursive: true })
  for (const example of found) writeFileSync(join(outDir, example.file), `${rewrite(example.body)}\n`)
  writeFileSync(join(outDir, "index.ts"), found.map((e) => `import './${basename(e.file, ".ts")}'\n`).join(""))
  writeFileSync(
    join(outDir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: docgen.examplesCompilerOptions }, null, 2)
  )
  process.stdout.write(`docs-examples: ${found.length} class and re-export example(s) from ${modules.length} modules\n`)

  const env = { ...process.env, PATH: [join(root, "node_modules", ".bin"), process.env.PATH].join(delimiter) }
  const run = (command, args, options = {}) =>
    spawnSync(command, args, { cwd: root, env, encoding: "utf8", shell: process.platform === "win32", ...options })

  const tsc = run("tsc", ["--noEmit", "--project", join(outDir, "tsconfig.json")])
  if (tsc.status !== 0) {
    process.stderr.write(`docs-examples: type errors\n${tsc.stdout}${tsc.stderr}`)
    return 1
  }
  // the examples' own output is not the point: only a failure (on stderr) or a hang is
  const tsx = run("tsx", ["--tsconfig", join(outDir, "tsconfig.json"), join(outDir, "index.ts")], {
    stdio: ["ignore", "ignore", "pipe"],
    timeout: 180_000
  })
  if (tsx.status !== 0) {
    const why = tsx.error ? String(tsx.error) : `exit ${tsx.status ?? tsx.signal}`
    process.stderr.write(`docs-examples: an example failed (${why})\n${tsx.stderr}`)
    return 1
  }
  rmSync(outDir, { recursive: true, force: true })
  process.stdout.write("docs-examples: all type-checked and run\n")
  return 0
}

process.exitCode = main()
