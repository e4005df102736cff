import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: {
    // examples import the package by name, as its users do: its sources, as tsconfig.json's paths say (no build
    // needed before the tests; an entry `effect-aifs/x/Y` is `src/x/Y.ts`)
    alias: [
      { find: /^effect-aifs\/(.+)$/, replacement: fileURLToPath(new URL("./src/$1.ts", import.meta.url)) },
      { find: /^effect-aifs$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) }
    ]
  },
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    setupFiles: ["test/helpers/fastCheckSeed.ts"],
    globalSetup: ["test/globalSetup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000
  }
})
