/**
 * The emulator's model routes over raw HTTP, for tests of its limits and budgets that must not go through the client
 * (its limiter would pace or refuse first): JSON and multipart posts with a key, answers parsed, and requests shaped
 * to spend one budget (many input tokens, or many output tokens) and little of the others.
 */
import * as Effect from "effect/Effect"
import * as Emulator from "../../src/emulator/Emulator.js"
import { type RawReply, send } from "./rawHttp.js"

/** The fields of an answer's body these tests read (not checked: the tests compare them). */
export interface Body {
  readonly detail?: unknown
  readonly error?: { readonly message?: string; readonly type?: string; readonly code?: string }
  readonly usage?: { readonly prompt_tokens?: number; readonly completion_tokens?: number }
}

/** An answer, its body parsed as JSON (`undefined` when it is not JSON). */
export interface Reply extends RawReply {
  readonly json: Body | undefined
}

const parsed = (reply: RawReply): Reply => {
  try {
    return { ...reply, json: JSON.parse(reply.text) as Body }
  } catch {
    return { ...reply, json: undefined }
  }
}

/** `POST <path>` with a JSON body and the key as a bearer token, on the emulator in context. */
export const post = (path: string, key: string, body: unknown): Effect.Effect<Reply, Error, Emulator.Emulator> =>
  Effect.flatMap(Emulator.Emulator, (emulator) =>
    Effect.map(
      send(emulator.url, {
        method: "POST",
        path,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      }),
      parsed
    ))

/** `POST /v2/chat/completions` with one user message, and `extra` fields. */
export const chat = (key: string, model: string, content: string, extra: Record<string, unknown> = {}) =>
  post("/v2/chat/completions", key, { model, messages: [{ role: "user", content }], ...extra })

/** `POST /v2/audio/transcriptions` of a small fixed upload. */
export const transcribe = (key: string, model: string): Effect.Effect<Reply, Error, Emulator.Emulator> =>
  Effect.flatMap(Emulator.Emulator, (emulator) => {
    const boundary = "emulatorwireboundary"
    const body = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${model}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n` +
          `Content-Type: audio/wav\r\n\r\n`
      ),
      Buffer.alloc(32_000, 7),
      Buffer.from(`\r\n--${boundary}--\r\n`)
    ])
    return Effect.map(
      send(emulator.url, {
        method: "POST",
        path: "/v2/audio/transcriptions",
        headers: { authorization: `Bearer ${key}`, "content-type": `multipart/form-data; boundary=${boundary}` },
        body
      }),
      parsed
    )
  })

/** Text of `n` words of one token each: a chat message of it counts `n + 6` prompt tokens. */
export const words = (n: number): string => Array.from({ length: n }, () => "word").join(" ")

/**
 * A `response_format` whose answer is a JSON object of `properties` string fields: about 9 output tokens each, and no
 * input token (the emulator does not count the schema in the prompt).
 */
export const wideAnswer = (properties: number) => ({
  response_format: {
    type: "json_schema",
    json_schema: {
      name: "wide",
      schema: {
        type: "object",
        properties: Object.fromEntries(Array.from({ length: properties }, (_, i) => [`p${i}`, { type: "string" }]))
      }
    }
  }
})

/** What a run of the same request until the first refusal saw: the answers admitted, and the refusal. */
export interface Run {
  readonly admitted: ReadonlyArray<Reply>
  readonly refusal: Reply
}

/** Sends `request` until it is refused, at most `max` times; fails when it never is. */
export const untilRefused = <E, R>(
  request: Effect.Effect<Reply, E, R>,
  max: number
): Effect.Effect<Run, E | Error, R> =>
  Effect.gen(function*() {
    const admitted: Array<Reply> = []
    for (let i = 0; i < max; i++) {
      const reply = yield* request
      if (reply.status !== 200) return { admitted, refusal: reply }
      admitted.push(reply)
    }
    return yield* Effect.fail(new Error(`not refused within ${max} requests`))
  })

/** The usage of a chat answer: prompt and completion tokens. */
export const usageOf = (reply: Reply): { readonly input: number; readonly output: number } => ({
  input: reply.json?.usage?.prompt_tokens ?? 0,
  output: reply.json?.usage?.completion_tokens ?? 0
})

/** The message of a 429: the `detail` (open-source models) or the OpenAI-style `error.message` (proprietary). */
export const messageOf = (reply: Reply): string => String(reply.json?.detail ?? reply.json?.error?.message ?? "")
