/**
 * Image routes of the emulator: generations (JSON) and edits (multipart, on the queue), each answering real
 * small PNGs, deterministic for the prompt (and the edited image).
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { CreateImageParams } from "../../schemas/Images.js"
import { admit, authenticate, decodeBody, type LimitMode, reject, requireModel } from "../http.js"
import { png } from "../png.js"
import type { EmulatorState } from "../state.js"
import { countTokens, hash } from "../text.js"
import { readUpload, requireField, requireFile } from "../upload.js"

const GenerationRequest = Schema.Struct({
  ...CreateImageParams.fields,
  n: Schema.optional(Schema.NullOr(Schema.Number)),
  size: Schema.optional(Schema.NullOr(Schema.String)),
  response_format: Schema.optional(Schema.NullOr(Schema.String))
})

/** Output side in pixels: the requested size scaled down by 32 (a real PNG, kept small), 8 to 64. */
const sideOf = (size: string | null | undefined) => {
  const match = /^(\d+)x(\d+)$/.exec(size ?? "")
  const clamp = (n: number) => Math.min(64, Math.max(8, Math.round(n / 32)))
  return match ? { width: clamp(Number(match[1])), height: clamp(Number(match[2])) } : { width: 32, height: 32 }
}

const images = (seed: number, n: number, size: string | null | undefined, prompt: string) => {
  const { height, width } = sideOf(size)
  return Array.from({ length: n }, (_, i) => ({
    b64_json: Buffer.from(png(seed + i, width, height)).toString("base64"),
    revised_prompt: prompt
  }))
}

const checkN = (n: number) =>
  Number.isInteger(n) && n >= 1 && n <= 4 ? Effect.void : reject(400, "n must be an integer from 1 to 4")

/**
 * `POST /images/generations`.
 *
 * @since 0.1.0
 * @category routers
 */
export const generations = (state: EmulatorState, mode: LimitMode) =>
  HttpRouter.empty.pipe(HttpRouter.post(
    "/images/generations",
    Effect.gen(function*() {
      const key = yield* authenticate(state)
      const params = yield* decodeBody(GenerationRequest)
      const model = yield* requireModel(params.model, "image", "image generation", key)
      const n = params.n ?? 1
      yield* checkN(n)
      if (params.prompt.trim() === "") return yield* reject(400, "prompt must not be empty")
      const headers = yield* admit(state, key, model, { input: countTokens(params.prompt), output: 0 }, mode)
      return HttpServerResponse.unsafeJson({
        created: Math.floor((yield* Clock.currentTimeMillis) / 1000),
        data: images(hash(`${model.id}\u0000${params.prompt}`), n, params.size, params.prompt)
      }, { headers })
    })
  ))

/**
 * `POST /images/edits` (multipart: `model`, `prompt`, `image`, `n`, `size`).
 *
 * @since 0.1.0
 * @category routers
 */
export const edits = (state: EmulatorState, mode: LimitMode) =>
  HttpRouter.empty.pipe(HttpRouter.post(
    "/images/edits",
    Effect.gen(function*() {
      const key = yield* authenticate(state)
      const upload = yield* readUpload(state)
      const image = yield* requireFile(upload, "image")
      const model = yield* requireModel(yield* requireField(upload, "model"), "image", "image edits", key)
      const prompt = yield* requireField(upload, "prompt")
      const n = Number(upload.fields["n"] ?? "1")
      yield* checkN(n)
      const headers = yield* admit(state, key, model, { input: countTokens(prompt), output: 0 }, mode)
      const seed = hash(`${model.id}\u0000${prompt}\u0000${image.content.length}\u0000${image.filename}`)
      return HttpServerResponse.unsafeJson({
        created: Math.floor((yield* Clock.currentTimeMillis) / 1000),
        data: images(seed, n, upload.fields["size"], prompt)
      }, { headers })
    })
  ))
