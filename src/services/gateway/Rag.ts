/**
 * The retrieval workflow over the gateway services: `ingest` files (upload, wait for the upload, start
 * ingestion, wait for it) with progress events, a timeout and one outcome per file; `openSession` over
 * files or the global knowledge base; `ask` a question in it.
 *
 * @example
 * ```ts
 * import { Rag, Testing } from "effect-aifs"
 * import * as Console from "effect/Console"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const outcomes = yield* Rag.ingest(
 *     [{ name: "limits.md", content: "# Limits\n\nEach key may send 20 requests per minute." }],
 *     { onProgress: (event) => Console.log(event._tag), interval: "100 millis" }
 *   )
 *   const session = yield* Rag.openSession({ files: outcomes, title: "Limits" })
 *   const answer = yield* Rag.ask(session, "How many requests per minute may a key send?")
 *   return answer.text
 * })
 *
 * // `Node.layerGatewayFromEnv` for the real gateway; here the emulator's, with quick uploads and ingestion
 * const gateway = Testing.layerGatewayEmulator({
 *   gateway: { uploadDelay: "100 millis", ingestDuration: "300 millis" }
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(gateway))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { pollUntil } from "../../internal/poll.js"
import type { ApiError } from "../../schemas/Errors.js"
import type { ChatAnswer, ChatSession, GatewayFile } from "../../schemas/Gateway.js"
import { ChatSessions } from "./ChatSessions.js"
import { ConfigManager } from "./ConfigManager.js"
import { FileManager, type UploadFile } from "./FileManager.js"
import { IngestMaster } from "./IngestMaster.js"
import { QueryPipeline } from "./QueryPipeline.js"

export type {
  /**
   * A file to upload: name, content and media type (see `FileManager.UploadFile`).
   *
   * @since 0.1.0
   * @category models
   */
  UploadFile
} from "./FileManager.js"

/**
 * How one file ended.
 *
 * @since 0.1.0
 * @category models
 */
export interface Outcome {
  /** The file's name, as given. */
  readonly name: string
  /** True when the file is ingested and can be chatted over. */
  readonly ok: boolean
  /** Where it ended: `upload` (failed there), `ingest` (failed there) or `ingested`. */
  readonly stage: "upload" | "ingest" | "ingested"
  /** The last status seen (`ingested`, `file_too_large`, `ingestion_failed`, `timeout`, ...). */
  readonly status: string
  /** File id, once uploaded. */
  readonly fileId?: string | undefined
  /** File URI, once uploaded. */
  readonly fileUri?: string | undefined
  /** Why it failed. */
  readonly reason?: string | undefined
}

/**
 * A progress event of `ingest`.
 *
 * @since 0.1.0
 * @category models
 */
export type Progress =
  | { readonly _tag: "Uploading"; readonly files: number }
  | { readonly _tag: "UploadStatus"; readonly name: string; readonly fileId: string; readonly status: string }
  | { readonly _tag: "IngestStarted"; readonly name: string; readonly fileId: string }
  | {
    readonly _tag: "IngestStatus"
    readonly name: string
    readonly fileId: string
    readonly status: string
    readonly progress: number | undefined
  }
  | { readonly _tag: "Finished"; readonly outcome: Outcome }

/**
 * Settings of `ingest`.
 *
 * @since 0.1.0
 * @category models
 */
export interface IngestOptions {
  /** Called with every progress event. */
  readonly onProgress?: ((event: Progress) => Effect.Effect<void>) | undefined
  /** Longest the whole ingestion may take (default 10 minutes); files not done by then end `timeout`. */
  readonly timeout?: Duration.DurationInput | undefined
  /** Pause between polls (default 2 s, as the guide). */
  readonly interval?: Duration.DurationInput | undefined
  /** Knowledge base (default `local`). */
  readonly kb?: string | undefined
}

const describe = (error: ApiError): string => `${error._tag}: ${error.message}`

const lastOf = <A>(items: ReadonlyArray<A>): A | undefined => items[items.length - 1]

/** What the phases of one ingestion share: where progress goes, and the time left of the whole. */
interface Run {
  readonly emit: (event: Progress) => Effect.Effect<void>
  readonly finish: (outcome: Outcome) => Effect.Effect<Outcome>
  readonly remaining: Effect.Effect<number>
  readonly interval: Duration.DurationInput
  readonly kb: string | undefined
}

/**
 * Uploads `files` and polls their records until each is done or failed (or the time is up), reporting each change of
 * status: the upload's records by file, in order, and their latest state by id.
 */
const uploadAll = (files: ReadonlyArray<UploadFile>, run: Run) =>
  Effect.gen(function*() {
    const fileManager = yield* FileManager
    yield* run.emit({ _tag: "Uploading", files: files.length })
    const pending = yield* fileManager.upload(files, { kb: run.kb })
    const ids = pending.map((f) => f.fileId)
    const seen = new Map<string, string>()
    const latest = new Map<string, GatewayFile>(pending.map((f) => [f.fileId, f]))
    const report = (records: ReadonlyArray<GatewayFile>) =>
      Effect.forEach(records, (record) => {
        latest.set(record.fileId, record)
        if (seen.get(record.fileId) === record.status) return Effect.void
        seen.set(record.fileId, record.status)
        const name = nameOf(files, pending, ids.indexOf(record.fileId))
        return run.emit({ _tag: "UploadStatus", name, fileId: record.fileId, status: record.status })
      }, { discard: true })
    yield* report(pending)
    const settled = (id: string) => {
      const record = latest.get(id)
      return record !== undefined && (record.isDone || record.isFailed)
    }
    if (!ids.every(settled)) {
      yield* pollUntil(
        Effect.tap(fileManager.list(ids, { kb: run.kb }), report),
        () => ids.every(settled),
        { interval: run.interval, timeout: yield* run.remaining }
      )
    }
    return { pending, latest }
  })

/** A file's name: as given, else as the gateway recorded it, else its place. */
const nameOf = (files: ReadonlyArray<UploadFile>, pending: ReadonlyArray<GatewayFile>, i: number) =>
  files[i]?.name ?? pending[i]?.fileName ?? `file ${i + 1}`

/** Starts the ingestion of an uploaded file and polls its task until done or failed (or the time is up). */
const ingestOne = (name: string, record: GatewayFile, run: Run) =>
  Effect.gen(function*() {
    const ingestMaster = yield* IngestMaster
    const base = { name, fileId: record.fileId, fileUri: record.fileUri ?? undefined }
    const failed = (stage: Outcome["stage"], status: string, reason: string) =>
      run.finish({ ...base, ok: false, stage, status, reason })
    const fileUri = record.fileUri ?? ""
    const started = yield* Effect.either(ingestMaster.createTask({
      filePath: fileUri,
      role: "user",
      metadata: { file_id: record.fileId, user_id: record.userId ?? "", file_name: name, file_uri: fileUri }
    }))
    if (started._tag === "Left") return yield* failed("ingest", "error", describe(started.left))
    yield* run.emit({ _tag: "IngestStarted", name, fileId: record.fileId })
    let last = ""
    const polled = yield* Effect.either(pollUntil(
      Effect.tap(ingestMaster.tasksForFile(fileUri), (tasks) => {
        const task = lastOf(tasks)
        if (task === undefined || task.status === last) return Effect.void
        last = task.status
        const progress = task.progress ?? undefined
        return run.emit({ _tag: "IngestStatus", name, fileId: record.fileId, status: task.status, progress })
      }),
      (tasks) => {
        const task = lastOf(tasks)
        return task !== undefined && (task.isDone || task.isFailed)
      },
      { interval: run.interval, timeout: yield* run.remaining }
    ))
    if (polled._tag === "Left") return yield* failed("ingest", "error", describe(polled.left))
    const task = Option.flatMap(polled.right, (tasks) => Option.fromNullable(lastOf(tasks)))
    if (Option.isNone(task)) return yield* failed("ingest", "timeout", "ingestion timed out")
    if (!task.value.isDone) return yield* failed("ingest", task.value.status, task.value.message ?? task.value.status)
    return yield* run.finish({ ...base, ok: true, stage: "ingested", status: task.value.status })
  })

/**
 * Uploads files, waits for the uploads, starts their ingestion and waits for it. One outcome per file, in
 * order: a file that fails does not fail the others. Fails only when the upload request itself fails
 * (wrong credentials, no connection).
 *
 * @example
 * ```ts
 * import { Rag, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // one outcome per file, in order: a failed file does not fail the others
 * const program = Rag.ingest([
 *   { name: "notes.txt", content: "Quarterly numbers are in the annex." },
 *   { name: "tool.exe", content: new Uint8Array([0x4d, 0x5a]) }
 * ], { interval: "100 millis" }).pipe(
 *   Effect.map((outcomes) => outcomes.map((outcome) => `${outcome.name}: ${outcome.stage} (${outcome.status})`))
 * )
 *
 * const gateway = Testing.layerGatewayEmulator({
 *   gateway: { uploadDelay: "100 millis", ingestDuration: "300 millis" }
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(gateway))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category workflow
 */
export const ingest = Effect.fnUntraced(function*(
  files: ReadonlyArray<UploadFile>,
  options: IngestOptions = {}
): Effect.fn.Return<ReadonlyArray<Outcome>, ApiError, FileManager | IngestMaster> {
  const emit = options.onProgress ?? (() => Effect.void)
  const deadline = (yield* Clock.currentTimeMillis) +
    Duration.toMillis(Duration.decode(options.timeout ?? "10 minutes"))
  const run: Run = {
    emit,
    finish: (outcome) => Effect.as(emit({ _tag: "Finished", outcome }), outcome),
    remaining: Effect.map(Clock.currentTimeMillis, (now) => Math.max(0, deadline - now)),
    interval: options.interval ?? Duration.seconds(2),
    kb: options.kb
  }
  if (files.length === 0) return []
  const { latest, pending } = yield* uploadAll(files, run)
  const one = (index: number): Effect.Effect<Outcome, never, IngestMaster> => {
    const name = nameOf(files, pending, index)
    const record = pending[index] === undefined ? undefined : latest.get(pending[index]!.fileId)
    if (record === undefined) {
      return run.finish({ name, ok: false, stage: "upload", status: "error", reason: "the gateway did not list it" })
    }
    if (record.isDone) return ingestOne(name, record, run)
    const status = record.isFailed ? record.status : "timeout"
    const base = { name, fileId: record.fileId, fileUri: record.fileUri ?? undefined }
    return run.finish({ ...base, ok: false, stage: "upload", status, reason: record.message ?? status })
  }
  return yield* Effect.forEach(files.map((_, i) => i), one, { concurrency: 4 })
}, Effect.withSpan("Rag.ingest", { captureStackTrace: false, attributes: { "aifs.operation": "Rag.ingest" } }))

/**
 * What a session chats over.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionOptions {
  /** File ids or ingest outcomes to chat over (failed outcomes are left out). */
  readonly files?: ReadonlyArray<string | Outcome> | undefined
  /** Chat over the global knowledge base instead of files. */
  readonly global?: boolean | undefined
  /** Session title (default `effect-aifs`). */
  readonly title?: string | undefined
  /** The chat model (default: the first allowed LLM of the config). */
  readonly model?: string | undefined
  /** The local config (default: the user's first). */
  readonly configId?: string | undefined
}

/**
 * Opens a session over files (`files`; none: all of the user's local files) or the global knowledge base
 * (`global: true`), with the user's first local config and its first allowed LLM unless told otherwise.
 *
 * @since 0.1.0
 * @category workflow
 */
export const openSession = Effect.fnUntraced(
  function*(
    options: SessionOptions = {}
  ): Effect.fn.Return<ChatSession, ApiError, ConfigManager | ChatSessions> {
    const configs = yield* (yield* ConfigManager).list()
    const local = configs.flatMap((c) => c.localKbConfigs ?? [])
    const config = options.configId === undefined ? local[0] : local.find((c) => c.id === options.configId)
    const activeFiles = (options.files ?? []).flatMap((f) =>
      typeof f === "string" ? [f] : f.ok && f.fileId !== undefined ? [f.fileId] : []
    )
    return yield* (yield* ChatSessions).create({
      title: options.title ?? "effect-aifs",
      config: {
        localConfigId: options.configId ?? config?.id ?? null,
        globalContext: options.global ?? false,
        activeFiles: options.global === true ? [] : activeFiles,
        chatModel: options.model ?? config?.allowed_llms?.[0]?.name ?? null
      }
    })
  },
  Effect.withSpan("Rag.openSession", { captureStackTrace: false, attributes: { "aifs.operation": "Rag.openSession" } })
)

/**
 * Asks a question in a session.
 *
 * @since 0.1.0
 * @category workflow
 */
export const ask = (
  session: string | ChatSession,
  prompt: string
): Effect.Effect<ChatAnswer, ApiError, QueryPipeline> =>
  Effect.flatMap(
    QueryPipeline,
    (pipeline) =>
      pipeline.chat({ sessionId: typeof session === "string" ? session : session.sessionId, userPrompt: prompt })
  )
