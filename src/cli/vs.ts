/**
 * `aifs vs`: vector stores. `create`, `list`, `delete`, `add` (upload files as `visual-rag`, add them, wait
 * until indexed), `files`, and `search` (over a store, or over files given with `--files`, indexed first into
 * a temporary store: the way to try it on the embedded emulator, whose state lives as long as the command).
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
import type { SearchResultPage } from "../schemas/VectorStores.js"
import * as Files from "../services/Files.js"
import * as VectorStores from "../services/VectorStores.js"
import { client } from "./environment.js"
import { withDefault } from "./help.js"
import { UsageError } from "./output.js"

const storeArg = Args.text({ name: "STORE_ID" }).pipe(Args.withDescription("A vector store id"))
const chunkSize = Options.integer("chunk-size").pipe(Options.withDescription("Chunk size"), withDefault(1024))
const chunkOverlap = Options.integer("chunk-overlap").pipe(
  Options.withDescription("Overlap between chunks"),
  withDefault(100)
)

const addFiles = (storeId: string, paths: ReadonlyArray<string>, size: number, overlap: number) =>
  Effect.gen(function*() {
    const files = yield* Files.Files
    const vs = yield* VectorStores.VectorStores
    for (const path of paths) {
      const file = yield* files.upload({ file: Files.fromPath(path), purpose: "visual-rag" })
      yield* vs.addFile(storeId, { file_id: file.id, chunking_strategy: { chunk_size: size, chunk_overlap: overlap } })
      const done = yield* vs.waitForFile(storeId, file.id, { interval: "500 millis" })
      const problem = done.status === "completed" ? "" : `\t${done.last_error?.message ?? ""}`
      yield* Console.log(`${file.id}\t${done.status}\t${path}${problem}`)
    }
  })

const printResults = (page: SearchResultPage) =>
  Effect.forEach(page.data, (hit) =>
    Console.log(
      [
        (hit.score ?? 0).toFixed(3),
        hit.filename ?? hit.file_id ?? "",
        hit.page_number ?? "",
        hit.images.length > 0
          ? `[image ${hit.images[0]!.slice(0, 40)}...]`
          : hit.text.replace(/\s+/g, " ").slice(0, 160)
      ].join("\t")
    ))

const create = Command.make(
  "create",
  {
    name: Args.text({ name: "NAME" }).pipe(Args.withDescription("Store name (unique per user)")),
    textModel: Options.text("text-model").pipe(withDefault("text-embedding-bge-m3")),
    visionModel: Options.text("vision-model").pipe(withDefault("tsi-embedding-colqwen2-2b-v1"))
  },
  ({ name, textModel, visionModel }) =>
    Effect.gen(function*() {
      const vs = yield* VectorStores.VectorStores
      const store = yield* vs.create({
        name,
        chunking_strategy: { text_embedding_model: textModel, vision_embedding_model: visionModel }
      })
      yield* Console.log(store.id)
    }).pipe(Effect.provide(client))
).pipe(Command.withDescription("Create a vector store; prints its id"))

const list = Command.make("list", {}, () =>
  Effect.gen(function*() {
    const vs = yield* VectorStores.VectorStores
    yield* Stream.runForEach(
      vs.listAll(),
      (s) => Console.log([s.id, s.name ?? "", s.status ?? "", String(s.file_counts?.total ?? 0)].join("\t"))
    )
  }).pipe(Effect.provide(client))).pipe(Command.withDescription("List vector stores"))

const remove = Command.make("delete", { store: storeArg }, ({ store }) =>
  Effect.gen(function*() {
    const vs = yield* VectorStores.VectorStores
    yield* Console.log(`${(yield* vs.delete(store)).id}\tdeleted`)
  }).pipe(Effect.provide(client))).pipe(Command.withDescription("Delete a vector store"))

const add = Command.make(
  "add",
  {
    store: storeArg,
    paths: Args.file({ name: "FILE", exists: "yes" }).pipe(Args.atLeast(1)),
    chunkSize,
    chunkOverlap
  },
  ({ chunkOverlap, chunkSize, paths, store }) =>
    addFiles(store, paths, chunkSize, chunkOverlap).pipe(Effect.provide(client))
).pipe(Command.withDescription("Upload files, add them to a store and wait until they are indexed"))

const files = Command.make("files", { store: storeArg }, ({ store }) =>
  Effect.gen(function*() {
    const vs = yield* VectorStores.VectorStores
    yield* Stream.runForEach(vs.listAllFiles(store), (f) => Console.log(`${f.id}\t${f.status}`))
  }).pipe(Effect.provide(client))).pipe(Command.withDescription("List the files of a store"))

const search = Command.make(
  "search",
  {
    query: Args.text({ name: "QUERY" }).pipe(Args.withDescription("What to look for")),
    store: Options.text("store").pipe(Options.optional, Options.withDescription("The store to search")),
    files: Options.file("files", { exists: "yes" }).pipe(
      Options.repeated,
      // optional: shown in brackets in the usage line (a repeated option alone reads as required)
      Options.withDefault<ReadonlyArray<string>>([]),
      Options.withDescription("Index these files into a temporary store first, then search it")
    ),
    texts: Options.integer("texts").pipe(Options.withDescription("top_k_texts"), withDefault(3)),
    images: Options.integer("images").pipe(Options.withDescription("top_k_images"), withDefault(2)),
    chunkSize,
    chunkOverlap
  },
  (args) =>
    Effect.gen(function*() {
      const vs = yield* VectorStores.VectorStores
      const params = { query: args.query, top_k_texts: args.texts, top_k_images: args.images }
      if (Option.isSome(args.store)) return yield* printResults(yield* vs.search(args.store.value, params))
      if (args.files.length === 0) return yield* Effect.fail(new UsageError("give --store ID or --files FILE..."))
      const temporary = yield* vs.create({ name: `aifs-cli-${args.query.slice(0, 24)}-${args.files.length}` })
      yield* Effect.ensuring(
        Effect.gen(function*() {
          yield* addFiles(temporary.id, args.files, args.chunkSize, args.chunkOverlap)
          yield* printResults(yield* vs.search(temporary.id, params))
        }),
        Effect.ignore(vs.delete(temporary.id))
      )
    }).pipe(Effect.provide(client))
).pipe(Command.withDescription("Search a store: one line per hit (score, file, page, text or image)"))

/**
 * `aifs vs`.
 *
 * @since 0.1.0
 * @category commands
 */
export const vsCommand = Command.make("vs").pipe(
  Command.withDescription("Vector stores: create, list, delete, add files, list files, search"),
  Command.withSubcommands([create, list, remove, add, files, search])
)
