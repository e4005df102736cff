/**
 * `/fine_tuning/jobs` of the emulator (interface 1.0.0): jobs move `queued` -> `running` -> `succeeded` on the
 * emulator's clock, emit events, can be cancelled (`stopped`); a training file that is not JSON Lines of chat
 * examples fails its job with a readable error. Per-key: another key gets 404.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { CreateFineTuningJobParams } from "../../schemas/FineTuning.js"
import { authenticate, decodeBody, reject, requireModel } from "../http.js"
import type { EmulatorState, KeySpec } from "../state.js"
import {
  checkTrainingFile,
  isoWithZone,
  jobEvents,
  jobFinishedMs,
  jobStatus,
  type StoredJob,
  timings
} from "../store.js"
import { countTokens } from "../text.js"
import { limitParam, page, queryParam } from "./files.js"

const CreateRequest = Schema.Struct({
  ...CreateFineTuningJobParams.fields,
  validation_file: Schema.optional(Schema.NullOr(Schema.String)),
  suffix: Schema.optional(Schema.NullOr(Schema.String))
})

const decoder = new TextDecoder()

const eventTime = (ms: number) => new Date(ms).toISOString().slice(0, 19)

const jobRecord = (job: StoredJob, now: number) => {
  const status = jobStatus(job, now)
  const finished = jobFinishedMs(job, now)
  const eta = job.createdMs + timings.jobQueuedMs + timings.jobRunningMs
  return {
    id: job.id,
    object: "fine-tune.job",
    model: job.model,
    created_at: isoWithZone(job.createdMs),
    status,
    training_file: job.trainingFile,
    validation_file: job.validationFile,
    hyperparameters: { n_epochs: job.nEpochs, batch_size: job.batchSize, learning_rate_multiplier: 1 },
    fine_tuned_model: status === "succeeded" ? `ft:${job.model}:${job.suffix ?? "custom"}:${job.id.slice(6)}` : null,
    finished_at: finished === undefined ? null : isoWithZone(finished),
    error: status === "failed" ? { code: "invalid_training_file", message: job.problem, param: "training_file" } : null,
    result_files: status === "succeeded" ? [`file-result-${job.id.slice(6)}`] : [],
    trained_tokens: status === "succeeded" ? job.tokens * job.nEpochs : null,
    suffix: job.suffix,
    estimated_finish: finished === undefined ? isoWithZone(eta) : null,
    integrations: [],
    message: status === "failed" ? job.problem ?? null : null
  }
}

const jobOf = (state: EmulatorState, key: KeySpec) =>
  Effect.gen(function*() {
    const { id } = yield* HttpRouter.params
    const job = id === undefined ? undefined : state.store.of(key.key).jobs.get(id)
    if (job === undefined) return yield* reject(404, `Fine-tuning job '${id ?? ""}' not found`)
    return job
  })

const numberOr = (value: number | string | undefined, fallback: number) => typeof value === "number" ? value : fallback

/**
 * The fine-tuning routes (mounted at `/v2`).
 *
 * @since 0.1.0
 * @category routers
 */
/** The caller's key, when fine-tuning is served to it: under interface 1.1.0 the routes do not exist (404). */
const fineTuningKey = (state: EmulatorState) =>
  Effect.flatMap(
    authenticate(state),
    (key) => state.versionOf(key) === "1.1.0" ? reject(404, "Not Found") : Effect.succeed(key)
  )

/** `POST /fine_tuning/jobs`: a job on a chat model over a fine-tune file, its file checked as the service checks it. */
const createJob = (state: EmulatorState) =>
  Effect.gen(function*() {
    const key = yield* fineTuningKey(state)
    const params = yield* decodeBody(CreateRequest)
    const model = yield* requireModel(params.model, "chat", "fine-tuning", key)
    const files = state.store.of(key.key).files
    const training = files.get(params.training_file)
    if (training === undefined) return yield* reject(404, `File '${params.training_file}' not found`)
    if (training.purpose !== "fine-tune") {
      return yield* reject(400, `File '${training.id}' has purpose '${training.purpose}', not 'fine-tune'`)
    }
    if (params.validation_file && !files.has(params.validation_file)) {
      return yield* reject(404, `File '${params.validation_file}' not found`)
    }
    const nEpochs = numberOr(params.hyperparameters?.n_epochs, 2)
    if (!Number.isInteger(nEpochs) || nEpochs < 1 || nEpochs > 50) {
      return yield* reject(400, "hyperparameters.n_epochs must be an integer from 1 to 50")
    }
    const text = decoder.decode(training.content)
    const now = yield* Clock.currentTimeMillis
    const job: StoredJob = {
      id: `ftjob-${state.next().toString(36).padStart(8, "0")}`,
      model: model.id,
      trainingFile: training.id,
      validationFile: params.validation_file ?? null,
      suffix: params.suffix ?? null,
      nEpochs,
      batchSize: numberOr(params.hyperparameters?.batch_size, 1),
      createdMs: now,
      problem: checkTrainingFile(text),
      tokens: countTokens(text)
    }
    state.store.of(key.key).jobs.set(job.id, job)
    return HttpServerResponse.unsafeJson(jobRecord(job, now))
  })

export const router = (state: EmulatorState) =>
  HttpRouter.empty.pipe(
    HttpRouter.post(
      "/fine_tuning/jobs",
      createJob(state)
    ),
    HttpRouter.get(
      "/fine_tuning/jobs",
      Effect.gen(function*() {
        const key = yield* fineTuningKey(state)
        const limit = yield* limitParam(3, 10)
        const after = yield* queryParam("after")
        const now = yield* Clock.currentTimeMillis
        const { data, has_more } = page([...state.store.of(key.key).jobs.values()], { limit, after })
        return HttpServerResponse.unsafeJson({ object: "list", data: data.map((j) => jobRecord(j, now)), has_more })
      })
    ),
    HttpRouter.get(
      "/fine_tuning/jobs/:id",
      Effect.gen(function*() {
        const key = yield* fineTuningKey(state)
        const job = yield* jobOf(state, key)
        return HttpServerResponse.unsafeJson(jobRecord(job, yield* Clock.currentTimeMillis))
      })
    ),
    HttpRouter.post(
      "/fine_tuning/jobs/:id/cancel",
      Effect.gen(function*() {
        const key = yield* fineTuningKey(state)
        const job = yield* jobOf(state, key)
        const now = yield* Clock.currentTimeMillis
        const status = jobStatus(job, now)
        if (status !== "queued" && status !== "running") {
          return yield* reject(409, `Fine-tuning job '${job.id}' has already finished (${status})`)
        }
        job.cancelledMs = now
        return HttpServerResponse.unsafeJson(jobRecord(job, now))
      })
    ),
    HttpRouter.get(
      "/fine_tuning/jobs/:id/events",
      Effect.gen(function*() {
        const key = yield* fineTuningKey(state)
        const job = yield* jobOf(state, key)
        const limit = yield* limitParam(10, 100)
        const after = yield* queryParam("after")
        const now = yield* Clock.currentTimeMillis
        const { data, has_more } = page(jobEvents(job, now), { limit, after })
        return HttpServerResponse.unsafeJson({
          object: "list",
          data: data.map((e) => ({
            id: e.id,
            object: "fine_tuning.job.event",
            created_at: eventTime(e.atMs),
            level: e.level,
            message: e.message,
            type: e.type
          })),
          has_more
        })
      })
    )
  )
