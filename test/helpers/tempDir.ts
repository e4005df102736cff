/**
 * A temporary directory for a test, removed with the test's scope (passed or failed): `@effect/platform`'s
 * `makeTempDirectoryScoped` on Node's file system.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"

/** A fresh directory under the system's temp directory, named `<prefix>XXXXXX`, gone when the scope closes. */
export const tempDir = (prefix: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.makeTempDirectoryScoped({ prefix })).pipe(
    Effect.provide(NodeFileSystem.layer)
  )
