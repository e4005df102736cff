/**
 * File manager: multipart upload with a repeated `files` field (`POST /file-manager/api/v1/files/?kb=local`)
 * and status polling by `fileIds` (`GET ...?kb=local&fileIds=a&fileIds=b`).
 *
 * @example
 * ```ts
 * import { FileManager, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const fileManager = yield* FileManager.FileManager
 *   const pending = yield* fileManager.upload([
 *     { name: "a.txt", content: "First document." },
 *     { name: "b.md", content: "# Second document" }
 *   ])
 *   const done = yield* fileManager.waitForUploads(pending.map((file) => file.fileId), { interval: "100 millis" })
 *   return done.map((file) => `${file.fileName}: ${file.status}`)
 * })
 *
 * const gateway = Testing.layerGatewayEmulator({ gateway: { uploadDelay: "100 millis" } })
 *
 * Effect.runPromise(program.pipe(Effect.provide(gateway))).then(console.log)
 * // => [ 'a.txt: uploaded', 'b.md: uploaded' ]
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Multipart from "../../internal/multipart.js"
import { pollOrFail } from "../../internal/poll.js"
import { type ApiError, Timeout } from "../../schemas/Errors.js"
import { type GatewayFile, GatewayFileList } from "../../schemas/Gateway.js"
import { Gateway, withQuery } from "./Gateway.js"
import type { RequestOptions } from "./GatewayHttpClient.js"

/**
 * A file to upload.
 *
 * @since 0.1.0
 * @category models
 */
export interface UploadFile {
  /** File name, with its extension (the gateway checks the type by it). */
  readonly name: string
  /** The content. */
  readonly content: Uint8Array | string
  /** Media type (default from the extension, else `application/octet-stream`). */
  readonly contentType?: string | undefined
}

/**
 * Polling settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface WaitOptions {
  /** Knowledge base (default `local`). */
  readonly kb?: string | undefined
  /** Pause between polls (default 2 s, as the guide). */
  readonly interval?: Duration.DurationInput | undefined
  /** Longest wait (default 5 minutes); then `Timeout`. */
  readonly timeout?: Duration.DurationInput | undefined
}

/**
 * The file manager.
 *
 * @example
 * ```ts
 * import { FileManager, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // an upload is one request for all files; each file then has a status of its own
 * const program = Effect.gen(function*() {
 *   const fileManager = yield* FileManager.FileManager
 *   const [file] = yield* fileManager.upload([{ name: "report.csv", content: "quarter,revenue\nQ1,10\n" }])
 *   const records = yield* fileManager.list(file ? [file.fileId] : [])
 *   return records.map((record) => `${record.fileName} is ${record.status}`)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * // => [ 'report.csv is pending' ]
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class FileManager extends Context.Tag("effect-aifs/gateway/FileManager")<FileManager, FileManager.Service>() {}

/**
 * The types of the `FileManager` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace FileManager {
  /**
   * What `FileManager` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Uploads files in one request; answers one pending record per file, in order. */
    readonly upload: (
      files: ReadonlyArray<UploadFile>,
      options?: { readonly kb?: string | undefined }
    ) => Effect.Effect<ReadonlyArray<GatewayFile>, ApiError>
    /** The current records of files. */
    readonly list: (
      fileIds: ReadonlyArray<string>,
      options?: { readonly kb?: string | undefined }
    ) => Effect.Effect<ReadonlyArray<GatewayFile>, ApiError>
    /** Polls until every file is done (`uploaded`, `duplicated`) or failed; `Timeout` after `timeout`. */
    readonly waitForUploads: (
      fileIds: ReadonlyArray<string>,
      options?: WaitOptions
    ) => Effect.Effect<ReadonlyArray<GatewayFile>, ApiError>
  }
}

/**
 * The service path.
 *
 * @since 0.1.0
 * @category constants
 */
export const path = "/file-manager"

const mediaTypes: Record<string, string> = {
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
  html: "text/html",
  pdf: "application/pdf",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation"
}

/**
 * The media type of a file name by its extension.
 *
 * @since 0.1.0
 * @category helpers
 */
export const mediaTypeOf = (name: string): string =>
  mediaTypes[name.split(".").pop()?.toLowerCase() ?? ""] ?? "application/octet-stream"

/**
 * Builds the service on the `Gateway` client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<FileManager.Service, never, Gateway> = Effect.gen(function*() {
  const gateway = yield* Gateway
  const files = `${path}/api/v1/files/`
  // each request's span is the transport's
  const upload = Effect.fnUntraced(
    function*(items: ReadonlyArray<UploadFile>, options?: { readonly kb?: string | undefined }) {
      const { body } = yield* Multipart.encode(
        Multipart.inMemory(items.map((item) => ({
          name: "files",
          filename: item.name,
          content: item.content,
          contentType: item.contentType ?? mediaTypeOf(item.name)
        }))),
        `POST ${files}`
      )
      const request = withQuery(HttpClientRequest.post(files), { kb: options?.kb ?? "local" }).pipe(
        HttpClientRequest.setBody(body)
      )
      // a re-sent upload is answered `duplicated`, which counts as done
      return (yield* gateway.send(request, GatewayFileList, {
        span: { name: "FileManager.upload", attributes: { "aifs.gateway.files": items.length } }
      })).value
    }
  )
  const listWith = (
    fileIds: ReadonlyArray<string>,
    kb: string | undefined,
    sendOptions: Omit<RequestOptions, "token">
  ) =>
    Effect.map(
      gateway.send(
        withQuery(HttpClientRequest.get(files), { kb: kb ?? "local", fileIds }),
        GatewayFileList,
        sendOptions
      ),
      (r) => r.value
    )
  const list = (fileIds: ReadonlyArray<string>, options?: { readonly kb?: string | undefined }) =>
    listWith(fileIds, options?.kb, { span: { name: "FileManager.list" } })
  // several requests: one logical span around the polls, each poll's request without a span of its own
  const waitForUploads = Effect.fnUntraced(
    function*(fileIds: ReadonlyArray<string>, options: WaitOptions = {}) {
      const timeout = Duration.decode(options.timeout ?? Duration.minutes(5))
      return yield* pollOrFail(
        listWith(fileIds, options.kb, {}),
        (records) => fileIds.every((id) => records.some((r) => r.fileId === id && (r.isDone || r.isFailed))),
        {
          interval: options.interval ?? Duration.seconds(2),
          timeout,
          onTimeout: () =>
            new Timeout({
              message: `uploads not finished within ${Duration.format(timeout)}`,
              endpoint: `GET ${files}`,
              timeout: "total",
              after: timeout
            })
        }
      )
    },
    Effect.withSpan("FileManager.waitForUploads", {
      captureStackTrace: false,
      attributes: { "aifs.operation": "FileManager.waitForUploads" }
    })
  )
  return { upload, list, waitForUploads }
})

/**
 * The service, on a `Gateway` client.
 *
 * @example
 * ```ts
 * import { FileManager, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // the service on any `Gateway` client (here the one of `Testing.layerGatewayEmulator`)
 * const FileManagerLive = FileManager.layer.pipe(Layer.provide(Testing.layerGatewayEmulator()))
 *
 * const program = Effect.flatMap(FileManager.FileManager, (fileManager) => fileManager.list([]))
 *
 * Effect.runPromise(program.pipe(Effect.provide(FileManagerLive))).then((files) => console.log(files.length))
 * // => 0
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<FileManager, never, Gateway> = Layer.effect(FileManager, make)
