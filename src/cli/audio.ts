/**
 * `aifs audio`: transcribe or translate audio files (streamed from disk).
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Audio from "../services/Audio.js"
import { client } from "./environment.js"
import { withDefault } from "./help.js"

const fileArg = Args.file({ name: "FILE", exists: "yes" }).pipe(Args.withDescription("An audio file"))
const modelOption = Options.text("model").pipe(
  Options.withAlias("m"),
  Options.withDescription("Speech model (default whisper-large-v3)"),
  withDefault("whisper-large-v3")
)

const transcribe = Command.make(
  "transcribe",
  {
    file: fileArg,
    model: modelOption,
    language: Options.text("language").pipe(
      Options.optional,
      Options.withDescription("Language of the audio (ISO-639-1)")
    )
  },
  ({ file, language, model }) =>
    Effect.gen(function*() {
      const audio = yield* Audio.Audio
      const result = yield* audio.transcribe({
        model,
        file: Audio.fromPath(file),
        ...Option.match(language, { onNone: () => ({}), onSome: (l) => ({ language: l }) })
      })
      yield* Console.log(result.text)
    }).pipe(Effect.provide(client))
).pipe(Command.withDescription("Transcribe speech; the text goes to stdout"))

const translate = Command.make(
  "translate",
  { file: fileArg, model: modelOption },
  ({ file, model }) =>
    Effect.gen(function*() {
      const audio = yield* Audio.Audio
      yield* Console.log((yield* audio.translate({ model, file: Audio.fromPath(file) })).text)
    }).pipe(Effect.provide(client))
).pipe(Command.withDescription("Translate speech into English text"))

const models = Command.make("models", {}, () =>
  Effect.gen(function*() {
    const audio = yield* Audio.Audio
    for (const id of (yield* audio.models()).ids) yield* Console.log(id)
  }).pipe(Effect.provide(client))).pipe(Command.withDescription("List the speech models"))

/**
 * `aifs audio`.
 *
 * @since 0.1.0
 * @category commands
 */
export const audioCommand = Command.make("audio").pipe(
  Command.withDescription("Speech to text"),
  Command.withSubcommands([transcribe, translate, models])
)
