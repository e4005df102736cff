/**
 * Configuration that can never work fails before any request, as one line with exit code 2; the CLI answers from
 * the embedded emulator only when no base URL is set.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Emulator from "../../src/emulator/Emulator.js"
import { aifs, type Run } from "../helpers/cli.js"
import { freePort } from "../helpers/redisServer.js"

const ask = ["chat", "--no-stream", "hello"]

/** One line on stderr, exit code 2, nothing on stdout. */
const usageFailure = (run: Run, ...parts: ReadonlyArray<string>) => {
  assert.strictEqual(run.code, 2, run.stderr)
  assert.strictEqual(run.stdout, "")
  const lines = run.stderr.split("\n").filter((line) => line !== "")
  assert.strictEqual(lines.length, 1, run.stderr)
  for (const part of parts) assert.include(lines[0], part)
}

describe("aifs: configuration that cannot work", { timeout: 60_000 }, () => {
  it.live("a base URL that is not an http(s) URL is exit 2, naming the variable, before any request", () =>
    Effect.gen(function*() {
      for (const url of ["not-a-url", "ftp://example.com/v2"]) {
        const run = yield* aifs(ask, { AIFS_API_KEY: "gen-test", AIFS_BASE_URL: url })
        usageFailure(run, "AIFS_BASE_URL", `"${url}"`)
      }
    }))

  it.live("a zero or negative timeout is exit 2, naming the variable", () =>
    Effect.gen(function*() {
      const run = yield* aifs(ask, { AIFS_API_KEY: "gen-test", AIFS_TIMEOUT: "0" })
      usageFailure(run, "AIFS_TIMEOUT", "above zero")
    }))

  it.live("a value that does not parse is that alone: no account of sources that had none, with a key or without", () =>
    Effect.gen(function*() {
      for (const env of [{ AIFS_API_KEY: "gen-test", AIFS_BUDGET: "abc" }, { AIFS_BUDGET: "abc" }]) {
        const run = yield* aifs(ask, env)
        usageFailure(run, "AIFS_BUDGET", "abc")
        assert.notInclude(run.stderr, "Missing data", run.stderr)
      }
    }))

  it.live("a base URL elsewhere without a key is exit 2 naming AIFS_API_KEY, never the embedded emulator", () =>
    Effect.gen(function*() {
      const run = yield* aifs(ask, { AIFS_BASE_URL: "https://llm-server.llmhub.t-systems.net/v2" })
      usageFailure(run, "AIFS_API_KEY is not set", "llm-server.llmhub.t-systems.net")
    }))

  it.live("a base URL on this machine without a key uses the emulator's development key there, and says so", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const run = yield* aifs(ask, { AIFS_BASE_URL: emulator.baseUrl })
      assert.strictEqual(run.code, 0, run.stderr)
      assert.notStrictEqual(run.stdout.trim(), "")
      assert.include(run.stderr, `AIFS_API_KEY is not set: using the emulator's development key at ${emulator.baseUrl}`)
      assert.notInclude(run.stderr, "embedded emulator")
    }).pipe(Effect.provide(Emulator.layer({ port: 0 }))))

  it.live("no base URL and no key: the embedded emulator, said on the first line", () =>
    Effect.gen(function*() {
      const run = yield* aifs(ask)
      assert.strictEqual(run.code, 0, run.stderr)
      assert.match(run.stderr.split("\n")[0]!, /embedded emulator/)
    }))

  it.live("no base URL and no key: the embedded emulator still takes every other setting, and refuses a bad one", () =>
    Effect.gen(function*() {
      usageFailure(yield* aifs(ask, { AIFS_TIMEOUT: "0" }), "AIFS_TIMEOUT", "above zero")
      usageFailure(yield* aifs(["models"], { AIFS_LIMITS: "gpt-4.1=100" }), "AIFS_LIMITS", "gpt-4.1=100")
      const limits = yield* aifs(["limits", "--model", "gpt-4.1"], { AIFS_LIMITS: "gpt-4.1=100/30000" })
      assert.strictEqual(limits.code, 0, limits.stderr)
      // requests and the combined budget as configured; the input and output budgets stay the plan's (standard4000)
      assert.match(
        limits.stdout,
        /^gpt-4\.1\t.*\tlimits 100 requests \(configured\), \d+ input tokens \(plan\), \d+ output tokens \(plan\), 30000 tokens \(configured\)\t/m
      )
    }))

  it.live("a flag below its least value is exit 2 naming the flag and the value, before any client starts", () =>
    Effect.gen(function*() {
      // a base URL that would refuse: a request would be exit 1 after retries, not exit 2 at once
      const run = yield* aifs([...ask, "--max-tokens", "-1"], {
        AIFS_API_KEY: "gen-test",
        AIFS_BASE_URL: "http://127.0.0.1:9/v2"
      })
      usageFailure(run, "--max-tokens must be at least 1, not -1")
    }))
})

describe("aifs emulator: its own mistakes", { timeout: 60_000 }, () => {
  it.live("a port or fault rate out of range is one line naming the flag and the value, exit 2", () =>
    Effect.gen(function*() {
      usageFailure(yield* aifs(["emulator", "--port", "99999"]), "--port must be from 0 to 65535, not 99999")
      usageFailure(yield* aifs(["emulator", "--fault-rate", "2"]), "--fault-rate must be from 0 to 1, not 2")
    }))

  it.live("a port in use is one line saying it cannot listen and why, exit 2", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const run = yield* aifs(["emulator", "--port", String(emulator.port)])
      usageFailure(run, "cannot listen", "EADDRINUSE")
    }).pipe(Effect.provide(Emulator.layer({ port: 0 }))))
})

describe("aifs: what fails, said in one line", { timeout: 60_000 }, () => {
  it.live("every retry is one line on stderr at the default level; the answer alone on stdout", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      yield* emulator.setChaos([{ fault: { kind: "status", status: 503 }, route: "/v2/chat/completions", times: 2 }])
      const run = yield* aifs(ask, { AIFS_BASE_URL: emulator.baseUrl })
      assert.strictEqual(run.code, 0, run.stderr)
      const retries = run.stderr.split("\n").filter((line) => line.includes("; retry "))
      assert.strictEqual(retries.length, 2, run.stderr)
      // the default back-off: 250-500 ms, then 500 ms to 1 s (at the top of its jitter, 1s)
      assert.match(retries[0]!, /^aifs: POST \/v2\/chat\/completions: ServerError: .*; retry 1 of 6 in \d{3}ms$/)
      assert.match(retries[1]!, /; retry 2 of 6 in (?:\d{3}ms|1s)$/)
      assert.notInclude(run.stdout, "aifs:")
      assert.notStrictEqual(run.stdout.trim(), "")
    }).pipe(Effect.provide(Emulator.layer({ port: 0 }))))

  it.live("an answer that cannot be read is one line; --verbose adds every field of the error, still one line", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      yield* emulator.setChaos([{ fault: { kind: "malformedJson" }, route: "/v2/chat/completions" }])
      const env = { AIFS_BASE_URL: emulator.baseUrl, AIFS_MAX_RETRIES: "0" }
      const plain = yield* aifs(ask, env)
      assert.strictEqual(plain.code, 1, plain.stderr)
      const plainErrors = plain.stderr.split("\n").filter((line) => line.startsWith("aifs: error: "))
      assert.strictEqual(plainErrors.length, 1, plain.stderr)
      assert.match(plainErrors[0]!, /^aifs: error: DecodeError: /)
      assert.notInclude(plain.stderr, "    at ")

      const verbose = yield* aifs([...ask, "--verbose"], env)
      assert.strictEqual(verbose.code, 1, verbose.stderr)
      const verboseErrors = verbose.stderr.split("\n").filter((line) => line.startsWith("aifs: error: "))
      assert.strictEqual(verboseErrors.length, 1, verbose.stderr)
      assert.include(verboseErrors[0], "endpoint=\"POST /v2/chat/completions\"")
      assert.include(verboseErrors[0], "status=200")
      assert.notInclude(verbose.stderr, "    at ")
    }).pipe(Effect.provide(Emulator.layer({ port: 0 }))))

  it.live("a failed request with --verbose, streamed or not, is its error's line: no fiber's report, no stack frame", () =>
    Effect.gen(function*() {
      for (const stream of [[], ["--no-stream"]]) {
        const run = yield* aifs(["chat", ...stream, "hello", "--model", "nope", "--verbose"])
        assert.strictEqual(run.code, 1, run.stderr)
        const lines = run.stderr.split("\n").filter((line) => line !== "")
        assert.deepStrictEqual(lines.filter((line) => line.startsWith("aifs: error: ")).length, 1, run.stderr)
        assert.match(lines.at(-1)!, /^aifs: error: NotFound: Model 'nope' not found \{endpoint=/)
        assert.notMatch(run.stderr, /unhandled|:\d+:\d+\)/, run.stderr)
      }
    }))

  it.live("nothing listening at the base URL: a command fails at once with the address and the reason, no retry", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(() => freePort())
      const run = yield* aifs(["models"], { AIFS_API_KEY: "gen-test", AIFS_BASE_URL: `http://127.0.0.1:${port}/v2` })
      assert.strictEqual(run.code, 1, run.stderr)
      // one line: no "retry 1 of 6" before it
      assert.strictEqual(
        run.stderr,
        `aifs: error: TransportError: connection failed: connect ECONNREFUSED 127.0.0.1:${port}, ECONNREFUSED\n`
      )
    }))
})
