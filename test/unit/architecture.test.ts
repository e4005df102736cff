/**
 * The direction of imports that docs/architecture.md states: `src/internal/` is a leaf the other folders use, so no
 * module in it imports from `layers/`, `services/`, `cli/` or `emulator/` (their types included).
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const root = resolve("src")
const above = ["layers", "services", "cli", "emulator"]

/** Every relative import of a module, resolved to a path under `src/`. */
const importsOf = (file: string): ReadonlyArray<string> =>
  [...readFileSync(file, "utf8").matchAll(/^\s*(?:import|export)\b[^"']*?from\s+["'](\.[^"']+)["']/gm)].map((m) =>
    relative(root, resolve(dirname(file), m[1]!))
  )

describe("the architecture's import direction", () => {
  it("no module under src/internal/ imports from layers/, services/, cli/ or emulator/", () => {
    const files = readdirSync(join(root, "internal"), { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts"))
      .map((file) => join(root, "internal", file))
    assert.isAbove(files.length, 30)
    const upward = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => above.some((folder) => target.startsWith(`${folder}/`)))
        .map((target) => `${relative(root, file)} -> ${target}`)
    )
    assert.deepStrictEqual(upward, [])
    // the check reads real imports: a module of the request path does import from below
    assert.include(importsOf(join(root, "internal/request/wire.ts")), "schemas/Errors.js")
  })
})
