/**
 * `POST /embeddings` of the emulator: bag-of-words vectors of the model's dimension, as floats or base64.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { encodeFloat32Base64 } from "../../schemas/Embeddings.js"
import { CreateEmbeddingParams } from "../../schemas/Embeddings.js"
import { admit, authenticate, decodeBody, type LimitMode, reject, requireModel } from "../http.js"
import type { EmulatorState } from "../state.js"
import { countTokens, embed } from "../text.js"

// token-id arrays are not supported by the service: only strings are accepted
const EmbeddingRequest = Schema.Struct({
  ...CreateEmbeddingParams.fields,
  encoding_format: Schema.optional(Schema.NullOr(Schema.Literal("float", "base64"))),
  dimensions: Schema.optional(Schema.NullOr(Schema.Number))
})

const handler = (state: EmulatorState, mode: LimitMode) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const params = yield* decodeBody(EmbeddingRequest)
    const model = yield* requireModel(params.model, "embedding", "embeddings", key)
    const inputs = typeof params.input === "string" ? [params.input] : params.input
    if (inputs.length === 0) return yield* reject(400, "input must not be empty")
    if (inputs.length > 2048) return yield* reject(400, "input must hold at most 2048 texts")
    const dimensions = params.dimensions ?? model.dimensions ?? 768
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > (model.dimensions ?? dimensions)) {
      return yield* reject(400, `dimensions must be an integer from 1 to ${model.dimensions ?? dimensions}`)
    }
    const tokens = inputs.reduce((n, text) => n + countTokens(text), 0)
    const headers = yield* admit(state, key, model, { input: tokens, output: 0 }, mode)
    const base64 = params.encoding_format === "base64"
    // the wire shape is written out here: the client's schema decodes base64 into numbers, the emulator must
    // send the string
    return HttpServerResponse.unsafeJson({
      object: "list",
      data: inputs.map((text, index) => {
        const vector = embed(text, dimensions)
        return { object: "embedding", index, embedding: base64 ? encodeFloat32Base64(vector) : vector }
      }),
      model: model.id,
      usage: { prompt_tokens: tokens, total_tokens: tokens }
    }, { headers })
  })

/**
 * The embeddings route.
 *
 * @since 0.1.0
 * @category routers
 */
export const router = (state: EmulatorState, mode: LimitMode) =>
  HttpRouter.empty.pipe(HttpRouter.post("/embeddings", handler(state, mode)))
