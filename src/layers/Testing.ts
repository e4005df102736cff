/**
 * Test doubles for code that uses this library: a scripted HTTP transport that runs the real client stack
 * (mapping, retries, decoding) without sockets, and stubs for any single service.
 *
 * @example
 * ```ts
 * import { Chat, ChatSchema, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the code under test
 * const summarise = (text: string) =>
 *   Effect.flatMap(Chat.Chat, (chat) =>
 *     chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: `Summarise: ${text}` }] })
 *   ).pipe(Effect.map((answer) => answer.text))
 *
 * // a stub of the one service it uses; any other method throws "... is not mocked"
 * const ChatStub = Testing.mock(Chat.Chat, {
 *   create: () =>
 *     Effect.succeed(
 *       new ChatSchema.ChatCompletion({
 *         choices: [{ index: 0, message: { role: "assistant", content: "Short." }, finish_reason: "stop" }]
 *       })
 *     )
 * })
 *
 * Effect.runPromise(summarise("A long text.").pipe(Effect.provide(ChatStub))).then(console.log)
 * // => Short.
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Emulator from "../emulator/Emulator.js"
import type { GatewayHttpClient } from "../services/gateway/GatewayHttpClient.js"
import type { InferenceHttpClient } from "../services/InferenceHttpClient.js"
import * as ClientConfig from "./ClientConfig.js"
import * as Gateway from "./Gateway.js"
import * as GatewayConfig from "./GatewayConfig.js"
import * as GatewayHttp from "./GatewayHttp.js"
import * as Inference from "./Inference.js"
import * as InferenceHttp from "./InferenceHttp.js"
import * as Node from "./Node.js"
import type * as RateLimiter from "./RateLimiter.js"
import * as RetryPolicy from "./RetryPolicy.js"

/**
 * A request as the scripted transport sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScriptedRequest {
  /** HTTP method. */
  readonly method: string
  /** Full URL. */
  readonly url: URL
  /** Path of the URL, e.g. `/v2/chat/completions`. */
  readonly path: string
  /** Request headers (lower-case names; the authorization header is present as sent). */
  readonly headers: Readonly<Record<string, string>>
  /** The JSON body, parsed; a string for other bodies; `undefined` when there is none. */
  readonly body: unknown
}

/**
 * A scripted answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScriptedResponse {
  /** HTTP status (default 200). */
  readonly status?: number | undefined
  /** Response headers. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** The body: a string is sent as is, anything else as JSON. */
  readonly body?: unknown
  /** Server-sent events instead of a body: each is sent as a `data:` line (objects as JSON). */
  readonly sse?: ReadonlyArray<unknown> | undefined
  /** With `sse`: append `data: [DONE]` (default true). */
  readonly done?: boolean | undefined
}

/**
 * Answers requests: a plain function or an effect (to count calls, sleep on the `TestClock`, fail...).
 *
 * @since 0.1.0
 * @category models
 */
export type Handler = (request: ScriptedRequest) => ScriptedResponse | Effect.Effect<ScriptedResponse>

const decoder = new TextDecoder()

const bodyOf = (request: HttpClientRequest.HttpClientRequest): unknown => {
  const body = request.body
  if (body._tag !== "Uint8Array") return body._tag === "Empty" ? undefined : `<${body._tag} body>`
  const text = decoder.decode(body.body)
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const render = (scripted: ScriptedResponse): { body: string; headers: Record<string, string> } => {
  if (scripted.sse !== undefined) {
    const events = scripted.sse.map((e) => `data: ${typeof e === "string" ? e : JSON.stringify(e)}\n\n`)
    if (scripted.done !== false) events.push("data: [DONE]\n\n")
    return { body: events.join(""), headers: { "content-type": "text/event-stream", ...scripted.headers } }
  }
  if (typeof scripted.body === "string") {
    return { body: scripted.body, headers: { "content-type": "text/plain", ...scripted.headers } }
  }
  return {
    body: scripted.body === undefined ? "" : JSON.stringify(scripted.body),
    headers: { "content-type": "application/json", ...scripted.headers }
  }
}

/**
 * A platform `HttpClient` that answers every request from `handler`, in memory.
 *
 * @example
 * ```ts
 * import * as HttpClient from "@effect/platform/HttpClient"
 * import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
 * import { Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // a platform `HttpClient` answering in memory: for any code that sends through `HttpClient`
 * const client = Testing.httpClient((request) => ({ body: { echoed: request.body } }))
 *
 * const program = Effect.gen(function*() {
 *   const http = yield* HttpClient.HttpClient
 *   const response = yield* http.execute(
 *     HttpClientRequest.post("http://api.test/echo").pipe(HttpClientRequest.bodyUnsafeJson({ hello: "world" }))
 *   )
 *   return yield* response.json
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provideService(HttpClient.HttpClient, client))).then(console.log)
 * // => { echoed: { hello: 'world' } }
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const httpClient = (handler: Handler): HttpClient.HttpClient =>
  HttpClient.make((request, url) =>
    Effect.gen(function*() {
      const answer = handler({
        method: request.method,
        url,
        path: url.pathname,
        headers: request.headers,
        body: bodyOf(request)
      })
      const scripted = Effect.isEffect(answer) ? yield* answer : answer
      const { body, headers } = render(scripted)
      return HttpClientResponse.fromWeb(
        request,
        new Response(body === "" ? null : body, { status: scripted.status ?? 200, headers })
      )
    })
  )

/**
 * Options of `layerHttp`.
 *
 * @since 0.1.0
 * @category models
 */
export interface LayerHttpOptions {
  /** Client configuration (default: key `test-key`, base `http://aifs.test/v2`). */
  readonly config?: Partial<ClientConfig.Options> | undefined
  /** Retry policy settings (default: the library's defaults). */
  readonly retry?: RetryPolicy.Options | undefined
}

/**
 * Every inference service on the scripted transport: your code under test runs the real client (URL
 * building, auth header, error mapping, retries, decoding) against your answers.
 *
 * @example
 * ```ts
 * import { Chat, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the real client stack (URL, key, error mapping, retries, decoding) against scripted answers:
 * // a 429 with `retry-after: 0`, then the completion
 * let calls = 0
 * const server = Testing.layerHttp((request) =>
 *   ++calls === 1
 *     ? { status: 429, headers: { "retry-after": "0" }, body: { detail: "Rate limit exceeded" } }
 *     : {
 *       body: {
 *         id: "chatcmpl-1",
 *         model: (request.body as { model: string }).model,
 *         choices: [{ index: 0, message: { role: "assistant", content: "Hi!" }, finish_reason: "stop" }]
 *       }
 *     }
 * )
 *
 * const program = Effect.flatMap(Chat.Chat, (chat) =>
 *   chat.create({ model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "Hi" }] }))
 *
 * Effect.runPromise(program.pipe(Effect.provide(server))).then((answer) => console.log(answer.text, calls))
 * // => Hi! 2
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHttp = (
  handler: Handler,
  options: LayerHttpOptions = {}
): Layer.Layer<Inference.Services | InferenceHttpClient> =>
  Inference.layer.pipe(
    Layer.provideMerge(InferenceHttp.layer),
    Layer.provide(Layer.mergeAll(
      Layer.succeed(HttpClient.HttpClient, httpClient(handler)),
      ClientConfig.layer({ apiKey: "test-key", baseUrl: "http://aifs.test/v2", ...options.config }),
      RetryPolicy.layer(options.retry)
    ))
  )

/**
 * A stub of one service: the methods you give, and every other method throws "X is not mocked" when
 * called, so that a test fails loudly on a call it did not expect.
 *
 * @example
 * ```ts
 * import { Models, ModelsSchema, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const ModelsStub = Testing.mock(Models.Models, {
 *   list: () => Effect.succeed(new ModelsSchema.ModelList({ data: [new ModelsSchema.Model({ id: "my-model" })] }))
 * })
 *
 * const program = Effect.gen(function*() {
 *   const models = yield* Models.Models
 *   const list = yield* models.list()
 *   // a method the stub does not have fails the test loudly
 *   const missing = yield* Effect.try({ try: () => models.retrieve("my-model"), catch: String }).pipe(Effect.flip)
 *   return `${list.data[0]?.id}; ${missing}`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(ModelsStub))).then(console.log)
 * // => my-model; Error: effect-aifs/Models.retrieve is not mocked
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const mock = <I, S extends object>(tag: Context.Tag<I, S>, implementation: Partial<S>): Layer.Layer<I> =>
  Layer.succeed(
    tag,
    new Proxy(implementation as S, {
      get(target, property, receiver) {
        if (property in target || typeof property === "symbol") return Reflect.get(target, property, receiver)
        return () => {
          throw new Error(`${tag.key}.${String(property)} is not mocked`)
        }
      }
    })
  )

/**
 * Options of `layerEmulator`.
 *
 * @since 0.1.0
 * @category models
 */
export interface LayerEmulatorOptions extends Emulator.ServeOptions {
  /** Tier of the key the client uses (default `standard4000`). */
  readonly tier?: string | undefined
  /** Client configuration besides key and URLs (retries, timeouts). */
  readonly client?: Partial<ClientConfig.Options> | undefined
  /**
   * The client's proactive rate limiter: its settings (the window defaults to the emulator's), or `false`
   * to meet the emulator's 429s with retries alone.
   */
  readonly rateLimiter?: RateLimiter.Options | false | undefined
}

/**
 * The emulator on a loopback port and every inference service configured against it: real sockets, no key,
 * no network. The emulator stops when the layer's scope closes.
 *
 * @example
 * ```ts
 * import { Chat, Emulator, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // real sockets, no key, no network; the emulator itself is provided too, to inject faults
 * const program = Effect.gen(function*() {
 *   const emulator = yield* Emulator.Emulator
 *   yield* emulator.setChaos([{ fault: { kind: "status", status: 503 }, times: 1 }])
 *   const chat = yield* Chat.Chat
 *   // the first attempt meets the 503, the retry succeeds
 *   const answer = yield* chat.create({ model: "gpt-oss-120b", messages: [{ role: "user", content: "Hi" }] })
 *   const stats = yield* emulator.stats
 *   return `${answer.choices[0]?.finish_reason} after ${stats.received} requests (${stats.faults.status} fault)`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator({ tier: "basic" })))).then(console.log)
 * // => stop after 2 requests (1 fault)
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerEmulator = (
  options: LayerEmulatorOptions = {}
): Layer.Layer<Node.Services | Emulator.Emulator, HttpServerError.ServeError> => {
  const tier = options.tier ?? "standard4000"
  const client = Layer.unwrapEffect(
    Effect.map(Emulator.Emulator, (emulator) =>
      Node.layer({
        // a plan's tier is the client's too: its table gives each model's limits, as the emulator meters them
        ...(ClientConfig.isPlan(tier) ? { tier } : {}),
        ...options.client,
        apiKey: emulator.keyFor(tier) ?? emulator.keys[0]?.key ?? "",
        baseUrl: emulator.baseUrl,
        rateLimiter: options.rateLimiter === false
          ? false
          : { window: options.window ?? Duration.minutes(1), limits: customLimits(options), ...options.rateLimiter }
      }))
  )
  return client.pipe(Layer.provideMerge(Emulator.layer(options)))
}

/**
 * Limits for the client's limiter when the emulator's key has a custom tier: every model gets that tier's
 * quota, each budget it meters (a plan's table is known to the limiter already).
 */
const customLimits = (options: LayerEmulatorOptions): Record<string, Partial<RateLimiter.Quota>> | undefined => {
  const tier = options.tier ?? "standard4000"
  const quota = options.tiers?.[tier]
  // a client told a tier of its own (`auto`: it learns; a plan: its table) is told no limits here
  const told = (tier: string | undefined) => tier === "auto" || ClientConfig.isPlan(tier)
  const auto = told(options.client?.tier) || (options.rateLimiter !== false && told(options.rateLimiter?.tier))
  if (quota === undefined || auto) return undefined
  const limits = Object.fromEntries(
    (["rpm", "itpm", "otpm", "tpm"] as const).flatMap((budget) =>
      quota[budget] === undefined ? [] : [[budget, quota[budget]]]
    )
  )
  return Object.fromEntries(Emulator.models.map((model) => [model, limits]))
}

/**
 * Options of `layerGatewayHttp`.
 *
 * @since 0.1.0
 * @category models
 */
export interface LayerGatewayHttpOptions {
  /** Gateway configuration (default: user `test-user`, password `test-password`, `http://gateway.test`). */
  readonly config?: Partial<GatewayConfig.Options> | undefined
  /** Retry policy settings (default: the library's defaults). */
  readonly retry?: RetryPolicy.Options | undefined
}

/**
 * Every gateway service on the scripted transport: the real client (login, token reuse and refresh, error
 * mapping, retries, decoding) against your answers.
 *
 * @example
 * ```ts
 * import { Testing, UserManager } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the real gateway client (login, token, error mapping, retries) against scripted answers
 * const paths: Array<string> = []
 * const gateway = Testing.layerGatewayHttp((request) => {
 *   paths.push(`${request.method} ${request.path}`)
 *   return request.path === "/api/v1/auth/user"
 *     ? { body: { access_token: "token-1", expires_in: 3600 } }
 *     : { body: { username: "test-user", roles: ["CHAT_USER"] } }
 * })
 *
 * const program = Effect.flatMap(UserManager.UserManager, (users) => users.me())
 *
 * Effect.runPromise(program.pipe(Effect.provide(gateway))).then(() => console.log(paths))
 * // => [ 'POST /api/v1/auth/user', 'GET /user-manager/api/v1/users/me' ]
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerGatewayHttp = (
  handler: Handler,
  options: LayerGatewayHttpOptions = {}
): Layer.Layer<Gateway.Services | GatewayHttpClient | GatewayConfig.GatewayConfig> =>
  Gateway.layer.pipe(
    Layer.provideMerge(GatewayHttp.layer),
    Layer.provideMerge(GatewayConfig.layer({
      username: "test-user",
      password: "test-password",
      url: "http://gateway.test",
      ...options.config
    })),
    Layer.provide(Layer.mergeAll(
      Layer.succeed(HttpClient.HttpClient, httpClient(handler)),
      RetryPolicy.layer(options.retry)
    ))
  )

/**
 * Options of `layerGatewayEmulator`.
 *
 * @since 0.1.0
 * @category models
 */
export interface LayerGatewayEmulatorOptions extends Emulator.ServeOptions {
  /** The gateway user the client logs in as (default: the first user with `CHAT_USER`). */
  readonly username?: string | undefined
  /** Client configuration besides URL and credentials (query-pipeline path, refresh, retries). */
  readonly client?: Partial<GatewayConfig.Options> | undefined
}

/**
 * The emulator on a loopback port and every gateway service logged in against its `/gateway`: real
 * sockets, no network. The emulator stops when the layer's scope closes.
 *
 * @example
 * ```ts
 * import { Rag, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the gateway services logged in as a given development user, with a token that expires every 5 seconds
 * const gateway = Testing.layerGatewayEmulator({ username: "other", gateway: { tokenLifetime: "5 seconds" } })
 *
 * const program = Effect.gen(function*() {
 *   const session = yield* Rag.openSession({ global: true, title: "Questions" })
 *   return session.title
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(gateway))).then(console.log)
 * // => Questions
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerGatewayEmulator = (
  options: LayerGatewayEmulatorOptions = {}
): Layer.Layer<Node.GatewayServices | Emulator.Emulator, HttpServerError.ServeError> => {
  const client = Layer.unwrapEffect(
    Effect.map(Emulator.Emulator, (emulator) => {
      const user = emulator.gatewayUsers.find((u) =>
        options.username === undefined
          ? (u.roles ?? ["CHAT_USER"]).includes("CHAT_USER")
          : u.username === options.username
      )
      return Node.layerGateway({
        ...options.client,
        url: emulator.gatewayUrl,
        username: user?.username ?? options.username ?? "",
        password: user?.password ?? ""
      })
    })
  )
  return client.pipe(Layer.provideMerge(Emulator.layer(options)))
}
