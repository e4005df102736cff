/**
 * Where the CLI sends its requests: the configured service when `AIFS_API_KEY` is set, otherwise the
 * embedded emulator, started in-process (and said so on stderr), unless a base URL is set. Unlike the library, the
 * command keeps learnt limits and spend between runs by default, in the user's cache directory (`AIFS_CACHE_DIR`).
 *
 * @since 0.1.0
 */
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as ClientConfig from "../layers/ClientConfig.js"
import type * as Node from "../layers/Node.js"
import { emulatorModule, nodeModule } from "./lazy.js"

/**
 * `Node.layerFromEnv` as the command runs it: learnt limits and spend kept in the user's cache directory unless
 * `AIFS_CACHE_DIR` says otherwise.
 */
const fromEnv = (node: typeof Node) =>
  Layer.unwrapEffect(
    Effect.map(node.userCacheDirectory, (cacheDirectory) => node.layerFromEnvWith({ cacheDirectory }))
  )

/**
 * The command's `Node.layerFromEnv` with `settings` (the emulator's key and addresses) in front of the configuration
 * the command runs under (the environment, in the CLI): every other `AIFS_*` setting (limits, time limits,
 * retries...) still read, and still refused when invalid.
 */
const fromEnvWith = (node: typeof Node, settings: ReadonlyArray<readonly [string, string]>) =>
  Layer.unwrapEffect(
    Effect.configProviderWith((current) =>
      Effect.succeed(
        fromEnv(node).pipe(Layer.provide(Layer.setConfigProvider(
          // the settings first, then what the command reads its configuration from (the environment, in the CLI)
          ConfigProvider.fromMap(new Map(settings)).pipe(ConfigProvider.orElse(() => current))
        )))
      )
    )
  )

const viaEmulator: Layer.Layer<Node.Services, ConfigError.ConfigError | HttpServerError.ServeError> = Layer
  .unwrapEffect(
    Effect.gen(function*() {
      const [Emulator, Node] = yield* Effect.all([emulatorModule, nodeModule])
      return Layer.unwrapEffect(
        Effect.gen(function*() {
          const emulator = yield* Emulator.Emulator
          // said once the settings are read: a setting refused is the only line
          return fromEnvWith(Node, [
            ["AIFS_API_KEY", emulator.keyFor("standard4000") ?? ""],
            ["AIFS_TIER", "standard4000"],
            ["AIFS_BASE_URL", emulator.baseUrl],
            ["AIFS_V1_URL", emulator.v1Url],
            ["AIFS_QUEUE_URL", emulator.queueUrl]
          ]).pipe(
            Layer.tap(() =>
              Console.error(
                `aifs: AIFS_API_KEY is not set: using the embedded emulator at ${emulator.url} (no network)`
              )
            )
          )
        })
      ).pipe(Layer.provide(Emulator.layer()))
    })
  )

/** Whether a base URL points at this machine (a local emulator, say). */
const isLocal = (url: string): boolean => {
  const host = new URL(url).hostname
  return host === "localhost" || host === "[::1]" || /^127\./.test(host)
}

/**
 * The client layer of a CLI command: the configured service with `AIFS_API_KEY`; without it, the embedded emulator
 * when no base URL is set, the development key for a base URL on this machine (an `aifs emulator` of your own), and
 * a configuration error (exit 2) for any other base URL: the real service needs a key, and a user who set a base URL
 * never wants an answer from the embedded emulator instead.
 *
 * @since 0.1.0
 * @category layers
 */
export const client: Layer.Layer<Node.Services, ConfigError.ConfigError | HttpServerError.ServeError> = Layer
  .unwrapEffect(
    Effect.gen(function*(): Effect.fn.Return<
      Layer.Layer<Node.Services, ConfigError.ConfigError | HttpServerError.ServeError>,
      ConfigError.ConfigError
    > {
      const key = yield* Config.option(Config.redacted("AIFS_API_KEY"))
      const keyFile = yield* Config.option(Config.string("AIFS_API_KEY_FILE"))
      const Node = yield* nodeModule
      // an empty AIFS_API_KEY counts as unset: `AIFS_API_KEY= aifs ...` is how a shell unsets it for one command
      const set = <A>(value: Option.Option<A>, text: (a: A) => string) =>
        Option.isSome(value) && text(value.value).trim() !== ""
      if (set(key, Redacted.value) || set(keyFile, String)) return fromEnv(Node)
      const baseUrl = yield* Config.option(ClientConfig.httpUrl("AIFS_BASE_URL"))
      if (Option.isNone(baseUrl)) return viaEmulator
      if (!isLocal(baseUrl.value)) {
        return yield* Effect.fail(ConfigError.InvalidData(
          ["AIFS_API_KEY"],
          `AIFS_API_KEY is not set, but AIFS_BASE_URL is (${baseUrl.value}): set the key, or unset AIFS_BASE_URL to ` +
            "use the embedded emulator"
        ))
      }
      yield* Console.error(
        `aifs: AIFS_API_KEY is not set: using the emulator's development key at ${baseUrl.value}`
      )
      return fromEnvWith(Node, [
        ["AIFS_API_KEY", (yield* emulatorModule).keyOf("standard4000")],
        ["AIFS_TIER", "standard4000"]
      ])
    })
  )
