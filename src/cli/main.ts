/**
 * The `aifs` command: demo, models, chat, embed, emulator.
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { text } from "node:stream/consumers"
import { parseDurationInput } from "../internal/duration.js"
import type { ChatMessage } from "../schemas/Chat.js"
import * as Chat from "../services/Chat.js"
import * as Embeddings from "../services/Embeddings.js"
import * as Models from "../services/Models.js"
import { audioCommand } from "./audio.js"
import { batchCommand } from "./batch.js"
import { client } from "./environment.js"
import { filesCommand } from "./files.js"
import { fitConsole, withDefault } from "./help.js"
import { pages } from "./helpPages.js"
import { imagesCommand } from "./images.js"
import { emulatorModule } from "./lazy.js"
import { limitsCommand } from "./limits.js"
import { UsageError } from "./output.js"
import { ragCommand } from "./rag.js"
import { usageCommand } from "./usage.js"
import { vsCommand } from "./vs.js"

const write = (text: string) => Effect.sync(() => process.stdout.write(text))

const demoCommand = Command.make(
  "demo",
  {},
  () => Effect.flatMap(Effect.promise(() => import("./demo.js")), (module) => module.demo)
).pipe(
  Command.withDescription(
    "A tour on the embedded emulator: models, streaming, embeddings, errors, a rate-limited burst"
  )
)

const jsonOption = Options.boolean("json").pipe(Options.withDescription("Print the answer as one JSON document"))

const modelsCommand = Command.make("models", { json: jsonOption }, ({ json }) =>
  Effect.gen(function*() {
    const models = yield* Models.Models
    const list = yield* models.list()
    if (json) return yield* Console.log(JSON.stringify(list))
    for (const model of list.data) {
      const meta = model.meta_data
      yield* Console.log(
        [model.id, meta?.model_type ?? "", meta?.source_type ?? "", meta?.display_name ?? ""].join("\t")
      )
    }
  }).pipe(Effect.provide(client))).pipe(
    Command.withDescription("List the models the key can use: id, type, source and name, tab-separated")
  )

const modelOption = (fallback: string) =>
  Options.text("model").pipe(
    Options.withAlias("m"),
    Options.withDescription("Model id"),
    withDefault(fallback)
  )

/** A flag's value below 1 is a usage error naming the flag, before any client starts. */
const atLeastOne = (flag: string, value: Option.Option<number>): Effect.Effect<void, UsageError> =>
  Option.isSome(value) && value.value < 1
    ? Effect.fail(new UsageError(`${flag} must be at least 1, not ${value.value}`))
    : Effect.void

/** A prompt of "-" is read from stdin, whole. */
const promptText = (prompt: string): Effect.Effect<string, UsageError> =>
  prompt !== "-" ? Effect.succeed(prompt) : Effect.tryPromise({
    try: () => text(process.stdin),
    catch: (error) => new UsageError(`cannot read the prompt from stdin: ${String(error)}`)
  })

/** A temperature outside 0 to 2 is a usage error naming the flag. */
const temperatureRange = (value: Option.Option<number>): Effect.Effect<void, UsageError> =>
  Option.isSome(value) && !(value.value >= 0 && value.value <= 2)
    ? Effect.fail(new UsageError(`--temperature must be from 0 to 2, not ${value.value}`))
    : Effect.void

const chatCommand = Command.make(
  "chat",
  {
    prompt: Args.text({ name: "PROMPT" }).pipe(Args.withDescription("What to ask; - reads it from stdin")),
    model: modelOption("Llama-3.3-70B-Instruct"),
    noStream: Options.boolean("no-stream").pipe(Options.withDescription("Wait for the whole answer")),
    json: Options.boolean("json").pipe(
      Options.withDescription("Print the whole answer (choices, usage, ids) as one JSON document; implies --no-stream")
    ),
    maxTokens: Options.integer("max-tokens").pipe(Options.optional, Options.withDescription("Most tokens to generate")),
    temperature: Options.float("temperature").pipe(
      Options.optional,
      Options.withDescription("Sampling temperature, 0 to 2")
    ),
    system: Options.text("system").pipe(Options.optional, Options.withDescription("A system message"))
  },
  ({ json, maxTokens, model, noStream, prompt, system, temperature }) =>
    Effect.gen(function*() {
      yield* atLeastOne("--max-tokens", maxTokens)
      yield* temperatureRange(temperature)
      const content = yield* promptText(prompt)
      const messages: Array<ChatMessage> = [
        ...Option.match(system, { onNone: () => [], onSome: (content) => [{ role: "system" as const, content }] }),
        { role: "user", content }
      ]
      const params = {
        model,
        messages,
        ...Option.match(maxTokens, { onNone: () => ({}), onSome: (max_tokens) => ({ max_tokens }) }),
        ...Option.match(temperature, { onNone: () => ({}), onSome: (temperature) => ({ temperature }) })
      }
      // the flags and the prompt checked, then the client starts
      yield* Effect.gen(function*() {
        const chat = yield* Chat.Chat
        if (noStream || json) {
          const answer = yield* chat.create(params)
          return yield* Console.log(json ? JSON.stringify(answer) : answer.text)
        }
        yield* chat.createStream(params).pipe(Stream.runForEach((chunk) => write(chunk.text)))
        yield* write("\n")
      }).pipe(Effect.provide(client))
    })
).pipe(Command.withDescription("Ask a model; the answer streams to stdout"))

const embedCommand = Command.make(
  "embed",
  {
    texts: Args.text({ name: "TEXT" }).pipe(Args.atLeast(1), Args.withDescription("Texts to embed")),
    model: modelOption("text-embedding-bge-m3")
  },
  ({ model, texts }) =>
    Effect.gen(function*() {
      const embeddings = yield* Embeddings.Embeddings
      const result = yield* embeddings.create({ model, input: texts })
      for (const [i, vector] of result.vectors.entries()) {
        yield* Console.log(JSON.stringify({ text: texts[i], dimensions: vector.length, embedding: vector }))
      }
    }).pipe(Effect.provide(client))
).pipe(Command.withDescription("Embed texts; one JSON line per text on stdout"))

const durationOption = (name: string, fallback: Duration.Duration, description: string) =>
  Options.text(name).pipe(
    Options.withDescription(description),
    withDefault(Duration.format(fallback).replace(/ /g, "")),
    Options.mapEffect((text) =>
      Option.match(parseDurationInput(text), {
        onNone: () =>
          Effect.fail(ValidationError.invalidValue(
            HelpDoc.p(`--${name}: expected a duration such as 30s, 1m30s or "30 seconds", got "${text}"`)
          )),
        onSome: Effect.succeed
      })
    )
  )

const emulatorCommand = Command.make(
  "emulator",
  {
    port: Options.integer("port").pipe(Options.withDescription("Port (0: any free port)"), withDefault(0)),
    host: Options.text("host").pipe(Options.withDescription("Interface to bind"), withDefault("127.0.0.1")),
    window: durationOption("window", Duration.minutes(1), "Length of the rate-limit window"),
    faultRate: Options.float("fault-rate").pipe(
      Options.withDescription(
        "Share of requests (0 to 1) answered with a 5xx or a dropped connection, for fault tests"
      ),
      withDefault(0)
    ),
    interfaceVersion: Options.choice("interface-version", ["1.0.0", "1.1.0"]).pipe(
      Options.withDescription(
        "Serve one interface version: 1.0.0 (fine-tuning; the queue answers a job handle at once) or 1.1.0 " +
          "(no fine-tuning; the queue waits and answers the result); without it, both at once"
      ),
      Options.optional
    )
  },
  ({ faultRate, host, interfaceVersion, port, window }) =>
    Effect.gen(function*() {
      if (port < 0 || port > 65535) {
        return yield* Effect.fail(new UsageError(`--port must be from 0 to 65535, not ${port}`))
      }
      if (!(faultRate >= 0 && faultRate <= 1)) {
        return yield* Effect.fail(new UsageError(`--fault-rate must be from 0 to 1, not ${faultRate}`))
      }
      const Emulator = yield* emulatorModule
      return yield* Layer.launch(
        Layer.effectDiscard(
          Effect.gen(function*() {
            const emulator = yield* Emulator.Emulator
            yield* Console.log(`AI Foundation Services emulator listening on ${emulator.url}`)
            yield* Console.log(`  base URL: ${emulator.baseUrl}  (queue: ${emulator.queueUrl})`)
            yield* Console.log(`  rate-limit window: ${Duration.format(window)}`)
            if (faultRate > 0) yield* Console.log(`  fault rate: ${faultRate} (5xx answers and dropped connections)`)
            if (Option.isSome(interfaceVersion)) yield* Console.log(`  interface version: ${interfaceVersion.value}`)
            yield* Console.log("  keys (development keys, not secrets):")
            for (const key of emulator.keys) yield* Console.log(`    ${key.tier.padEnd(14)} ${key.key}`)
            yield* Console.log("Press Ctrl-C to stop.")
          })
        ).pipe(Layer.provide(Emulator.layer({
          host,
          port,
          window,
          ...(faultRate > 0 ? { chaos: Emulator.faultMix(faultRate) } : {}),
          ...(Option.isSome(interfaceVersion) ? { interfaceVersion: interfaceVersion.value } : {})
        })))
      )
    })
).pipe(Command.withDescription("Run the emulator of the service on a local port"))

const aifs = Command.make("aifs").pipe(
  Command.withDescription("effect-aifs: AI Foundation Services from the command line (emulator when no key is set)"),
  Command.withSubcommands([
    demoCommand,
    modelsCommand,
    chatCommand,
    embedCommand,
    batchCommand,
    emulatorCommand,
    limitsCommand,
    usageCommand,
    ragCommand,
    filesCommand,
    audioCommand,
    imagesCommand,
    vsCommand
  ])
)

/**
 * Parses the arguments (without `node` and the script) and runs the command.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (argv: ReadonlyArray<string>) =>
  Effect.zipRight(unknownFlags(argv.slice(2)), Command.run(aifs, { name: "aifs", version: "0.1.0" })(argv))

/** The flags every command takes: the built-in ones. */
const builtIns = ["--help", "--version", "--wizard", "--completions", "--log-level"]

/**
 * A flag the command does not take (a typo, or another command's flag) is a usage error naming it, instead of a value
 * taken for the next argument (the prompt, say) and an "unknown argument" about another one. A command's flags are
 * those its help page lists (`helpPages.ts`, written from the commands themselves).
 */
const unknownFlags = (args: ReadonlyArray<string>): Effect.Effect<void, UsageError> => {
  const words = args.filter((arg) => !arg.startsWith("-"))
  // the longest command path the arguments start with that has a page: `vs files`, `chat`, or the top level
  const path = [2, 1, 0].map((n) => words.slice(0, n).join(" ")).find((p) => Object.hasOwn(pages, p)) ?? ""
  const known = new Set([...(pages[path]!.match(/--[a-z][a-z0-9-]*/g) ?? []), ...builtIns])
  const unknown = args.map((arg) => /^--[a-z][a-z0-9-]*/.exec(arg)?.[0]).find((flag) =>
    flag !== undefined && !known.has(flag)
  )
  return unknown === undefined ? Effect.void : Effect.fail(
    new UsageError(`unknown flag ${unknown} (aifs ${path === "" ? "" : `${path} `}--help lists the flags)`)
  )
}

/**
 * A help page as `aifs PATH --help` prints it into a pipe: no colour.
 *
 * @since 0.3.0
 * @category help
 */
export const renderHelp = (path: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const argv = ["node", "aifs", ...path, "--help"]
    const printed: Array<string> = []
    const base = yield* Effect.console
    const capture: Console.Console = {
      ...base,
      log: (...parts) => Effect.sync(() => void printed.push(`${parts.join(" ")}\n`))
    }
    yield* Effect.withConsole(run(argv), fitConsole(capture, argv, false))
    return printed.join("")
  }).pipe(Effect.provide(CliConfig.layer({ showBuiltIns: false })))

/**
 * Every help page, by command path (`""` for the top level, `"vs files"`...): the paths the top-level help lists.
 * `npm run help-pages` writes them to `helpPages.ts`, which `bin.ts` serves without loading the command line.
 *
 * @since 0.3.0
 * @category help
 */
export const renderHelpPages = Effect.gen(function*() {
  const top = yield* renderHelp([])
  const paths = [...top.matchAll(/^ {2}- ([a-z][a-z-]*(?: [a-z][a-z-]*)*)/gm)].map((match) => match[1]!)
  const pages: Record<string, string> = { "": top }
  for (const path of paths) pages[path] = yield* renderHelp(path.split(" "))
  return pages
})
