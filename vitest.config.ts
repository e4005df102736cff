import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: {
    // examples import the package by name, as its users do
    alias: [
      { find: /^effect-aifs\/ai$/, replacement: fileURLToPath(new URL("./src/ai.ts", import.meta.url)) },
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
