import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { paths, render, renderPage } from "../../scripts/plan-tables.js"
import * as Plans from "../../src/internal/plans.js"
import { plans } from "../../src/internal/planTables.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"

const text = readFileSync(paths.data, "utf8")
/** A generated file as written (the mutation run's sandbox puts `// @ts-nocheck` after every source's first comment). */
const generated = (path: string) =>
  readFileSync(path, "utf8").replace(/^\/\/ @ts-nocheck\n/, "").replace(/\n\/\/ @ts-nocheck\n/, "")
const data = JSON.parse(text) as {
  plans: Record<string, { models: Record<string, { rpm: unknown; itpm: unknown; otpm: unknown; context: unknown }> }>
}

describe("the plans' tables", () => {
  it("the module and the docs page are what the script makes of data/plan-limits.json (never edited by hand)", () => {
    assert.strictEqual(generated(paths.target), render(text), "run `npm run plan-tables`")
    assert.strictEqual(readFileSync(paths.page, "utf8"), renderPage(text), "run `npm run plan-tables`")
  })

  it("every plan and every row of the data is looked up as exported: numbers as numbers, the two words as no number", () => {
    assert.deepStrictEqual([...Plans.planNames], Object.keys(data.plans))
    let rows = 0
    for (const [plan, table] of Object.entries(data.plans)) {
      assert.isTrue(Plans.isPlan(plan))
      for (const [raw, row] of Object.entries(table.models)) {
        rows++
        const preset = Plans.presetOf(plan as Plans.Plan, raw.trim())!
        const expected = (value: unknown) =>
          typeof value === "number" ? { value, source: "plan" } : { value: undefined, source: "shared" }
        assert.deepStrictEqual(preset.requests, expected(row.rpm), `${plan}/${raw}`)
        assert.deepStrictEqual(preset.input, expected(row.itpm), `${plan}/${raw}`)
        assert.deepStrictEqual(preset.output, expected(row.otpm), `${plan}/${raw}`)
        assert.deepStrictEqual(preset.tokens, { value: undefined, source: "unknown" })
      }
    }
    assert.strictEqual(rows, 298)
  })

  it("the figures the issue and the docs quote", () => {
    assert.deepStrictEqual(RateLimiter.preset("basic", "Llama-3.3-70B-Instruct"), {
      rpm: 20,
      itpm: 13_800,
      otpm: 5_000
    })
    assert.deepStrictEqual(RateLimiter.preset("basic", "Mistral-Small-24B-Instruct-2501"), {
      rpm: 20,
      itpm: 18_750,
      otpm: 7_500
    })
    assert.deepStrictEqual(RateLimiter.preset("standard4000", "Mistral-Small-24B-Instruct-2501"), {
      rpm: 600,
      itpm: 150_000,
      otpm: 60_000
    })
    assert.deepStrictEqual(RateLimiter.preset("essential", "claude-3-7-sonnet"), {
      rpm: 36,
      itpm: 60_000,
      otpm: 30_000
    })
    assert.deepStrictEqual(RateLimiter.preset("essential", "mistral-medium-3"), {
      rpm: 90,
      itpm: 120_000,
      otpm: 60_000
    })
    assert.deepStrictEqual(RateLimiter.preset("essential", "whisper-large-v3"), { rpm: 300, itpm: 218, otpm: 218 })
    assert.strictEqual(RateLimiter.preset("essential", "gemini-2.5-flash"), "shared")
    assert.strictEqual(RateLimiter.preset("test", "gemma-4-31B"), "shared")
    assert.isUndefined(RateLimiter.preset("basic", "gpt-4o"), "Basic holds only the open-source models")
  })

  it("ids are exact, with the ids the API is inferred to use as aliases of their rows", () => {
    // the Azure snapshot date dropped
    assert.deepStrictEqual(Plans.rowOf("essential", "gpt-4o"), plans.essential.models["gpt-4o-2024-11-20"])
    assert.deepStrictEqual(Plans.rowOf("agentic", "o3-mini"), plans.agentic.models["o3-mini-2025-01-31"])
    // the image model by its text-input price row; Qwen3-Coder by the -FP8 id the docs offer
    assert.deepStrictEqual(Plans.rowOf("essential", "gpt-image-1"), plans.essential.models["gpt-image-1-text-input"])
    assert.isDefined(Plans.rowOf("professional", "Qwen3-Coder-30B-A3B-Instruct-FP8"))
    // the legacy slip " gemini-3-pro" is found without its space
    assert.isDefined(Plans.rowOf("standard1000", "gemini-3-pro"))
    // case-sensitive: the legacy GPT-5-Codex is not gpt-5-codex
    assert.isUndefined(Plans.rowOf("standard1000", "gpt-5-codex"))
    assert.isDefined(Plans.rowOf("essential", "gpt-5-codex"))
    assert.isUndefined(Plans.rowOf("essential", "GPT-4O"))
    // an alias never shadows a row of its own name
    assert.deepStrictEqual(Plans.rowOf("standard1000", "gpt-4o"), plans.standard1000.models["gpt-4o"])
    // nothing outside the tables: not a prototype's name
    assert.isUndefined(Plans.rowOf("basic", "constructor"))
    assert.isFalse(Plans.isPlan("toString"))
  })

  it("a plan's models by their API ids: snapshots undated, price bands left out; where each is hosted", () => {
    const essential = Plans.modelsOf("essential")
    assert.strictEqual(essential.length, 42 - 4)
    assert.includeMembers([...essential], ["gpt-4o", "gpt-image-1", "Qwen3-Coder-30B-A3B-Instruct-FP8", "gemini-3-pro"])
    for (
      const row of [
        "gpt-4o-2024-11-20",
        "gpt-image-1-text-input",
        "gpt-image-1-image-input",
        "gemini-3-pro-long-context"
      ]
    ) {
      assert.notInclude(essential, row)
      assert.isFalse(Plans.hasModel("essential", row), row)
    }
    assert.deepStrictEqual([Plans.modelsOf("basic").length, Plans.modelsOf("professional").length], [15, 40])
    assert.deepStrictEqual(Plans.modelsOf("test"), ["gemma-4-31B"])
    // the legacy slip " gemini-3-pro" is a model without its space; ids are exact
    assert.isTrue(Plans.hasModel("standard1000", "gemini-3-pro"))
    assert.isFalse(Plans.hasModel("essential", "GPT-5"))
    assert.isFalse(Plans.hasModel("basic", "gpt-4o"))
    assert.strictEqual(Plans.regionOf("gpt-5"), "azure-sweden-central")
    assert.strictEqual(Plans.regionOf("gemini-3-pro"), "gcp-europe-west1", "the current plans' spelling")
    assert.strictEqual(Plans.regionOf("Qwen3-Coder-30B-A3B-Instruct-FP8"), "otc-germany")
    assert.isUndefined(Plans.regionOf("claude-sonnet-4.5-long-context"))
    assert.isUndefined(Plans.regionOf("constructor"))
  })

  it("context windows in tokens (the portal's K is a thousand), prices per million", () => {
    assert.strictEqual(Plans.contextOf("essential", "Llama-3.3-70B-Instruct"), 128_000)
    assert.strictEqual(Plans.contextOf("essential", "gpt-4.1"), 1_000_000)
    assert.strictEqual(Plans.contextOf("essential", "whisper-large-v3"), 448)
    assert.isUndefined(Plans.contextOf("basic", "Llama-3.3-70B-Instruct"))
    assert.deepStrictEqual(Plans.pricesOf("essential", "claude-3-7-sonnet"), { input: 2.7, output: 13.5 })
  })

  it("a model's window whatever the plan (the legacy plans, first, give none); the smallest any table gives", () => {
    assert.strictEqual(Plans.contextWindowOf("Llama-3.3-70B-Instruct"), 128_000)
    assert.strictEqual(Plans.contextWindowOf("gpt-4.1"), 1_000_000)
    assert.isUndefined(Plans.contextWindowOf("no-such-model"))
    // gpt-image-1's prompt rows, 4,000 tokens; whisper's 448 are not text tokens (requests alone are metered)
    assert.strictEqual(Plans.smallestWindow, 4_000)
  })

  it("the line under which requests are too small to blame a token budget: a quarter of the 5th percentile", () => {
    // a twentieth of the fixed rows give fewer than 100 input tokens a request (gpt-4o on standard3000 gives 10)
    assert.strictEqual(Plans.fewTokensPerRequest("input"), 25)
    assert.isTrue(Plans.fewTokensPerRequest("output") > 20 && Plans.fewTokensPerRequest("output") < 21)
    assert.isTrue(Plans.requestsOnly("whisper-large-v3-turbo"))
    assert.isFalse(Plans.requestsOnly("Llama-3.3-70B-Instruct"))
  })
})
