/**
 * `/files` of the emulator: fine-tune uploads on `/v2` (with the `validation` object), `visual-rag` uploads on
 * `/v1`, ISO-string timestamps and the service's camelCase extras, per-key isolation.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { authenticate, reject } from "../http.js"
import type { EmulatorState, KeySpec } from "../state.js"
import { checkTrainingFile, isoWithZone, type StoredFile } from "../store.js"
import { hash } from "../text.js"
import { readUpload, requireField, requireFile } from "../upload.js"

/** How long a requested validation takes. */
const validationMs = 1_000

const decoder = new TextDecoder()

/**
 * Which files a base serves: `/v1` the `visual-rag` files, `/v2` the others.
 *
 * @since 0.1.0
 * @category models
 */
export type FilesBase = "v1" | "v2"

const belongs = (base: FilesBase, purpose: string) => (base === "v1") === (purpose === "visual-rag")

const owner = (key: KeySpec) => {
  const h = hash(key.key).toString(16).padStart(8, "0")
  return { userId: `user-${h}`, groupId: `group-${key.tier}`, projectId: `project-${h.slice(0, 4)}` }
}

/**
 * The wire record of a file.
 *
 * @since 0.1.0
 * @category encoding
 */
export const fileRecord = (key: KeySpec, file: StoredFile, now: number) => {
  const created = isoWithZone(file.createdMs)
  const base = {
    id: file.id,
    object: "file",
    bytes: file.content.length,
    created_at: created,
    filename: file.filename,
    purpose: file.purpose,
    status: "uploaded",
    expires_at: null,
    status_details: null,
    ...owner(key),
    createdAt: created
  }
  if (file.purpose !== "fine-tune") return base
  const checked = file.validationRequestedMs !== undefined && now >= file.validationRequestedMs + validationMs
  const problem = checked ? checkTrainingFile(decoder.decode(file.content)) : undefined
  return {
    ...base,
    validation: {
      object: "validation",
      is_checked: checked,
      is_valid: checked && problem === undefined,
      message: !checked
        ? file.validationRequestedMs === undefined
          ? "The file has not been validated yet."
          : "Your validation request is in progress."
        : problem ?? "The file is a valid fine-tuning dataset.",
      errors: problem === undefined ? {} : { format: problem },
      is_generated_dataset: false
    }
  }
}

/**
 * One page of a list, newest first (or oldest with `order=asc`), after the cursor `after`.
 *
 * @since 0.1.0
 * @category pagination
 */
export const page = <A extends { readonly id: string }>(
  items: ReadonlyArray<A>,
  options: { readonly limit: number; readonly after?: string | undefined; readonly order?: string | undefined }
): { readonly data: Array<A>; readonly has_more: boolean } => {
  const ordered = options.order === "asc" ? [...items] : [...items].reverse()
  const start = options.after === undefined ? 0 : ordered.findIndex((item) => item.id === options.after) + 1
  const data = ordered.slice(start, start + options.limit)
  return { data, has_more: start + options.limit < ordered.length }
}

/**
 * Reads `limit` from the query: a default, a maximum, 422 on a non-number.
 *
 * @since 0.1.0
 * @category pagination
 */
export const limitParam = (fallback: number, max: number) =>
  Effect.flatMap(HttpServerRequest.ParsedSearchParams, (params) => {
    const given = params["limit"]
    // a repeated parameter counts with its last value, as FastAPI reads it
    const raw = Array.isArray(given) ? given[given.length - 1] : given
    if (raw === undefined) return Effect.succeed(fallback)
    // digits only, as FastAPI parses an int: no signs, exponents, fractions or hex
    const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN
    if (!Number.isInteger(n) || n < 1) {
      return reject(422, [{ type: "int_parsing", loc: ["query", "limit"], msg: "Input should be a positive integer" }])
    }
    return Effect.succeed(Math.min(n, max))
  })

/**
 * A single query parameter.
 *
 * @since 0.1.0
 * @category pagination
 */
export const queryParam = (name: string) =>
  Effect.map(HttpServerRequest.ParsedSearchParams, (params) => {
    const raw = params[name]
    return typeof raw === "string" ? raw : raw?.[raw.length - 1]
  })

/**
 * Reads `order` from the query: `asc` or `desc` (default), 422 otherwise.
 *
 * @since 0.1.0
 * @category pagination
 */
export const orderParam = Effect.flatMap(
  queryParam("order"),
  (order) =>
    order === undefined || order === "asc" || order === "desc"
      ? Effect.succeed(order)
      : reject(422, [{ type: "enum", loc: ["query", "order"], msg: "Input should be 'asc' or 'desc'" }])
)

const fileOf = (state: EmulatorState, key: KeySpec, base: FilesBase) =>
  Effect.gen(function*() {
    const { id } = yield* HttpRouter.params
    const file = id === undefined ? undefined : state.store.of(key.key).files.get(id)
    if (file === undefined || !belongs(base, file.purpose)) return yield* reject(404, `File '${id ?? ""}' not found`)
    return file
  })

/** `POST /files`: a multipart upload kept under its purpose, if the base takes that purpose. */
const uploadFile = (state: EmulatorState, base: FilesBase) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const upload = yield* readUpload(state)
    const file = yield* requireFile(upload)
    const purpose = yield* requireField(upload, "purpose")
    if (!belongs(base, purpose)) {
      return yield* reject(
        400,
        base === "v1"
          ? `Purpose '${purpose}' is not supported on /v1: only 'visual-rag'`
          : `Purpose '${purpose}' is not supported on /v2: upload 'visual-rag' files to /v1`
      )
    }
    const now = yield* Clock.currentTimeMillis
    const stored: StoredFile = {
      id: `file-${state.next().toString(36).padStart(8, "0")}`,
      filename: file.filename,
      purpose,
      contentType: file.contentType,
      content: file.content,
      createdMs: now
    }
    state.store.of(key.key).files.set(stored.id, stored)
    return HttpServerResponse.unsafeJson(fileRecord(key, stored, now))
  })

/** `GET /files`: a page of the base's files, of one purpose if asked. */
const list = (state: EmulatorState, base: FilesBase) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const purpose = yield* queryParam("purpose")
    const limit = yield* limitParam(100, 10_000)
    const after = yield* queryParam("after")
    const order = yield* orderParam
    const now = yield* Clock.currentTimeMillis
    const files = [...state.store.of(key.key).files.values()].filter((f) =>
      belongs(base, f.purpose) && (purpose === undefined || f.purpose === purpose)
    )
    const { data, has_more } = page(files, { limit, after, order })
    return HttpServerResponse.unsafeJson({
      object: "list",
      data: data.map((f) => fileRecord(key, f, now)),
      has_more
    })
  })

/**
 * The file routes of a base.
 *
 * @since 0.1.0
 * @category routers
 */
export const router = (state: EmulatorState, base: FilesBase) =>
  HttpRouter.empty.pipe(
    HttpRouter.post(
      "/files",
      uploadFile(state, base)
    ),
    HttpRouter.get(
      "/files",
      list(state, base)
    ),
    HttpRouter.get(
      "/files/validate/:id",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        const file = yield* fileOf(state, key, base)
        if (file.purpose !== "fine-tune") return yield* reject(400, "Only fine-tune files can be validated")
        file.validationRequestedMs ??= yield* Clock.currentTimeMillis
        return HttpServerResponse.unsafeJson({
          file_id: file.id,
          object: "validation",
          message: "Your validation request is in progress. Retrieve the file to see its validation result."
        })
      })
    ),
    HttpRouter.get(
      "/files/:id",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        const file = yield* fileOf(state, key, base)
        return HttpServerResponse.unsafeJson(fileRecord(key, file, yield* Clock.currentTimeMillis))
      })
    ),
    HttpRouter.del(
      "/files/:id",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        const file = yield* fileOf(state, key, base)
        state.store.of(key.key).files.delete(file.id)
        return HttpServerResponse.unsafeJson({ id: file.id, object: "file", deleted: true })
      })
    )
  )
