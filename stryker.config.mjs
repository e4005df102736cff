// Mutation testing (`npm run mutation`, scripts/mutation.mjs): StrykerJS with its vitest runner, scoped to the
// modules where a bug costs users 429s, lost lines or leaked budget, in groups that each run on their own: each
// group keeps its incremental file in the repository (mutation/stryker-incremental-<group>.json), so a run after a
// small change re-tests only the mutants that change touches, and a run cut short loses only its group. Each mutant
// runs only the tests that cover it (per-test coverage).
// MUTATION_RUN=<group> selects a group (all the modules without it), with its own incremental file, report and
// sandbox, e.g. `MUTATION_RUN=limiter npx stryker run`.

/** The mutated modules, by group. */
export const groups = {
  headers: [
    "src/internal/slidingWindow.ts",
    "src/internal/duration.ts",
    "src/internal/headers.ts",
    "src/internal/errors.ts",
    "src/internal/redact.ts",
    "src/internal/sse.ts",
    "src/internal/chunked.ts",
    "src/layers/RetryPolicy.ts"
  ],
  // the limiter's pure parts: the budgets, the plans' tables' lookups, learning, one bucket as a value
  limits: [
    "src/internal/budgets.ts",
    "src/internal/plans.ts",
    "src/internal/limitsSpec.ts",
    "src/internal/learning.ts",
    "src/internal/limiter/bucket.ts",
    "src/internal/spend.ts"
  ],
  // the limiter's stateful parts, in three groups so that a run cut short loses one of them only: admission (its fair
  // line, the shared core, the service that wires them), settlement (permits, what an outcome does, headers, learning,
  // the spend meter), and the layer with its store
  limiter: [
    "src/internal/limiter/admission.ts",
    "src/internal/limiter/core.ts",
    "src/internal/limiter/line.ts",
    "src/internal/limiter/service.ts"
  ],
  settlement: [
    "src/internal/limiter/headers.ts",
    "src/internal/limiter/learner.ts",
    "src/internal/limiter/meter.ts",
    "src/internal/limiter/permits.ts",
    "src/internal/limiter/settlement.ts"
  ],
  limiterStore: ["src/layers/RateLimiter.ts", "src/layers/LimiterStore.ts"],
  redis: ["src/redis.ts", "src/internal/redisScripts.ts"],
  // the Redis store's connections: its time limit, first connection and wake-ups' subscription
  redisLink: ["src/internal/redisLink.ts"],
  transport: [
    "src/internal/transport.ts",
    "src/layers/InferenceHttp.ts",
    "src/internal/request/admission.ts",
    "src/internal/request/credentials.ts",
    "src/internal/request/deadline.ts",
    "src/internal/request/attempt.ts",
    "src/internal/request/decode.ts",
    "src/internal/request/events.ts",
    "src/internal/request/instruments.ts",
    "src/internal/request/operation.ts",
    "src/internal/request/pipeline.ts",
    "src/internal/request/retry.ts",
    "src/internal/request/wire.ts",
    "src/internal/request/windows.ts",
    "src/internal/telemetry.ts"
  ],
  batch: [
    "src/services/Batch.ts",
    "src/cli/batch.ts",
    "src/cli/batch/plan.ts",
    "src/cli/batch/runner.ts",
    "src/cli/batch/stop.ts",
    "src/cli/batch/report.ts",
    "src/cli/batch/files.ts",
    "src/cli/batchOutput.ts",
    "src/cli/progress.ts"
  ],
  // the batch output's lock, on its own suites (see testConfigs): two runs writing one output bill every request twice
  outputLock: ["src/cli/outputLock.ts"],
  // what reaches the wire: ids in paths, uploads' parts and names, the files service, the hosts the key goes to and the
  // key's file, the gateway's paths and queries, its transport and its tokens
  wire: [
    "src/internal/pathSegment.ts",
    "src/internal/multipart.ts",
    "src/schemas/Upload.ts",
    "src/services/Files.ts",
    "src/layers/ClientConfig.ts",
    "src/layers/GatewayConfig.ts",
    "src/internal/keyFile.ts",
    "src/services/gateway/Gateway.ts",
    "src/services/gateway/Auth.ts",
    "src/layers/GatewayHttp.ts"
  ],
  // what is read back: the chat schemas with their hand-written fast decoders (a field typed string let through as null)
  decoders: ["src/schemas/Chat.ts"]
}

/**
 * The modules that build a request, decode an answer, hold a credential or write a user's files and are not mutated,
 * with why: docs/mutation.md lists them under the scores.
 */
export const leftOut = [
  {
    modules: "the other services (`src/services/*.ts`, `src/services/gateway/*.ts` but Files, Gateway, Auth and Batch)",
    reason: "their ids reach paths through pathSegment.ts, their uploads through multipart.ts and the gateway's paths "
      + "and queries through gateway/Gateway.ts, all mutated, and test/properties/ checks every such operation and "
      + "upload on the wire; what is left in them is each one's routes (a constant path per operation, which every "
      + "operation's unit test pins) and VectorStores' polling, checked by their unit and integration suites"
  },
  {
    modules: "the other schemas (`src/schemas/*.ts` but Chat and Upload)",
    reason: "declarations (Schema structs and classes), whose mutants are static and left unrun (ignoreStatic); "
      + "the few functions among them (FineTuning's timestamps, Responses' outputText) read an answer already "
      + "decoded and build nothing that is sent"
  },
  {
    modules: "`src/layers/Node.ts`",
    reason: "it hands the key and the gateway's password on (from ClientConfig.ts, GatewayConfig.ts and keyFile.ts, "
      + "all mutated) and wires layers; that neither secret reaches a log, an error, a span or a snapshot is the "
      + "secrets suite's (test/integration/secrets.test.ts, in `npm test`)"
  },
  {
    modules: "`src/cli/images.ts` (the image files `aifs images` writes)",
    reason: "its file names and its refusal to write over the image it edits are tested through the CLI as a child "
      + "process (test/cli/images.test.ts), whose code a mutation run cannot see"
  }
]

/**
 * The test configuration of a group whose suites are not the shared one's (vitest.mutation.config.ts), each saying
 * why in its header.
 */
export const testConfigs = {
  outputLock: "vitest.mutation.outputLock.config.ts",
  wire: "vitest.mutation.wire.config.ts",
  decoders: "vitest.mutation.decoders.config.ts"
}

/**
 * Groups left out of a run that names no group (CI's), with the reason: each still runs when named
 * (`npm run mutation -- limiter`). A group is deferred only while its modules have just been rebuilt and its first run
 * is still to be made and its survivors killed; docs/mutation.md lists it.
 */
/** @type {Record<string, string>} */
export const deferred = {}

/**
 * The equivalent mutants: mutants that no test can tell from the code, each with why. `src/` holds no mutation-tool
 * directive: the ignore plugin `scripts/stryker-equivalents.mjs` marks these, by module, the text of one line in it
 * (whole, trimmed, found once) and the mutators whose mutants on that line are equivalent; a test checks each line is
 * still there (test/unit/mutationConfig.test.ts). An entry is added only with a reason a reader can check.
 */
export const equivalents = [
  {
    file: "src/services/gateway/Gateway.ts",
    line: "Multipart.encode(Multipart.inMemory(params.multipart), `${method} ${base.url}`),",
    mutators: ["StringLiteral"],
    reason: "the endpoint names the request in the error of a file that cannot be read; parts held in memory never fail"
  },
  {
    file: "src/internal/limiter/permits.ts",
    line: "let weighed: Learner.Weighed = \"noise\"",
    mutators: ["StringLiteral"],
    reason: "a refusal is weighed before it is read, and only \"limit\" and \"elsewhere\" are read"
  },
  {
    file: "src/redis.ts",
    line: "...(queuedMs >= 0 ? { queuedMs } : {})",
    mutators: ["EqualityOperator"],
    reason: "a kept place never asks a wait of 0: the waiter ahead is alive, so its time and grace are still to come"
  },
  {
    file: "src/cli/outputLock.ts",
    line: "return (error as NodeJS.ErrnoException).code === \"EPERM\"",
    mutators: ["ConditionalExpression", "EqualityOperator", "StringLiteral"],
    reason: "EPERM needs a process of another user, which tests run as root (CI) cannot have"
  },
  {
    file: "src/internal/redisLink.ts",
    line: "if (client.status === \"wait\") client.connect().catch(() => undefined)",
    mutators: ["ConditionalExpression"],
    reason: "connecting a client that connects already is refused by ioredis, and ignored"
  },
  {
    file: "src/internal/redisLink.ts",
    line: "if (ours.has(waiter)) kept.add(key)",
    mutators: ["ConditionalExpression"],
    reason: "keeping another process's wake-up costs memory, never a wrong wake-up (its waiter is never ours)"
  },
  {
    file: "src/internal/redisLink.ts",
    line: "if (resumes.size === 0 && waiting.get(key) === resumes) waiting.delete(key)",
    mutators: ["ConditionalExpression", "LogicalOperator"],
    reason: "when an empty set is dropped changes memory only: a message finds no one either way"
  },
  {
    file: "src/internal/sse.ts",
    line: "if (lf >= 0 && lf < from) lf = piece.indexOf(\"\\n\", from)",
    mutators: ["ConditionalExpression", "LogicalOperator", "EqualityOperator"],
    reason: "looking again finds the same break, only slower"
  },
  {
    file: "src/internal/sse.ts",
    line: "if (cr >= 0 && cr < from) cr = piece.indexOf(\"\\r\", from)",
    mutators: ["ConditionalExpression", "LogicalOperator", "EqualityOperator"],
    reason: "looking again finds the same break, only slower"
  },
  {
    file: "src/internal/request/wire.ts",
    line: "if (counter === undefined) {",
    mutators: ["ConditionalExpression"],
    reason: "a counter made again counts the same, only slower"
  },
  {
    file: "src/internal/request/wire.ts",
    line: "if (made === undefined) {",
    mutators: ["ConditionalExpression"],
    reason: "headers made again are the same, only slower"
  },
  {
    file: "src/internal/request/deadline.ts",
    line: "if (group.size === 0) groups.delete(length)",
    mutators: ["ConditionalExpression"],
    reason: "an empty group kept costs memory, never a wrong moment"
  },
  {
    file: "src/internal/request/deadline.ts",
    line: "if (own !== generation) return Effect.void",
    mutators: ["ConditionalExpression"],
    reason: "a timer replaced is interrupted too; this only covers a wake-up that raced it"
  },
  {
    file: "src/internal/request/deadline.ts",
    line: "if (at < target) {",
    mutators: ["EqualityOperator"],
    reason: "restarting for a moment the timer already wakes at is only slower"
  },
  {
    file: "src/internal/request/deadline.ts",
    line: "return Runtime.runFork(runtime)(effect, { immediate: false })",
    mutators: ["ObjectLiteral", "BooleanLiteral"],
    reason: "started at once or by the scheduler, the attempt runs and is watched the same"
  },
  {
    file: "src/internal/request/instruments.ts",
    line: "if (instruments.size >= 1_000) instruments.delete(instruments.keys().next().value!)",
    mutators: ["ConditionalExpression", "EqualityOperator"],
    reason: "instruments made again are the same series, only slower"
  },
  {
    file: "src/internal/request/instruments.ts",
    line: "if (span?._tag === \"Span\") {",
    mutators: ["ConditionalExpression", "OptionalChaining"],
    reason: "an operation's answer is read within its own span"
  },
  {
    file: "src/internal/request/instruments.ts",
    line: "if (errorType !== undefined && span?._tag === \"Span\") span.attribute(\"error.type\", errorType)",
    mutators: ["ConditionalExpression", "OptionalChaining"],
    reason: "an operation ends within its own span"
  },
  {
    file: "src/internal/limiter/service.ts",
    line: "if (!tabled.has(model)) {",
    mutators: ["ConditionalExpression"],
    reason: "reading the tables again gives the same window, only slower"
  },
  {
    file: "src/internal/limiter/line.ts",
    line: "if (line.head > 1024 && line.head * 2 > line.nodes.length) {",
    mutators: ["LogicalOperator", "EqualityOperator"],
    reason: "dropping the front at another moment keeps the same turns, at another cost"
  },
  {
    file: "src/internal/limiter/headers.ts",
    line: "const topUp = count.requests > 0 || count.tokens > 0",
    mutators: ["EqualityOperator"],
    reason: "a count of zero tops up nothing: the store only answers its usage again"
  },
  {
    file: "src/internal/headers.ts",
    line: "return new RateLimitInfo({ ...present, observedAt: now }, true)",
    mutators: ["BooleanLiteral"],
    reason: "validating the parsed values again gives the same object, only slower"
  },
  {
    file: "src/internal/plans.ts",
    line: "if (requestsOnly(model) || typeof requests !== \"number\" || typeof tokens !== \"number\") continue",
    mutators: ["ConditionalExpression"],
    reason: "a shared quota's row has every figure shared: either check excludes it"
  },
  {
    file: "src/internal/spend.ts",
    line: "const samePrices = (a: Prices, b: Prices): boolean => a.input === b.input && a.output === b.output",
    mutators: ["ConditionalExpression"],
    reason: "every model whose input prices differ between plans has output prices that differ too"
  }
]

const group = process.env.MUTATION_RUN
const run = group ? `-${group}` : ""

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  appendPlugins: ["./scripts/stryker-equivalents.mjs"],
  ignorers: ["equivalents"],
  vitest: { configFile: testConfigs[group] ?? "vitest.mutation.config.ts" },
  coverageAnalysis: "perTest",
  mutate: group && group in groups ? groups[group] : Object.values(groups).flat(),
  ignoreStatic: true,
  incremental: true,
  incrementalFile: `mutation/stryker-incremental${run}.json`,
  concurrency: 2,
  // a mutant that makes a test hang (a wait that never ends) is detected after this much beyond the test's own time:
  // the default 5 s, times the hundreds of such mutants in the limiter, cost hours
  timeoutMS: 1500,
  // the dry run is the whole mutation suite under coverage: about five minutes on two cores, Stryker's default limit
  dryRunTimeoutMinutes: 20,
  reporters: ["clear-text", "progress", "json"],
  jsonReporter: { fileName: `mutation/mutation${run}.json` },
  thresholds: { high: 90, low: 85, break: 85 },
  tempDirName: `.stryker-tmp${run}`,
  cleanTempDir: true
}
