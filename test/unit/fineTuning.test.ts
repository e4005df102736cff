/**
 * FineTuning on a scripted transport: the 1.1.0 refusal (no request sent), the opt-in, routes and queries
 * under 1.0.0, pagination, and decoding of the documented job and event shapes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { FineTuningJob, FineTuningJobEvent, FineTuningJobList, timestampMillis } from "../../src/schemas/FineTuning.js"
import * as FineTuning from "../../src/services/FineTuning.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { capturing, urlOf } from "./surfaceHelpers.js"

const decode = <A, I>(schema: Schema.Schema<A, I>, value: unknown): A =>
  Schema.decodeUnknownSync(schema)(value, { onExcessProperty: "ignore" })

const documentedJob = {
  id: "ftjob-abc123",
  object: "fine-tune.job",
  model: "Llama-3.3-70B-Instruct",
  created_at: "2024-06-27T09:20:00.123456+02:00",
  status: "queued",
  training_file: "file-abc123",
  validation_file: null,
  hyperparameters: { n_epochs: 2, batch_size: null },
  fine_tuned_model: null,
  finished_at: null,
  error: null,
  result_files: [],
  trained_tokens: null,
  suffix: null,
  estimated_finish: null,
  integrations: [],
  message: null
}
const documentedEvent = {
  created_at: "2024-06-27T09:24:33",
  level: "info",
  message: "Fine-tuning job started",
  type: "start"
}

describe("FineTuning schemas", () => {
  it("decodes the documented job, list and event; zone-less times read as UTC", () => {
    const job = decode(FineTuningJob, documentedJob)
    assert.strictEqual(job.status, "queued")
    assert.isFalse(job.isFinished)
    assert.strictEqual(timestampMillis(job.created_at), Date.parse("2024-06-27T07:20:00.123Z"))
    const list = decode(FineTuningJobList, { object: "list", data: [documentedJob], has_more: false })
    assert.strictEqual(list.data[0]?.id, "ftjob-abc123")
    const event = decode(FineTuningJobEvent, documentedEvent)
    assert.strictEqual(event.type, "start")
    assert.strictEqual(timestampMillis(event.created_at), Date.parse("2024-06-27T09:24:33Z"))
  })

  it("tolerates the fine-tune object, string errors, unknown statuses and levels, auto settings", () => {
    const job = decode(FineTuningJob, {
      id: "j",
      object: "fine-tune",
      status: "validating_dataset",
      error: "bad file",
      hyperparameters: { n_epochs: "auto" }
    })
    assert.strictEqual(job.errorMessage, "bad file")
    assert.strictEqual(job.hyperparameters?.n_epochs, "auto")
    const failed = decode(FineTuningJob, { id: "j", status: "failed", error: { code: "x", message: "line 3 broken" } })
    assert.strictEqual(failed.errorMessage, "line 3 broken")
    assert.isTrue(failed.isFinished)
    assert.strictEqual(decode(FineTuningJobEvent, { level: "debug", type: "metrics", message: "m" }).level, "debug")
  })
})

describe("FineTuning service", () => {
  it.effect("under 1.1.0 (the default) every operation fails with Unsupported and sends nothing", () => {
    const { layer, requests } = capturing(() => ({ body: documentedJob }))
    return Effect.gen(function*() {
      const jobs = yield* FineTuning.FineTuning
      const failures = yield* Effect.all([
        Effect.flip(jobs.create({ model: "m", training_file: "f" })),
        Effect.flip(jobs.list()),
        Effect.flip(jobs.retrieve("j")),
        Effect.flip(jobs.cancel("j")),
        Effect.flip(jobs.events("j")),
        Effect.flip(Stream.runDrain(jobs.listAll())),
        Effect.flip(Stream.runDrain(jobs.eventsAll("j")))
      ])
      for (const error of failures) {
        assert.strictEqual(error._tag, "Unsupported")
        assert.isFalse(error.isRetryable)
      }
      assert.strictEqual(failures[0]._tag === "Unsupported" ? failures[0].apiVersion : "", "1.1.0")
      assert.strictEqual(requests.length, 0)
    }).pipe(Effect.provide(layer))
  })

  it.effect("allowFineTuning opts in under 1.1.0", () => {
    const { layer, requests } = capturing(() => ({ body: documentedJob }))
    return Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const job = yield* Effect.flatMap(FineTuning.FineTuning, (s) => s.retrieve("ftjob-abc123")).pipe(
        Effect.provide(
          FineTuning.layerWith({ allowFineTuning: true }).pipe(Layer.provide(Layer.succeed(InferenceHttpClient, http)))
        )
      )
      assert.strictEqual(job.id, "ftjob-abc123")
      assert.strictEqual(requests.length, 1)
    }).pipe(Effect.provide(layer))
  })

  it.effect("under 1.0.0: routes, bodies and queries", () => {
    const { layer, requests } = capturing((request) =>
      request.path.endsWith("/events")
        ? { body: { object: "list", data: [documentedEvent], has_more: false } }
        : request.method === "GET" && request.path.endsWith("/jobs")
        ? { body: { object: "list", data: [documentedJob], has_more: false } }
        : { body: documentedJob }, { apiVersion: "1.0.0" })
    return Effect.gen(function*() {
      const jobs = yield* FineTuning.FineTuning
      yield* jobs.create({
        model: "Llama-3.3-70B-Instruct",
        training_file: "file-abc123",
        hyperparameters: { n_epochs: 2 }
      })
      yield* jobs.list({ limit: 10, after: "ftjob-0" })
      yield* jobs.retrieve("ftjob-abc123")
      yield* jobs.cancel("ftjob-abc123")
      const events = yield* jobs.events("ftjob-abc123", { limit: 100 })
      assert.strictEqual(events.data[0]?.message, "Fine-tuning job started")
      assert.deepStrictEqual(requests.map((r) => `${r.method} ${urlOf(r).pathname}${urlOf(r).search}`), [
        "POST /v2/fine_tuning/jobs",
        "GET /v2/fine_tuning/jobs?limit=10&after=ftjob-0",
        "GET /v2/fine_tuning/jobs/ftjob-abc123",
        "POST /v2/fine_tuning/jobs/ftjob-abc123/cancel",
        "GET /v2/fine_tuning/jobs/ftjob-abc123/events?limit=100"
      ])
    }).pipe(Effect.provide(layer))
  })

  it.effect("listAll pages with after = the last id while has_more", () => {
    const { layer } = capturing((request) => {
      const after = request.url.searchParams.get("after")
      return after === null
        ? {
          body: { object: "list", data: [{ ...documentedJob, id: "a" }, { ...documentedJob, id: "b" }], has_more: true }
        }
        : { body: { object: "list", data: after === "b" ? [{ ...documentedJob, id: "c" }] : [], has_more: false } }
    }, { apiVersion: "1.0.0" })
    return Effect.gen(function*() {
      const jobs = yield* FineTuning.FineTuning
      const all = yield* Stream.runCollect(jobs.listAll({ limit: 2 }))
      assert.deepStrictEqual(Chunk.toReadonlyArray(all).map((j) => j.id), ["a", "b", "c"])
    }).pipe(Effect.provide(layer))
  })
})
