/**
 * The least answers OpenAI's OpenAPI document allows, decoded with this client's schemas: every field the document
 * does not require must be optional here. For each answer's schema, values are built from the document alone:
 * only the required fields, and then every field, each at its least; every alternative of a union and every
 * nullable field as null, one at a time (a sum of variants, not their product). The test prints how many.
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
import { AnyStreamEvent, Response } from "../../src/schemas/Responses.js"
import {
  SearchResultPage,
  VectorStore,
  VectorStoreDeleted,
  VectorStoreFile,
  VectorStoreFileList,
  VectorStoreList
} from "../../src/schemas/VectorStores.js"
import { document, type JsonSchema } from "../helpers/openapi.js"

/** The document's schema of each answer this client decodes, with the client's schema. */
const answers: ReadonlyArray<readonly [string, Schema.Schema.AnyNoContext]> = [
  ["ListModelsResponse", ModelList],
  ["Model", Model],
  ["CreateChatCompletionResponse", ChatCompletion],
  ["CreateChatCompletionStreamResponse", ChatCompletionChunk],
  ["CreateCompletionResponse", Completion],
  ["CreateEmbeddingResponse", EmbeddingList],
  ["Response", Response],
  ["ResponseStreamEvent", AnyStreamEvent],
  ["CreateTranscriptionResponseJson", Transcription],
  ["CreateTranscriptionResponseVerboseJson", Transcription],
  ["CreateTranscriptionResponseDiarizedJson", Transcription],
  ["CreateTranslationResponseJson", Transcription],
  ["CreateTranslationResponseVerboseJson", Transcription],
  ["ImagesResponse", ImagesResponse],
  ["OpenAIFile", FileObject],
  ["ListFilesResponse", FileList],
  ["DeleteFileResponse", FileDeleted],
  ["VectorStoreObject", VectorStore],
  ["ListVectorStoresResponse", VectorStoreList],
  ["DeleteVectorStoreResponse", VectorStoreDeleted],
  ["VectorStoreFileObject", VectorStoreFile],
  ["ListVectorStoreFilesResponse", VectorStoreFileList],
  ["VectorStoreSearchResultsPage", SearchResultPage],
  ["FineTuningJob", FineTuningJob],
  ["ListPaginatedFineTuningJobsResponse", FineTuningJobList],
  ["ListFineTuningJobEventsResponse", FineTuningJobEventList]
]

const named = (ref: string): JsonSchema => document.components.schemas[ref.slice(ref.lastIndexOf("/") + 1)] ?? {}

/** The properties and required names of an `allOf`'s parts, as one object schema. */
const merged = (parts: ReadonlyArray<JsonSchema>, seen: ReadonlySet<string>): JsonSchema => {
  const resolved = parts.map((part) => part.$ref === undefined || seen.has(part.$ref) ? part : named(part.$ref))
  return {
    type: "object",
    properties: Object.assign({}, ...resolved.map((part) => part.properties ?? {})),
    required: resolved.flatMap((part) => part.required ?? [])
  }
}

/**
 * The values of `schema`: the first is its least (the first alternative everywhere; only required fields, or every
 * field when `every`); each other one differs from it at one place. A recursive reference is not followed again
 * (its value is the least object).
 */
const variants = (schema: JsonSchema, every: boolean, seen: ReadonlySet<string> = new Set()): Array<unknown> => {
  if (schema.$ref !== undefined) {
    return seen.has(schema.$ref) ? [{}] : variants(named(schema.$ref), every, new Set([...seen, schema.$ref]))
  }
  if (schema.allOf !== undefined) return variants(merged(schema.allOf, seen), every, seen)
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives !== undefined) return alternatives.flatMap((alternative) => variants(alternative, every, seen))
  const orNull = schema.nullable === true ? [null] : []
  if (schema.const !== undefined) return [schema.const, ...orNull]
  if (schema.enum !== undefined) return [...schema.enum, ...orNull]
  const types = typeof schema.type === "string" ? [schema.type] : schema.type ?? ["object"]
  return [...types.flatMap((type) => ofType(type, schema, every, seen)), ...orNull]
}

const ofType = (type: string, schema: JsonSchema, every: boolean, seen: ReadonlySet<string>): Array<unknown> => {
  switch (type) {
    case "null":
      return [null]
    case "string":
      return ["x"]
    case "integer":
    case "number":
      return [0]
    case "boolean":
      return [false]
    case "array":
      return schema.items === undefined ? [[]] : variants(schema.items, every, seen).map((item) => [item])
    default: {
      const names = every ? Object.keys(schema.properties ?? {}) : schema.required ?? []
      const fields = names.map((name) => [name, variants(schema.properties?.[name] ?? {}, every, seen)] as const)
      const least = Object.fromEntries(fields.map(([name, values]) => [name, values[0]]))
      return [
        least,
        ...fields.flatMap(([name, values]) => values.slice(1).map((value) => ({ ...least, [name]: value })))
      ]
    }
  }
}

describe("the least answers OpenAI's document allows, decoded with this client's schemas", () => {
  for (const every of [false, true]) {
    it(every ? "every field present, each at its least" : "only the required fields", () => {
      let decoded = 0
      const failures: Array<string> = []
      for (const [name, schema] of answers) {
        assert.isDefined(document.components.schemas[name], `${name} is in the document`)
        for (const value of variants({ $ref: `#/components/schemas/${name}` }, every)) {
          const result = Schema.decodeUnknownEither(schema)(value)
          decoded++
          if (Either.isLeft(result)) {
            const why = ParseResult.ArrayFormatter.formatErrorSync(result.left)
              .map((issue) => `${issue.path.join(".")}: ${issue.message}`)
            failures.push(`${name}: ${why.join("; ")}`)
          }
        }
      }
      console.log(`openapi least answers (${every ? "every field" : "required only"}): ${decoded} decoded`)
      assert.deepStrictEqual([...new Set(failures)], [])
      assert.isAtLeast(decoded, answers.length)
    })
  }
})
