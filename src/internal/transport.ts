/**
 * The pieces of one HTTP attempt that the inference and gateway stacks share: sending, reading the response
 * metadata, mapping a failed response to its typed error, decoding a JSON body, the total time limit.
 * @internal
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as Stream from "effect/Stream"
import { type ApiError, DecodeError, Timeout, TransportError } from "../schemas/Errors.js"
import type { RateLimitInfo } from "../schemas/RateLimit.js"
import { excerpt, fromHttpClientError, fromResponse } from "./errors.js"
import { parseRateLimitInfo, requestId } from "./headers.js"

/** The `user-agent` of every request. */
export const userAgent = "effect-aifs/0.1.0"

/** Error bodies are read up to this size; the rest is dropped (an HTML error page can be large). */
const maxErrorBody = 64 * 1024

/** What a response said besides its body. */
export interface ResponseInfo {
  readonly status: number
  readonly requestId: string | undefined
  readonly rateLimit: RateLimitInfo
  readonly headers: HttpClientResponse.HttpClientResponse["headers"]
}

const pathOf = (url: string): string => {
  try {
    return new URL(url).pathname
  } catch {
    return url.split("?")[0] ?? url
  }
}

/** A request as errors name it: `METHOD /path`, without host or query. */
export const endpointOf = (request: HttpClientRequest.HttpClientRequest): string =>
  `${request.method} ${pathOf(request.url)}`

const readBounded = (response: HttpClientResponse.HttpClientResponse) =>
  response.stream.pipe(
    Stream.decodeText(),
    Stream.runFoldWhile("", (text) => text.length < maxErrorBody, (text, chunk) => text + chunk),
    Effect.map((text) => text.slice(0, maxErrorBody))
  )

/**
 * One attempt up to the response headers. A non-2xx status becomes its typed error (body read bounded and
 * redacted); `observe` sees every status that came back.
 */
export const send = (
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  endpoint: string,
  redact: (text: string) => string,
  observe: (status: number) => Effect.Effect<void> = () => Effect.void
): Effect.Effect<readonly [HttpClientResponse.HttpClientResponse, ResponseInfo], ApiError> =>
  client.execute(request).pipe(
    Effect.mapError((error) =>
      new TransportError({ message: redact(fromHttpClientError(error, endpoint).message), endpoint })
    ),
    Effect.flatMap((response) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const info: ResponseInfo = {
          status: response.status,
          requestId: requestId(response.headers),
          rateLimit: parseRateLimitInfo(response.headers, now),
          headers: response.headers
        }
        yield* observe(response.status)
        if (response.status >= 200 && response.status < 300) return [response, info] as const
        const body = yield* readBounded(response).pipe(Effect.orElseSucceed(() => ""))
        return yield* Effect.fail(fromResponse({
          status: response.status,
          body: redact(body),
          endpoint,
          requestId: info.requestId,
          rateLimit: info.rateLimit
        }))
      })
    )
  )

/** Reads a whole body as text; a connection lost mid-body is a `TransportError`. */
export const readText = (response: HttpClientResponse.HttpClientResponse, endpoint: string) =>
  Effect.mapError(response.text, (error) => fromHttpClientError(error, endpoint))

const schemaName = (schema: Schema.Schema.Any): string => {
  // a Schema.Class is a Transformation whose identifier sits on its type side
  const ast = SchemaAST.typeAST(schema.ast)
  return Option.getOrElse(
    Option.orElse(SchemaAST.getIdentifierAnnotation(ast), () => SchemaAST.getTitleAnnotation(ast)),
    () => "its schema"
  )
}

/**
 * A decoder for one schema, built once: `value` decodes an already-parsed JSON value (tolerantly: extra
 * fields pass), `text` parses first. Failures are bounded, redacted `DecodeError`s. Synchronous, because a
 * stream decodes one per chunk.
 */
export const decoder = <A, I>(schema: Schema.Schema<A, I>, endpoint: string, redact: (text: string) => string) => {
  const decode = Schema.decodeUnknownEither(schema, { onExcessProperty: "ignore" })
  const name = schemaName(schema)
  const failure = (message: string, text: string, info: ResponseInfo) =>
    new DecodeError({
      message: excerpt(redact(message), 1024),
      endpoint,
      status: info.status,
      ...(info.requestId === undefined ? {} : { requestId: info.requestId }),
      excerpt: excerpt(redact(text))
    })
  const value = (json: unknown, text: string, info: ResponseInfo): Either.Either<A, DecodeError> =>
    Either.mapLeft(
      decode(json),
      (error) =>
        failure(`response did not match ${name}: ${ParseResult.TreeFormatter.formatErrorSync(error)}`, text, info)
    )
  const parse = (text: string, info: ResponseInfo): Either.Either<unknown, DecodeError> => {
    try {
      return Either.right(JSON.parse(text) as unknown)
    } catch {
      return Either.left(failure("response body is not JSON", text, info))
    }
  }
  return {
    parse,
    value,
    text: (text: string, info: ResponseInfo): Either.Either<A, DecodeError> =>
      Either.flatMap(parse(text, info), (json) => value(json, text, info))
  }
}

/** Parses and decodes a JSON body with `schema`. */
export const decodeJson = <A, I>(
  schema: Schema.Schema<A, I>,
  text: string,
  info: ResponseInfo,
  endpoint: string,
  redact: (text: string) => string
): Effect.Effect<A, DecodeError> => decoder(schema, endpoint, redact).text(text, info)

/** Fails with `Timeout` (`total`) when `effect` takes longer than `after`. */
export const totalTimeout = (after: Duration.Duration, endpoint: string) =>
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
