// The test configuration of the mutation group `outputLock` (stryker.config.mjs): the output lock's own suites, each
// file in a module graph of its own. The raced property replaces `node:fs` (vi.mock) to stage its races, and in the
// shared configuration's single module graph (isolate: false) the lock module kept the one it first loaded, so that a
// mutant's coverage went to the wrong file's tests and its score said nothing.
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
