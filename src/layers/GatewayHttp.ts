/**
 * The HTTP stack behind `GatewayHttpClient`: resolves relative URLs against the gateway, attaches the
 * gateway token a request carries (never the inference key), maps failures to `ApiError` with the same
 * mapping as the inference client, scrubs the password and the token from errors, retries with the
 * `RetryPolicy` and bounds each attempt with a timeout. A request that names a `span` gets it here, over its
 * attempts, as every inference request does.
 *
 * @example
 * ```ts
 * import { GatewayConfig, GatewayHttp, Node } from "effect-aifs"
 * import type { GatewayHttpClient } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the transport alone, for an `Auth` and a `Gateway` of your own; the inference key is never in reach
 * export const TransportLive: Layer.Layer<GatewayHttpClient.GatewayHttpClient> = GatewayHttp.layerDefaultRetry.pipe(
 *   Layer.provide(GatewayConfig.layer({ username: "me", password: "...", timeout: "1 minute" })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { makeRedactor } from "../internal/redact.js"
import * as Attempt from "../internal/request/attempt.js"
import * as Deadlines from "../internal/request/deadline.js"
import { decodeJson } from "../internal/request/decode.js"
import * as Operation from "../internal/request/operation.js"
import * as Pipeline from "../internal/request/pipeline.js"
import { serverOf } from "../internal/telemetry.js"
import * as Transport from "../internal/transport.js"
import { type ApiError, TransportError } from "../schemas/Errors.js"
import { GatewayHttpClient, type RequestOptions } from "../services/gateway/GatewayHttpClient.js"
import type { WithResponse } from "../services/InferenceHttpClient.js"
import { GatewayConfig } from "./GatewayConfig.js"
import * as RetryPolicy from "./RetryPolicy.js"

/**
 * Builds the transport from the platform `HttpClient`, the `GatewayConfig` and the `RetryPolicy`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<
  GatewayHttpClient.Service,
  never,
  HttpClient.HttpClient | GatewayConfig | RetryPolicy.RetryPolicy | Scope.Scope
> = Effect.gen(function*() {
  const deadlines = yield* Deadlines.make
  const config = yield* GatewayConfig
  const policy = yield* RetryPolicy.RetryPolicy
  const client = yield* HttpClient.HttpClient
  const operations = Operation.make(undefined, serverOf(config.url), false)
  const headers = { accept: "application/json", "user-agent": Transport.userAgent }

  /** The pipeline of one request: its token is one more secret its errors must not show. */
  const pipelineFor = (options: RequestOptions) => {
    const redact = makeRedactor([config.password, options.token])
    const attempt = Attempt.make({
      admissions: undefined,
      learn: () => Effect.void,
      spent: () => Effect.void,
      prepare: (request, { timeout }, accept) => {
        const base = HttpClientRequest.setHeaders(HttpClientRequest.prependUrl(request, config.url), {
          ...headers,
          accept
        })
        const prepared = options.token === undefined ? base : HttpClientRequest.bearerToken(base, options.token)
        // one time limit, from sending to the whole answer (a first-byte limit no shorter is never set)
        const total = timeout === undefined ? config.timeout : Duration.decode(timeout)
        return { prepared, endpoint: Transport.endpointOf(prepared), timeouts: { firstByte: total, total } }
      },
      send: (request, endpoint) =>
        Transport.send(client, request, endpoint, redact, { connect: config.connectTimeout }),
      deadlines
    })
    return { redact, pipeline: Pipeline.make({ operations, policy, attempt }) }
  }

  const json = <A, I>(
    request: HttpClientRequest.HttpClientRequest,
    schema: Schema.Schema<A, I>,
    options: RequestOptions = {}
  ): Effect.Effect<WithResponse<A>, ApiError> => {
    // a token must reach the gateway only: absolute URLs (another host) are refused, not sent
    if (/^[a-z][a-z0-9+.-]*:/i.test(request.url)) {
      const refused = new TransportError({
        message: "gateway requests take a URL relative to the gateway; refusing to send credentials elsewhere",
        endpoint: Transport.endpointOf(request)
      })
      return operations.operation(request, options, () => Effect.fail(refused))
    }
    const { pipeline, redact } = pipelineFor(options)
    return pipeline.run(
      request,
      options,
      headers.accept,
      ({ endpoint, meta, response }) =>
        Transport.readText(response, endpoint).pipe(
          Effect.flatMap((text) => decodeJson(schema, text, meta, endpoint, redact)),
          Effect.map((value) => ({ value, response: meta }))
        )
    )
  }

  return { url: config.url, json }
})

/**
 * The transport, from the platform `HttpClient`, a `GatewayConfig` and a `RetryPolicy`.
 *
 * @example
 * ```ts
 * import { GatewayConfig, GatewayHttp, Node, RetryPolicy } from "effect-aifs"
 * import type { GatewayHttpClient } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // the transport with a retry policy of your own: here none at all
 * export const TransportLive: Layer.Layer<GatewayHttpClient.GatewayHttpClient> = GatewayHttp.layer.pipe(
 *   Layer.provide(RetryPolicy.layerDisabled),
 *   Layer.provide(GatewayConfig.layer({ username: "me", password: "..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<
  GatewayHttpClient,
  never,
  HttpClient.HttpClient | GatewayConfig | RetryPolicy.RetryPolicy
> = Layer.scoped(GatewayHttpClient, make)

/**
 * The transport with the default retry policy (its `maxRetries` from the `GatewayConfig`).
 *
 * @example
 * ```ts
 * import { Auth, GatewayConfig, GatewayHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // logins for a second user on the same transport (`maxRetries` from the configuration)
 * export const OtherUser: Layer.Layer<Auth.Auth> = Auth.layer({ username: "other", password: "..." }).pipe(
 *   Layer.provide(GatewayHttp.layerDefaultRetry),
 *   Layer.provide(GatewayConfig.layer({ username: "me", password: "...", maxRetries: 1 })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDefaultRetry: Layer.Layer<GatewayHttpClient, never, HttpClient.HttpClient | GatewayConfig> = layer
  .pipe(
    Layer.provide(
      Layer.effect(
        RetryPolicy.RetryPolicy,
        Effect.map(GatewayConfig, (config) => RetryPolicy.make({ maxRetries: config.maxRetries }))
      )
    )
  )
