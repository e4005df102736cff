/**
 * Where the CLI sends its requests: the configured service when `AIFS_API_KEY` is set, otherwise the
 * embedded emulator, started in-process (and said so on stderr).
 *
 * @since 0.1.0
 */
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Emulator from "../emulator/Emulator.js"
import * as Node from "../layers/Node.js"

const viaEmulator: Layer.Layer<Node.Services, HttpServerError.ServeError> = Layer.unwrapEffect(
  Effect.gen(function*() {
    const emulator = yield* Emulator.Emulator
    yield* Console.error(`aifs: AIFS_API_KEY is not set: using the embedded emulator at ${emulator.url} (no network)`)
    return Node.layer({
      apiKey: emulator.keyFor("standard4000") ?? "",
      baseUrl: emulator.baseUrl,
      tier: "standard4000"
    })
  })
).pipe(Layer.provide(Emulator.layer()))

/**
 * The client layer of a CLI command.
 *
 * @since 0.1.0
 * @category layers
 */
export const client: Layer.Layer<Node.Services, ConfigError.ConfigError | HttpServerError.ServeError> = Layer
  .unwrapEffect(
    Effect.map(
      Config.option(Config.redacted("AIFS_API_KEY")),
      // an empty AIFS_API_KEY counts as unset: `AIFS_API_KEY= aifs ...` is how a shell unsets it for one command
      (key): Layer.Layer<Node.Services, ConfigError.ConfigError | HttpServerError.ServeError> =>
        Option.isSome(key) && Redacted.value(key.value).trim() !== "" ? Node.layerFromEnv : viaEmulator
    )
  )
