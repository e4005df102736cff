/**
 * Speech to text: `POST /audio/transcriptions`, `POST /audio/translations` (multipart) and `GET /audio/models`.
 *
 * @example
 * ```ts
 * import { Audio, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const audio = yield* Audio.Audio
 *   const models = yield* audio.models()
 *   // `Audio.fromPath("meeting.mp3")` streams a file from disk; bytes in memory here
 *   const transcript = yield* audio.transcribe({
 *     model: models.ids[0] ?? "whisper-large-v3",
 *     file: Audio.fromBytes(new Uint8Array(2048), "note.wav", "audio/wav"),
 *     language: "de"
 *   })
 *   return transcript.text
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { multipart } from "../internal/multipart.js"
import { type AudioModelList, AudioModelsResponse, Transcription, type TranscriptionParams } from "../schemas/Audio.js"
import { type ApiError, DecodeError } from "../schemas/Errors.js"
import {
  type Base,
  InferenceHttpClient,
  type RequestOptions,
  withoutResponse,
  type WithResponse
} from "./InferenceHttpClient.js"

export {
  /**
   * A file from a `Blob` (see `Upload.fromBlob`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromBlob,
  /**
   * A file from bytes in memory, or a string as UTF-8 (see `Upload.fromBytes`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromBytes,
  /**
   * A file from a path, streamed from disk while the request is sent (see `Upload.fromPath`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromPath,
  /**
   * A file from a stream of chunks, sent once and never retried (see `Upload.fromStream`).
   *
   * @since 0.1.0
   * @category constructors
   */
  fromStream
} from "../schemas/Upload.js"

/**
 * Speech to text.
 *
 * @example
 * ```ts
 * import { Audio, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // subtitles: `srt` and `vtt` answer plain text, which becomes the result's `text`
 * const program = Effect.gen(function*() {
 *   const audio = yield* Audio.Audio
 *   const subtitles = yield* audio.transcribe({
 *     model: "whisper-large-v3",
 *     file: Audio.fromBytes(new Uint8Array(2048), "talk.wav", "audio/wav"),
 *     response_format: "vtt"
 *   })
 *   return subtitles.text.split("\n")[0]
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class Audio extends Context.Tag("effect-aifs/Audio")<Audio, Audio.Service>() {}

/**
 * The types of the `Audio` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Audio {
  /**
   * What `Audio` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Transcribes speech in its own language. */
    readonly transcribe: (params: TranscriptionParams) => Effect.Effect<Transcription, ApiError>
    /** `transcribe`, with the response metadata. */
    readonly transcribeWithResponse: (
      params: TranscriptionParams
    ) => Effect.Effect<WithResponse<Transcription>, ApiError>
    /** Translates speech into English text. */
    readonly translate: (params: TranscriptionParams) => Effect.Effect<Transcription, ApiError>
    /** The speech models (`GET /audio/models`). */
    readonly models: () => Effect.Effect<AudioModelList, ApiError>
  }
}

/**
 * The multipart request of a transcription or translation, on any base (the queue reuses it). A `span` in
 * `options` gets the request's parameters as its `params` (the span reads the sampling ones only).
 *
 * @since 0.1.0
 * @category requests
 */
export const sendTranscription = <A, I>(
  http: InferenceHttpClient.Service,
  path: "/audio/transcriptions" | "/audio/translations",
  params: TranscriptionParams,
  schema: Schema.Schema<A, I>,
  options: RequestOptions & { readonly base: Base }
) =>
  Effect.flatMap(
    multipart(
      HttpClientRequest.post(path),
      {
        model: params.model,
        language: params.language,
        temperature: params.temperature,
        response_format: params.response_format,
        prompt: params.prompt
      },
      "file",
      params.file
    ),
    ({ request, retry }) => {
      const sendOptions: RequestOptions = {
        ...options,
        model: params.model,
        retry: retry && options.retry !== false,
        // the span reads only the parameters it knows (never the file or the prompt)
        ...(options.span === undefined ? {} : { span: { ...options.span, params } })
      }
      if (!textFormats.has(params.response_format ?? "json")) return http.json(request, schema, sendOptions)
      // text, srt and vtt answer plain text: it becomes the `text` of the result
      return Effect.flatMap(http.text(request, sendOptions), ({ response, value }) =>
        Schema.decodeUnknown(schema)({ text: value }).pipe(
          Effect.mapBoth({
            onFailure: (error) =>
              new DecodeError({
                message: `a ${params.response_format} transcript could not be read: ${error.message}`,
                endpoint: `POST ${path}`,
                status: response.status,
                excerpt: value.slice(0, 512)
              }),
            onSuccess: (decoded) => ({ value: decoded, response })
          })
        ))
    }
  )

const textFormats = new Set(["text", "srt", "vtt"])

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Audio.Service, never, InferenceHttpClient> = Effect.gen(function*() {
  const http = yield* InferenceHttpClient
  // each request's span is the transport's, opened when the request leaves the limiter's line
  const transcribeWithResponse = Effect.fnUntraced(function*(params: TranscriptionParams) {
    return yield* sendTranscription(http, "/audio/transcriptions", params, Transcription, {
      base: "v2",
      span: { name: "Audio.transcribe", operation: "audio.transcriptions" }
    })
  })
  const translate = Effect.fnUntraced(function*(params: TranscriptionParams) {
    const result = yield* sendTranscription(http, "/audio/translations", params, Transcription, {
      base: "v2",
      span: { name: "Audio.translate", operation: "audio.translations" }
    })
    return result.value
  })
  const models = Effect.fnUntraced(function*() {
    return (yield* http.json(HttpClientRequest.get("/audio/models"), AudioModelsResponse, {
      span: { name: "Audio.models" }
    })).value
  })
  return {
    transcribe: (params) => withoutResponse(transcribeWithResponse(params)),
    transcribeWithResponse,
    translate,
    models
  }
})

/**
 * The service, on an `InferenceHttpClient`.
 *
 * @example
 * ```ts
 * import { Audio, ClientConfig, InferenceHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // Audio alone, on the Node HTTP client
 * export const AudioLive: Layer.Layer<Audio.Audio> = Audio.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Audio, never, InferenceHttpClient> = Layer.effect(Audio, make)
