// Mutation testing (`npm run mutation`): StrykerJS with its vitest runner, scoped to the modules where a bug costs
// users 429s, lost lines or leaked budget. Each mutant runs only the tests that cover it (per-test coverage), and
// the incremental file in the repository lets a run after a small change re-test only what changed.
/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts" },
  coverageAnalysis: "perTest",
  mutate: [
    "src/internal/slidingWindow.ts",
    "src/internal/duration.ts",
    "src/internal/headers.ts",
    "src/internal/errors.ts",
    "src/internal/redact.ts",
    "src/internal/sse.ts",
    "src/internal/transport.ts",
    "src/layers/RateLimiter.ts",
    "src/layers/LimiterStore.ts",
    "src/layers/RetryPolicy.ts",
    "src/layers/InferenceHttp.ts",
    "src/services/Batch.ts",
    "src/cli/batch.ts"
  ],
  ignoreStatic: true,
  incremental: true,
  incrementalFile: "mutation/stryker-incremental.json",
  concurrency: 2,
  reporters: ["clear-text", "progress", "json"],
  jsonReporter: { fileName: "mutation/mutation.json" },
  thresholds: { high: 90, low: 85, break: 85 },
  tempDirName: ".stryker-tmp",
  cleanTempDir: true
}
