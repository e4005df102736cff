/**
 * The emulator meters each key and model by its plan's row: requests, input tokens and output tokens per window, each
 * binding on its own, named in the 429 with its limit and its wait. A shared quota is not metered by number, whisper
 * by requests alone (a model outside the plan is not found: catalogue.test.ts). Raw HTTP on loopback (not the client,
 * whose limiter would pace first) under the `TestClock`: the window slides only when the test moves it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as Emulator from "../../src/emulator/Emulator.js"
import {
  chat,
  messageOf,
  type Reply,
  transcribe,
  untilRefused,
  usageOf,
  wideAnswer,
  words
} from "../helpers/emulatorWire.js"

const window = "10 seconds"

const keyOf = (tier: string) => `gen-${`planlimits${tier}`.padEnd(48, "0")}`

const emulator = (tiers: ReadonlyArray<string>, options: Emulator.ServeOptions = {}) =>
  Emulator.layer({ window, keys: tiers.map((tier) => ({ key: keyOf(tier), tier })), ...options })

type Budget = "requests" | "input" | "output"

const budgets: ReadonlyArray<Budget> = ["requests", "input", "output"]

const noun: Record<Budget, string> = { requests: "requests", input: "input tokens", output: "output tokens" }

const errorType: Record<Budget, string> = { requests: "requests", input: "input_tokens", output: "output_tokens" }

/** A plan's row for a model, as data/plan-limits.json has it. */
interface Row extends Record<Budget, number> {
  readonly plan: string
  readonly model: string
  readonly proprietary: boolean
}

const rows: ReadonlyArray<Row> = [
  { plan: "basic", model: "Llama-3.3-70B-Instruct", requests: 20, input: 13_800, output: 5_000, proprietary: false },
  { plan: "essential", model: "claude-3-7-sonnet", requests: 36, input: 60_000, output: 30_000, proprietary: true },
  { plan: "essential", model: "mistral-medium-3", requests: 90, input: 120_000, output: 60_000, proprietary: true }
]

/** A request that spends `budget` of `row`, about a fifth of its limit, and little of the others. */
const spending = (row: Row, budget: Budget) => {
  const key = keyOf(row.plan)
  if (budget === "input") return chat(key, row.model, words(Math.floor(row.input / 5.5) - 6))
  if (budget === "output") return chat(key, row.model, "Hi", wideAnswer(Math.floor(row.output / 5.5 / 9)))
  return chat(key, row.model, "Hi")
}

const header = (reply: Reply, name: string) => reply.headers[name]

/** The refusal names the budget and its limit, and asks for the wait of the whole window (all was sent at once). */
const assertRefusedBy = (row: Row, budget: Budget, refusal: Reply) => {
  assert.strictEqual(refusal.status, 429)
  assert.strictEqual(header(refusal, "retry-after"), "10")
  if (row.proprietary) {
    assert.strictEqual(
      messageOf(refusal),
      `Rate limit reached for ${row.model}: limit ${row[budget]} ${
        noun[budget]
      } per 10s. Please retry after 10 seconds.`
    )
    assert.strictEqual(refusal.json?.error?.type, errorType[budget])
    assert.strictEqual(header(refusal, "x-ratelimit-limit-requests"), String(row.requests))
    assert.strictEqual(header(refusal, "x-ratelimit-limit-tokens"), String(row.input + row.output))
  } else {
    assert.strictEqual(
      messageOf(refusal),
      `Rate limit exceeded: ${row[budget]} ${noun[budget]} per 10s for model ${row.model}`
    )
    assert.isUndefined(header(refusal, "x-ratelimit-limit-requests"))
  }
}

describe("each budget of a plan's row binds on its own", () => {
  for (const row of rows) {
    for (const budget of budgets) {
      it.effect(`${row.plan} ${row.model}: ${row[budget]} ${noun[budget]} per window`, () =>
        Effect.gen(function*() {
          const request = spending(row, budget)
          const { admitted, refusal } = yield* untilRefused(request, row.requests + 5)
          const first = usageOf(admitted[0]!)
          // the same request costs the same each time
          for (const reply of admitted) assert.deepStrictEqual(usageOf(reply), first)
          const per: Record<Budget, number> = { requests: 1, input: first.input, output: first.output }
          const n = admitted.length
          assert.strictEqual(n, Math.floor(row[budget] / per[budget]), "exactly as many as the budget holds")
          for (const other of budgets) {
            if (other !== budget) assert.isAtMost((n + 1) * per[other], row[other], `${other} had room`)
          }
          assertRefusedBy(row, budget, refusal)
          const last = admitted[n - 1]!
          if (row.proprietary) {
            const spent = n * (first.input + first.output)
            assert.strictEqual(header(last, "x-ratelimit-remaining-requests"), String(row.requests - n))
            assert.strictEqual(header(last, "x-ratelimit-remaining-tokens"), String(row.input + row.output - spent))
          } else {
            assert.isUndefined(header(last, "x-ratelimit-remaining-tokens"))
          }
          // the window slides: once it has, the same request is admitted again
          yield* TestClock.adjust(window)
          assert.strictEqual((yield* request).status, 200)
        }).pipe(Effect.provide(emulator([row.plan]))))
    }
  }

  it.effect("a request larger than a budget's limit is too large, naming that budget, with no wait to try", () =>
    Effect.gen(function*() {
      const llama = "Llama-3.3-70B-Instruct"
      // 13,794 words and 6 tokens of framing: exactly the limit fits
      assert.strictEqual((yield* chat(keyOf("basic"), llama, words(13_794))).status, 200)
      yield* TestClock.adjust(window)
      const input = yield* chat(keyOf("basic"), llama, words(13_795))
      assert.strictEqual(input.status, 429)
      assert.strictEqual(
        messageOf(input),
        `Request too large for model ${llama}: 13801 input tokens exceed the limit of 13800 input tokens per 10s`
      )
      assert.isUndefined(header(input, "retry-after"))
      const output = yield* chat(keyOf("essential"), "claude-3-7-sonnet", "Hi", wideAnswer(3_400))
      assert.strictEqual(output.status, 429)
      assert.match(messageOf(output), /^Request too large for claude-3-7-sonnet: limit 30000 output tokens per 10s, /)
      assert.strictEqual(output.json?.error?.type, "output_tokens")
      assert.isUndefined(header(output, "retry-after"))
    }).pipe(Effect.provide(emulator(["basic", "essential"]))))
})

describe("models without a row of numbers", () => {
  it.effect("a shared quota (Gemini on essential) and a dynamic one (test) are not metered by number", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 100; i++) {
        const reply = yield* chat(keyOf("essential"), "gemini-2.5-flash", `question ${i}`)
        assert.strictEqual(reply.status, 200)
        // no fixed limit to report
        assert.isUndefined(header(reply, "x-ratelimit-limit-requests"))
      }
      const large = yield* chat(keyOf("essential"), "gemini-2.5-flash", words(100_000))
      assert.strictEqual(large.status, 200)
      assert.strictEqual(usageOf(large).input, 100_006)
      for (let i = 0; i < 30; i++) assert.strictEqual((yield* chat(keyOf("test"), "gemma-4-31B", "Hi")).status, 200)
    }).pipe(Effect.provide(emulator(["essential", "test"]))))

  it.effect("whisper is metered by requests alone: 20 on basic, whatever its 109 tokens a window", () =>
    Effect.gen(function*() {
      const { admitted, refusal } = yield* untilRefused(transcribe(keyOf("basic"), "whisper-large-v3"), 30)
      assert.strictEqual(admitted.length, 20)
      const tokens = admitted.reduce((n, reply) => n + usageOf(reply).output, 0)
      assert.isAbove(tokens, 2 * 109, "the transcripts were far over the token figures")
      assert.strictEqual(refusal.status, 429)
      assert.strictEqual(messageOf(refusal), "Rate limit exceeded: 20 requests per 10s for model whisper-large-v3")
    }).pipe(Effect.provide(emulator(["basic"]))))
})

describe("custom tiers and quotas set mid-run", () => {
  it.effect("a custom tier may meter input and output apart (itpm, otpm); the tokens headers sum them", () =>
    Effect.gen(function*() {
      const key = keyOf("split")
      const { admitted, refusal } = yield* untilRefused(chat(key, "gpt-4o", words(94)), 20)
      assert.strictEqual(usageOf(admitted[0]!).input, 100)
      assert.strictEqual(admitted.length, 3)
      assert.strictEqual(header(admitted[0]!, "x-ratelimit-limit-tokens"), "100300")
      assert.include(messageOf(refusal), "limit 300 input tokens per 10s")
    }).pipe(
      Effect.provide(Emulator.layer({
        window,
        tiers: { split: { rpm: 50, itpm: 300, otpm: 100_000 } },
        keys: [{ key: keyOf("split"), tier: "split" }]
      }))
    ))

  it.effect("two budgets full: the one with the longer wait refuses, and retry-after is its wait", () =>
    Effect.gen(function*() {
      const key = keyOf("pair")
      assert.strictEqual((yield* chat(key, "gpt-4o", "Hi")).status, 200)
      yield* TestClock.adjust("4 seconds")
      const big = yield* chat(key, "gpt-4o", words(244))
      assert.strictEqual(usageOf(big).input, 250)
      // both requests are in: the requests budget frees in 6 s (the first leaves), the input one in 10 s (the big one)
      const refusal = yield* chat(key, "gpt-4o", words(94))
      assert.strictEqual(refusal.status, 429)
      assert.include(messageOf(refusal), "limit 300 input tokens per 10s")
      assert.strictEqual(header(refusal, "retry-after"), "10")
      assert.strictEqual(header(refusal, "x-ratelimit-reset-requests"), "6s")
      assert.strictEqual(header(refusal, "x-ratelimit-reset-tokens"), "10s")
      yield* TestClock.adjust("6 seconds")
      const requests = yield* chat(key, "gpt-4o", "Hi")
      assert.strictEqual(requests.status, 200, "a small request fits once the first has left")
      const again = yield* chat(key, "gpt-4o", "Hi")
      assert.strictEqual(again.status, 429)
      assert.include(messageOf(again), "limit 2 requests per 10s")
      assert.strictEqual(header(again, "retry-after"), "4")
    }).pipe(
      Effect.provide(Emulator.layer({
        window,
        tiers: { pair: { rpm: 2, itpm: 300 } },
        keys: [{ key: keyOf("pair"), tier: "pair" }]
      }))
    ))

  it.effect("setQuota on a plan's tier meters every model by that quota from now on", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      assert.strictEqual((yield* chat(keyOf("basic"), "Llama-3.3-70B-Instruct", "Hi")).status, 200)
      yield* emulator.setQuota("basic", { rpm: 3 })
      // the window keeps the request it counted: two more fit
      const { admitted, refusal } = yield* untilRefused(chat(keyOf("basic"), "Llama-3.3-70B-Instruct", "Hi"), 10)
      assert.strictEqual(admitted.length, 2)
      assert.include(messageOf(refusal), "3 requests")
      const gpt = yield* untilRefused(chat(keyOf("basic"), "gpt-oss-120b", "Hi"), 10)
      assert.strictEqual(gpt.admitted.length, 3)
    }).pipe(Effect.provide(emulator(["basic"]))))
})
