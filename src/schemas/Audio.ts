/**
 * Wire schemas of `/audio/transcriptions`, `/audio/translations` (multipart) and `GET /audio/models`.
 *
 * @example
 * ```ts
 * import * as AudioSchema from "effect-aifs/schemas/Audio"
 * import * as Schema from "effect/Schema"
 *
 * // `GET /audio/models` answers `{"models": [...]}` on this service, `{"data": [...]}` elsewhere: both decode
 * const decode = Schema.decodeUnknownSync(AudioSchema.AudioModelsResponse)
 *
 * console.log(decode({ models: [{ id: "whisper-large-v3" }] }).ids, decode({ data: [{ id: "whisper-1" }] }).ids)
 * // => [ 'whisper-large-v3' ] [ 'whisper-1' ]
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Nullish } from "./Shared.js"
import type { FileInput } from "./Upload.js"

/**
 * Parameters of a transcription or translation (sent as multipart fields `model`, `file`, `language`,
 * `temperature`, `response_format`, `prompt`).
 *
 * @since 0.1.0
 * @category models
 */
export interface TranscriptionParams {
  /** Speech model, e.g. `whisper-large-v3`. */
  readonly model: string
  /** The audio: bytes, a path (streamed), a stream or a blob. */
  readonly file: FileInput
  /** Language of the audio (ISO-639-1), to help the model; transcriptions only. */
  readonly language?: string | undefined
  /** Sampling temperature, 0 to 1. */
  readonly temperature?: number | undefined
  /**
   * `json` (default), `verbose_json`, or `text`, `srt`, `vtt`: these answer plain text, which becomes the
   * result's `text` (the whole subtitle file for `srt` and `vtt`).
   */
  readonly response_format?: "json" | "verbose_json" | "text" | "srt" | "vtt" | undefined
  /** Text to guide the style or continue a previous segment. */
  readonly prompt?: string | undefined
}

/**
 * Token usage of a transcription: `{"total_tokens", "prompt_tokens", "completion_tokens"}` on this service,
 * `{"type": "tokens" | "duration", ...}` elsewhere.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TranscriptionUsage = Schema.Struct({
  /** `tokens` or `duration`, when sent. */
  type: Nullish(Schema.String),
  /** All tokens. */
  total_tokens: Nullish(Schema.Number),
  /** Input tokens (this service's name). */
  prompt_tokens: Nullish(Schema.Number),
  /** Output tokens (this service's name). */
  completion_tokens: Nullish(Schema.Number),
  /** Input tokens (OpenAI's name). */
  input_tokens: Nullish(Schema.Number),
  /** Output tokens (OpenAI's name). */
  output_tokens: Nullish(Schema.Number),
  /** Billed seconds, for duration usage. */
  seconds: Nullish(Schema.Number)
})

/**
 * A segment of a `verbose_json` answer.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TranscriptionSegment = Schema.Struct({
  /** Segment index, or an id such as `seg_001` (diarized transcripts). */
  id: Nullish(Schema.Union(Schema.Number, Schema.String)),
  /** Start in seconds. */
  start: Nullish(Schema.Number),
  /** End in seconds. */
  end: Nullish(Schema.Number),
  /** The text of the segment. */
  text: Schema.optionalWith(Schema.String, { default: () => "" })
})

/**
 * A transcription or translation. Older answers add `task` and `duration`.
 *
 * @since 0.1.0
 * @category schemas
 */
export class Transcription extends Schema.Class<Transcription>("Transcription")({
  /** The text. */
  text: Schema.String,
  /** `transcribe` or `translate`, on older answers. */
  task: Nullish(Schema.String),
  /** Detected or given language. */
  language: Nullish(Schema.String),
  /** Length of the audio in seconds, on older answers. */
  duration: Nullish(Schema.Number),
  /** Segments (`verbose_json`). */
  segments: Nullish(Schema.Array(TranscriptionSegment)),
  /** Token usage, when sent. */
  usage: Nullish(TranscriptionUsage)
}) {}

/**
 * A speech model of `GET /audio/models`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AudioModel = Schema.Struct({
  /** Model id, e.g. `whisper-large-v3-turbo`. */
  id: Schema.String,
  /** `model`, when sent. */
  object: Nullish(Schema.String)
})

/**
 * The type of `AudioModel`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AudioModel = typeof AudioModel.Type

/**
 * The speech models. The answer's shape is not documented: `{"data": [...]}`, `{"models": [...]}` or a bare
 * array, of ids or of `{"id"}` objects, are all read.
 *
 * @since 0.1.0
 * @category schemas
 */
export class AudioModelList extends Schema.Class<AudioModelList>("AudioModelList")({
  /** `list`, when sent. */
  object: Nullish(Schema.String),
  /** The models. */
  data: Schema.Array(AudioModel)
}) {
  /** The model ids. */
  get ids(): ReadonlyArray<string> {
    return this.data.map((m) => m.id)
  }
}

const Entry = Schema.Union(
  AudioModel,
  Schema.transform(Schema.String, Schema.typeSchema(AudioModel), {
    strict: true,
    decode: (id) => ({ id }),
    encode: (model) => model.id
  })
)

const fromEntries = (entries: ReadonlyArray<AudioModel>) => new AudioModelList({ object: "list", data: entries })

/**
 * `GET /audio/models`, in any of its plausible shapes, as an `AudioModelList`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AudioModelsResponse = Schema.Union(
  Schema.transform(
    Schema.Struct({ object: Nullish(Schema.String), data: Schema.Array(Entry) }),
    Schema.typeSchema(AudioModelList),
    { strict: true, decode: ({ data }) => fromEntries(data), encode: (list) => ({ object: "list", data: list.data }) }
  ),
  Schema.transform(Schema.Struct({ models: Schema.Array(Entry) }), Schema.typeSchema(AudioModelList), {
    strict: true,
    decode: ({ models }) => fromEntries(models),
    encode: (list) => ({ models: list.data })
  }),
  Schema.transform(Schema.Array(Entry), Schema.typeSchema(AudioModelList), {
    strict: true,
    decode: fromEntries,
    encode: (list) => list.data
  })
)
