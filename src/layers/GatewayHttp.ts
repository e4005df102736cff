/**
 * The HTTP stack behind `GatewayHttpClient`: resolves relative URLs against the gateway, attaches the
 * gateway token a request carries (never the inference key), maps failures to `ApiError` with the same
 * mapping as the inference client, scrubs the password and the token from errors, retries with the
 * `RetryPolicy` and bounds each attempt with a timeout.
 *
 * @since 0.1.0
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { excerpt, fromHttpClientError, fromResponse } from "../internal/errors.js"
import { parseRateLimitInfo, requestId } from "../internal/headers.js"
import { makeRedactor } from "../internal/redact.js"
import { type ApiError, DecodeError, Timeout, TransportError } from "../schemas/Errors.js"
import { GatewayHttpClient, type RequestOptions } from "../services/gateway/GatewayHttpClient.js"
import { ResponseMetadata, type WithResponse } from "../services/InferenceHttpClient.js"
import { GatewayConfig } from "./GatewayConfig.js"
import * as RetryPolicy from "./RetryPolicy.js"

const userAgent = "effect-aifs/0.1.0"
const maxErrorBody = 64 * 1024

const pathOf = (url: string): string => {
  try {
    return new URL(url).pathname
  } catch {
    return url.split("?")[0] ?? url
  }
}

const readBounded = (response: HttpClientResponse.HttpClientResponse) =>
  response.stream.pipe(
    Stream.decodeText(),
    Stream.runFoldWhile("", (text) => text.length < maxErrorBody, (text, chunk) => text + chunk),
    Effect.map((text) => text.slice(0, maxErrorBody))
  )

/**
 * Builds the transport from the platform `HttpClient`, the `GatewayConfig` and the `RetryPolicy`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<
  GatewayHttpClient.Service,
  never,
  HttpClient.HttpClient | GatewayConfig | RetryPolicy.RetryPolicy
> = Effect.gen(function*() {
  const config = yield* GatewayConfig
  const policy = yield* RetryPolicy.RetryPolicy
  const client = yield* HttpClient.HttpClient

  const json = <A, I>(
    request: HttpClientRequest.HttpClientRequest,
    schema: Schema.Schema<A, I>,
    options: RequestOptions = {}
  ): Effect.Effect<WithResponse<A>, ApiError> => {
    const redact = makeRedactor([config.password, options.token])
    // a token must reach the gateway only: absolute URLs (another host) are refused, not sent
    if (/^[a-z][a-z0-9+.-]*:/i.test(request.url)) {
      return Effect.fail(
        new TransportError({
          message: "gateway requests take a URL relative to the gateway; refusing to send credentials elsewhere",
          endpoint: `${request.method} ${pathOf(request.url)}`
        })
      )
    }
    const base = request.pipe(
      HttpClientRequest.prependUrl(config.url),
      HttpClientRequest.setHeaders({ accept: "application/json", "user-agent": userAgent })
    )
    const prepared = options.token === undefined ? base : HttpClientRequest.bearerToken(base, options.token)
    const endpoint = `${prepared.method} ${pathOf(prepared.url)}`
    const after = options.timeout === undefined ? config.timeout : Duration.decode(options.timeout)

    const decode = (text: string, meta: ResponseMetadata) => {
      const failure = (message: string) =>
        new DecodeError({
          message,
          endpoint,
          status: meta.status,
          ...(meta.requestId === undefined ? {} : { requestId: meta.requestId }),
          excerpt: excerpt(redact(text))
        })
      return Effect.try({ try: () => JSON.parse(text) as unknown, catch: () => failure("response body is not JSON") })
        .pipe(Effect.flatMap((body) =>
          Schema.decodeUnknown(schema)(body, { onExcessProperty: "ignore" }).pipe(
            Effect.mapError((error) =>
              failure(redact(`response did not match its schema: ${ParseResult.TreeFormatter.formatErrorSync(error)}`))
            )
          )
        ))
    }

    const attempt = client.execute(prepared).pipe(
      Effect.mapError((error) =>
        new TransportError({ message: redact(fromHttpClientError(error, endpoint).message), endpoint })
      ),
      Effect.flatMap((response) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const meta = new ResponseMetadata({
            status: response.status,
            requestId: requestId(response.headers),
            rateLimit: parseRateLimitInfo(response.headers, now),
            headers: response.headers
          })
          if (response.status < 200 || response.status >= 300) {
            const body = yield* readBounded(response).pipe(Effect.orElseSucceed(() => ""))
            return yield* Effect.fail(fromResponse({
              status: response.status,
              body: redact(body),
              endpoint,
              requestId: meta.requestId,
              rateLimit: meta.rateLimit
            }))
          }
          const text = yield* response.text.pipe(Effect.mapError((error) => fromHttpClientError(error, endpoint)))
          const value = yield* decode(text, meta)
          return { value, response: meta }
        })
      ),
      Effect.timeoutFail({
        duration: after,
        onTimeout: () =>
          new Timeout({
            message: `no complete response within ${Duration.format(after)}`,
            endpoint,
            timeout: "total",
            after
          })
      })
    )
    return options.retry === false ? attempt : Effect.retry(attempt, policy.schedule)
  }

  return { url: config.url, json }
})

/**
 * The transport, from the platform `HttpClient`, a `GatewayConfig` and a `RetryPolicy`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<
  GatewayHttpClient,
  never,
  HttpClient.HttpClient | GatewayConfig | RetryPolicy.RetryPolicy
> = Layer.effect(GatewayHttpClient, make)

/**
 * The transport with the default retry policy (its `maxRetries` from the `GatewayConfig`).
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
