/**
 * Wire schemas of `POST /images/generations` and the queue's `POST /images/edits` (multipart).
 *
 * @example
 * ```ts
 * import * as ImagesSchema from "effect-aifs/schemas/Images"
 * import * as Schema from "effect/Schema"
 *
 * const images = Schema.decodeUnknownSync(ImagesSchema.ImagesResponse)({
 *   created: 1730000000,
 *   data: [{ b64_json: "iVBORw0KGgo=" }, { url: "https://images.example/2.png" }]
 * })
 *
 * // the `b64_json` images as bytes; every image as a URL (a data URL for `b64_json`)
 * console.log(images.bytes.map((bytes) => bytes.length), images.urls)
 * // => [ 8 ] [ 'data:image/png;base64,iVBORw0KGgo=', 'https://images.example/2.png' ]
 * ```
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Schema from "effect/Schema"
import { Nullish } from "./Shared.js"
import type { FileInput } from "./Upload.js"

/**
 * Parameters of an image generation.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreateImageParams = Schema.Struct({
  /** Image model, e.g. `gpt-image-1`. */
  model: Schema.String,
  /** What to draw. */
  prompt: Schema.String,
  /** How many images (default 1). */
  n: Schema.optional(Schema.Number),
  /** Size, e.g. `1024x1024`. */
  size: Schema.optional(Schema.String),
  /** Quality, e.g. `low`, `medium`, `high`, `auto`. */
  quality: Schema.optional(Schema.String),
  /** `b64_json` or `url` (models differ in what they support). */
  response_format: Schema.optional(Schema.Literal("b64_json", "url")),
  /** Background: `transparent`, `opaque`, `auto`. */
  background: Schema.optional(Schema.String),
  /** Output format: `png`, `jpeg`, `webp`. */
  output_format: Schema.optional(Schema.String),
  /** End-user id. */
  user: Schema.optional(Schema.String)
})

/**
 * The type of `CreateImageParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreateImageParams = typeof CreateImageParams.Type

/**
 * Parameters of an image edit (multipart fields `model`, `prompt`, `image`, `n`, `size`).
 *
 * @since 0.1.0
 * @category models
 */
export interface EditImageParams {
  /** Image model, e.g. `gpt-image-1`. */
  readonly model: string
  /** What to change. */
  readonly prompt: string
  /** The image to edit. */
  readonly image: FileInput
  /** How many images. */
  readonly n?: number | undefined
  /** Size, e.g. `1024x1024`. */
  readonly size?: string | undefined
  /** Quality. */
  readonly quality?: string | undefined
}

/**
 * One generated image: base64 (`b64_json`) or a URL.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ImageData = Schema.Struct({
  /** The image, base64-encoded. */
  b64_json: Nullish(Schema.String),
  /** A URL of the image. */
  url: Nullish(Schema.String),
  /** The prompt the model actually used. */
  revised_prompt: Nullish(Schema.String)
})

/**
 * The type of `ImageData`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ImageData = typeof ImageData.Type

/**
 * The images of a request: `{"created": ..., "data": [{"b64_json": "..."}]}`.
 *
 * @since 0.1.0
 * @category schemas
 */
export class ImagesResponse extends Schema.Class<ImagesResponse>("ImagesResponse")({
  /** Creation time, epoch seconds. */
  created: Nullish(Schema.Number),
  /** The images. */
  data: Schema.optionalWith(Schema.Array(ImageData), { default: () => [] }),
  /** Token usage, when sent. */
  usage: Nullish(Schema.Unknown)
}) {
  /** The base64 images as bytes (images sent as URLs are left out). */
  get bytes(): ReadonlyArray<Uint8Array> {
    return this.data.flatMap((d) => {
      if (!d.b64_json) return []
      const decoded = Encoding.decodeBase64(d.b64_json)
      return Either.isRight(decoded) ? [decoded.right] : []
    })
  }
  /** Each image as a URL: `data:image/png;base64,...` for base64 images, else the URL sent. */
  get urls(): ReadonlyArray<string> {
    return this.data.flatMap((d) => d.b64_json ? [`data:image/png;base64,${d.b64_json}`] : d.url ? [d.url] : [])
  }
}
