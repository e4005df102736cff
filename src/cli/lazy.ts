/**
 * The heavy modules of the CLI (the emulator, the client's HTTP stack), loaded when a command first needs them, so
 * that `aifs --help` and the flag checks do not pay for them.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"

/**
 * The emulator's module.
 *
 * @since 0.2.0
 * @category modules
 */
export const emulatorModule = Effect.promise(() => import("../emulator/Emulator.js"))

/**
 * The Node layers' module (the client's HTTP stack).
 *
 * @since 0.2.0
 * @category modules
 */
export const nodeModule = Effect.promise(() => import("../layers/Node.js"))
