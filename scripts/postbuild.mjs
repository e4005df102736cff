// tshy writes dist/<dialect>/package.json with the module type only; bundlers read `sideEffects` from the nearest
// package.json, so each dialect folder repeats the package's flag (as Effect's own dist/esm/package.json does).
import { readFileSync, writeFileSync } from "node:fs"

const root = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))
for (const dialect of ["esm", "commonjs"]) {
  const file = new URL(`../dist/${dialect}/package.json`, import.meta.url)
  const pjson = JSON.parse(readFileSync(file, "utf8"))
  writeFileSync(file, JSON.stringify({ ...pjson, sideEffects: root.sideEffects }, null, 2) + "\n")
}
