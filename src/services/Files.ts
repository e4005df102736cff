/**
 * Files: upload (`fine-tune` on `/v2`, `visual-rag` on `/v1`), list, retrieve, delete, validate.
 *
 * @example
 * ```ts
 * import { Files, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const training = [
 *   { messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello! How can I help?" }] }
 * ].map((example) => JSON.stringify(example)).join("\n")
 *
 * const program = Effect.gen(function*() {
 *   const files = yield* Files.Files
 *   // `Files.fromPath("train.jsonl")` streams a file from disk instead
 *   const file = yield* files.upload({ file: Files.fromBytes(training, "train.jsonl"), purpose: "fine-tune" })
 *   yield* files.validate(file.id)
 *   return `${file.id}: ${file.bytes} bytes, ${file.status}`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as UrlParams from "@effect/platform/UrlParams"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import { multipart } from "../internal/multipart.js"
import { paginate } from "../internal/pagination.js"
import { segment } from "../internal/pathSegment.js"
import type { ApiError } from "../schemas/Errors.js"
import {
  FileDeleted,
  FileList,
  FileObject,
  type FilePurpose,
  FileValidationRequest,
  type ListFilesParams
} from "../schemas/Files.js"
import type { FileInput } from "../schemas/Upload.js"
import { type Base, InferenceHttpClient, withoutResponse, type WithResponse } from "./InferenceHttpClient.js"

export type {
  /**
   * The file of an upload: bytes, a path, a stream or a `Blob` (see `Upload.FileInput`).
   *
   * @since 0.1.0
   * @category models
   */
  FileInput
} from "../schemas/Upload.js"
export {
  /**
   * A file from a `Blob` (see `Upload.fromBlob`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromBlob,
  /**
   * A file from bytes in memory, or a string as UTF-8 (see `Upload.fromBytes`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromBytes,
  /**
   * A file from a path, streamed from disk while the request is sent (see `Upload.fromPath`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromPath,
  /**
   * A file from a stream of chunks, sent once and never retried (see `Upload.fromStream`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromStream
} from "../schemas/Upload.js"

/**
 * Parameters of an upload.
 *
 * @since 0.1.0
 * @category models
 */
export interface UploadParams {
  /** The file: bytes, a path (streamed from disk), a stream or a blob. */
  readonly file: FileInput
  /** `fine-tune` (sent to `/v2`) or `visual-rag` (sent to `/v1`, for vector stores). */
  readonly purpose: FilePurpose
}

/**
 * Which file routes an id lives on: `visual-rag` files are on `/v1`, the rest on `/v2`.
 *
 * @since 0.1.0
 * @category models
 */
export interface FileOptions {
  /** The purpose the file was uploaded with (default `fine-tune`: `/v2`). */
  readonly purpose?: FilePurpose | undefined
}

/**
 * The base of a purpose: `visual-rag` files live on `/v1`.
 *
 * @since 0.1.0
 * @category models
 */
export const baseOf = (purpose: FilePurpose | undefined): Base => purpose === "visual-rag" ? "v1" : "v2"

/**
 * Files.
 *
 * @example
 * ```ts
 * import { Files, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Stream from "effect/Stream"
 *
 * // every file, page after page, and the fine-tune files deleted
 * const program = Effect.gen(function*() {
 *   const files = yield* Files.Files
 *   yield* files.upload({ file: Files.fromBytes("{}", "old.jsonl"), purpose: "fine-tune" })
 *   const deleted = yield* files.listAll({ purpose: "fine-tune" }).pipe(
 *     Stream.mapEffect((file) => files.delete(file.id)),
 *     Stream.runCount
 *   )
 *   return `${deleted} file(s) deleted`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => 1 file(s) deleted
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class Files extends Context.Tag("effect-aifs/Files")<Files, Files.Service>() {}

/**
 * The types of the `Files` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Files {
  /**
   * What `Files` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Uploads a file; a streamed file is sent once (no retry). */
    readonly upload: (params: UploadParams) => Effect.Effect<FileObject, ApiError>
    /** `upload`, with the response metadata. */
    readonly uploadWithResponse: (params: UploadParams) => Effect.Effect<WithResponse<FileObject>, ApiError>
    /** One page of files (by purpose: `visual-rag` lists on `/v1`). */
    readonly list: (params?: ListFilesParams) => Effect.Effect<FileList, ApiError>
    /** Every file, page after page (`after` = the last id while `has_more`). */
    readonly listAll: (params?: Omit<ListFilesParams, "after">) => Stream.Stream<FileObject, ApiError>
    /** One file by id. */
    readonly retrieve: (id: string, options?: FileOptions) => Effect.Effect<FileObject, ApiError>
    /** Deletes a file. */
    readonly delete: (id: string, options?: FileOptions) => Effect.Effect<FileDeleted, ApiError>
    /** Asks the service to validate a fine-tune file (`GET /files/validate/{id}`); the result shows on the file. */
    readonly validate: (id: string, options?: FileOptions) => Effect.Effect<FileValidationRequest, ApiError>
  }
}

/** The list's query: the platform leaves out a parameter that is undefined. */
const query = ({ after, limit, order, purpose }: ListFilesParams): UrlParams.Input => ({ purpose, limit, after, order })

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Files.Service, never, InferenceHttpClient> = Effect.gen(function*() {
  const http = yield* InferenceHttpClient
  // each request's span is the transport's, opened when the request leaves the limiter's line
  const uploadWithResponse = Effect.fnUntraced(function*(params: UploadParams) {
    const { request, retry } = yield* multipart(
      HttpClientRequest.post("/files"),
      { purpose: params.purpose },
      "file",
      params.file
    )
    return yield* http.json(request, FileObject, {
      base: baseOf(params.purpose),
      retry,
      span: { name: "Files.upload" }
    })
  })
  const list = Effect.fnUntraced(function*(params: ListFilesParams = {}) {
    const result = yield* http.json(
      HttpClientRequest.get("/files").pipe(HttpClientRequest.setUrlParams(query(params))),
      FileList,
      { base: baseOf(params.purpose), span: { name: "Files.list" } }
    )
    return result.value
  })
  const listAll = (params: Omit<ListFilesParams, "after"> = {}): Stream.Stream<FileObject, ApiError> =>
    paginate((after) => list({ ...params, ...(after === undefined ? {} : { after }) }))
  const retrieve = Effect.fnUntraced(function*(id: string, options: FileOptions = {}) {
    const result = yield* http.json(HttpClientRequest.get(`/files/${yield* segment(id)}`), FileObject, {
      base: baseOf(options.purpose),
      span: { name: "Files.retrieve" }
    })
    return result.value
  })
  const remove = Effect.fnUntraced(function*(id: string, options: FileOptions = {}) {
    const result = yield* http.json(HttpClientRequest.del(`/files/${yield* segment(id)}`), FileDeleted, {
      base: baseOf(options.purpose),
      span: { name: "Files.delete" }
    })
    return result.value
  })
  const validate = Effect.fnUntraced(function*(id: string, options: FileOptions = {}) {
    const result = yield* http.json(
      HttpClientRequest.get(`/files/validate/${yield* segment(id)}`),
      FileValidationRequest,
      { base: baseOf(options.purpose), span: { name: "Files.validate" } }
    )
    return result.value
  })
  return {
    upload: (params) => withoutResponse(uploadWithResponse(params)),
    uploadWithResponse,
    list,
    listAll,
    retrieve,
    delete: remove,
    validate
  }
})

/**
 * The service, on an `InferenceHttpClient`.
 *
 * @example
 * ```ts
 * import { ClientConfig, Files, InferenceHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // Files alone, on the Node HTTP client
 * export const FilesLive: Layer.Layer<Files.Files> = Files.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Files, never, InferenceHttpClient> = Layer.effect(Files, make)
