/**
 * `aifs rag`: the retrieval gateway from the command line. `ingest FILE...` uploads and ingests files;
 * `chat PROMPT [--files FILE...]` ingests the files first (if any), opens a session and asks. Progress goes
 * to stderr, results to stdout. Without `AIFS_GATEWAY_URL` it uses the embedded emulator and says so.
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as FileSystem from "@effect/platform/FileSystem"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { basename } from "node:path"
import type * as Node from "../layers/Node.js"
import * as Rag from "../services/gateway/Rag.js"
import { withDefault } from "./help.js"
import { emulatorModule, nodeModule } from "./lazy.js"

interface GatewayEnvironment {
  /** Poll interval that suits the target (the emulated gateway is fast). */
  readonly interval: Duration.Duration
}

const emulated: Layer.Layer<Node.GatewayServices, HttpServerError.ServeError> = Layer.unwrapEffect(
  Effect.gen(function*() {
    const [Emulator, Node] = yield* Effect.all([emulatorModule, nodeModule])
    return Layer.unwrapEffect(
      Effect.gen(function*() {
        const emulator = yield* Emulator.Emulator
        const user = emulator.gatewayUsers[0]!
        yield* Console.error(
          `aifs: AIFS_GATEWAY_URL is not set: using the embedded emulator's gateway at ${emulator.gatewayUrl} ` +
            `as user "${user.username}" (no network)`
        )
        return Node.layerGateway({ url: emulator.gatewayUrl, username: user.username, password: user.password })
      })
    ).pipe(Layer.provide(Emulator.layer({ gateway: { uploadDelay: "200 millis", ingestDuration: "1 second" } })))
  })
)

/**
 * The gateway layer of a CLI command, and the poll interval to use with it.
 *
 * @since 0.1.0
 * @category layers
 */
export const gateway: Effect.Effect<
  readonly [
    Layer.Layer<Node.GatewayServices, ConfigError.ConfigError | HttpServerError.ServeError>,
    GatewayEnvironment
  ],
  ConfigError.ConfigError
> = Effect.zipWith(Config.option(Config.string("AIFS_GATEWAY_URL")), nodeModule, (url, Node) =>
  Option.isSome(url)
    ? [Node.layerGatewayFromEnv, { interval: Duration.seconds(2) }] as const
    : [emulated, { interval: Duration.millis(250) }] as const)

const describeProgress = (event: Rag.Progress): string => {
  switch (event._tag) {
    case "Uploading":
      return `uploading ${event.files} file(s)`
    case "UploadStatus":
      return `${event.name}: upload ${event.status}`
    case "IngestStarted":
      return `${event.name}: ingestion started`
    case "IngestStatus":
      return `${event.name}: ${event.status}${event.progress === undefined ? "" : ` (${event.progress}%)`}`
    case "Finished":
      return `${event.outcome.name}: ${
        event.outcome.ok ? "ready" : `failed (${event.outcome.reason ?? event.outcome.status})`
      }`
  }
}

const readFiles = (paths: ReadonlyArray<string>) =>
  Effect.flatMap(
    FileSystem.FileSystem,
    (fs) =>
      Effect.forEach(paths, (path) =>
        Effect.map(fs.readFile(path), (content): Rag.UploadFile => ({ name: basename(path), content })))
  )

const ingestFiles = (paths: ReadonlyArray<string>, timeout: Duration.Duration, interval: Duration.Duration) =>
  Effect.gen(function*() {
    const files = yield* readFiles(paths)
    return yield* Rag.ingest(files, {
      timeout,
      interval,
      onProgress: (event) => Console.error(`aifs rag: ${describeProgress(event)}`)
    })
  })

const timeoutOption = Options.integer("timeout").pipe(
  Options.withDescription("Longest wait for uploads and ingestion, in seconds"),
  withDefault(600)
)

const ingestCommand = Command.make(
  "ingest",
  {
    files: Args.file({ name: "FILE", exists: "yes" }).pipe(Args.atLeast(1), Args.withDescription("Files to ingest")),
    timeout: timeoutOption
  },
  ({ files, timeout }) =>
    Effect.gen(function*() {
      const [layer, env] = yield* gateway
      const outcomes = yield* ingestFiles(files, Duration.seconds(timeout), env.interval).pipe(Effect.provide(layer))
      for (const outcome of outcomes) {
        yield* Console.log([outcome.name, outcome.fileId ?? "-", outcome.status].join("\t"))
      }
      if (outcomes.some((o) => !o.ok)) {
        return yield* Effect.fail(new Error(`${outcomes.filter((o) => !o.ok).length} file(s) could not be ingested`))
      }
    })
).pipe(Command.withDescription("Upload and ingest files into your local knowledge base; one line per file"))

const chatCommand = Command.make(
  "chat",
  {
    prompt: Args.text({ name: "PROMPT" }).pipe(Args.withDescription("What to ask")),
    files: Options.file("files", { exists: "yes" }).pipe(
      Options.repeated,
      // optional: shown in brackets in the usage line (a repeated option alone reads as required)
      Options.withDefault<ReadonlyArray<string>>([]),
      Options.withDescription("Ingest these files first and chat over them (default: all your local files)")
    ),
    global: Options.boolean("global").pipe(Options.withDescription("Chat over the global knowledge base")),
    timeout: timeoutOption
  },
  ({ files, global, prompt, timeout }) =>
    Effect.gen(function*() {
      const [layer, env] = yield* gateway
      yield* Effect.gen(function*() {
        const outcomes = files.length === 0 ? [] : yield* ingestFiles(files, Duration.seconds(timeout), env.interval)
        if (files.length > 0 && !outcomes.some((o) => o.ok)) {
          return yield* Effect.fail(new Error("none of the files could be ingested"))
        }
        const session = yield* Rag.openSession({ files: outcomes, global })
        const answer = yield* Rag.ask(session, prompt)
        yield* Console.log(answer.text)
        for (const source of answer.sources ?? []) {
          yield* Console.error(
            `aifs rag: source ${source.fileName ?? source.fileId ?? "?"} (score ${source.score ?? "?"})`
          )
        }
      }).pipe(Effect.provide(layer))
    })
).pipe(Command.withDescription("Ask the retrieval gateway; with --files, ingest them first and chat over them"))

/**
 * The `rag` command and its subcommands.
 *
 * @since 0.1.0
 * @category commands
 */
export const ragCommand = Command.make("rag").pipe(
  Command.withDescription("The retrieval gateway: ingest files and chat over them (emulator when no gateway is set)"),
  Command.withSubcommands([ingestCommand, chatCommand])
)
