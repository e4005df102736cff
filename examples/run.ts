/**
 * How the examples run: against the real service when `AIFS_API_KEY` (or `AIFS_GATEWAY_URL`) is set, otherwise
 * against the emulator inside this process (no key, no network). Your own program would simply provide
 * `Node.layerFromEnv` (or `Node.layerGatewayFromEnv`); this switch exists so that every example runs as is.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import { Node, Testing } from "effect-aifs"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { realpathSync } from "node:fs"
import { fileURLToPath } from "node:url"

type Failure = ConfigError.ConfigError | HttpServerError.ServeError

/** The inference services: `Node.layerFromEnv` with a key, else the emulator (`emulator` are its options). */
export const inference = (emulator: Testing.LayerEmulatorOptions = {}): Layer.Layer<Node.Services, Failure> =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const key = yield* Config.option(Config.string("AIFS_API_KEY"))
      const layer: Layer.Layer<Node.Services, Failure> = Option.isSome(key)
        ? Node.layerFromEnv
        : Testing.layerEmulator(emulator)
      if (Option.isNone(key)) {
        yield* Console.error("AIFS_API_KEY is not set: running against the emulator in this process (no network)\n")
      }
      return layer
    })
  )

/** The gateway services: `Node.layerGatewayFromEnv` with a gateway URL, else the emulator's gateway. */
export const gateway = (
  emulator: Testing.LayerGatewayEmulatorOptions = {}
): Layer.Layer<Node.GatewayServices, Failure> =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const url = yield* Config.option(Config.string("AIFS_GATEWAY_URL"))
      const layer: Layer.Layer<Node.GatewayServices, Failure> = Option.isSome(url)
        ? Node.layerGatewayFromEnv
        : Testing.layerGatewayEmulator(emulator)
      if (Option.isNone(url)) {
        yield* Console.error("AIFS_GATEWAY_URL is not set: running against the emulator's gateway (no network)\n")
      }
      return layer
    })
  )

/** True when this module is the script node was started with (`npx tsx examples/x.ts`), not an import. */
export const isMain = (moduleUrl: string): boolean =>
  process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(moduleUrl))

/** Runs a program with `layer`, as a Node main: errors are printed, Ctrl-C interrupts. */
export const run = <A, E, R, E2>(program: Effect.Effect<A, E, R>, layer: Layer.Layer<R, E2>): void =>
  program.pipe(Effect.provide(layer), NodeRuntime.runMain)
