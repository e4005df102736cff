/**
 * Custom limits: the `AIFS_LIMITS` string (`*=300/300000/150000,gpt-4.1=100//30000`: requests/input/output, or the
 * older `requests/tokens` with a combined token budget), its errors in one line, and the limiter taking `*` for
 * every model without its own, budget by budget, from code and from the environment.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { parseLimits } from "../../src/internal/limitsSpec.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as Node from "../../src/layers/Node.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as TokenEstimator from "../../src/layers/TokenEstimator.js"

describe("AIFS_LIMITS", () => {
  it("per model requests/input/output, `*` for every model, any part left out, spaces allowed", () => {
    assert.deepStrictEqual(
      parseLimits("*=300/300000/150000,gpt-4.1=100//30000,claude-3-7-sonnet=36/60000/30000"),
      Either.right({
        "*": { rpm: 300, itpm: 300_000, otpm: 150_000 },
        "gpt-4.1": { rpm: 100, otpm: 30_000 },
        "claude-3-7-sonnet": { rpm: 36, itpm: 60_000, otpm: 30_000 }
      })
    )
    assert.deepStrictEqual(
      parseLimits(" a = /500/ , b=//7, c=9// ,d = 1 / 2 / 3,"),
      Either.right({
        a: { itpm: 500 },
        b: { otpm: 7 },
        c: { rpm: 9 },
        d: { rpm: 1, itpm: 2, otpm: 3 }
      })
    )
    assert.deepStrictEqual(parseLimits(""), Either.right({}))
    // a part of blanks is an empty part
    assert.deepStrictEqual(parseLimits("e=5/ /7"), Either.right({ e: { rpm: 5, otpm: 7 } }))
  })

  it("an entry with no \"=\", a model name with a blank, or a line break inside is refused, naming the entry", () => {
    for (const entry of ["gpt-4.1", "my model=1/2/3", "m=1/2\nx", "=1/2"]) {
      const parsed = parseLimits(`a=1/2,${entry}`)
      assert.isTrue(Either.isLeft(parsed), JSON.stringify(entry))
      if (Either.isLeft(parsed)) assert.include(parsed.left, `"${entry}" is not model=requests/input/output`)
    }
  })

  it("the older requests/tokens: tokens are a combined budget (input and output together), either side left out", () => {
    assert.deepStrictEqual(
      parseLimits("*=600/150000,gpt-4.1=100/30000"),
      Either.right({
        "*": { rpm: 600, tpm: 150_000 },
        "gpt-4.1": { rpm: 100, tpm: 30_000 }
      })
    )
    assert.deepStrictEqual(
      parseLimits(" Llama-3.3-70B-Instruct = 50/ , o3-mini=/9000 ,"),
      Either.right({
        "Llama-3.3-70B-Instruct": { rpm: 50 },
        "o3-mini": { tpm: 9_000 }
      })
    )
    // the two forms side by side
    assert.deepStrictEqual(
      parseLimits("a=1/2,b=1/2/3"),
      Either.right({ a: { rpm: 1, tpm: 2 }, b: { rpm: 1, itpm: 2, otpm: 3 } })
    )
  })

  it("anything else is one line naming the entry and both forms", () => {
    for (
      const text of [
        "gpt-4.1=100",
        "*=600/abc",
        "*=0/100",
        "*=-5/100",
        "*=1.5/100",
        "=600/150000",
        "m=/",
        "m=//",
        "m=1/2/3/4",
        "m=1/2/x",
        "m=1/0/3"
      ]
    ) {
      const error = Either.getLeft(parseLimits(text))
      assert.isTrue(error._tag === "Some", text)
      if (error._tag === "Some") {
        assert.include(error.value, `"${text}"`)
        assert.include(error.value, "model=requests/input/output (or model=requests/tokens)")
        assert.include(error.value, "*=300/300000/150000,gpt-4.1=100//30000")
        assert.notInclude(error.value, "\n")
      }
    }
    assert.deepStrictEqual(parseLimits("m=1/1,m=2/2"), Either.left("\"m\" is given twice"))
    assert.deepStrictEqual(parseLimits("m=1/1/1,m=2/2"), Either.left("\"m\" is given twice"))
  })
})

const limiterWith = (limits: RateLimiter.Options["limits"]) =>
  RateLimiter.make({ tier: "auto", limits }).pipe(
    Effect.provide(
      Layer.merge(Layer.succeed(LimiterStore.LimiterStore, LimiterStore.makeMemory()), TokenEstimator.layer)
    )
  )

const stateOf = (limiter: RateLimiter.RateLimiter.Service, model: string) =>
  Effect.gen(function*() {
    const permit = yield* limiter.acquire({ key: "k", model, input: 1 })
    yield* permit.settle("succeeded")
    return (yield* limiter.snapshot).find((state) => state.model === model)!
  })

/** Each budget's limit and where it comes from: requests, input, output, combined tokens. */
const limitsOf = (state: RateLimiter.BucketState) =>
  (["requests", "input", "output", "tokens"] as const).map((d) => ({
    limit: state.budgets[d].limit,
    source: state.budgets[d].source
  }))

const configured = (limit: number) => ({ limit, source: "configured" })
const none = { limit: undefined, source: "unknown" }

describe("limits for every model", () => {
  it.effect("`*` applies where a model has none of its own; a model's own limits win, one budget at a time", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ "*": { rpm: 600, tpm: 150_000 }, "gpt-4.1": { rpm: 100 } })
      const other = yield* stateOf(limiter, "Llama-3.3-70B-Instruct")
      assert.deepStrictEqual(limitsOf(other), [configured(600), none, none, configured(150_000)])
      const own = yield* stateOf(limiter, "gpt-4.1")
      assert.deepStrictEqual(limitsOf(own), [configured(100), none, none, configured(150_000)])
    }))

  it.effect("the three budgets: `*`'s input and output under a model's own requests and output", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({
        "*": { rpm: 300, itpm: 300_000, otpm: 150_000 },
        "gpt-4.1": { rpm: 100, otpm: 30_000 }
      })
      const other = yield* stateOf(limiter, "Llama-3.3-70B-Instruct")
      assert.deepStrictEqual(limitsOf(other), [configured(300), configured(300_000), configured(150_000), none])
      const own = yield* stateOf(limiter, "gpt-4.1")
      assert.deepStrictEqual(limitsOf(own), [configured(100), configured(300_000), configured(30_000), none])
    }))

  it.effect("from the environment: Node.layerFromEnv reads AIFS_LIMITS; a bad one is a ConfigError naming it", () =>
    Effect.gen(function*() {
      const env = (limits: string) =>
        Layer.setConfigProvider(ConfigProvider.fromMap(
          new Map([
            ["AIFS_API_KEY", "gen-anykeyfortheenvironmenttest00000000000000000000"],
            ["AIFS_CACHE_DIR", ""],
            ["AIFS_LIMITS", limits]
          ])
        ))
      const fromEnv = (limits: string) =>
        RateLimiter.RateLimiter.pipe(Effect.provide(Node.layerFromEnv.pipe(Layer.provide(env(limits)))))
      // requests/tokens: a combined budget
      const combined = yield* stateOf(yield* fromEnv("*=7/7000"), "gpt-4o")
      assert.deepStrictEqual(limitsOf(combined), [configured(7), none, none, configured(7_000)])
      // requests/input/output, a part left out
      const split = yield* stateOf(yield* fromEnv("*=7/700/300,gpt-4o=5//"), "gpt-4o")
      assert.deepStrictEqual(limitsOf(split), [configured(5), configured(700), configured(300), none])
      const error = yield* Effect.flip(fromEnv("*=7"))
      assert.include(String(error), "AIFS_LIMITS")
      assert.include(String(error), "\"*=7\" is not model=requests/input/output (or model=requests/tokens)")
    }))
})
