/**
 * OpenAI's published OpenAPI document (test/fixtures/openai-openapi, MIT), parsed once for the compatibility ring.
 */
import { readFileSync } from "node:fs"
import { gunzipSync } from "node:zlib"

/** A JSON schema of the document, as loosely as the tests read it. */
export interface JsonSchema {
  readonly $ref?: string
  readonly type?: string | ReadonlyArray<string>
  readonly nullable?: boolean
  readonly const?: unknown
  readonly enum?: ReadonlyArray<unknown>
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly required?: ReadonlyArray<string>
  readonly items?: JsonSchema
  readonly allOf?: ReadonlyArray<JsonSchema>
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly oneOf?: ReadonlyArray<JsonSchema>
}

/** An operation of the document, with its examples. */
export interface Operation {
  readonly "x-oaiMeta"?: {
    readonly examples?:
      | { readonly title?: string; readonly response?: unknown }
      | ReadonlyArray<{ readonly title?: string; readonly response?: unknown }>
  }
}

/** The document. */
export const document = JSON.parse(
  gunzipSync(readFileSync(new URL("../fixtures/openai-openapi/openapi.json.gz", import.meta.url))).toString("utf8")
) as {
  readonly paths: Record<string, Record<string, Operation>>
  readonly components: { readonly schemas: Record<string, JsonSchema> }
}
