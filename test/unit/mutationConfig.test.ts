/**
 * The mutation run's configuration (stryker.config.mjs): every module of a group exists, and every equivalent mutant
 * it lists is still where it says: the ignore plugin (scripts/stryker-equivalents.mjs), run through Stryker's own
 * instrumenter, ignores exactly the listed mutators' mutants on each listed line, with the listed reason. A line
 * edited away fails here, not silently in the next mutation run.
 */
import { assert, describe, it } from "@effect/vitest"
import { Instrumenter } from "@stryker-mutator/instrumenter"
import * as fs from "node:fs"
import * as path from "node:path"
import { discardReason, strykerPlugins } from "../../scripts/stryker-equivalents.mjs"
import { equivalents, groups, testConfigs } from "../../stryker.config.mjs"

const silent = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  trace: () => undefined,
  fatal: () => undefined,
  isDebugEnabled: () => false,
  isTraceEnabled: () => false,
  isInfoEnabled: () => false,
  isWarnEnabled: () => false,
  isErrorEnabled: () => false,
  isFatalEnabled: () => false
}

/** The mutants of `file` as Stryker makes them, with the plugin or without it. */
const mutantsOf = async (file: string, withPlugin: boolean) => {
  const name = path.resolve(file)
  const ignorers = withPlugin ? [strykerPlugins[0]!.value] : []
  const result = await new Instrumenter(silent as never).instrument(
    [{ name, content: fs.readFileSync(name, "utf8"), mutate: true }],
    { ignorers, excludedMutations: [], plugins: null } as never
  )
  return result.mutants
}

describe("the mutation run's configuration", () => {
  it("lists modules that exist, each in one group", () => {
    const modules = Object.values(groups).flat()
    for (const module of modules) assert.isTrue(fs.existsSync(module), module)
    assert.strictEqual(new Set(modules).size, modules.length)
  })

  it("gives a group its own test configuration only where one exists, for a group that exists", () => {
    for (const [group, config] of Object.entries(testConfigs)) {
      assert.isTrue(group in groups, group)
      assert.isTrue(fs.existsSync(config), config)
    }
  })

  it("lists each equivalent's line once in its module, and src/ holds no mutation-tool directive", () => {
    for (const { file, line } of equivalents) {
      const lines = fs.readFileSync(file, "utf8").split("\n").map((l) => l.trim())
      assert.strictEqual(lines.filter((l) => l === line).length, 1, `${file}: ${line}`)
    }
    const sources = fs.readdirSync("src", { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"))
    for (const source of sources) {
      assert.notInclude(fs.readFileSync(path.join("src", source), "utf8"), "Stryker disable", source)
    }
  })

  it("ignores exactly the listed mutators' mutants on each listed line, with the reason", async () => {
    const files = [...new Set(equivalents.map((e) => e.file))]
    for (const file of files) {
      const lines = fs.readFileSync(file, "utf8").split("\n").map((l) => l.trim())
      const entries = equivalents.filter((e) => e.file === file)
      const listed = new Map(entries.map((e) => [lines.indexOf(e.line) + 1, e]))
      // Stryker counts lines from 0
      const mutants = (await mutantsOf(file, true)).map((m) => ({ ...m, line: m.location.start.line + 1 }))
      for (const mutant of mutants) {
        const entry = listed.get(mutant.line)
        if (mutant.statusReason === discardReason) continue
        const expected = entry !== undefined && entry.mutators.includes(mutant.mutatorName)
        assert.strictEqual(mutant.status === "Ignored", expected, `${file}:${mutant.line} ${mutant.mutatorName}`)
        if (expected) assert.strictEqual(mutant.statusReason, entry.reason)
      }
      for (const entry of entries) {
        const line = lines.indexOf(entry.line) + 1
        for (const mutator of entry.mutators) {
          const found = mutants.some((m) => m.line === line && m.mutatorName === mutator)
          assert.isTrue(found, `${file}:${line} has no ${mutator} mutant to ignore`)
        }
      }
      // without the plugin, nothing is ignored: the directives are in the configuration only
      assert.isFalse((await mutantsOf(file, false)).some((m) => m.status === "Ignored"), file)
    }
  }, 60_000)

  it("ignores the mutants of Effect's `{ discard: true }` option wherever it is, and only those", async () => {
    const file = "src/internal/limiter/meter.ts"
    const options = fs.readFileSync(file, "utf8").split("{ discard: true }").length - 1
    assert.isAtLeast(options, 2)
    const ignored = (await mutantsOf(file, true)).filter((m) => m.status === "Ignored")
    assert.strictEqual(ignored.length, 2 * options)
    for (const mutant of ignored) {
      assert.strictEqual(mutant.statusReason, discardReason)
      assert.include(["ObjectLiteral", "BooleanLiteral"], mutant.mutatorName)
    }
  })
})
