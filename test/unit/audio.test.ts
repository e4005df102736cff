/**
 * Audio on a scripted transport: multipart field names, the routes, the documented result variants and the
 * shapes of `GET /audio/models`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { AudioModelsResponse, Transcription } from "../../src/schemas/Audio.js"
import * as Audio from "../../src/services/Audio.js"
import { capturing, formOf, urlOf } from "./surfaceHelpers.js"

const decode = <A, I>(schema: Schema.Schema<A, I>, json: string): A =>
  Schema.decodeUnknownSync(schema)(JSON.parse(json), { onExcessProperty: "ignore" })

describe("Audio schemas", () => {
  it("decodes text only, the older task/duration form, and the documented usage", () => {
    assert.strictEqual(decode(Transcription, `{"text": "Hallo Welt"}`).text, "Hallo Welt")
    const older = decode(
      Transcription,
      `{"text": "hi", "task": "transcribe", "duration": 3.2, "language": "german", "segments": null,
        "usage": {"total_tokens": 52, "prompt_tokens": 0, "completion_tokens": 52}, "x_new": 1}`
    )
    assert.strictEqual(older.task, "transcribe")
    assert.strictEqual(older.duration, 3.2)
    assert.deepStrictEqual(older.usage, { total_tokens: 52, prompt_tokens: 0, completion_tokens: 52 })
    const openai = decode(Transcription, `{"text": "x", "usage": {"type": "duration", "seconds": 4}}`)
    assert.strictEqual(openai.usage?.seconds, 4)
  })

  it("reads the speech models in every plausible shape", () => {
    const ids = ["whisper-large-v3", "whisper-large-v3-turbo", "whisper-large-v3-swiss"]
    for (
      const body of [
        `{"object": "list", "data": [{"id": "whisper-large-v3"}, {"id": "whisper-large-v3-turbo"}, {"id": "whisper-large-v3-swiss"}]}`,
        `{"data": ["whisper-large-v3", "whisper-large-v3-turbo", "whisper-large-v3-swiss"]}`,
        `{"models": ["whisper-large-v3", {"id": "whisper-large-v3-turbo"}, "whisper-large-v3-swiss"]}`,
        `["whisper-large-v3", "whisper-large-v3-turbo", "whisper-large-v3-swiss"]`
      ]
    ) assert.deepStrictEqual(decode(AudioModelsResponse, body).ids, ids)
  })
})

describe("Audio service", () => {
  it.effect("transcribe sends multipart model, file, language, temperature, response_format to /v2", () => {
    const { layer, requests } = capturing(() => ({ body: { text: "hi" } }))
    return Effect.gen(function*() {
      const audio = yield* Audio.Audio
      const result = yield* audio.transcribe({
        model: "whisper-large-v3",
        file: Audio.fromBytes(new Uint8Array([1, 2, 3]), "a.mp3", "audio/mpeg"),
        language: "de",
        temperature: 0.2,
        response_format: "verbose_json"
      })
      assert.strictEqual(result.text, "hi")
      assert.strictEqual(urlOf(requests[0]).pathname, "/v2/audio/transcriptions")
      const form = yield* formOf(requests[0])
      assert.deepStrictEqual(form.names, ["model", "language", "temperature", "response_format", "file"])
      assert.deepStrictEqual(form.fields, {
        model: "whisper-large-v3",
        language: "de",
        temperature: "0.2",
        response_format: "verbose_json"
      })
      assert.strictEqual(form.files.file?.filename, "a.mp3")
      assert.strictEqual(form.files.file?.contentType, "audio/mpeg")
    }).pipe(Effect.provide(layer))
  })

  it.effect("translate posts to /audio/translations without unset fields; models is GET /audio/models", () => {
    const { layer, requests } = capturing((request) =>
      request.method === "GET" ? { body: { data: [{ id: "whisper-large-v3" }] } } : { body: { text: "hello" } }
    )
    return Effect.gen(function*() {
      const audio = yield* Audio.Audio
      yield* audio.translate({ model: "whisper-large-v3", file: Audio.fromBytes("xx", "b.wav") })
      assert.strictEqual(urlOf(requests[0]).pathname, "/v2/audio/translations")
      assert.deepStrictEqual((yield* formOf(requests[0])).names, ["model", "file"])
      assert.deepStrictEqual((yield* audio.models()).ids, ["whisper-large-v3"])
      assert.strictEqual(urlOf(requests[1]).pathname, "/v2/audio/models")
    }).pipe(Effect.provide(layer))
  })
})
