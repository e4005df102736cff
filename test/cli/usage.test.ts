/**
 * Spend across processes and runs, as child processes against the emulator: `aifs usage` shows what the key's
 * processes spent this month, through Redis (each process adds to the store) or the cache directory (each run adds
 * to its file); `AIFS_BUDGET` stops a batch before the service's own budget refusal, with the lines left for a rerun.
 */
import { assert, describe, inject, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Emulator from "../../src/emulator/Emulator.js"
import { fingerprint } from "../../src/internal/redact.js"
import * as Spend from "../../src/internal/spend.js"
import type * as RateLimiter from "../../src/layers/RateLimiter.js"
import { aifs } from "../helpers/cli.js"
import { tempDir } from "../helpers/tempDir.js"

const url = inject("redisUrl")

interface Usage extends RateLimiter.Spending {
  readonly tier: string
}

/** Two `aifs chat` processes with `env`, then `aifs usage --json`: the month's spend as the third process sees it. */
const twoChatsThenUsage = (env: Record<string, string | undefined>) =>
  Effect.gen(function*() {
    for (let i = 0; i < 2; i++) {
      const chat = yield* aifs(["chat", "--no-stream", `hi ${i}`], env)
      assert.strictEqual(chat.code, 0, chat.stderr)
    }
    const run = yield* aifs(["usage", "--json"], env)
    assert.strictEqual(run.code, 0, run.stderr)
    return JSON.parse(run.stdout) as Usage
  })

/** The emulator's count of what its development key spent matches the client's, per model. */
const assertAgrees = (usage: Usage) =>
  Effect.gen(function*() {
    const emulator = yield* Emulator.Emulator
    const llama = usage.models["Llama-3.3-70B-Instruct"]
    assert.strictEqual(llama?.requests, 2, JSON.stringify(usage))
    assert.isAbove(llama!.input, 0)
    assert.isAbove(llama!.output, 0)
    assert.closeTo(usage.total.cost, yield* emulator.spent(emulator.keyFor("standard4000")!), 1e-12)
    assert.isAbove(usage.total.cost, 0)
  })

describe("aifs usage", { timeout: 90_000 }, () => {
  it.live.skipIf(url === undefined)(
    "through Redis: two processes' spend adds up, as a third sees it",
    () =>
      Effect.gen(function*() {
        const emulator = yield* Emulator.Emulator
        const usage = yield* twoChatsThenUsage({
          AIFS_BASE_URL: emulator.baseUrl,
          AIFS_LIMITER_REDIS_URL: url!,
          AIFS_LIMITER_REDIS_PREFIX: `aifs-usage-${process.pid}-${Date.now()}`
        })
        assert.strictEqual(usage.tier, "standard4000")
        yield* assertAgrees(usage)
      }).pipe(Effect.provide(Emulator.layer({ port: 0 })))
  )

  it.scopedLive("without Redis: each run adds to the key's file in the cache directory; text lines per model", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const dir = yield* tempDir("aifs-usage-")
      const env = { AIFS_BASE_URL: emulator.baseUrl, AIFS_CACHE_DIR: dir, AIFS_BUDGET: "10" }
      const usage = yield* twoChatsThenUsage(env)
      yield* assertAgrees(usage)
      assert.strictEqual(usage.budget, 10)
      // one file per key and month, named by the key's fingerprint
      assert.deepStrictEqual(fs.readdirSync(dir).filter((f) => f.startsWith("spend-")).length, 1)
      const text = yield* aifs(["usage"], env)
      const lines = text.stdout.trim().split("\n")
      assert.match(lines[0]!, /^tier standard4000, key key#[0-9a-f]{8}$/)
      assert.match(lines[1]!, /^Llama-3\.3-70B-Instruct\t2 requests\t\d+ in, \d+ out\t[\d.]+ EUR$/)
      assert.match(lines[2]!, /^total [\d.]+ EUR this month \(\d{4}-\d{2}\); budget 10\.00 EUR, [\d.]+ EUR left$/)
    }).pipe(Effect.provide(Emulator.layer({ port: 0 }))))

  it.scopedLive("a model's tokens read from and written to the prompt cache are on its line", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const dir = yield* tempDir("aifs-usage-")
      // what an earlier run kept: a Claude model's prompt written to the cache, then read from it
      const key = fingerprint(Redacted.make(emulator.keyFor("standard4000")!)).replace(/[^A-Za-z0-9_-]/g, "")
      const spent = { requests: 2, input: 900, output: 40, cached: 400, written: 410, cost: 0.01 }
      fs.writeFileSync(
        path.join(dir, `spend-${key}-${Spend.monthOf(Date.now())}.jsonl`),
        `${JSON.stringify({ model: "claude-sonnet-4.5", ...spent })}\n`
      )
      const text = yield* aifs(["usage"], { AIFS_BASE_URL: emulator.baseUrl, AIFS_CACHE_DIR: dir })
      assert.strictEqual(text.code, 0, text.stderr)
      assert.include(
        text.stdout,
        "claude-sonnet-4.5\t2 requests\t900 in (400 cached, 410 written to the cache), 40 out\t0.01 EUR\n"
      )
      const json = yield* aifs(["usage", "--json"], { AIFS_BASE_URL: emulator.baseUrl, AIFS_CACHE_DIR: dir })
      assert.deepStrictEqual((JSON.parse(json.stdout) as Usage).models["claude-sonnet-4.5"], spent)
    }).pipe(Effect.provide(Emulator.layer({ port: 0 }))))

  it.scopedLive("AIFS_CACHE_DIR unset: the command keeps it in the user's cache ($XDG_CACHE_HOME); empty: nowhere", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const xdg = yield* tempDir("aifs-xdg-")
      const usage = yield* twoChatsThenUsage({
        AIFS_BASE_URL: emulator.baseUrl,
        XDG_CACHE_HOME: xdg,
        AIFS_CACHE_DIR: undefined
      })
      yield* assertAgrees(usage)
      assert.strictEqual(fs.readdirSync(path.join(xdg, "effect-aifs")).filter((f) => f.startsWith("spend-")).length, 1)

      const other = yield* tempDir("aifs-xdg-")
      const alone = yield* twoChatsThenUsage({
        AIFS_BASE_URL: emulator.baseUrl,
        XDG_CACHE_HOME: other,
        AIFS_CACHE_DIR: ""
      })
      // each process counted its own: the usage process sent nothing
      assert.deepStrictEqual(alone.models, {})
      assert.deepStrictEqual(fs.readdirSync(other), [])
    }).pipe(Effect.provide(Emulator.layer({ port: 0 }))))
})

const lines = 12

describe("aifs batch with AIFS_BUDGET", { timeout: 90_000 }, () => {
  it.scopedLive("stops before the service's budget refusal: exit 3, the lines left unsent, no 429 met", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const dir = yield* tempDir("aifs-budget-")
      const input = path.join(dir, "in.jsonl")
      const output = path.join(dir, "out.jsonl")
      fs.writeFileSync(
        input,
        Array.from({ length: lines }, (_, i) =>
          JSON.stringify({
            custom_id: `b${i}`,
            url: "/v1/chat/completions",
            body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: `q${i}` }], max_tokens: 5 }
          })).join("\n") + "\n"
      )
      // a few lines' worth of the plan's prices (3.53 EUR a million tokens, about 20 tokens a line)
      const run = yield* aifs(["batch", input, "--out", output, "--concurrency", "1"], {
        AIFS_BASE_URL: emulator.baseUrl,
        AIFS_BUDGET: "0.0002"
      })
      assert.strictEqual(run.code, 3, run.stderr)
      const answered = fs.readFileSync(output, "utf8").split("\n").filter((l) => l !== "").length
      assert.isAtLeast(answered, 1, run.stderr)
      assert.isBelow(answered, lines, run.stderr)
      assert.include(run.stderr, "would cross the monthly budget of 0.00020 EUR")
      assert.include(run.stderr, `${lines - answered} lines are left for a rerun`)
      const stats = yield* emulator.stats
      assert.strictEqual(stats.received, answered, "the refused line was never sent")
      assert.strictEqual(stats.rateLimited, 0)
    }).pipe(Effect.provide(Emulator.layer({ port: 0 }))))
})
