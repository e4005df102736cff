/**
 * Fine-tuning jobs (interface 1.0.0): create, list, retrieve, cancel, events. Interface 1.1.0 (the default)
 * has no fine-tuning routes: there every operation fails with `Unsupported` before sending, unless the layer
 * was built with `allowFineTuning: true`.
 *
 * @example
 * ```ts
 * import { Files, FineTuning, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const files = yield* Files.Files
 *   const fineTuning = yield* FineTuning.FineTuning
 *   const example = { messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }] }
 *   const training = yield* files.upload({
 *     file: Files.fromBytes(JSON.stringify(example) + "\n", "train.jsonl"),
 *     purpose: "fine-tune"
 *   })
 *   const job = yield* fineTuning.create({ model: "Llama-3.3-70B-Instruct", training_file: training.id })
 *   return `${job.id}: ${job.status}`
 * })
 *
 * // fine-tuning routes exist under interface 1.0.0 only
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator({ client: { apiVersion: "1.0.0" } }))))
 *   .then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import { paginate } from "../internal/pagination.js"
import { segment } from "../internal/pathSegment.js"
import { type ApiError, Unsupported } from "../schemas/Errors.js"
import {
  type CreateFineTuningJobParams,
  FineTuningJob,
  type FineTuningJobEvent,
  FineTuningJobEventList,
  FineTuningJobList,
  type ListJobsParams
} from "../schemas/FineTuning.js"
import { InferenceHttpClient } from "./InferenceHttpClient.js"

/**
 * Options of the service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * Send fine-tuning requests even when the client is configured for interface 1.1.0 (which has no
   * fine-tuning routes). Default false: there they fail with `Unsupported`.
   */
  readonly allowFineTuning?: boolean | undefined
}

/**
 * Fine-tuning jobs.
 *
 * @example
 * ```ts
 * import { FineTuning, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Stream from "effect/Stream"
 *
 * // the jobs that are still running, across every page
 * const program = Effect.gen(function*() {
 *   const fineTuning = yield* FineTuning.FineTuning
 *   const running = yield* fineTuning.listAll().pipe(Stream.filter((job) => !job.isFinished), Stream.runCollect)
 *   return [...running].map((job) => job.id)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator({ client: { apiVersion: "1.0.0" } }))))
 *   .then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class FineTuning extends Context.Tag("effect-aifs/FineTuning")<FineTuning, FineTuning.Service>() {}

/**
 * The types of the `FineTuning` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace FineTuning {
  /**
   * What `FineTuning` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Starts a job on an uploaded `fine-tune` file. */
    readonly create: (params: CreateFineTuningJobParams) => Effect.Effect<FineTuningJob, ApiError>
    /** One page of jobs (`limit` default 3, max 10). */
    readonly list: (params?: ListJobsParams) => Effect.Effect<FineTuningJobList, ApiError>
    /** Every job, page after page (`after` = the last id while `has_more`). */
    readonly listAll: (params?: Omit<ListJobsParams, "after">) => Stream.Stream<FineTuningJob, ApiError>
    /** One job. */
    readonly retrieve: (id: string) => Effect.Effect<FineTuningJob, ApiError>
    /** Cancels a job (its status becomes `stopped`). */
    readonly cancel: (id: string) => Effect.Effect<FineTuningJob, ApiError>
    /** One page of a job's events, newest first (`limit` default 10, max 100). */
    readonly events: (id: string, params?: ListJobsParams) => Effect.Effect<FineTuningJobEventList, ApiError>
    /** Every event of a job, page after page. */
    readonly eventsAll: (
      id: string,
      params?: Omit<ListJobsParams, "after">
    ) => Stream.Stream<FineTuningJobEvent, ApiError>
  }
}

const query = (params: ListJobsParams): Record<string, string> => ({
  ...(params.limit === undefined ? {} : { limit: String(params.limit) }),
  ...(params.after === undefined ? {} : { after: params.after })
})

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<FineTuning.Service, never, InferenceHttpClient> =>
  Effect.gen(function*() {
    const http = yield* InferenceHttpClient
    const guard = (operation: string, endpoint: string) =>
      http.apiVersion === "1.1.0" && options.allowFineTuning !== true
        ? Effect.fail(
          new Unsupported({
            operation,
            endpoint,
            apiVersion: http.apiVersion,
            message: `${operation} needs interface 1.0.0: interface 1.1.0 has no fine-tuning routes. Configure ` +
              "apiVersion \"1.0.0\" (AIFS_API_VERSION=1.0.0), or build FineTuning.layerWith({ allowFineTuning: true })"
          })
        )
        : Effect.void
    const jobs = (id: string) => Effect.map(segment(id), (job) => `/fine_tuning/jobs/${job}`)

    // each request's span is the transport's, opened when the request leaves the limiter's line
    const create = Effect.fnUntraced(function*(params: CreateFineTuningJobParams) {
      yield* guard("FineTuning.create", "POST /fine_tuning/jobs")
      const request = HttpClientRequest.post("/fine_tuning/jobs").pipe(HttpClientRequest.bodyUnsafeJson(params))
      // a retried create could start two jobs
      return (yield* http.json(request, FineTuningJob, { retry: false, span: { name: "FineTuning.create" } })).value
    })
    const list = Effect.fnUntraced(function*(params: ListJobsParams = {}) {
      yield* guard("FineTuning.list", "GET /fine_tuning/jobs")
      const request = HttpClientRequest.get("/fine_tuning/jobs").pipe(HttpClientRequest.setUrlParams(query(params)))
      return (yield* http.json(request, FineTuningJobList, { span: { name: "FineTuning.list" } })).value
    })
    const retrieve = Effect.fnUntraced(function*(id: string) {
      yield* guard("FineTuning.retrieve", "GET /fine_tuning/jobs/{id}")
      return (yield* http.json(HttpClientRequest.get(yield* jobs(id)), FineTuningJob, {
        span: { name: "FineTuning.retrieve" }
      })).value
    })
    const cancel = Effect.fnUntraced(function*(id: string) {
      yield* guard("FineTuning.cancel", "POST /fine_tuning/jobs/{id}/cancel")
      return (yield* http.json(HttpClientRequest.post(`${yield* jobs(id)}/cancel`), FineTuningJob, {
        span: { name: "FineTuning.cancel" }
      })).value
    })
    const events = Effect.fnUntraced(function*(id: string, params: ListJobsParams = {}) {
      yield* guard("FineTuning.events", "GET /fine_tuning/jobs/{id}/events")
      const request = HttpClientRequest.get(`${yield* jobs(id)}/events`).pipe(
        HttpClientRequest.setUrlParams(query(params))
      )
      return (yield* http.json(request, FineTuningJobEventList, { span: { name: "FineTuning.events" } })).value
    })
    return {
      create,
      list,
      listAll: (params = {}) => paginate((after) => list({ ...params, ...(after === undefined ? {} : { after }) })),
      retrieve,
      cancel,
      events,
      eventsAll: (id, params = {}) =>
        paginate((after) => events(id, { ...params, ...(after === undefined ? {} : { after }) }))
    }
  })

/**
 * The service, on an `InferenceHttpClient`; under interface 1.1.0 its operations fail with `Unsupported`.
 *
 * @example
 * ```ts
 * import { ClientConfig, FineTuning, InferenceHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // FineTuning alone, on the Node HTTP client, for a client configured for interface 1.0.0
 * export const FineTuningLive: Layer.Layer<FineTuning.FineTuning> = FineTuning.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-...", apiVersion: "1.0.0" })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<FineTuning, never, InferenceHttpClient> = Layer.effect(FineTuning, make())

/**
 * The service with options: `layerWith({ allowFineTuning: true })` sends fine-tuning requests whatever the
 * configured interface version. Provide it before (inside) the composite layers to replace their default.
 *
 * @example
 * ```ts
 * import { FineTuning, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // send fine-tuning requests although the client is configured for interface 1.1.0
 * const FineTuningOptedIn = FineTuning.layerWith({ allowFineTuning: true }).pipe(
 *   Layer.provide(Testing.layerEmulator())
 * )
 *
 * const program = Effect.flatMap(FineTuning.FineTuning, (fineTuning) => fineTuning.list()).pipe(
 *   Effect.map((page) => `${page.data.length} jobs`)
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(FineTuningOptedIn))).then(console.log)
 * // => 0 jobs
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options: Options): Layer.Layer<FineTuning, never, InferenceHttpClient> =>
  Layer.effect(FineTuning, make(options))
