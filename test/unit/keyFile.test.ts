/**
 * Where the key comes from when `AIFS_API_KEY_FILE` is set (src/internal/keyFile.ts): the path read trimmed, blank
 * counting as unset, refused beside a key of `AIFS_API_KEY`; the file's key trimmed, an unreadable or blank file a
 * `ConfigError` naming the variable, and never the key in what is printed. The layer it feeds is
 * test/integration/keyRotation.test.ts's.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Inspectable from "effect/Inspectable"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as path from "node:path"
import { keyFilePath, keyFromFile } from "../../src/internal/keyFile.js"
import { tempDir } from "../helpers/tempDir.js"

const pathFrom = (env: Record<string, string>) =>
  keyFilePath.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))), Effect.either)

describe("AIFS_API_KEY_FILE", () => {
  it.effect("its path, trimmed; unset or blank: none, and AIFS_API_KEY is the key", () =>
    Effect.gen(function*() {
      const read = yield* pathFrom({ AIFS_API_KEY_FILE: " /run/secrets/key \n" })
      assert.isTrue(read._tag === "Right" && Option.getOrNull(read.right) === "/run/secrets/key")
      for (const env of [{}, { AIFS_API_KEY_FILE: "  " }, { AIFS_API_KEY_FILE: "", AIFS_API_KEY: "gen-x" }]) {
        const read = yield* pathFrom(env)
        assert.isTrue(read._tag === "Right" && Option.isNone(read.right), JSON.stringify(env))
      }
    }))

  it.effect("beside a key of AIFS_API_KEY it is refused, naming both; beside a blank one it is the key's source", () =>
    Effect.gen(function*() {
      const both = yield* pathFrom({ AIFS_API_KEY_FILE: "/k", AIFS_API_KEY: "gen-x" })
      assert.strictEqual(both._tag, "Left")
      assert.strictEqual(
        String(both._tag === "Left" && both.left),
        `(Invalid data at AIFS_API_KEY_FILE: "AIFS_API_KEY and AIFS_API_KEY_FILE are both set: set one")`
      )
      assert.notInclude(String(both._tag === "Left" && both.left), "gen-x")
      const blank = yield* pathFrom({ AIFS_API_KEY_FILE: "/k", AIFS_API_KEY: " " })
      assert.isTrue(blank._tag === "Right" && Option.getOrNull(blank.right) === "/k")
    }))

  it.scoped("the file's key, trimmed and redacted; a file missing or blank: a ConfigError that names the variable", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-keyfile-unit-")
      const file = path.join(dir, "key")
      fs.writeFileSync(file, "  gen-secretfromthefile \n")
      const key = yield* keyFromFile(file)
      assert.strictEqual(Redacted.value(key), "gen-secretfromthefile")
      assert.notInclude(Inspectable.format(key), "gen-secretfromthefile")
      const missing = yield* Effect.flip(keyFromFile(path.join(dir, "absent")))
      assert.isTrue(ConfigError.isConfigError(missing))
      assert.match(String(missing), /^\(Invalid data at AIFS_API_KEY_FILE: "cannot read /)
      assert.include(String(missing), `cannot read ${path.join(dir, "absent")}: `)
      fs.writeFileSync(file, " \n\t")
      const blank = yield* Effect.flip(keyFromFile(file))
      assert.strictEqual(String(blank), `(Invalid data at AIFS_API_KEY_FILE: "${file} holds no key")`)
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
