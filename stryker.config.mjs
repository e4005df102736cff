// Mutation testing (`npm run mutation`): StrykerJS with its vitest runner, scoped to the modules where a bug costs
// users 429s, lost lines or leaked budget. Each mutant runs only the tests that cover it (per-test coverage), and
// the incremental file in the repository lets a run after a small change re-test only what changed.
// MUTATION_RUN=<name> gives a run its own incremental file, report and sandbox (a run on one module while another
// runs), e.g. `MUTATION_RUN=sse npx stryker run --mutate src/internal/sse.ts --concurrency 1`.
const run = process.env.MUTATION_RUN ? `-${process.env.MUTATION_RUN}` : ""

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
    "src/redis.ts",
    "src/layers/RetryPolicy.ts",
    "src/layers/InferenceHttp.ts",
    "src/services/Batch.ts",
    "src/cli/batch.ts",
    "src/cli/outputLock.ts"
  ],
  ignoreStatic: true,
  incremental: true,
  incrementalFile: `mutation/stryker-incremental${run}.json`,
  concurrency: 2,
  reporters: ["clear-text", "progress", "json"],
  jsonReporter: { fileName: `mutation/mutation${run}.json` },
  thresholds: { high: 90, low: 85, break: 85 },
  tempDirName: `.stryker-tmp${run}`,
  cleanTempDir: true
}
