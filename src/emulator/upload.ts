/**
 * Multipart uploads of the emulator: fields and one file, counted while the body streams in so that an
 * upload over the size limit gets 413 with a `detail` as soon as it passes the limit (never a crash, never
 * a body buffered whole before the check).
 *
 * @since 0.1.0
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Multipart from "@effect/platform/Multipart"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { type Reject, reject } from "./http.js"
import type { EmulatorState } from "./state.js"

/**
 * A received upload.
 *
 * @since 0.1.0
 * @category models
 */
export interface Upload {
  /** The text fields. */
  readonly fields: Readonly<Record<string, string>>
  /** The file parts, by field name. */
  readonly files: ReadonlyMap<string, UploadedFile>
}

/**
 * A received file part.
 *
 * @since 0.1.0
 * @category models
 */
export interface UploadedFile {
  readonly filename: string
  readonly contentType: string
  readonly content: Uint8Array
}

class TooLarge {
  readonly _tag = "TooLarge"
}

const concat = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  const out = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

const tooLarge = (limit: number) => reject(413, `File too large: the upload limit is ${limit} bytes`)

/**
 * Reads a `multipart/form-data` body: 413 past `state.maxUploadBytes`, 422 when it is not multipart or cannot
 * be parsed.
 *
 * @since 0.1.0
 * @category bodies
 */
export const readUpload = (
  state: EmulatorState
): Effect.Effect<Upload, Reject, HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const limit = state.maxUploadBytes
    const contentType = request.headers["content-type"] ?? ""
    if (!contentType.toLowerCase().startsWith("multipart/form-data")) {
      return yield* reject(422, [{
        type: "missing",
        loc: ["body", "file"],
        msg: "Field required (expected a multipart/form-data body)"
      }])
    }
    // an announced length over the limit (with room for the part headers) is refused before reading
    const announced = Number(request.headers["content-length"] ?? Number.NaN)
    if (Number.isFinite(announced) && announced > limit + 64 * 1024) return yield* tooLarge(limit)
    const fields: Record<string, string> = {}
    const files = new Map<string, UploadedFile>()
    let total = 0
    const outcome = yield* request.multipartStream.pipe(
      Stream.mapError((error) =>
        error.reason === "FileTooLarge" || error.reason === "BodyTooLarge" ? new TooLarge() : error
      ),
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
            Stream.mapError((error) =>
              error.reason === "FileTooLarge" || error.reason === "BodyTooLarge" ? new TooLarge() : error
            ),
            Stream.runForEach((chunk) => {
              size += chunk.length
              total += chunk.length
              if (total > limit) return Effect.fail(new TooLarge())
              chunks.push(chunk)
              return Effect.void
            })
          )
          files.set(part.key, { filename: part.name, contentType: part.contentType, content: concat(chunks, size) })
        })
      ),
      Effect.map(() => "ok" as const),
      Effect.catchAll((error) =>
        Effect.succeed(error instanceof TooLarge ? "tooLarge" as const : `parse:${error.message}` as const)
      )
    )
    if (outcome === "tooLarge") return yield* tooLarge(limit)
    if (outcome !== "ok") return yield* reject(400, `The multipart body could not be parsed (${outcome.slice(6)})`)
    return { fields, files }
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
