/**
 * The pieces of one HTTP attempt that the inference and gateway stacks share: sending, reading the response
 * metadata, mapping a failed response to its typed error, the total time limit (decoding a body: request/decode.ts).
 * @internal
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as MetricLabel from "effect/MetricLabel"
import * as Stream from "effect/Stream"
import { type ApiError, Timeout, TransportError } from "../schemas/Errors.js"
import { fromHttpClientError, fromResponse } from "./errors.js"
import { parseRateLimitInfo, requestId } from "./headers.js"
import { ResponseMetadata } from "./request/types.js"

/** The `user-agent` of every request. */
export const userAgent = "effect-aifs/0.1.0"

/** Error bodies are read up to this size; the rest is dropped (an HTML error page can be large). */
const maxErrorBody = 64 * 1024

/** The path of a URL, without host or query (a relative one needs no parsing). */
export const pathOf = (url: string): string => {
  if (url.startsWith("/")) return url.split(/[?#]/)[0]!
  try {
    return new URL(url).pathname
  } catch {
    return url.split("?")[0] ?? url
  }
}

/** A request as errors name it: `METHOD /path`, without host or query. */
export const endpointOf = (request: HttpClientRequest.HttpClientRequest): string =>
  `${request.method} ${pathOf(request.url)}`

/** Reads at most 64 KiB of a body (an error page), for an excerpt. */
export const readBounded = (response: HttpClientResponse.HttpClientResponse) =>
  response.stream.pipe(
    Stream.decodeText(),
    Stream.runFoldWhile("", (text) => text.length < maxErrorBody, (text, chunk) => text + chunk),
    Effect.map((text) => text.slice(0, maxErrorBody))
  )

/** What `send` takes besides the request. */
export interface SendOptions {
  /** Sees every status that came back, with the fiber's metric labels (synchronously: no step of its own). */
  readonly observe?: ((status: number, labels: ReadonlyArray<MetricLabel.MetricLabel>) => void) | undefined
  /** The connect timeout the HTTP client applies, to name it when it fires. */
  readonly connect: Duration.Duration
}

/**
 * True when `cause`, or an error it wraps up to three causes deep (undici wraps the socket's error once or
 * twice), has one of `codes`. Bounded: a chain of causes can loop.
 */
const hasCode = (cause: unknown, codes: ReadonlySet<unknown>): boolean => {
  for (let current = cause, depth = 0; current instanceof Error && depth < 4; depth++) {
    if (codes.has((current as { code?: unknown }).code)) return true
    current = current.cause
  }
  return false
}

/** undici's connect timeout (the `connect.timeout` of its dispatcher, which covers the TCP and TLS handshakes). */
const isConnectTimeout = (cause: unknown): boolean => hasCode(cause, new Set(["UND_ERR_CONNECT_TIMEOUT"]))

/** Failures before a connection existed: the request cannot have reached the server. */
const notConnected = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL"
])

/**
 * One attempt up to the response headers. A non-2xx status becomes its typed error (body read bounded and
 * redacted); a connect time limit that passes becomes `Timeout` naming it (the first-byte and total limits are the
 * caller's: see `request/deadline.ts`).
 */
export const send = (
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  endpoint: string,
  redact: (text: string) => string,
  options: SendOptions
): Effect.Effect<readonly [HttpClientResponse.HttpClientResponse, ResponseMetadata], ApiError> => {
  const execute = client.execute(request).pipe(
    Effect.mapError((error): ApiError =>
      error._tag === "RequestError" && isConnectTimeout(error.cause)
        ? new Timeout({
          message: `no connection within ${Duration.format(options.connect)}`,
          endpoint,
          timeout: "connect",
          after: options.connect
        })
        : new TransportError({
          message: redact(fromHttpClientError(error, endpoint).message),
          endpoint,
          ...(error._tag === "RequestError" && hasCode(error.cause, notConnected) ? { connected: false } : {})
        })
    )
  )
  return Effect.flatMap(execute, (response) => metadataOrError(response, endpoint, redact, options.observe))
}

/** The metadata of a response whose status line came back; a non-2xx status becomes its typed error. */
const metadataOrError = (
  response: HttpClientResponse.HttpClientResponse,
  endpoint: string,
  redact: (text: string) => string,
  observe: SendOptions["observe"]
): Effect.Effect<readonly [HttpClientResponse.HttpClientResponse, ResponseMetadata], ApiError> =>
  Effect.withFiberRuntime((fiber) => {
    // read once: the platform builds the headers anew at every read
    const headers = response.headers
    const status = response.status
    const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
    const info = new ResponseMetadata({
      status,
      requestId: requestId(headers),
      rateLimit: parseRateLimitInfo(headers, now),
      headers
    })
    observe?.(status, fiber.getFiberRef(FiberRef.currentMetricLabels))
    if (status >= 200 && status < 300) return Effect.succeed([response, info] as const)
    return Effect.flatMap(Effect.orElseSucceed(readBounded(response), () => ""), (body) =>
      Effect.fail(fromResponse({
        status,
        body: redact(body),
        endpoint,
        requestId: info.requestId,
        rateLimit: info.rateLimit
      })))
  })

/** Reads a whole body as text; a connection lost mid-body is a `TransportError`. */
export const readText = (response: HttpClientResponse.HttpClientResponse, endpoint: string) =>
  Effect.mapError(response.text, (error) => fromHttpClientError(error, endpoint))

/** The `Timeout` of a first-byte limit that passed. */
export const firstByteTimedOut = (after: Duration.Duration, endpoint: string) =>
  new Timeout({ message: `no response within ${Duration.format(after)}`, endpoint, timeout: "firstByte", after })

/** The `Timeout` of a total limit that passed. */
export const totalTimedOut = (after: Duration.Duration, endpoint: string) =>
  new Timeout({ message: `no complete response within ${Duration.format(after)}`, endpoint, timeout: "total", after })
