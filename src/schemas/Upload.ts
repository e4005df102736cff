/**
 * What a multipart upload sends as its file: bytes in memory, a path on disk (streamed, never read whole
 * into memory), a stream of chunks, or a `Blob`.
 *
 * @example
 * ```ts
 * import { Files, Testing, Upload } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the same upload from bytes, a path on disk (streamed), a stream of chunks or a Blob
 * const inputs: ReadonlyArray<Upload.FileInput> = [
 *   Upload.fromBytes("{\"messages\":[]}\n", "a.jsonl"),
 *   Upload.fromBlob(new Blob(["{\"messages\":[]}\n"]), "b.jsonl"),
 *   Upload.fromPath("/data/c.jsonl")
 * ]
 *
 * console.log(inputs.map(Upload.filenameOf))
 * // => [ 'a.jsonl', 'b.jsonl', 'c.jsonl' ]
 *
 * const program = Effect.flatMap(Files.Files, (files) =>
 *   Effect.forEach(inputs.slice(0, 2), (file) => files.upload({ file, purpose: "fine-tune" })))
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then((uploaded) =>
 *   console.log(uploaded.map((file) => file.filename)))
 * ```
 *
 * @since 0.1.0
 */
import type * as Stream from "effect/Stream"

/**
 * Bytes already in memory.
 *
 * @since 0.1.0
 * @category models
 */
export interface FromBytes {
  readonly _tag: "Bytes"
  /** The content. */
  readonly bytes: Uint8Array
  /** The file name sent with the part. */
  readonly filename: string
  /** Media type of the part (default `application/octet-stream`). */
  readonly contentType?: string | undefined
}

/**
 * A file on disk, read chunk by chunk while the request is sent (Node.js, Bun, Deno).
 *
 * @since 0.1.0
 * @category models
 */
export interface FromPath {
  readonly _tag: "Path"
  /** Path of the file. */
  readonly path: string
  /** The file name sent with the part (default: the path's last segment). */
  readonly filename?: string | undefined
  /** Media type of the part. */
  readonly contentType?: string | undefined
}

/**
 * A stream of chunks. It can be sent once: requests with a streamed file are never retried.
 *
 * @since 0.1.0
 * @category models
 */
export interface FromStream {
  readonly _tag: "Stream"
  /** The content. */
  readonly stream: Stream.Stream<Uint8Array, unknown>
  /** The file name sent with the part. */
  readonly filename: string
  /** Its length in bytes, when known (sent as the request's content length). */
  readonly size?: number | undefined
  /** Media type of the part. */
  readonly contentType?: string | undefined
}

/**
 * A `Blob` (or `File`), e.g. from `fs.openAsBlob` or a browser file input.
 *
 * @since 0.1.0
 * @category models
 */
export interface FromBlob {
  readonly _tag: "Blob"
  /** The content. */
  readonly blob: Blob
  /** The file name sent with the part. */
  readonly filename: string
}

/**
 * The file of an upload.
 *
 * @since 0.1.0
 * @category models
 */
export type FileInput = FromBytes | FromPath | FromStream | FromBlob

/**
 * A file from bytes (a string is encoded as UTF-8).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromBytes = (
  bytes: Uint8Array | string,
  filename: string,
  contentType?: string
): FileInput => ({
  _tag: "Bytes",
  bytes: typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes,
  filename,
  contentType
})

/**
 * A file from a path, streamed from disk while the request is sent.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromPath = (
  path: string,
  options: { readonly filename?: string | undefined; readonly contentType?: string | undefined } = {}
): FileInput => ({ _tag: "Path", path, filename: options.filename, contentType: options.contentType })

/**
 * A file from a stream of chunks (sent once, never retried).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromStream = (
  stream: Stream.Stream<Uint8Array, unknown>,
  filename: string,
  options: { readonly size?: number | undefined; readonly contentType?: string | undefined } = {}
): FileInput => ({ _tag: "Stream", stream, filename, size: options.size, contentType: options.contentType })

/**
 * A file from a `Blob`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromBlob = (blob: Blob, filename: string): FileInput => ({ _tag: "Blob", blob, filename })

/**
 * The file name an input is sent under.
 *
 * @since 0.1.0
 * @category accessors
 */
export const filenameOf = (file: FileInput): string =>
  file._tag === "Path" ? file.filename ?? (file.path.split(/[\\/]/).pop() || "file") : file.filename
