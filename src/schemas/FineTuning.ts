/**
 * Wire schemas of `/fine_tuning/jobs` (interface 1.0.0): jobs with ISO-string timestamps (sometimes without a
 * zone), their events, the paginated lists.
 *
 * @example
 * ```ts
 * import * as FineTuningSchema from "effect-aifs/schemas/FineTuning"
 * import * as Schema from "effect/Schema"
 *
 * // parameters, checked before sending (the service wants a number or "auto" for each hyperparameter)
 * const params = Schema.decodeUnknownSync(FineTuningSchema.CreateFineTuningJobParams)({
 *   model: "Llama-3.3-70B-Instruct",
 *   training_file: "file-1",
 *   hyperparameters: { n_epochs: 3, batch_size: "auto" },
 *   suffix: "support-bot"
 * })
 *
 * console.log(params.hyperparameters)
 * // => { n_epochs: 3, batch_size: 'auto' }
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Nullish, OpenEnum } from "./Shared.js"

const NumberOrAuto = Schema.Union(Schema.Number, Schema.String)

/**
 * Training settings.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Hyperparameters = Schema.Struct({
  /** Passes over the training data (a number or `auto`). */
  n_epochs: Nullish(NumberOrAuto),
  /** Examples per batch (a number or `auto`). */
  batch_size: Nullish(NumberOrAuto),
  /** Learning-rate multiplier (a number or `auto`). */
  learning_rate_multiplier: Nullish(NumberOrAuto)
})

/**
 * Parameters of `POST /fine_tuning/jobs`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreateFineTuningJobParams = Schema.Struct({
  /** Base model. */
  model: Schema.String,
  /** Id of an uploaded `fine-tune` file: JSON Lines of chat examples. */
  training_file: Schema.String,
  /** Id of a validation file. */
  validation_file: Schema.optional(Schema.String),
  /** Training settings. */
  hyperparameters: Schema.optional(
    Schema.Struct({
      n_epochs: Schema.optional(NumberOrAuto),
      batch_size: Schema.optional(NumberOrAuto),
      learning_rate_multiplier: Schema.optional(NumberOrAuto)
    })
  ),
  /** Added to the fine-tuned model's name. */
  suffix: Schema.optional(Schema.String),
  /** Seed for reproducibility. */
  seed: Schema.optional(Schema.Number)
})

/**
 * The type of `CreateFineTuningJobParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreateFineTuningJobParams = typeof CreateFineTuningJobParams.Type

/**
 * A time as the service sends it: an ISO string (maybe without zone) or epoch seconds.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Timestamp = Schema.Union(Schema.String, Schema.Number)

/**
 * Milliseconds since the epoch of a `Timestamp`; an ISO string without a zone is read as UTC, a number as
 * seconds. `undefined` when it cannot be read.
 *
 * @since 0.1.0
 * @category helpers
 */
export const timestampMillis = (value: string | number | null | undefined): number | undefined => {
  if (value === null || value === undefined) return undefined
  if (typeof value === "number") return value * 1000
  const zoned = /(Z|[+-]\d\d:?\d\d)$/i.test(value) ? value : `${value.replace(" ", "T")}Z`
  // JavaScript reads at most milliseconds: drop further fraction digits
  const ms = Date.parse(zoned.replace(/(\.\d{3})\d+/, "$1"))
  return Number.isNaN(ms) ? undefined : ms
}

/**
 * Why a job failed: an object, or a message.
 *
 * @since 0.1.0
 * @category schemas
 */
export const JobError = Schema.Union(
  Schema.Struct({
    /** Machine-readable code. */
    code: Nullish(Schema.String),
    /** Human-readable message. */
    message: Nullish(Schema.String),
    /** The parameter at fault. */
    param: Nullish(Schema.String)
  }),
  Schema.String
)

/**
 * A fine-tuning job.
 *
 * @since 0.1.0
 * @category schemas
 */
export class FineTuningJob extends Schema.Class<FineTuningJob>("FineTuningJob")({
  /** Job id, e.g. `ftjob-abc123`. */
  id: Schema.String,
  /** `fine-tune.job` or `fine-tune`. */
  object: Nullish(Schema.String),
  /** Base model. */
  model: Nullish(Schema.String),
  /** Creation time (ISO string). */
  created_at: Nullish(Timestamp),
  /** `queued`, `running`, `succeeded`, `failed`, `stopped`, ... */
  status: OpenEnum(
    ["validating_files", "queued", "running", "succeeded", "failed", "stopped", "cancelled"],
    "State of a job."
  ),
  /** Training file id. */
  training_file: Nullish(Schema.String),
  /** Validation file id. */
  validation_file: Nullish(Schema.String),
  /** Training settings. */
  hyperparameters: Nullish(Hyperparameters),
  /** The resulting model, once succeeded. */
  fine_tuned_model: Nullish(Schema.String),
  /** When it ended. */
  finished_at: Nullish(Timestamp),
  /** Why it failed. */
  error: Nullish(JobError),
  /** Result file ids. */
  result_files: Nullish(Schema.Array(Schema.String)),
  /** Tokens trained on. */
  trained_tokens: Nullish(Schema.Number),
  /** The model-name suffix. */
  suffix: Nullish(Schema.String),
  /** Estimated end. */
  estimated_finish: Nullish(Timestamp),
  /** Integrations (e.g. experiment trackers). */
  integrations: Nullish(Schema.Array(Schema.Unknown)),
  /** A message from the service about the job. */
  message: Nullish(Schema.String),
  /** Seed used. */
  seed: Nullish(Schema.Number)
}) {
  /** True once the job cannot change any more. */
  get isFinished(): boolean {
    return ["succeeded", "failed", "stopped", "cancelled"].includes(this.status)
  }
  /** The failure message, whichever form `error` took. */
  get errorMessage(): string | undefined {
    if (this.error === null || this.error === undefined) return undefined
    return typeof this.error === "string" ? this.error : this.error.message ?? undefined
  }
}

/**
 * A page of jobs: `{"object": "list", "data": [...], "has_more": false}`.
 *
 * @since 0.1.0
 * @category schemas
 */
export class FineTuningJobList extends Schema.Class<FineTuningJobList>("FineTuningJobList")({
  /** `list`. */
  object: Nullish(Schema.String),
  /** The jobs. */
  data: Schema.Array(FineTuningJob),
  /** Whether another page follows (ask with `after` = the last id). */
  has_more: Nullish(Schema.Boolean)
}) {}

/**
 * An event of a job.
 *
 * @since 0.1.0
 * @category schemas
 */
export class FineTuningJobEvent extends Schema.Class<FineTuningJobEvent>("FineTuningJobEvent")({
  /** Event id (the cursor of event pages), when sent. */
  id: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** `fine_tuning.job.event`, when sent. */
  object: Nullish(Schema.String),
  /** When (ISO string, possibly without zone, e.g. `2024-06-27T09:24:33`). */
  created_at: Nullish(Timestamp),
  /** `info`, `warning` or `error`. */
  level: Nullish(OpenEnum(["info", "warning", "error"], "Severity of an event.")),
  /** What happened. */
  message: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** `start`, `submitted`, `succeeded`, `failed`, ... */
  type: Nullish(OpenEnum(["start", "submitted", "succeeded", "failed"], "Kind of event.")),
  /** Extra data (metrics). */
  data: Nullish(Schema.Unknown)
}) {}

/**
 * A page of events.
 *
 * @since 0.1.0
 * @category schemas
 */
export class FineTuningJobEventList extends Schema.Class<FineTuningJobEventList>("FineTuningJobEventList")({
  /** `list`. */
  object: Nullish(Schema.String),
  /** The events, newest first. */
  data: Schema.Array(FineTuningJobEvent),
  /** Whether older events follow. */
  has_more: Nullish(Schema.Boolean)
}) {}

/**
 * Paging of jobs (`limit` default 3, max 10) and events (`limit` default 10, max 100).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ListJobsParams = Schema.Struct({
  /** Page size. */
  limit: Schema.optional(Schema.Number),
  /** Cursor: the last id of the previous page. */
  after: Schema.optional(Schema.String)
})

/**
 * The type of `ListJobsParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ListJobsParams = typeof ListJobsParams.Type
