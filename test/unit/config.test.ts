import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as os from "node:os"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as Node from "../../src/layers/Node.js"
import * as Testing from "../../src/layers/Testing.js"
import { listModels, modelListBody, recorder } from "./helpers.js"

const provider = (env: Record<string, string>) => ConfigProvider.fromMap(new Map(Object.entries(env)))

const fromEnv = (env: Record<string, string>) =>
  ClientConfig.ClientConfig.pipe(
    Effect.provide(ClientConfig.layerFromEnv),
    Effect.withConfigProvider(provider(env))
  )

const key = "gen-" + "a".repeat(48)

describe("ClientConfig.layerFromEnv", () => {
  it.effect("reads the key and fills in the defaults", () =>
    Effect.gen(function*() {
      const config = yield* fromEnv({ AIFS_API_KEY: key })
      assert.strictEqual(Redacted.value(config.apiKey), key)
      assert.strictEqual(config.baseUrl, "https://llm-server.llmhub.t-systems.net/v2")
      assert.strictEqual(config.v1Url, "https://llm-server.llmhub.t-systems.net/v1")
      assert.strictEqual(config.queueUrl, "https://llm-server.llmhub.t-systems.net/queue")
      assert.strictEqual(config.apiVersion, "1.1.0")
      assert.strictEqual(config.tier, "auto")
      assert.strictEqual(config.maxRetries, 6)
      assert.strictEqual(Duration.toMillis(config.timeout), 600_000)
      assert.strictEqual(Duration.toMillis(config.streamIdleTimeout), 120_000)
    }))

  it.effect("works through Layer.setConfigProvider", () =>
    Effect.gen(function*() {
      const config = yield* ClientConfig.ClientConfig.pipe(
        Effect.provide(ClientConfig.layerFromEnv.pipe(Layer.provide(Layer.setConfigProvider(provider({
          AIFS_API_KEY: key,
          AIFS_TIER: "standard4000"
        })))))
      )
      assert.strictEqual(config.tier, "standard4000")
    }))

  it.effect("a missing AIFS_API_KEY is a ConfigError naming it and where keys come from", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(fromEnv({ AIFS_BASE_URL: "http://localhost:8080/v2" }))
      assert.isTrue(Exit.isFailure(exit))
      if (!Exit.isFailure(exit)) return
      const error = Cause.failureOption(exit.cause)
      assert.isTrue(error._tag === "Some" && ConfigError.isConfigError(error.value))
      if (error._tag !== "Some") return
      assert.include(String(error.value), "AIFS_API_KEY")
      assert.include(Cause.pretty(exit.cause), "AIFS_API_KEY")
      assert.isTrue(ConfigError.isMissingData(error.value))
      // why, in words: not hidden as if it were the key
      assert.notInclude(String(error.value), "<redacted>")
      assert.include(String(error.value), "AIFS_API_KEY is not set: your project's key (gen-...) from the AI")
      // the local emulator's keys: a newcomer trying the client without one
      assert.include(String(error.value), "npx aifs emulator`) one of the development keys it prints")
    }))

  it.effect("derives the v1 and queue URLs from the origin of AIFS_BASE_URL", () =>
    Effect.gen(function*() {
      const config = yield* fromEnv({ AIFS_API_KEY: key, AIFS_BASE_URL: "http://localhost:8080/v2/" })
      assert.strictEqual(config.baseUrl, "http://localhost:8080/v2")
      assert.strictEqual(config.v1Url, "http://localhost:8080/v1")
      assert.strictEqual(config.queueUrl, "http://localhost:8080/queue")
    }))

  it.effect("AIFS_V1_URL and AIFS_QUEUE_URL override the derived URLs", () =>
    Effect.gen(function*() {
      const config = yield* fromEnv({
        AIFS_API_KEY: key,
        AIFS_BASE_URL: "http://localhost:8080/v2",
        AIFS_V1_URL: "https://vectors.example.com/v1/",
        AIFS_QUEUE_URL: "https://queue.example.com/queue"
      })
      assert.strictEqual(config.v1Url, "https://vectors.example.com/v1")
      assert.strictEqual(config.queueUrl, "https://queue.example.com/queue")
      assert.strictEqual(config.baseUrl, "http://localhost:8080/v2")
    }))

  it.each([
    ["30s", 30_000],
    ["1m30s", 90_000],
    ["30 seconds", 30_000],
    ["45", 45_000]
  ])("AIFS_TIMEOUT=%s is %d ms", (text, expected) =>
    Effect.gen(function*() {
      const config = yield* fromEnv({ AIFS_API_KEY: key, AIFS_TIMEOUT: text, AIFS_STREAM_IDLE_TIMEOUT: text })
      assert.strictEqual(Duration.toMillis(config.timeout), expected)
      assert.strictEqual(Duration.toMillis(config.streamIdleTimeout), expected)
    }).pipe(Effect.runSync))

  it.effect("AIFS_TIMEOUT=soon is rejected, naming the variable", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(fromEnv({ AIFS_API_KEY: key, AIFS_TIMEOUT: "soon" }))
      assert.isTrue(ConfigError.isConfigError(error))
      assert.include(String(error), "AIFS_TIMEOUT")
      assert.include(String(error), "soon")
    }))

  it.each(["0", "0s", "0 millis"])(
    "AIFS_TIMEOUT=%s (no time at all) is rejected, as is a zero idle timeout",
    (text) =>
      Effect.gen(function*() {
        for (const name of ["AIFS_TIMEOUT", "AIFS_STREAM_IDLE_TIMEOUT"]) {
          const error = yield* Effect.flip(fromEnv({ AIFS_API_KEY: key, [name]: text }))
          assert.include(String(error), name)
          assert.include(String(error), "above zero")
        }
      }).pipe(Effect.runSync)
  )

  it.effect("a duration of zero is a duration (AIFS_GATEWAY_REFRESH_AHEAD=0s: replace at expiry); a time limit is not", () =>
    Effect.gen(function*() {
      const zero = yield* ClientConfig.duration("X").pipe(Effect.withConfigProvider(provider({ X: "0s" })))
      assert.strictEqual(Duration.toMillis(zero), 0)
      const error = yield* Effect.flip(
        ClientConfig.positiveDuration("X").pipe(Effect.withConfigProvider(provider({ X: "0s" })))
      )
      assert.include(String(error), "above zero")
    }))

  it.each(["not-a-url", "ftp://example.com/v2", "llm-server.llmhub.t-systems.net/v2"])(
    "AIFS_BASE_URL=%s is rejected as not an http(s) URL, as are the v1 and queue URLs",
    (url) =>
      Effect.gen(function*() {
        for (const name of ["AIFS_BASE_URL", "AIFS_V1_URL", "AIFS_QUEUE_URL"]) {
          const error = yield* Effect.flip(fromEnv({ AIFS_API_KEY: key, [name]: url }))
          assert.include(String(error), name)
          assert.include(String(error), `got "${url}"`)
        }
      }).pipe(Effect.runSync)
  )

  it.effect("an empty AIFS_BASE_URL counts as unset: the default service", () =>
    Effect.gen(function*() {
      const config = yield* fromEnv({ AIFS_API_KEY: key, AIFS_BASE_URL: " " })
      assert.strictEqual(config.baseUrl, ClientConfig.defaultBaseUrl)
    }))
  it.effect("reads the other variables and validates them", () =>
    Effect.gen(function*() {
      const config = yield* fromEnv({
        AIFS_API_KEY: key,
        AIFS_API_VERSION: "1.0.0",
        AIFS_TIER: "standard4000",
        AIFS_MAX_RETRIES: "3"
      })
      assert.strictEqual(config.apiVersion, "1.0.0")
      assert.strictEqual(config.tier, "standard4000")
      assert.strictEqual(config.maxRetries, 3)
      for (const plan of ClientConfig.plans) {
        assert.strictEqual((yield* fromEnv({ AIFS_API_KEY: key, AIFS_TIER: plan })).tier, plan)
      }
      for (
        const bad of [
          { AIFS_MAX_RETRIES: "101" },
          { AIFS_MAX_RETRIES: "-1" },
          { AIFS_MAX_RETRIES: "many" },
          { AIFS_TIER: "gold" },
          { AIFS_API_VERSION: "2.0.0" }
        ]
      ) {
        const error = yield* Effect.flip(fromEnv({ AIFS_API_KEY: key, ...bad }))
        assert.include(String(error), Object.keys(bad)[0]!)
      }
    }))

  it.effect("a key from an effect: read when the layer is built; the configuration, printed, shows none of it", () =>
    Effect.gen(function*() {
      const secret = "gen-asecretkeyreadfromitssourceneverprintedanywhere00"
      const config = yield* ClientConfig.ClientConfig.pipe(
        Effect.provide(ClientConfig.layer({ apiKey: Effect.succeed(secret) }))
      )
      assert.strictEqual(Redacted.value(config.apiKey), secret)
      assert.strictEqual(Redacted.value(yield* config.reloadApiKey!), secret)
      assert.notInclude(JSON.stringify(config), secret)
      assert.notInclude(Inspectable.format(config), secret)
    }))

  it.effect("layerConfig takes any Config values", () =>
    Effect.gen(function*() {
      const config = yield* ClientConfig.ClientConfig.pipe(
        Effect.provide(ClientConfig.layerConfig({
          apiKey: Config.redacted("MY_KEY"),
          baseUrl: Config.succeed("http://emulator:4000/v2"),
          maxRetries: Config.integer("MY_RETRIES")
        })),
        Effect.withConfigProvider(provider({ MY_KEY: "k-1", MY_RETRIES: "2" }))
      )
      assert.strictEqual(config.maxRetries, 2)
      assert.strictEqual(config.v1Url, "http://emulator:4000/v1")
      assert.strictEqual(Redacted.value(config.apiKey), "k-1")
    }))
})

describe("ClientConfig.make", () => {
  it("wraps a plain key in Redacted and keeps a Redacted one", () => {
    const plain = ClientConfig.make({ apiKey: "secret-key" })
    assert.isTrue(Redacted.isRedacted(plain.apiKey))
    assert.strictEqual(Redacted.value(plain.apiKey), "secret-key")
    const wrapped = Redacted.make("other-key")
    assert.strictEqual(ClientConfig.make({ apiKey: wrapped }).apiKey, wrapped)
  })

  it("derives v1 and queue from the origin, dropping the path", () => {
    const config = ClientConfig.make({ apiKey: "k", baseUrl: "https://host.example.com:8443/v2///" })
    assert.strictEqual(config.baseUrl, "https://host.example.com:8443/v2")
    assert.strictEqual(config.v1Url, "https://host.example.com:8443/v1")
    assert.strictEqual(config.queueUrl, "https://host.example.com:8443/queue")
  })

  it("accepts durations in any Effect form", () => {
    const config = ClientConfig.make({ apiKey: "k", timeout: "5 seconds", streamIdleTimeout: 1_000 })
    assert.strictEqual(Duration.toMillis(config.timeout), 5_000)
    assert.strictEqual(Duration.toMillis(config.streamIdleTimeout), 1_000)
  })
})

describe("the configured bases are used by the transport", () => {
  it.effect("requests go to AIFS_BASE_URL", () =>
    Effect.gen(function*() {
      const rec = yield* recorder(() => ({ body: modelListBody }))
      yield* listModels.pipe(
        Effect.provide(Testing.layerHttp(rec.handler, { config: { baseUrl: "http://localhost:9999/custom/v2/" } }))
      )
      const request = yield* Queue.take(rec.calls)
      assert.strictEqual(request.url.href, "http://localhost:9999/custom/v2/models")
    }))
})

describe("where learnt limits and spend are kept (AIFS_CACHE_DIR)", () => {
  const limiterEnv = (env: Record<string, string>) => Effect.withConfigProvider(Node.limiterFromEnv, provider(env))

  it.effect("a library keeps nothing between runs unless AIFS_CACHE_DIR names a directory, whatever XDG_CACHE_HOME says", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* limiterEnv({ XDG_CACHE_HOME: "/tmp/xdg" })).cacheDir, "")
      assert.strictEqual((yield* limiterEnv({})).cacheDir, "")
      assert.strictEqual((yield* limiterEnv({ AIFS_CACHE_DIR: "/tmp/own" })).cacheDir, "/tmp/own")
    }))

  it.effect("the aifs command's default: the user's cache directory, $XDG_CACHE_HOME first", () =>
    Effect.gen(function*() {
      const under = (env: Record<string, string>) => Effect.withConfigProvider(Node.userCacheDirectory, provider(env))
      assert.strictEqual(yield* under({ XDG_CACHE_HOME: "/tmp/xdg" }), "/tmp/xdg/effect-aifs")
      assert.strictEqual(yield* under({ XDG_CACHE_HOME: "" }), `${os.homedir()}/.cache/effect-aifs`)
      assert.strictEqual(yield* under({}), `${os.homedir()}/.cache/effect-aifs`)
    }))
})
