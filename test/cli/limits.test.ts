/**
 * `aifs limits` as a child process: the limiter's limits and window per model for the configured key; through a
 * Redis store, the window the key's other processes filled.
 */
import { assert, describe, inject, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Emulator from "../../src/emulator/Emulator.js"
import type * as RateLimiter from "../../src/layers/RateLimiter.js"
import { aifs } from "../helpers/cli.js"

const url = inject("redisUrl")

interface Limits {
  readonly tier: string
  readonly buckets: ReadonlyArray<RateLimiter.BucketState>
}

describe("aifs limits", { timeout: 60_000 }, () => {
  it.live("per model: the limits applied and the window, one tab-separated line each after the tier", () =>
    Effect.gen(function*() {
      const run = yield* aifs(["limits", "-m", "Llama-3.3-70B-Instruct", "-m", "text-embedding-bge-m3"])
      assert.strictEqual(run.code, 0, run.stderr)
      const lines = run.stdout.trim().split("\n")
      assert.match(lines[0]!, /^tier standard4000, key key#[0-9a-f]{8}$/)
      // each model's row of the standard4000 plan's table: requests, input and output tokens, no combined budget
      assert.deepStrictEqual(lines.slice(1).map((line) => line.split("\t")), [
        [
          "Llama-3.3-70B-Instruct",
          "0 requests, 0 in, 0 out used",
          "limits 600 requests (plan), 138000 input tokens (plan), 50000 output tokens (plan)",
          "window empty"
        ],
        [
          "text-embedding-bge-m3",
          "0 requests, 0 in, 0 out used",
          "limits 600 requests (plan), 600000 input tokens (plan), 600000 output tokens (plan)",
          "window empty"
        ]
      ])
    }))

  it.live.skipIf(url === undefined)(
    "through Redis, the window another process of the key filled",
    () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.Emulator
        const env = {
          AIFS_BASE_URL: emulator.baseUrl,
          AIFS_LIMITER_REDIS_URL: url!,
          AIFS_LIMITER_REDIS_PREFIX: `aifs-limits-${process.pid}-${Date.now()}`
        }
        for (let i = 0; i < 2; i++) {
          const chat = yield* aifs(["chat", "--no-stream", "hi"], env)
          assert.strictEqual(chat.code, 0, chat.stderr)
        }
        const run = yield* aifs(["limits", "-m", "Llama-3.3-70B-Instruct", "--json"], env)
        assert.strictEqual(run.code, 0, run.stderr)
        const limits = JSON.parse(run.stdout) as Limits
        assert.strictEqual(limits.tier, "standard4000")
        assert.strictEqual(limits.buckets.length, 1)
        const [bucket] = limits.buckets
        assert.strictEqual(bucket!.budgets.requests.used, 2)
        assert.isAbove(bucket!.budgets.input.used, 0)
        assert.deepStrictEqual(bucket!.budgets.requests, { limit: 600, source: "plan", used: 2 })
      }).pipe(Effect.provide(Emulator.layer({ port: 0 })))
  )
})
