/**
 * Multipart uploads of the emulator: fields and files, counted while the body streams in so that an upload
 * over the size limit gets 413 with a `detail` as soon as it passes the limit (never a crash, never more than
 * the limit buffered); a body without a boundary, with a broken one or cut off gets 400, never a hang.
 *
 * @since 0.1.0
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Multipart from "@effect/platform/Multipart"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { announcedLength, readBody, type Reject, reject } from "./http.js"

/**
 * A received upload.
 *
 * @since 0.1.0
 * @category models
 */
export interface Upload {
  /** The text fields. */
  readonly fields: Readonly<Record<string, string>>
  /** The file parts, by field name (the first of a repeated field). */
  readonly files: ReadonlyMap<string, UploadedFile>
  /** Every file part, in order (repeated fields included). */
  readonly parts: ReadonlyArray<UploadedFile>
}

/**
 * A received file part.
 *
 * @since 0.1.0
 * @category models
 */
export interface UploadedFile {
  /** The form field it came in. */
  readonly key: string
  /** The file name as sent: only ever a name, never a path on this machine. */
  readonly filename: string
  readonly contentType: string
  readonly content: Uint8Array
}

/**
 * What a multipart route accepts.
 *
 * @since 0.1.0
 * @category models
 */
export interface UploadLimits {
  /** Largest total of file bytes; more gets 413. */
  readonly maxUploadBytes: number
}

class TooLarge {
  readonly _tag = "TooLarge"
}

class Malformed {
  readonly _tag = "Malformed"
  constructor(readonly reason: string) {}
}

/** Room for part headers and fields besides the file bytes. */
const overhead = 64 * 1024

const concat = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  const out = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

/** Where the body's closing delimiter (`--boundary--`, first in the body or after a line break) ends. */
const closingEnd = (body: Buffer, boundary: string): number | undefined => {
  const closing = Buffer.from(`--${boundary}--`)
  for (let at = body.indexOf(closing); at >= 0; at = body.indexOf(closing, at + 1)) {
    if (at === 0 || (body[at - 2] === 0x0d && body[at - 1] === 0x0a)) return at + closing.length
  }
  return undefined
}

const tooLarge = (limit: number) => reject(413, `File too large: the upload limit is ${limit} bytes`)

const sizeError = (error: Multipart.MultipartError) =>
  error.reason === "FileTooLarge" || error.reason === "BodyTooLarge" || error.reason === "FieldTooLarge"
    ? new TooLarge()
    : new Malformed(error.reason)

/**
 * Reads a `multipart/form-data` body: 413 past `maxUploadBytes` (announced, or as soon as the body passes it
 * while it streams in), 422 when it is not multipart, 400 when it has no boundary or cannot be parsed
 * (broken boundary, truncated body).
 *
 * @since 0.1.0
 * @category bodies
 */
export const readUpload = (
  limits: UploadLimits,
  options: { readonly field?: string | undefined } = {}
): Effect.Effect<Upload, Reject, HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const limit = limits.maxUploadBytes
    const contentType = request.headers["content-type"] ?? ""
    if (!contentType.toLowerCase().startsWith("multipart/form-data")) {
      return yield* reject(422, [{
        type: "missing",
        loc: ["body", options.field ?? "file"],
        msg: "Field required (expected a multipart/form-data body)"
      }])
    }
    // the parser cannot start without a boundary: refuse before reading
    const boundary = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType)
    const delimiter = boundary === null ? undefined : boundary[1] ?? boundary[2]
    if (delimiter === undefined) return yield* reject(400, "Missing boundary in the multipart/form-data content type")
    // an announced length over the limit (with room for the part headers) is refused before reading
    if ((announcedLength(request) ?? 0) > limit + overhead) return yield* tooLarge(limit)
    const received = yield* readBody(request, limit + overhead).pipe(
      Effect.catchTags({
        BodyTooLarge: () => tooLarge(limit),
        BodyUnreadable: () => reject(400, "The request body could not be read")
      })
    )
    const body = Buffer.from(received.buffer, received.byteOffset, received.byteLength)
    // the platform's parser never finishes a file part whose body is cut off, and reading that part then loops
    // without end: the body is read whole, within the limit, and must reach its closing delimiter first
    const end = closingEnd(body, delimiter)
    if (end === undefined) {
      return yield* reject(400, "The multipart body could not be parsed (truncated: no closing boundary)")
    }
    const fields: Record<string, string> = {}
    const files = new Map<string, UploadedFile>()
    const parts: Array<UploadedFile> = []
    let total = 0
    const outcome = yield* Stream.make(body.subarray(0, end)).pipe(
      Stream.pipeThroughChannelOrFail(Multipart.makeChannel<never>(request.headers)),
      Stream.mapError(sizeError),
      Stream.runForEach((part) =>
        Effect.gen(function*() {
          if (Multipart.isField(part)) {
            fields[part.key] = part.value
            return
          }
          if (!Multipart.isFile(part)) return
          const chunks: Array<Uint8Array> = []
          let size = 0
          yield* part.content.pipe(
            Stream.mapError(sizeError),
            Stream.runForEach((chunk) => {
              size += chunk.length
              total += chunk.length
              if (total > limit) return Effect.fail(new TooLarge())
              chunks.push(chunk)
              return Effect.void
            })
          )
          const file = {
            key: part.key,
            filename: part.name,
            contentType: part.contentType,
            content: concat(chunks, size)
          }
          if (!files.has(part.key)) files.set(part.key, file)
          parts.push(file)
        })
      ),
      Effect.as<TooLarge | Malformed | undefined>(undefined),
      Effect.catchAll((error) => Effect.succeed(error)),
      // a `filename*` that does not percent-decode throws inside the parser
      Effect.catchSomeDefect((defect) =>
        defect instanceof URIError
          ? Option.some(Effect.succeed(new Malformed("bad filename* encoding")))
          : Option.none()
      )
    )
    if (outcome?._tag === "TooLarge") return yield* tooLarge(limit)
    if (outcome !== undefined) return yield* reject(400, `The multipart body could not be parsed (${outcome.reason})`)
    return { fields, files, parts }
  })

/**
 * The file under `name`, or 422 `missing` as FastAPI answers.
 *
 * @since 0.1.0
 * @category bodies
 */
export const requireFile = (upload: Upload, name = "file"): Effect.Effect<UploadedFile, Reject> => {
  const file = upload.files.get(name)
  return file === undefined
    ? reject(422, [{ type: "missing", loc: ["body", name], msg: "Field required" }])
    : Effect.succeed(file)
}

/**
 * The text field under `name`, or 422 `missing`.
 *
 * @since 0.1.0
 * @category bodies
 */
export const requireField = (upload: Upload, name: string): Effect.Effect<string, Reject> => {
  const value = upload.fields[name]
  return value === undefined
    ? reject(422, [{ type: "missing", loc: ["body", name], msg: "Field required" }])
    : Effect.succeed(value)
}
