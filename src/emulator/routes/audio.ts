/**
 * Audio routes of the emulator: transcriptions and translations accept any upload and answer a
 * deterministic transcript (JSON, verbose JSON, text, SRT or VTT); `GET /audio/models` lists the speech models.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { catalogueOf } from "../catalogue.js"
import { admit, authenticate, type LimitMode, reject, requireModel } from "../http.js"
import type { EmulatorState } from "../state.js"
import { countTokens, generatePieces, hash } from "../text.js"
import { readUpload, requireField, requireFile } from "../upload.js"

const formats = ["json", "verbose_json", "text", "srt", "vtt"] as const

const timestamp = (seconds: number, separator: "," | ".") => {
  const ms = Math.round(seconds * 1000)
  const pad = (n: number, w = 2) => String(n).padStart(w, "0")
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:${
    pad(Math.floor(ms / 1000) % 60)
  }${separator}${pad(ms % 1000, 3)}`
}

const handler = (state: EmulatorState, mode: LimitMode, task: "transcribe" | "translate") =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const upload = yield* readUpload(state)
    const file = yield* requireFile(upload)
    const model = yield* requireModel(yield* requireField(upload, "model"), "stt", "speech to text", key)
    const format = upload.fields["response_format"] ?? "json"
    if (!(formats as ReadonlyArray<string>).includes(format)) {
      return yield* reject(400, `response_format must be one of ${formats.join(", ")}`)
    }
    const temperature = upload.fields["temperature"]
    if (temperature !== undefined && !(Number(temperature) >= 0 && Number(temperature) <= 1)) {
      return yield* reject(422, [{
        type: "float_parsing",
        loc: ["body", "temperature"],
        msg: "temperature must be from 0 to 1"
      }])
    }
    // the transcript depends on the audio bytes: the same upload gives the same text
    let seed = hash(`${model.id}\u0000${task}\u0000${file.content.length}`)
    for (let i = 0; i < file.content.length; i += Math.max(1, Math.floor(file.content.length / 64))) {
      seed = (Math.imul(seed ^ file.content[i]!, 0x01000193)) >>> 0
    }
    const text = generatePieces(seed, "", 12 + (seed % 24)).join("")
    const tokens = countTokens(text)
    const headers = yield* admit(state, key, model, { input: 0, output: tokens }, mode)
    // about 16 kB per second of audio, at least one second
    const duration = Math.max(1, Math.round(file.content.length / 16_000 * 100) / 100)
    const language = task === "translate" ? "english" : upload.fields["language"] ?? "english"
    if (format === "text") return HttpServerResponse.text(`${text}\n`, { headers })
    if (format === "srt" || format === "vtt") {
      const separator = format === "srt" ? "," : "."
      const cue = `${timestamp(0, separator)} --> ${timestamp(duration, separator)}\n${text}\n`
      return HttpServerResponse.text(format === "srt" ? `1\n${cue}` : `WEBVTT\n\n${cue}`, { headers })
    }
    const usage = { total_tokens: tokens, prompt_tokens: 0, completion_tokens: tokens }
    if (format === "verbose_json") {
      return HttpServerResponse.unsafeJson({
        task,
        language,
        duration,
        text,
        segments: [{ id: 0, start: 0, end: duration, text }],
        usage
      }, { headers })
    }
    return HttpServerResponse.unsafeJson({ text, usage }, { headers })
  })

/**
 * The audio routes, answering 429 (`reject`) or waiting (`wait`) when over the limit.
 *
 * @since 0.1.0
 * @category routers
 */
export const router = (state: EmulatorState, mode: LimitMode) =>
  HttpRouter.empty.pipe(
    HttpRouter.post("/audio/transcriptions", handler(state, mode, "transcribe")),
    HttpRouter.post("/audio/translations", handler(state, mode, "translate")),
    HttpRouter.get(
      "/audio/models",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        return HttpServerResponse.unsafeJson({
          object: "list",
          data: catalogueOf(key.tier).filter((m) => m.kind === "stt").map((m) => ({ id: m.id, object: "model" }))
        })
      })
    )
  )
