/**
 * Custom limits: the `AIFS_LIMITS` string (`*=600/150000,gpt-4.1=100/30000`), its errors in one line, and the
 * limiter taking `*` for every model without its own, from code and from the environment.
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
  it("per model requests/tokens, `*` for every model, either side left out, spaces allowed", () => {
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
    assert.deepStrictEqual(parseLimits(""), Either.right({}))
  })

  it("anything else is one line naming the entry", () => {
    for (
      const [text, entry] of [
        ["gpt-4.1=100", "gpt-4.1=100"],
        ["*=600/abc", "*=600/abc"],
        ["*=0/100", "*=0/100"],
        ["*=-5/100", "*=-5/100"],
        ["*=1.5/100", "*=1.5/100"],
        ["=600/150000", "=600/150000"],
        ["m=/", "m=/"]
      ] as const
    ) {
      const error = Either.getLeft(parseLimits(text))
      assert.isTrue(error._tag === "Some", text)
      if (error._tag === "Some") {
        assert.include(error.value, `"${entry}"`)
        assert.include(error.value, "*=600/150000,gpt-4.1=100/30000")
        assert.notInclude(error.value, "\n")
      }
    }
    assert.deepStrictEqual(parseLimits("m=1/1,m=2/2"), Either.left("\"m\" is given twice"))
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
    const permit = yield* limiter.acquire({ key: "k", model, tokens: 1 })
    yield* permit.succeeded
    return (yield* limiter.snapshot).find((state) => state.model === model)!
  })

describe("limits for every model", () => {
  it.effect("`*` applies where a model has none of its own; a model's own limits win, side by side", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ "*": { rpm: 600, tpm: 150_000 }, "gpt-4.1": { rpm: 100 } })
      const other = yield* stateOf(limiter, "Llama-3.3-70B-Instruct")
      assert.deepStrictEqual([other.requests, other.tokens], [
        { value: 600, source: "configured" },
        { value: 150_000, source: "configured" }
      ])
      const own = yield* stateOf(limiter, "gpt-4.1")
      assert.deepStrictEqual([own.limitRequests, own.limitTokens], [100, 150_000])
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
      const limiter = yield* RateLimiter.RateLimiter.pipe(
        Effect.provide(Node.layerFromEnv.pipe(Layer.provide(env("*=7/7000"))))
      )
      const state = yield* stateOf(limiter, "gpt-4o")
      assert.deepStrictEqual([state.limitRequests, state.limitTokens], [7, 7_000])
      const error = yield* Effect.flip(
        RateLimiter.RateLimiter.pipe(Effect.provide(Node.layerFromEnv.pipe(Layer.provide(env("*=7")))))
      )
      assert.include(String(error), "AIFS_LIMITS")
      assert.include(String(error), "\"*=7\" is not model=requests/tokens")
    }))
})
