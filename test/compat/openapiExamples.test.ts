/**
 * Every example response of OpenAI's OpenAPI document (test/fixtures/openai-openapi) for the endpoints this client
 * serves, decoded with the client's own schemas: answers software written elsewhere has seen must not fail here.
 * Streamed examples are decoded event by event. The test prints how many it decoded.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { Transcription } from "../../src/schemas/Audio.js"
import { ChatCompletion, ChatCompletionChunk } from "../../src/schemas/Chat.js"
import { Completion } from "../../src/schemas/Completions.js"
import { EmbeddingList } from "../../src/schemas/Embeddings.js"
import { FileDeleted, FileList, FileObject } from "../../src/schemas/Files.js"
import { FineTuningJob, FineTuningJobEventList, FineTuningJobList } from "../../src/schemas/FineTuning.js"
import { ImagesResponse } from "../../src/schemas/Images.js"
import { Model, ModelList } from "../../src/schemas/Models.js"
import { Response, ResponseStreamEvent } from "../../src/schemas/Responses.js"
import {
  SearchResultPage,
  VectorStore,
  VectorStoreDeleted,
  VectorStoreFile,
  VectorStoreFileList,
  VectorStoreList
} from "../../src/schemas/VectorStores.js"
import { document } from "../helpers/openapi.js"

type AnySchema = Schema.Schema.AnyNoContext

/** The routes this client serves, with the schema of a whole answer and, for streams, of one event. */
const routes: ReadonlyArray<{
  readonly path: string
  readonly method: string
  readonly answer: AnySchema
  readonly event?: AnySchema
}> = [
  { path: "/models", method: "get", answer: ModelList },
  { path: "/models/{model}", method: "get", answer: Model },
  { path: "/chat/completions", method: "post", answer: ChatCompletion, event: ChatCompletionChunk },
  { path: "/completions", method: "post", answer: Completion, event: Completion },
  { path: "/embeddings", method: "post", answer: EmbeddingList },
  { path: "/responses", method: "post", answer: Response, event: ResponseStreamEvent },
  { path: "/audio/transcriptions", method: "post", answer: Transcription },
  { path: "/audio/translations", method: "post", answer: Transcription },
  { path: "/images/generations", method: "post", answer: ImagesResponse },
  { path: "/files", method: "get", answer: FileList },
  { path: "/files", method: "post", answer: FileObject },
  { path: "/files/{file_id}", method: "get", answer: FileObject },
  { path: "/files/{file_id}", method: "delete", answer: FileDeleted },
  { path: "/vector_stores", method: "get", answer: VectorStoreList },
  { path: "/vector_stores", method: "post", answer: VectorStore },
  { path: "/vector_stores/{vector_store_id}", method: "get", answer: VectorStore },
  { path: "/vector_stores/{vector_store_id}", method: "delete", answer: VectorStoreDeleted },
  { path: "/vector_stores/{vector_store_id}/files", method: "get", answer: VectorStoreFileList },
  { path: "/vector_stores/{vector_store_id}/files", method: "post", answer: VectorStoreFile },
  { path: "/vector_stores/{vector_store_id}/files/{file_id}", method: "get", answer: VectorStoreFile },
  { path: "/vector_stores/{vector_store_id}/search", method: "post", answer: SearchResultPage },
  { path: "/fine_tuning/jobs", method: "post", answer: FineTuningJob },
  { path: "/fine_tuning/jobs", method: "get", answer: FineTuningJobList },
  { path: "/fine_tuning/jobs/{fine_tuning_job_id}", method: "get", answer: FineTuningJob },
  { path: "/fine_tuning/jobs/{fine_tuning_job_id}/events", method: "get", answer: FineTuningJobEventList },
  { path: "/fine_tuning/jobs/{fine_tuning_job_id}/cancel", method: "post", answer: FineTuningJob }
]

/**
 * JSON as the examples write it: elided lines (`.... (1536 floats total)`), trailing commas, and in a few a key
 * without quotes or a comma left out at the end of a line; each repair only when the text does not parse as it is.
 */
const lenientJson = (text: string): unknown => {
  const repairs: ReadonlyArray<(t: string) => string> = [
    (t) => t,
    (t) => t.replace(/^\s*\.{3,}.*$/gm, "").replace(/,(\s*[}\]])/g, "$1"),
    (t) => t.replace(/([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:/g, "$1\"$2\":"),
    (t) => t.replace(/("|\d|true|false|null|[}\]])([ \t]*\n\s*")/g, "$1,$2")
  ]
  let repaired = text
  for (const [i, repair] of repairs.entries()) {
    repaired = repair(repaired)
    try {
      return JSON.parse(repaired)
    } catch (error) {
      if (i === repairs.length - 1) throw error
    }
  }
  return undefined
}

/**
 * The events of a streamed example: its `data:` lines (without `[DONE]`), or else its blocks separated by blank
 * lines, each one JSON (the document writes some streams so); elisions left out.
 */
const streamPayloads = (text: string): ReadonlyArray<unknown> => {
  const lines = text.split("\n").map((line) => line.trim())
  const blocks = lines.some((line) => line.startsWith("data:"))
    ? lines.filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim())
    : text.split(/\n\s*\n/).map((block) => block.trim())
  return blocks.filter((block) => block !== "" && block !== "[DONE]" && !/^\.+$/.test(block)).map(lenientJson)
}

/** An example's JSON: whole, or else its events; neither when it is no JSON at all. */
const examplePayloads = (text: string): { readonly whole?: unknown; readonly events?: ReadonlyArray<unknown> } => {
  try {
    return { whole: lenientJson(text) }
  } catch {
    try {
      const events = streamPayloads(text)
      return events.length > 0 ? { events } : {}
    } catch {
      return {}
    }
  }
}

describe("OpenAI's example responses, decoded with this client's schemas", () => {
  it("every example of every route served: whole answers and stream events", () => {
    let decoded = 0
    let events = 0
    const unreadable: Array<string> = []
    const failures: Array<string> = []
    for (const route of routes) {
      const operation = document.paths[route.path]?.[route.method]
      assert.isDefined(operation, `${route.method} ${route.path} is in the document`)
      const raw = operation!["x-oaiMeta"]?.examples
      const examples = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw]
      for (const example of examples) {
        const name = `${route.method.toUpperCase()} ${route.path} "${example.title ?? "example"}"`
        if (typeof example.response !== "string") continue
        const payloads = examplePayloads(example.response)
        const check = (schema: AnySchema, value: unknown, what: string) => {
          const result = Schema.decodeUnknownEither(schema)(value)
          if (Either.isLeft(result)) {
            failures.push(
              `${what}: ${ParseResult.TreeFormatter.formatErrorSync(result.left).split("\n").slice(0, 6).join(" ")}`
            )
          }
        }
        if (payloads.whole !== undefined) {
          check(route.answer, payloads.whole, name)
          decoded++
        } else if (payloads.events !== undefined && route.event !== undefined) {
          payloads.events.forEach((event, i) => check(route.event!, event, `${name} event ${i}`))
          decoded++
          events += payloads.events.length
        } else {
          unreadable.push(name)
        }
      }
    }
    console.log(
      `openapi examples: ${decoded} decoded (${events} stream events) over ${routes.length} routes; ` +
        `${unreadable.length} not JSON (${unreadable.join(", ") || "none"})`
    )
    assert.deepStrictEqual(failures, [])
    assert.isAtLeast(decoded, 40)
  })
})
