/**
 * Shared fixtures of the unit tests: a recording scripted transport and shortcuts to the services.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as Inference from "../../src/layers/Inference.js"
import * as InferenceHttp from "../../src/layers/InferenceHttp.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import type * as Testing from "../../src/layers/Testing.js"
import type { CreateChatCompletionParams } from "../../src/schemas/Chat.js"
import * as Chat from "../../src/services/Chat.js"
import * as Models from "../../src/services/Models.js"

/** A scripted transport that records every request, in order, so that a test can wait for the n-th call. */
export interface Recorder {
  readonly handler: Testing.Handler
  /** Every request, offered when the handler is called: `Queue.take` waits for the next call. */
  readonly calls: Queue.Queue<Testing.ScriptedRequest>
  /** How many requests were made so far. */
  readonly count: Effect.Effect<number>
}

/** Answers with `respond(request, n)`, `n` counting calls from 1. */
export const recorder = (
  respond: (
    request: Testing.ScriptedRequest,
    n: number
  ) => Testing.ScriptedResponse | Effect.Effect<Testing.ScriptedResponse>
): Effect.Effect<Recorder> =>
  Effect.gen(function*() {
    const calls = yield* Queue.unbounded<Testing.ScriptedRequest>()
    const counter = yield* Ref.make(0)
    const handler: Testing.Handler = (request) =>
      Effect.gen(function*() {
        const n = yield* Ref.updateAndGet(counter, (c) => c + 1)
        yield* Queue.offer(calls, request)
        const answer = respond(request, n)
        return Effect.isEffect(answer) ? yield* answer : answer
      })
    return { handler, calls, count: Ref.get(counter) }
  })

/** Answers the responses in turn; the last one repeats. */
export const sequence = (...responses: ReadonlyArray<Testing.ScriptedResponse>) =>
  recorder((_, n) => responses[Math.min(n, responses.length) - 1]!)

/** `GET /models` through the `Models` service. */
export const listModels = Effect.flatMap(Models.Models, (models) => models.list())

/** `POST /chat/completions` through the `Chat` service. */
export const createChat = (params: CreateChatCompletionParams = defaultChatParams) =>
  Effect.flatMap(Chat.Chat, (chat) => chat.create(params))

/** A minimal chat request. */
export const defaultChatParams: CreateChatCompletionParams = {
  model: "Llama-3.3-70B-Instruct",
  messages: [{ role: "user", content: "Hello" }]
}

/** A valid `GET /models` body. */
export const modelListBody = {
  object: "list",
  data: [{ id: "Llama-3.3-70B-Instruct", meta_data: { model_type: "LLM" } }]
}

/** The documented chat completion example. */
export const chatCompletionBody = {
  id: "chatcmpl-abc123",
  object: "chat.completion",
  created: 1710000000,
  model: "Llama-3.3-70B-Instruct",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "Hello! How can I help you today?" },
    finish_reason: "stop"
  }],
  usage: { prompt_tokens: 10, completion_tokens: 9, total_tokens: 19 }
}

/** The real stack on a platform `HttpClient` of the test's own making (connection failures, stalled bodies). */
export const layerWithClient = (
  client: HttpClient.HttpClient,
  options: { readonly config?: Partial<ClientConfig.Options>; readonly retry?: Layer.Layer<RetryPolicy.RetryPolicy> } =
    {}
) =>
  Inference.layer.pipe(
    Layer.provideMerge(InferenceHttp.layer),
    Layer.provide(Layer.mergeAll(
      Layer.succeed(HttpClient.HttpClient, client),
      ClientConfig.layer({ apiKey: "test-key", baseUrl: "http://aifs.test/v2", ...options.config }),
      options.retry ?? RetryPolicy.layer()
    ))
  )
