/**
 * Ingest master: start ingesting an uploaded file (`POST /ingest-master/api/v1/task`) and read its tasks
 * (`POST /ingest-master/api/v1/tasks/file?file_path=...&role=user`; the last task is the current state).
 *
 * @example
 * ```ts
 * import { FileManager, IngestMaster, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // what `Rag.ingest` does for one file: upload, wait, start the ingestion, wait
 * const program = Effect.gen(function*() {
 *   const fileManager = yield* FileManager.FileManager
 *   const ingestMaster = yield* IngestMaster.IngestMaster
 *   const [pending] = yield* fileManager.upload([{ name: "faq.txt", content: "Q: Opening hours? A: 9 to 5." }])
 *   const [file] = yield* fileManager.waitForUploads(pending ? [pending.fileId] : [], { interval: "100 millis" })
 *   if (file?.fileUri == null) return yield* Effect.fail("upload failed")
 *   yield* ingestMaster.createTask({
 *     filePath: file.fileUri,
 *     role: "user",
 *     metadata: { file_id: file.fileId, user_id: file.userId ?? "", file_name: "faq.txt", file_uri: file.fileUri }
 *   })
 *   const task = yield* ingestMaster.waitForIngestion(file.fileUri, { interval: "100 millis" })
 *   return task.status
 * })
 *
 * const gateway = Testing.layerGatewayEmulator({
 *   gateway: { uploadDelay: "100 millis", ingestDuration: "300 millis" }
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(gateway))).then(console.log)
 * // => ingested
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { pollOrFail } from "../../internal/poll.js"
import { type ApiError, Timeout } from "../../schemas/Errors.js"
import { type CreateTaskParams, IngestTask, IngestTaskList } from "../../schemas/Gateway.js"
import { Gateway, withQuery } from "./Gateway.js"
import type { RequestOptions } from "./GatewayHttpClient.js"

/**
 * The ingest master.
 *
 * @example
 * ```ts
 * import { IngestMaster, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the tasks of a file, oldest first: the last one is its current state
 * const program = Effect.gen(function*() {
 *   const ingestMaster = yield* IngestMaster.IngestMaster
 *   const tasks = yield* ingestMaster.tasksForFile("local/demo/unknown.txt")
 *   return tasks.at(-1)?.status ?? "never ingested"
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class IngestMaster
  extends Context.Tag("effect-aifs/gateway/IngestMaster")<IngestMaster, IngestMaster.Service>()
{}

/**
 * The types of the `IngestMaster` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace IngestMaster {
  /**
   * What `IngestMaster` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Starts ingesting a file (`filePath` is its `fileUri`; `metadata.file_uri` is needed for retrieval). */
    readonly createTask: (params: CreateTaskParams) => Effect.Effect<IngestTask, ApiError>
    /** The tasks of a file, oldest first. */
    readonly tasksForFile: (
      filePath: string,
      role?: string | undefined
    ) => Effect.Effect<ReadonlyArray<IngestTask>, ApiError>
    /** Polls until the file's last task is `ingested` or `ingestion_failed`; `Timeout` after `timeout`. */
    readonly waitForIngestion: (
      filePath: string,
      options?: {
        readonly role?: string | undefined
        /** Pause between polls (default 2 s). */
        readonly interval?: Duration.DurationInput | undefined
        /** Longest wait (default 10 minutes). */
        readonly timeout?: Duration.DurationInput | undefined
      }
    ) => Effect.Effect<IngestTask, ApiError>
  }
}

/**
 * The service path.
 *
 * @since 0.1.0
 * @category constants
 */
export const path = "/ingest-master"

/**
 * Builds the service on the `Gateway` client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<IngestMaster.Service, never, Gateway> = Effect.gen(function*() {
  const gateway = yield* Gateway
  // each request's span is the transport's
  const createTask = Effect.fnUntraced(function*(params: CreateTaskParams) {
    const request = HttpClientRequest.post(`${path}/api/v1/task`).pipe(HttpClientRequest.bodyUnsafeJson(params))
    // a second task would ingest the file twice
    return (yield* gateway.send(request, IngestTask, { retry: false, span: { name: "IngestMaster.createTask" } })).value
  })
  const tasksWith = (filePath: string, role: string | undefined, sendOptions: Omit<RequestOptions, "token">) => {
    const request = withQuery(HttpClientRequest.post(`${path}/api/v1/tasks/file`), {
      file_path: filePath,
      role: role ?? "user"
    })
    return Effect.map(gateway.send(request, IngestTaskList, sendOptions), (r) => r.value)
  }
  const tasksForFile = (filePath: string, role?: string) =>
    tasksWith(filePath, role, { span: { name: "IngestMaster.tasksForFile" } })
  // several requests: one logical span around the polls, each poll's request without a span of its own
  const waitForIngestion = Effect.fnUntraced(
    function*(
      filePath: string,
      options: {
        readonly role?: string | undefined
        readonly interval?: Duration.DurationInput | undefined
        readonly timeout?: Duration.DurationInput | undefined
      } = {}
    ) {
      const timeout = Duration.decode(options.timeout ?? Duration.minutes(10))
      const tasks = yield* pollOrFail(
        tasksWith(filePath, options.role, {}),
        (tasks) => {
          const last = tasks[tasks.length - 1]
          return last !== undefined && (last.isDone || last.isFailed)
        },
        {
          interval: options.interval ?? Duration.seconds(2),
          timeout,
          onTimeout: () =>
            new Timeout({
              message: `ingestion of ${filePath} not finished within ${Duration.format(timeout)}`,
              endpoint: `POST ${path}/api/v1/tasks/file`,
              timeout: "total",
              after: timeout
            })
        }
      )
      // the poll ends on a list whose last task is done or failed
      return tasks[tasks.length - 1]!
    },
    Effect.withSpan("IngestMaster.waitForIngestion", {
      captureStackTrace: false,
      attributes: { "aifs.operation": "IngestMaster.waitForIngestion" }
    })
  )
  return { createTask, tasksForFile, waitForIngestion }
})

/**
 * The service, on a `Gateway` client.
 *
 * @example
 * ```ts
 * import { IngestMaster, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // the service on any `Gateway` client (here the one of `Testing.layerGatewayEmulator`)
 * const IngestMasterLive = IngestMaster.layer.pipe(Layer.provide(Testing.layerGatewayEmulator()))
 *
 * const program = Effect.flatMap(IngestMaster.IngestMaster, (ingestMaster) => ingestMaster.tasksForFile("a.txt"))
 *
 * Effect.runPromise(program.pipe(Effect.provide(IngestMasterLive))).then((tasks) => console.log(tasks.length))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<IngestMaster, never, Gateway> = Layer.effect(IngestMaster, make)
