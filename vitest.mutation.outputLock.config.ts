// The test configuration of the mutation group `outputLock` (stryker.config.mjs): the output lock's own suites, each
// file in a module graph of its own, so that the raced property's `node:fs` (replaced with vi.mock to stage its races
// between file operations) and the unit tests' real one never share a module cache. Survivors applied to the source by
// hand pass these suites too: what survives is a race they do not stage yet, not a test left unrun.
import { defineConfig } from "vitest/config"
import mutation from "./vitest.mutation.config.js"

export default defineConfig({
  ...mutation,
  test: {
    ...mutation.test,
    include: ["test/unit/outputLock.test.ts", "test/properties/outputLock.test.ts"],
    isolate: true
  }
})
