/**
 * `multipart/form-data` request bodies, written by hand (the platform's undici client does not take Node's
 * global `FormData`) for every upload: text fields and files given as bytes, a blob, a path (a file-backed
 * `Blob`, read from disk while sending) or a caller's stream (sent once). Files held in memory give a body of
 * bytes (visible to the scripted test transport); anything else is streamed, so that a large file never sits
 * whole in memory, with its length when every size is known.
 * @internal
 */
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Stream from "effect/Stream"
import { BadRequest } from "../schemas/Errors.js"
import { type FileInput, filenameOf, fromBytes } from "../schemas/Upload.js"

/** A text field or a file. */
export type Part =
  | { readonly name: string; readonly value: string }
  | { readonly name: string; readonly file: FileInput }

/** A text field or a file held in memory (the gateway's uploads). */
export type MultipartPart =
  | { readonly name: string; readonly value: string }
  | {
    readonly name: string
    readonly filename: string
    readonly content: Uint8Array | string
    readonly contentType?: string | undefined
  }

/** In-memory parts as the encoder takes them. */
export const inMemory = (parts: ReadonlyArray<MultipartPart>): Array<Part> =>
  parts.map((part) =>
    "value" in part ? part : { name: part.name, file: fromBytes(part.content, part.filename, part.contentType) }
  )

/** Text fields of a request; `undefined` fields are left out. */
export type Fields = Readonly<Record<string, string | number | boolean | undefined>>

/** A multipart request and whether it may be sent again. */
export interface MultipartRequest {
  readonly request: HttpClientRequest.HttpClientRequest
  /** False when the body is a one-shot stream. */
  readonly retry: boolean
}

const encoder = new TextEncoder()

const hex = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/**
 * A name or file name as a header parameter: quoted, escaped as browsers do (WHATWG `FormData`: `"`, CR and LF as
 * `%22`, `%0D`, `%0A`), other control characters too, and a trailing backslash, which would escape the closing quote.
 * A name that this quoted form cannot give back as it is (one with a quote, a backslash, a percent sign or a control
 * character, each of which a server may read as an escape) comes a second time as `name*=utf-8''...` (RFC 5987),
 * which multipart parsers that know it (Python's, Starlette's, the platform's for file names) read instead.
 */
const param = (key: "name" | "filename", value: string): string => {
  const name = value.replace(loneSurrogate, "\uFFFD")
  const quoted = `${key}="${name.replace(/["\x00-\x1f\x7f]/g, hex).replace(/\\$/, "%5C")}"`
  return /["\\%\x00-\x1f\x7f]/.test(name)
    ? `${quoted}; ${key}*=utf-8''${encodeURIComponent(name).replace(/['()*]/g, hex)}`
    : quoted
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

interface Content {
  readonly bytes: Uint8Array | undefined
  readonly stream: Stream.Stream<Uint8Array, unknown>
  readonly size: number | undefined
  readonly type: string | undefined
  readonly retry: boolean
}

const contentOf = (file: FileInput, endpoint: string): Effect.Effect<Content, BadRequest> =>
  Effect.gen(function*() {
    switch (file._tag) {
      case "Bytes":
        return {
          bytes: file.bytes,
          stream: Stream.make(file.bytes),
          size: file.bytes.length,
          type: file.contentType,
          retry: true
        }
      case "Stream":
        return { bytes: undefined, stream: file.stream, size: file.size, type: file.contentType, retry: false }
      case "Blob":
      case "Path": {
        const blob = file._tag === "Blob" ? file.blob : yield* openBlob(file.path, file.contentType, endpoint)
        // lazy: every attempt opens a fresh reader, so the request may be sent again
        const stream = Stream.fromReadableStream({
          evaluate: () => blob.stream() as ReadableStream<Uint8Array>,
          onError: (cause) => cause
        })
        return { bytes: undefined, stream, size: blob.size, type: blob.type || undefined, retry: true }
      }
    }
  })

const concat = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => {
  const body = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    body.set(chunk, offset)
    offset += chunk.length
  }
  return body
}

/** Encodes `parts` with a random boundary; `endpoint` names the request in errors (an unreadable path). */
export const encode = (
  parts: ReadonlyArray<Part>,
  endpoint: string
): Effect.Effect<{ readonly body: HttpBody.HttpBody; readonly retry: boolean }, BadRequest> =>
  Effect.gen(function*() {
    const boundary = `----effect-aifs-${(yield* Random.nextInt).toString(36)}${(yield* Random.nextInt).toString(36)}`
    const contentType = `multipart/form-data; boundary=${boundary}`
    // each part as [its head, its content]; the content of a text field is in its head
    const pieces: Array<readonly [Uint8Array, Content | undefined]> = []
    for (const part of parts) {
      if ("value" in part) {
        pieces.push([
          encoder.encode(
            `--${boundary}\r\ncontent-disposition: form-data; ${param("name", part.name)}\r\n\r\n${part.value}\r\n`
          ),
          undefined
        ])
        continue
      }
      const content = yield* contentOf(part.file, endpoint)
      pieces.push([
        encoder.encode(
          `--${boundary}\r\ncontent-disposition: form-data; ${param("name", part.name)}; ${
            param("filename", filenameOf(part.file))
          }\r\ncontent-type: ${content.type ?? "application/octet-stream"}\r\n\r\n`
        ),
        content
      ])
    }
    const crlf = encoder.encode("\r\n")
    const tail = encoder.encode(`--${boundary}--\r\n`)
    const contents = pieces.flatMap(([, content]) => content === undefined ? [] : [content])
    const retry = contents.every((content) => content.retry)
    if (contents.every((content) => content.bytes !== undefined)) {
      const chunks = pieces.flatMap(([head, content]) => content === undefined ? [head] : [head, content.bytes!, crlf])
      return { body: HttpBody.uint8Array(concat([...chunks, tail]), contentType), retry }
    }
    const stream = Stream.concat(
      Stream.flatMap(
        Stream.fromIterable(pieces),
        ([head, content]) =>
          content === undefined ? Stream.make(head) : Stream.make(head).pipe(
            Stream.concat(content.stream),
            Stream.concat(Stream.make(crlf))
          )
      ),
      Stream.make(tail)
    )
    const known = contents.every((content) => content.size !== undefined)
    const length = pieces.reduce(
      (n, [head, content]) => n + head.length + (content === undefined ? 0 : (content.size ?? 0) + crlf.length),
      tail.length
    )
    return { body: HttpBody.stream(stream, contentType, known ? length : undefined), retry }
  })

/** Text fields as parts; `undefined` fields are left out. */
export const fieldParts = (fields: Fields): Array<Part> =>
  Object.entries(fields).flatMap(([name, value]) => value === undefined ? [] : [{ name, value: String(value) }])

/** `request` with a multipart body of `fields` and the file under `fileField`. */
export const multipart = (
  request: HttpClientRequest.HttpClientRequest,
  fields: Fields,
  fileField: string,
  file: FileInput
): Effect.Effect<MultipartRequest, BadRequest> =>
  Effect.map(
    encode([...fieldParts(fields), { name: fileField, file }], `${request.method} ${request.url}`),
    ({ body, retry }) => ({ request: HttpClientRequest.setBody(request, body), retry })
  )
