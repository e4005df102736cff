/**
 * What the queue root answers. Under interface 1.1.0 the queue waits and answers the ordinary result; under
 * 1.0.0 the docs call it asynchronous but show no retrieval route, so an answer may instead be an
 * accepted-with-handle body. Both decode, into `Completed` or `Accepted`.
 *
 * @example
 * ```ts
 * import * as ChatSchema from "effect-aifs/schemas/Chat"
 * import * as JobQueueSchema from "effect-aifs/schemas/JobQueue"
 * import * as Schema from "effect/Schema"
 *
 * // a queue answer is the ordinary result or, under interface 1.0.0, possibly a handle
 * const decode = Schema.decodeUnknownSync(JobQueueSchema.resultOrHandle(ChatSchema.ChatCompletion))
 *
 * const handle = decode({ job_id: "job-7", status: "queued" })
 * const result = decode({ id: "chatcmpl-1", model: "m", choices: [] })
 *
 * console.log(handle.kind, handle.kind === "handle" ? handle.value.handle : undefined, result.kind)
 * // => handle job-7 result
 * ```
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Schema from "effect/Schema"
import { Nullish } from "./Shared.js"

/**
 * An accepted-with-handle answer: the work was queued, and this is how to refer to it.
 *
 * @since 0.1.0
 * @category schemas
 */
export class QueueHandle extends Schema.Class<QueueHandle>("QueueHandle")({
  /** The job's id, when sent as `id`. */
  id: Nullish(Schema.String),
  /** The job's id, when sent as `job_id`. */
  job_id: Nullish(Schema.String),
  /** The request's id, when sent as `request_id`. */
  request_id: Nullish(Schema.String),
  /** `queued`, `accepted`, `in_progress`, ... */
  status: Nullish(Schema.String),
  /** What kind of object it is, when sent. */
  object: Nullish(Schema.String),
  /** A URL to poll, if the service ever sends one. */
  status_url: Nullish(Schema.String),
  /** A message about the job. */
  message: Nullish(Schema.String)
}) {
  /** Whichever id the answer carried. */
  get handle(): string | undefined {
    return this.job_id ?? this.id ?? this.request_id ?? undefined
  }
}

/**
 * The handle schema, only for bodies that look like one: an id and a status, and nothing of a result.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AcceptedBody = QueueHandle.pipe(
  Schema.filter((h) => h.handle !== undefined && (h.status !== undefined && h.status !== null), {
    message: () => "an accepted-with-handle body has an id and a status"
  })
)

/**
 * A queue answer.
 *
 * @since 0.1.0
 * @category models
 */
export type QueueResult<A> = Completed<A> | Accepted

/**
 * The queue answered the ordinary result.
 *
 * @since 0.1.0
 * @category models
 */
export class Completed<A> extends Data.TaggedClass("Completed")<{ readonly value: A }> {}

/**
 * The queue accepted the work and answered a handle (no retrieval route is documented).
 *
 * @since 0.1.0
 * @category models
 */
export class Accepted extends Data.TaggedClass("Accepted")<{
  readonly handle: QueueHandle
  /** The HTTP status (202 when the service says so). */
  readonly status: number
}> {}

/**
 * A result or a handle: the result schema first (a real result never looks like a handle), then the handle.
 *
 * @since 0.1.0
 * @category schemas
 */
export const resultOrHandle = <A, I>(result: Schema.Schema<A, I>) =>
  Schema.Union(
    Schema.transform(result, Schema.Struct({ kind: Schema.Literal("result"), value: Schema.typeSchema(result) }), {
      strict: true,
      decode: (value) => ({ kind: "result" as const, value }),
      encode: ({ value }) => value
    }),
    Schema.transform(
      AcceptedBody,
      Schema.Struct({ kind: Schema.Literal("handle"), value: Schema.typeSchema(QueueHandle) }),
      {
        strict: true,
        decode: (value) => ({ kind: "handle" as const, value }),
        encode: ({ value }) => value
      }
    )
  )
