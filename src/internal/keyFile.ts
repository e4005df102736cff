/**
 * The key from a file (`AIFS_API_KEY_FILE`): a mounted secret, as Kubernetes, Docker and systemd credentials give
 * them. Where the key comes from is decided here, and the file read here, trimmed; `Node.layerFromEnv` reads it again
 * when the server refuses the key (a rotated secret).
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"

const variable = "AIFS_API_KEY_FILE"

/**
 * The path `AIFS_API_KEY_FILE` names (trimmed; blank counts as unset), or none. Both it and `AIFS_API_KEY` set is a
 * `ConfigError`: which one wins would be a guess.
 */
export const keyFilePath: Config.Config<Option.Option<string>> = Config.all([
  Config.option(Config.string(variable)),
  Config.option(Config.redacted("AIFS_API_KEY"))
]).pipe(Config.mapOrFail(([file, key]) => {
  const path = Option.filter(Option.map(file, (p) => p.trim()), (p) => p !== "")
  return Option.isSome(path) && Option.exists(key, (k) => Redacted.value(k).trim() !== "")
    ? Either.left(ConfigError.InvalidData([variable], "AIFS_API_KEY and AIFS_API_KEY_FILE are both set: set one"))
    : Either.right(path)
}))

/** The key in the file at `path`, trimmed; a file that cannot be read or holds no key is a `ConfigError` naming it. */
export const keyFromFile = (
  path: string
): Effect.Effect<Redacted.Redacted<string>, ConfigError.ConfigError, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(path)).pipe(
    Effect.mapError((error) => ConfigError.InvalidData([variable], `cannot read ${path}: ${error.message}`)),
    Effect.map((text) => text.trim()),
    Effect.filterOrFail(
      (key) => key !== "",
      () => ConfigError.InvalidData([variable], `${path} holds no key`)
    ),
    Effect.map(Redacted.make)
  )
