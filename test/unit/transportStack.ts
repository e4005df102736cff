/**
 * The transport with a rate limiter the test can read, on a platform client of the test's making: the fixture of
 * the tests of what the request path leaves in the limiter and of its time limits.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as InferenceHttp from "../../src/layers/InferenceHttp.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import { InferenceHttpClient, type RequestOptions } from "../../src/services/InferenceHttpClient.js"
import { limiterOn } from "../helpers/stores.js"

/** The body of the chat request the tests send (model `m`). */
export const chatBody = { model: "m", messages: [{ role: "user", content: "hello there" }], max_tokens: 100 }

/** A chat request for model `m`. */
export const chat = () => HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(chatBody))

/**
 * The options `Chat.create` sends `chat()` with: the limiter counts a request from its operation's parameters (the
 * span's `params`, never the body parsed back), so a request without them holds no permit.
 */
export const chatOptions = {
  model: chatBody.model,
  span: { name: "Chat.create", operation: "chat", params: chatBody }
} as const satisfies RequestOptions

/** What `stack` takes. */
export interface StackOptions {
  /** Retries of the default policy (0 by default; back-off 0, no 429 jitter). */
  readonly retries?: number | undefined
  readonly store?: Layer.Layer<LimiterStore.LimiterStore> | undefined
  /** Limiter options over generous limits for `m` and no margin. */
  readonly limiter?: RateLimiter.Options | undefined
  readonly config?: Partial<ClientConfig.Options> | undefined
}

/** The transport on `client` with a limiter that the test can read (the same one). */
export const stack = (
  client: HttpClient.HttpClient,
  options: StackOptions = {}
): Layer.Layer<InferenceHttpClient | RateLimiter.RateLimiter> => {
  const limiter = limiterOn(options.store ?? LimiterStore.layerMemory, {
    margin: 0,
    limits: { m: { rpm: 1000, tpm: 1_000_000 } },
    ...options.limiter
  })
  return Layer.merge(
    Layer.scoped(InferenceHttpClient, InferenceHttp.make).pipe(Layer.provide(Layer.mergeAll(
      Layer.succeed(HttpClient.HttpClient, client),
      ClientConfig.layer({ apiKey: "test-key", baseUrl: "http://aifs.test/v2", ...options.config }),
      RetryPolicy.layer({ maxRetries: options.retries ?? 0, baseDelay: 0, rateLimitJitter: 0 }),
      limiter
    ))),
    limiter
  )
}

/** The transport on `client`, without retries and without a limiter. */
export const plain = (client: HttpClient.HttpClient): Layer.Layer<InferenceHttpClient> =>
  Layer.scoped(InferenceHttpClient, InferenceHttp.make).pipe(Layer.provide(Layer.mergeAll(
    Layer.succeed(HttpClient.HttpClient, client),
    ClientConfig.layer({ apiKey: "test-key", baseUrl: "http://aifs.test/v2" }),
    RetryPolicy.layerDisabled
  )))

/** A platform client answering every request with the web response `respond` makes for it. */
export const answering = (respond: (request: HttpClientRequest.HttpClientRequest) => Response): HttpClient.HttpClient =>
  HttpClient.make((request) => Effect.succeed(HttpClientResponse.fromWeb(request, respond(request))))

/**
 * What the limiter counts for model `m` now (requests, and the combined tokens: input and output together), and what
 * one chat request reserves of the combined budget (its input estimate and its output cap).
 */
export const counted = Effect.gen(function*() {
  const limiter = yield* RateLimiter.RateLimiter
  const state = (yield* limiter.snapshot).find((s) => s.model === "m")
  const cost = limiter.cost("/chat/completions", chatBody)
  return {
    requests: state?.budgets.requests.used ?? 0,
    tokens: state?.budgets.tokens.used ?? 0,
    waiting: state?.waiting ?? 0,
    reserved: cost.input + cost.output
  }
})
