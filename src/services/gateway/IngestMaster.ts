/**
 * Ingest master: start ingesting an uploaded file (`POST /ingest-master/api/v1/task`) and read its tasks
 * (`POST /ingest-master/api/v1/tasks/file?file_path=...&role=user`; the last task is the current state).
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { pollUntil } from "../../internal/poll.js"
import { type ApiError, Timeout } from "../../schemas/Errors.js"
import { type CreateTaskParams, IngestTask, IngestTaskList } from "../../schemas/Gateway.js"
import { Gateway, withQuery } from "./Gateway.js"

/**
 * The ingest master.
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
  const createTask = Effect.fn("IngestMaster.createTask")(function*(params: CreateTaskParams) {
    const request = HttpClientRequest.post(`${path}/api/v1/task`).pipe(HttpClientRequest.bodyUnsafeJson(params))
    // a second task would ingest the file twice
    return (yield* gateway.send(request, IngestTask, { retry: false })).value
  })
  const tasksForFile = Effect.fn("IngestMaster.tasksForFile")(function*(filePath: string, role?: string) {
    const request = withQuery(HttpClientRequest.post(`${path}/api/v1/tasks/file`), {
      file_path: filePath,
      role: role ?? "user"
    })
    return (yield* gateway.send(request, IngestTaskList)).value
  })
  const waitForIngestion = Effect.fn("IngestMaster.waitForIngestion")(function*(
    filePath: string,
    options: {
      readonly role?: string | undefined
      readonly interval?: Duration.DurationInput | undefined
      readonly timeout?: Duration.DurationInput | undefined
    } = {}
  ) {
    const timeout = Duration.decode(options.timeout ?? Duration.minutes(10))
    const result = yield* pollUntil(
      tasksForFile(filePath, options.role),
      (tasks) => {
        const last = tasks[tasks.length - 1]
        return last !== undefined && (last.isDone || last.isFailed)
      },
      { interval: options.interval ?? Duration.seconds(2), timeout }
    )
    return yield* Option.match(Option.flatMap(result, (tasks) => Option.fromNullable(tasks[tasks.length - 1])), {
      onSome: Effect.succeed,
      onNone: () =>
        Effect.fail(
          new Timeout({
            message: `ingestion of ${filePath} not finished within ${Duration.format(timeout)}`,
            endpoint: `POST ${path}/api/v1/tasks/file`,
            timeout: "total",
            after: timeout
          })
        )
    })
  })
  return { createTask, tasksForFile, waitForIngestion }
})

/**
 * The service, on a `Gateway` client.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<IngestMaster, never, Gateway> = Layer.effect(IngestMaster, make)
