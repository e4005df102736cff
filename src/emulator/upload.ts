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

/**
 * What the platform's parser cannot read in a part's headers and Starlette can: raw UTF-8 past Latin-1 in a name (the
 * parser takes quoted values up to U+00FF only and drops the whole header otherwise), and `name*` (RFC 5987; it reads
 * only `filename*`). A header block with bytes past ASCII goes to the parser as Latin-1, one character per byte, and
 * its names are read back as UTF-8 (as Starlette does); a `name*` replaces the name.
 */
interface PartNames {
  /** The block went to the parser as Latin-1: its names are UTF-8 read as Latin-1. */
  readonly latin1: boolean
  /** The file name came from `filename*`, which the parser decodes itself. */
  readonly extendedFilename: boolean
  /** The name of a `name*`. */
  readonly extendedName: string | undefined
}

/** `charset'language'percent-encoded` (RFC 5987) decoded, or undefined when it does not decode. */
const extendedValue = (value: string): string | undefined => {
  const [charset = "", , encoded] = value.replace(/^"(.*)"$/, "$1").split("'")
  try {
    if (encoded === undefined) return undefined
    if (/^utf-8$/i.test(charset)) return decodeURIComponent(encoded)
    if (/^iso-8859-1$/i.test(charset)) {
      return encoded.replace(/%([0-9A-Fa-f]{2})/g, (_, code: string) => String.fromCharCode(parseInt(code, 16)))
    }
  } catch {
    // malformed: as an unknown charset
  }
  return undefined
}

/** The parameters of a `content-disposition` header, quoted values kept as sent (the parser does not unescape them). */
const dispositionParameters = (header: string): Map<string, string> => {
  const parameters = new Map<string, string>()
  const parameter = /;\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;\s]*)\s*/y
  parameter.lastIndex = header.indexOf(";")
  for (let match = parameter.exec(header); match !== null; match = parameter.exec(header)) {
    parameters.set(match[1]!.toLowerCase(), match[2]!)
  }
  return parameters
}

/** The body with each part's headers made readable to the parser, and what to read back from each part, in order. */
const readableHeaders = (
  body: Buffer,
  boundary: string
): { readonly body: Buffer; readonly parts: Array<PartNames> } => {
  const delimiter = Buffer.from(`--${boundary}`)
  const pieces: Array<Buffer> = []
  const parts: Array<PartNames> = []
  let copied = 0
  for (let at = body.indexOf(delimiter); at >= 0; at = body.indexOf(delimiter, at + 1)) {
    if (at > 0 && (body[at - 2] !== 0x0d || body[at - 1] !== 0x0a)) continue
    const start = at + delimiter.length
    if (body[start] === 0x2d && body[start + 1] === 0x2d) break
    const end = body.indexOf("\r\n\r\n", start)
    if (end < 0) break
    const block = body.subarray(Math.min(start + 2, end), end)
    const disposition = /^content-disposition:(.*)$/im.exec(block.toString("latin1"))?.[1] ?? ""
    const parameters = dispositionParameters(disposition)
    const name = parameters.get("name*")
    const names: PartNames = {
      latin1: block.some((byte) => byte >= 0x80),
      extendedFilename: parameters.has("filename*"),
      extendedName: name === undefined ? undefined : extendedValue(name)
    }
    parts.push(names)
    if (names.latin1) {
      pieces.push(body.subarray(copied, start + 2), Buffer.from(block.toString("latin1"), "utf8"))
      copied = end
    }
    at = end
  }
  return { body: copied === 0 ? body : Buffer.concat([...pieces, body.subarray(copied)]), parts }
}

/** A name the parser gave for a part whose headers it read as Latin-1, as the UTF-8 it was sent in. */
const fromLatin1 = (name: string): string => Buffer.from(name, "latin1").toString("utf8")

const tooLarge = (limit: number) => reject(413, `File too large: the upload limit is ${limit} bytes`)

const sizeError = (error: Multipart.MultipartError) =>
  error.reason === "FileTooLarge" || error.reason === "BodyTooLarge" || error.reason === "FieldTooLarge"
    ? new TooLarge()
    : new Malformed(error.reason)

/**
 * The body of a `multipart/form-data` request, read whole within the limit up to its closing delimiter: 422 when it
 * is not multipart, 400 without a boundary or a closing delimiter, 413 past the limit.
 */
const multipartBody = (
  request: HttpServerRequest.HttpServerRequest,
  limit: number,
  field: string
): Effect.Effect<{ readonly body: Buffer; readonly end: number; readonly delimiter: string }, Reject> =>
  Effect.gen(function*() {
    const contentType = request.headers["content-type"] ?? ""
    if (!contentType.toLowerCase().startsWith("multipart/form-data")) {
      return yield* reject(422, [{
        type: "missing",
        loc: ["body", field],
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
    return { body, end, delimiter }
  })

/**
 * The fields and files of a whole multipart body (`multipartBody`), each name as sent (RFC 2231 / latin-1 names
 * decoded), its files' bytes within the limit all together; what the parser refuses is the reason it gives.
 */
const parts = (
  request: HttpServerRequest.HttpServerRequest,
  { body, delimiter, end }: { readonly body: Buffer; readonly end: number; readonly delimiter: string },
  limit: number
): Effect.Effect<Upload | TooLarge | Malformed> =>
  Effect.gen(function*() {
    const fields: Record<string, string> = {}
    const files = new Map<string, UploadedFile>()
    const all: Array<UploadedFile> = []
    let total = 0
    const readable = readableHeaders(body.subarray(0, end), delimiter)
    /** The names of the next part, as sent. */
    let index = 0
    const namesOf = (key: string, filename: string | undefined) => {
      const names = readable.parts[index++]
      const latin1 = names?.latin1 === true
      return {
        key: names?.extendedName ?? (latin1 ? fromLatin1(key) : key),
        filename: filename === undefined || !latin1 || names?.extendedFilename === true
          ? filename
          : fromLatin1(filename)
      }
    }
    const outcome = yield* Stream.make(readable.body).pipe(
      Stream.pipeThroughChannelOrFail(Multipart.makeChannel<never>(request.headers)),
      Stream.mapError(sizeError),
      Stream.runForEach((part) =>
        Effect.gen(function*() {
          if (Multipart.isField(part)) {
            fields[namesOf(part.key, undefined).key] = part.value
            return
          }
          if (!Multipart.isFile(part)) return
          const names = namesOf(part.key, part.name)
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
            key: names.key,
            filename: names.filename ?? part.name,
            contentType: part.contentType,
            content: concat(chunks, size)
          }
          if (!files.has(part.key)) files.set(part.key, file)
          all.push(file)
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
    return outcome ?? { fields, files, parts: all }
  })

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
    const outcome = yield* parts(request, yield* multipartBody(request, limit, options.field ?? "file"), limit)
    if (outcome instanceof TooLarge) return yield* tooLarge(limit)
    if (outcome instanceof Malformed) {
      return yield* reject(400, `The multipart body could not be parsed (${outcome.reason})`)
    }
    return outcome
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
