/**
 * Wire schemas of `POST /embeddings`, decoding both float arrays and `encoding_format: "base64"`
 * (little-endian float32) into numbers.
 *
 * @example
 * ```ts
 * import * as EmbeddingsSchema from "effect-aifs/schemas/Embeddings"
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 *
 * // `encoding_format: "base64"` answers little-endian float32 bytes: they decode to numbers as well
 * const body = {
 *   object: "list",
 *   model: "text-embedding-bge-m3",
 *   data: [
 *     { object: "embedding", index: 0, embedding: [0.25, -0.5] },
 *     { object: "embedding", index: 1, embedding: EmbeddingsSchema.encodeFloat32Base64([0.25, -0.5]) }
 *   ]
 * }
 *
 * Effect.runPromise(Schema.decodeUnknown(EmbeddingsSchema.EmbeddingList)(body)).then((list) =>
 *   console.log(list.vectors))
 * // => [ [ 0.25, -0.5 ], [ 0.25, -0.5 ] ]
 * ```
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { Nullish, Usage } from "./Shared.js"

/**
 * Parameters of an embeddings request.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreateEmbeddingParams = Schema.Struct({
  /** Embedding model id, e.g. `text-embedding-bge-m3`. */
  model: Schema.String,
  /** One text or several (token-id arrays are not supported by the service). */
  input: Schema.Union(Schema.String, Schema.Array(Schema.String)),
  /** `float` (default here) or `base64`; both decode to numbers. */
  encoding_format: Schema.optional(Schema.Literal("float", "base64")),
  /** Output dimension, on models that can shorten their vectors. */
  dimensions: Schema.optional(Schema.Number),
  /** End-user id for abuse monitoring. */
  user: Schema.optional(Schema.String)
})

/**
 * The type of `CreateEmbeddingParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreateEmbeddingParams = typeof CreateEmbeddingParams.Type

/**
 * Encodes numbers as base64 little-endian float32, the form the service sends for `encoding_format: "base64"`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeFloat32Base64 = (vector: ReadonlyArray<number>): string => {
  const bytes = new Uint8Array(vector.length * 4)
  const view = new DataView(bytes.buffer)
  vector.forEach((value, i) => view.setFloat32(i * 4, value, true))
  return Encoding.encodeBase64(bytes)
}

/**
 * Decodes base64 little-endian float32 into numbers; fails on bad base64 or a length not a multiple of 4.
 *
 * @since 0.1.0
 * @category encoding
 */
export const decodeFloat32Base64 = (encoded: string): Either.Either<Array<number>, string> =>
  Either.flatMap(
    Either.mapLeft(Encoding.decodeBase64(encoded), (e) => `invalid base64: ${e.message}`),
    (bytes) => {
      if (bytes.byteLength % 4 !== 0) {
        return Either.left(`base64 embedding has ${bytes.byteLength} bytes, not a multiple of 4`)
      }
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      const out = new Array<number>(bytes.byteLength / 4)
      for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true)
      return Either.right(out)
    }
  )

/**
 * A base64 float32 string, decoded into numbers.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Float32Base64 = Schema.transformOrFail(Schema.String, Schema.Array(Schema.Number), {
  strict: true,
  decode: (s, _, ast) => Either.mapLeft(decodeFloat32Base64(s), (message) => new ParseResult.Type(ast, s, message)),
  encode: (v) => ParseResult.succeed(encodeFloat32Base64(v))
}).annotations({ identifier: "Float32Base64" })

/**
 * An embedding vector as numbers, whether the wire carried a float array or a base64 string.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EmbeddingVector = Schema.Union(Schema.Array(Schema.Number), Float32Base64)

/**
 * One embedding.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Embedding = Schema.Struct({
  /** `embedding`. */
  object: Nullish(Schema.String),
  /** Position of the input it embeds. */
  index: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** The vector. */
  embedding: EmbeddingVector
})

/**
 * The type of `Embedding`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type Embedding = typeof Embedding.Type

/**
 * The embeddings of a request, in input order.
 *
 * @since 0.1.0
 * @category schemas
 */
export class EmbeddingList extends Schema.Class<EmbeddingList>("EmbeddingList")({
  /** `list`. */
  object: Nullish(Schema.String),
  /** One embedding per input. */
  data: Schema.Array(Embedding),
  /** Model that embedded. */
  model: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** Token usage (`prompt_tokens`, `total_tokens`). */
  usage: Nullish(Usage)
}) {
  /** The vectors in input order. */
  get vectors(): ReadonlyArray<ReadonlyArray<number>> {
    return [...this.data].sort((a, b) => a.index - b.index).map((e) => e.embedding)
  }
}
