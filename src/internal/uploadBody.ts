/**
 * Streamed multipart bodies of the upload operations (Files, Audio, Images, JobQueue): bytes, a blob, a path
 * (a file-backed `Blob`, read from disk while sending) or a caller's stream (sent once). The body is written
 * by hand as a stream because the platform's undici client does not take the global `FormData`, and so that
 * a large file never sits whole in memory.
 * @internal
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Stream from "effect/Stream"
import { BadRequest } from "../schemas/Errors.js"
import { type FileInput, filenameOf } from "../schemas/Upload.js"

/** Text fields of a multipart request; `undefined` fields are left out. */
export type Fields = Readonly<Record<string, string | number | boolean | undefined>>

/** A multipart request and whether it may be sent again. */
export interface MultipartRequest {
  readonly request: HttpClientRequest.HttpClientRequest
  /** False when the body is a one-shot stream. */
  readonly retry: boolean
}

const openBlob = (path: string, contentType: string | undefined, endpoint: string) =>
  Effect.tryPromise({
    // imported on use, so that the module loads where there is no file system
    try: () => import("node:fs").then((fs) => fs.openAsBlob(path, contentType ? { type: contentType } : undefined)),
    catch: (cause) =>
      new BadRequest({
        // status 0: refused before anything was sent
        status: 0,
        endpoint,
        message: `cannot read ${path}: ${cause instanceof Error ? cause.message : String(cause)}`
      })
  })

const quote = (value: string) => value.replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A")

const textOf = (fields: Fields): Array<readonly [string, string]> =>
  Object.entries(fields).flatMap(([name, value]) => value === undefined ? [] : [[name, String(value)] as const])

const contentOf = (file: FileInput, endpoint: string) =>
  Effect.gen(function*() {
    switch (file._tag) {
      case "Bytes":
        return { stream: Stream.make(file.bytes), size: file.bytes.length, type: file.contentType, retry: true }
      case "Stream":
        return { stream: file.stream, size: file.size, type: file.contentType, retry: false }
      case "Blob":
      case "Path": {
        const blob = file._tag === "Blob" ? file.blob : yield* openBlob(file.path, file.contentType, endpoint)
        // lazy: every attempt opens a fresh reader, so the request may be sent again
        const stream = Stream.fromReadableStream({
          evaluate: () => blob.stream() as ReadableStream<Uint8Array>,
          onError: (cause) => cause
        })
        return { stream, size: blob.size, type: blob.type || undefined, retry: true }
      }
    }
  })

/**
 * Builds `request` with a streamed multipart body of `fields` and the file under `fileField`; its length is
 * sent when known.
 */
export const multipart = (
  request: HttpClientRequest.HttpClientRequest,
  fields: Fields,
  fileField: string,
  file: FileInput
): Effect.Effect<MultipartRequest, BadRequest> =>
  Effect.gen(function*() {
    const content = yield* contentOf(file, `${request.method} ${request.url}`)
    const boundary = `----effect-aifs-${(yield* Random.nextInt).toString(36)}${(yield* Random.nextInt).toString(36)}`
    const encoder = new TextEncoder()
    const head = textOf(fields).map(([name, value]) =>
      `--${boundary}\r\ncontent-disposition: form-data; name="${quote(name)}"\r\n\r\n${value}\r\n`
    ).join("") +
      `--${boundary}\r\ncontent-disposition: form-data; name="${quote(fileField)}"; filename="${
        quote(filenameOf(file))
      }"\r\ncontent-type: ${content.type ?? "application/octet-stream"}\r\n\r\n`
    const headBytes = encoder.encode(head)
    const tailBytes = encoder.encode(`\r\n--${boundary}--\r\n`)
    const body = Stream.make(headBytes).pipe(
      Stream.concat(content.stream),
      Stream.concat(Stream.make(tailBytes))
    )
    return {
      request: HttpClientRequest.bodyStream(request, body, {
        contentType: `multipart/form-data; boundary=${boundary}`,
        ...(content.size === undefined ? {} : { contentLength: headBytes.length + content.size + tailBytes.length })
      }),
      retry: content.retry
    }
  })
