/**
 * `aifs files`: upload (streamed from disk), list, get, delete, validate.
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { FileObject } from "../schemas/Files.js"
import * as Files from "../services/Files.js"
import { client } from "./environment.js"
import { withDefault } from "./help.js"

const purposes = ["fine-tune", "visual-rag"] as const

const purposeOption = Options.choice("purpose", purposes).pipe(
  Options.withDescription("fine-tune (on /v2) or visual-rag (on /v1, for vector stores)"),
  withDefault("fine-tune" as const)
)

const idArg = Args.text({ name: "FILE_ID" }).pipe(Args.withDescription("A file id"))

/**
 * One line of a file: id, purpose, bytes, creation time, name.
 *
 * @since 0.1.0
 * @category formatting
 */
export const fileLine = (file: FileObject): string =>
  [file.id, file.purpose ?? "", String(file.bytes ?? ""), String(file.created_at ?? ""), file.filename ?? ""].join("\t")

const upload = Command.make(
  "upload",
  {
    paths: Args.file({ name: "FILE", exists: "yes" }).pipe(Args.atLeast(1), Args.withDescription("Files to upload")),
    purpose: purposeOption
  },
  ({ paths, purpose }) =>
    Effect.gen(function*() {
      const files = yield* Files.Files
      for (const path of paths) {
        yield* Console.log(fileLine(yield* files.upload({ file: Files.fromPath(path), purpose })))
      }
    }).pipe(Effect.provide(client))
).pipe(Command.withDescription("Upload files (read from disk while sent); one line per file"))

const list = Command.make(
  "list",
  { purpose: Options.choice("purpose", purposes).pipe(Options.optional, Options.withDescription("Only this purpose")) },
  ({ purpose }) =>
    Effect.gen(function*() {
      const files = yield* Files.Files
      const params = Option.match(purpose, { onNone: () => ({}), onSome: (p) => ({ purpose: p }) })
      yield* Stream.runForEach(files.listAll(params), (file) => Console.log(fileLine(file)))
    }).pipe(Effect.provide(client))
).pipe(Command.withDescription("List files (visual-rag files are listed on /v1)"))

const get = Command.make("get", { id: idArg, purpose: purposeOption }, ({ id, purpose }) =>
  Effect.gen(function*() {
    const files = yield* Files.Files
    yield* Console.log(JSON.stringify(yield* files.retrieve(id, { purpose }), null, 2))
  }).pipe(Effect.provide(client))).pipe(Command.withDescription("Show a file record as JSON"))

const remove = Command.make(
  "delete",
  { id: idArg, purpose: purposeOption },
  ({ id, purpose }) =>
    Effect.gen(function*() {
      const files = yield* Files.Files
      const deleted = yield* files.delete(id, { purpose })
      yield* Console.log(`${deleted.id}\tdeleted`)
    }).pipe(Effect.provide(client))
).pipe(Command.withDescription("Delete a file"))

const validate = Command.make("validate", { id: idArg }, ({ id }) =>
  Effect.gen(function*() {
    const files = yield* Files.Files
    const answer = yield* files.validate(id)
    yield* Console.log(answer.message ?? "validation requested")
  }).pipe(Effect.provide(client))).pipe(Command.withDescription("Ask the service to validate a fine-tune file"))

/**
 * `aifs files`.
 *
 * @since 0.1.0
 * @category commands
 */
export const filesCommand = Command.make("files").pipe(
  Command.withDescription("Upload, list, show, delete and validate files"),
  Command.withSubcommands([upload, list, get, remove, validate])
)
