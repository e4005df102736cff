/**
 * The emulator's answers against OpenAI's published OpenAPI document (test/fixtures/openai-openapi, MIT): every
 * shared endpoint's JSON and each SSE event validated with a JSON-schema validator (draft 2020-12) against the
 * document's own schemas, with the differences API-FACTS records for AIFS as a short, explicit allow-list.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Testing from "../../src/layers/Testing.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { document } from "../helpers/openapi.js"

/** OpenAPI 3.0's `nullable: true` (a few schemas still carry it) as JSON Schema: the schema or null. */
const withoutNullable = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(withoutNullable)
  if (typeof node !== "object" || node === null) return node
  const { nullable, ...rest } = node as Record<string, unknown>
  const inner = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, withoutNullable(value)]))
  return nullable === true ? { anyOf: [inner, { type: "null" }] } : inner
}

/** The document as one schema, its components reachable by `openapi#/components/schemas/<name>`. */
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })
ajv.addSchema({ $id: "openapi", components: withoutNullable(document.components) }, "openapi")

const missing = (e: ErrorObject, ...names: ReadonlyArray<string>) =>
  e.keyword === "required" && names.includes((e.params as { missingProperty: string }).missingProperty)

/**
 * Where the emulator's answers differ from the document on purpose: AIFS answers so (API-FACTS), or OpenAI itself
 * does and the document does not say it. Each entry: the schema, which errors it allows, and why.
 */
export const aifsDifferences: ReadonlyArray<{
  readonly schema: string
  readonly allows: (error: ErrorObject) => boolean
  readonly why: string
}> = [
  {
    schema: "ListModelsResponse",
    allows: (e) => /^\/data\/\d+$/.test(e.instancePath) && missing(e, "object", "created", "owned_by"),
    why: "AIFS model records carry `id` and `meta_data`; `object`, `created`, `owned_by` are never shown (API-FACTS)"
  },
  {
    schema: "Model",
    allows: (e) => e.instancePath === "" && missing(e, "object", "created", "owned_by"),
    why: "the same for one model"
  },
  {
    schema: "CreateCompletionResponse",
    allows: (e) => /^\/choices\/\d+\/finish_reason$/.test(e.instancePath),
    why: "a completion stream's chunks before the last have `finish_reason: null`, as OpenAI streams them (the " +
      "document has no schema of its own for completion chunks)"
  },
  {
    schema: "CreateEmbeddingResponse",
    allows: (e) => /^\/data\/\d+\/embedding$/.test(e.instancePath) && e.keyword === "type",
    why: "with `encoding_format: \"base64\"` an embedding is a base64 string, as OpenAI sends it (the document types " +
      "it as numbers only)"
  }
]

interface Checked {
  readonly schema: string
  readonly what: string
  readonly errors: ReadonlyArray<string>
}

const checked: Array<Checked> = []

const validate = (schema: string, what: string, value: unknown) => {
  const check = ajv.getSchema(`openapi#/components/schemas/${schema}`)
  assert.isDefined(check, `the document has ${schema}`)
  check!(value)
  const errors = (check!.errors ?? [])
    .filter((e: ErrorObject) => !aifsDifferences.some((d) => d.schema === schema && d.allows(e)))
    .map((e: ErrorObject) => `${e.instancePath || "/"} ${e.message ?? ""} ${JSON.stringify(e.params)}`)
  checked.push({ schema, what, errors })
}

/** The schema of each Responses stream event, by its `type` (the document's `ResponseStreamEvent` members). */
const eventSchemas = new Map(
  (document.components.schemas["ResponseStreamEvent"] as { anyOf: ReadonlyArray<{ $ref: string }> }).anyOf.map(
    ({ $ref }) => {
      const name = $ref.split("/").pop()!
      const type = (document.components.schemas[name] as { properties: { type: { enum: ReadonlyArray<string> } } })
        .properties.type.enum[0]!
      return [type, name] as const
    }
  )
)

const post = (path: string, body: unknown) => HttpClientRequest.post(path).pipe(HttpClientRequest.bodyUnsafeJson(body))

/** Every event's data of an SSE answer, parsed, without the terminator. */
const events = (request: HttpClientRequest.HttpClientRequest, terminator: string | null) =>
  Effect.flatMap(InferenceHttpClient, (http) =>
    Stream.runCollect(http.sse(request)).pipe(
      Effect.map((all) =>
        [...all].filter((e) => e.data.trim() !== "" && e.data.trim() !== terminator).map((e) => JSON.parse(e.data))
      )
    ))

const json = (request: HttpClientRequest.HttpClientRequest) =>
  Effect.flatMap(InferenceHttpClient, (http) => Effect.map(http.json(request, Schema.Unknown), (r) => r.value))

describe("the emulator's answers, validated against OpenAI's OpenAPI document", () => {
  it.effect("models, chat, completions, embeddings and responses, plain and streamed", () =>
    Effect.gen(function*() {
      const list = yield* json(HttpClientRequest.get("/models"))
      validate("ListModelsResponse", "GET /models", list)
      validate("Model", "GET /models/{id}", yield* json(HttpClientRequest.get("/models/gpt-4o")))

      const tool = {
        type: "function",
        function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }
      }
      for (const model of ["Llama-3.3-70B-Instruct", "gpt-oss-120b", "gpt-4o"]) {
        const chat = { model, messages: [{ role: "user", content: "Hello there" }] }
        validate("CreateChatCompletionResponse", `chat ${model}`, yield* json(post("/chat/completions", chat)))
        for (const chunk of yield* events(post("/chat/completions", { ...chat, stream: true }), "[DONE]")) {
          validate("CreateChatCompletionStreamResponse", `chat stream ${model}`, chunk)
        }
      }
      const withTool = { model: "gpt-4o", messages: [{ role: "user", content: "get_weather Bonn" }], tools: [tool] }
      validate("CreateChatCompletionResponse", "chat tool call", yield* json(post("/chat/completions", withTool)))
      for (const chunk of yield* events(post("/chat/completions", { ...withTool, stream: true }), "[DONE]")) {
        validate("CreateChatCompletionStreamResponse", "chat stream tool call", chunk)
      }

      const completion = { model: "Llama-3.3-70B-Instruct", prompt: "Once upon", max_tokens: 8 }
      validate("CreateCompletionResponse", "completion", yield* json(post("/completions", completion)))
      for (const chunk of yield* events(post("/completions", { ...completion, stream: true }), "[DONE]")) {
        validate("CreateCompletionResponse", "completion stream", chunk)
      }

      for (const encoding_format of ["float", "base64"]) {
        const body = { model: "text-embedding-bge-m3", input: ["a", "b"], encoding_format }
        validate("CreateEmbeddingResponse", `embeddings ${encoding_format}`, yield* json(post("/embeddings", body)))
      }

      const response = { model: "gpt-4o", input: "Say hi" }
      validate("Response", "responses", yield* json(post("/responses", response)))
      const responseTool = {
        model: "gpt-4o",
        input: "get_weather Bonn",
        tools: [{ type: "function", name: "get_weather", parameters: tool.function.parameters }]
      }
      validate("Response", "responses tool call", yield* json(post("/responses", responseTool)))
      for (const event of yield* events(post("/responses", { ...response, stream: true }), null)) {
        const schema = eventSchemas.get(String(event.type))
        assert.isDefined(schema, `the document knows the event ${String(event.type)}`)
        validate(schema!, `responses stream ${String(event.type)}`, event)
      }

      const failed = checked.filter((c) => c.errors.length > 0)
      console.log(
        `openapi: ${checked.length} answers validated (${new Set(checked.map((c) => c.schema)).size} schemas), ` +
          `${failed.length} with errors, ${aifsDifferences.length} allowed AIFS differences`
      )
      assert.deepStrictEqual(
        failed.map((c) => `${c.what} (${c.schema}): ${c.errors.slice(0, 4).join("; ")}`),
        []
      )
    }).pipe(Effect.provide(Testing.layerEmulator({ client: { maxRetries: 0 }, rateLimiter: false }))), 60_000)
})
