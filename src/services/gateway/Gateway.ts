/**
 * The authenticated gateway client, and its typed escape hatch `request(service, method, route, ...)` for
 * routes the public docs do not show: the same token handling (re-login on 401), error mapping and retries
 * as the typed services, which are built on it.
 *
 * @example
 * ```ts
 * import { Gateway, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 *
 * // a route the public docs do not show, with a typed answer
 * const Me = Schema.Struct({ username: Schema.String, roles: Schema.Array(Schema.String) })
 *
 * const program = Gateway.request("user-manager", "GET", "/api/v1/users/me", { response: Me }).pipe(
 *   Effect.map((me) => `${me.username}: ${me.roles.join(", ")}`)
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * // => demo: CHAT_USER
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpMethod from "@effect/platform/HttpMethod"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import * as Multipart from "../../internal/multipart.js"
import type { ApiError } from "../../schemas/Errors.js"
import { Auth } from "./Auth.js"
import { GatewayHttpClient, type RequestOptions, type WithResponse } from "./GatewayHttpClient.js"

/**
 * A part of a multipart body: a text field or a file.
 *
 * @since 0.1.0
 * @category models
 */
export type MultipartPart = Multipart.MultipartPart

/**
 * The service paths of the gateway (any other string is accepted).
 *
 * @since 0.1.0
 * @category models
 */
export type ServiceName =
  | "config-manager"
  | "user-manager"
  | "file-manager"
  | "ingest-master"
  | "chat-session-manager"
  | "query-pipeline"
  | "query-pipelines"
  | (string & {})

/**
 * Query parameters: a list repeats the name (`fileIds=a&fileIds=b`); `undefined` is left out.
 *
 * @since 0.1.0
 * @category models
 */
export type Query = Readonly<Record<string, string | number | boolean | ReadonlyArray<string> | undefined>>

/**
 * What `request` sends and how it reads the answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestParams<A, I> {
  /** A JSON body. */
  readonly body?: unknown
  /** A multipart body instead of JSON: text fields and files. */
  readonly multipart?: ReadonlyArray<MultipartPart> | undefined
  /** Query parameters. */
  readonly query?: Query | undefined
  /** The schema of the answer (`Schema.Unknown` to take it as is). */
  readonly response: Schema.Schema<A, I>
  /** Set to `false` when the request must not be sent twice. */
  readonly retry?: boolean | undefined
}

/**
 * The authenticated gateway client.
 *
 * @example
 * ```ts
 * import { Gateway, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 *
 * // query parameters: a list repeats the name (`fileIds=a&fileIds=b`)
 * const program = Effect.gen(function*() {
 *   const gateway = yield* Gateway.Gateway
 *   const files = yield* gateway.request("file-manager", "GET", "/api/v1/files/", {
 *     query: { kb: "local", fileIds: ["file-1", "file-2"] },
 *     response: Schema.Array(Schema.Unknown)
 *   })
 *   return files.length
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class Gateway extends Context.Tag("effect-aifs/gateway/Gateway")<Gateway, Gateway.Service>() {}

/**
 * The types of the `Gateway` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Gateway {
  /**
   * What `Gateway` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Sends a relative request with the gateway token (re-login once on 401) and decodes the answer. */
    readonly send: <A, I>(
      request: HttpClientRequest.HttpClientRequest,
      schema: Schema.Schema<A, I>,
      options?: Omit<RequestOptions, "token">
    ) => Effect.Effect<WithResponse<A>, ApiError>
    /** `<gateway>/<service><route>` with a typed answer: for any route, documented or not. */
    readonly request: <A, I>(
      service: ServiceName,
      method: HttpMethod.HttpMethod,
      route: string,
      params: RequestParams<A, I>
    ) => Effect.Effect<A, ApiError>
  }
}

/**
 * Adds query parameters, repeating a name for each element of a list.
 *
 * @since 0.1.0
 * @category helpers
 */
export const withQuery = (request: HttpClientRequest.HttpClientRequest, query: Query | undefined) => {
  let out = request
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined) continue
    if (typeof value === "object") { for (const item of value) out = HttpClientRequest.appendUrlParam(out, name, item) }
    else out = HttpClientRequest.appendUrlParam(out, name, String(value))
  }
  return out
}

const joinPath = (service: string, route: string): string => {
  const prefix = service.replace(/^\/+|\/+$/g, "")
  const rest = route.startsWith("/") ? route : `/${route}`
  return prefix === "" ? rest : `/${prefix}${rest}`
}

/**
 * Builds the client on `Auth` and the `GatewayHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Gateway.Service, never, Auth | GatewayHttpClient> = Effect.gen(function*() {
  const auth = yield* Auth
  const http = yield* GatewayHttpClient
  const send = <A, I>(
    request: HttpClientRequest.HttpClientRequest,
    schema: Schema.Schema<A, I>,
    options: Omit<RequestOptions, "token"> = {}
  ) => auth.authenticated((token) => http.json(request, schema, { ...options, token }))
  const request = <A, I>(
    service: ServiceName,
    method: HttpMethod.HttpMethod,
    route: string,
    params: RequestParams<A, I>
  ): Effect.Effect<A, ApiError> => {
    const base = withQuery(HttpClientRequest.make(method)(joinPath(service, route)), params.query)
    const withBody = params.multipart !== undefined
      ? Effect.map(
        Multipart.encode(Multipart.inMemory(params.multipart), `${method} ${base.url}`),
        ({ body }) => HttpClientRequest.setBody(base, body)
      )
      : Effect.succeed(params.body !== undefined ? HttpClientRequest.bodyUnsafeJson(base, params.body) : base)
    // the span is the transport's
    return Effect.flatMap(
      withBody,
      (request) =>
        send(request, params.response, {
          retry: params.retry,
          span: { name: "Gateway.request", attributes: { "aifs.gateway.service": service } }
        })
    ).pipe(Effect.map((r) => r.value))
  }
  return { send, request }
})

/**
 * The client, on `Auth` and a `GatewayHttpClient`.
 *
 * @example
 * ```ts
 * import { Auth, Gateway, GatewayConfig, GatewayHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the authenticated client alone, on the Node HTTP client
 * export const GatewayLive: Layer.Layer<Gateway.Gateway> = Gateway.layer.pipe(
 *   Layer.provide(Auth.layer({ username: "me", password: "..." })),
 *   Layer.provideMerge(GatewayHttp.layerDefaultRetry),
 *   Layer.provide(GatewayConfig.layer({ username: "me", password: "..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Gateway, never, Auth | GatewayHttpClient> = Layer.effect(Gateway, make)

/**
 * The escape hatch as a function of the environment: `Gateway.request("user-manager", "GET", "/api/v1/x",
 * { response: Schema.Unknown })`.
 *
 * @since 0.1.0
 * @category requests
 */
export const request = <A, I>(
  service: ServiceName,
  method: HttpMethod.HttpMethod,
  route: string,
  params: RequestParams<A, I>
): Effect.Effect<A, ApiError, Gateway> =>
  Effect.flatMap(Gateway, (gateway) => gateway.request(service, method, route, params))
