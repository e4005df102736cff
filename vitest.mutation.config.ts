// The test configuration of the mutation run (stryker.config.mjs): the unit tests and the integration tests of the
// limiter, its Redis store (on the run's own redis-server, test/globalSetup.ts), the headers, the time limits, key rotation and the
// faults, the ones that state the guarantees of the mutated modules.
// Test files share their worker's module cache, so that a mutant's run does not load effect and the emulator again
// per file. The suites of other concerns (the emulator's bad input, secrets, the openai client, the CLI as a child
// process, whose code runs outside the test's process) stay out: they cost minutes per run and see none of it.
import { configDefaults, defineConfig } from "vitest/config"
import base from "./vitest.config.js"

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      "test/unit/**/*.test.ts",
      "test/integration/{limiter,limits,rateLimitHeaders,timeouts,faults,queue,redisStore,redisSpend,keyRotation}.test.ts",
      // the budgets binding in turn and the key a spent budget stops: seconds, on the TestClock
      "test/integration/{budgets,quotaExceeded}.test.ts",
      // the spend meter and a budget of one's own, the plans' tables, context windows, limits learnt and kept
      "test/integration/{spendMeter,monthlyBudget,planLimits,contextWindow,learntLimits}.test.ts"
    ],
    // the check of the mutation run's own configuration reads the sources, which the run has instrumented
    exclude: [...configDefaults.exclude, "test/unit/mutationConfig.test.ts"],
    isolate: false
  }
})
