/**
 * A request on the wire: as sent (its base, the key, what it accepts, its endpoint and time limits), and one
 * exchange up to the status line, each status counted.
 * @internal
 */
import * as Headers from "@effect/platform/Headers"
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as MetricLabel from "effect/MetricLabel"
import { type ApiError, NotFound } from "../../schemas/Errors.js"
import * as Metrics from "../metrics.js"
import * as Transport from "../transport.js"
import type { Deps } from "./attempt.js"
import type { Credentials } from "./credentials.js"
import type { Base, RequestOptions } from "./types.js"

/**
 * Counts every status that comes back, and the 429s apart: one tagged counter per status, made once (tagging
 * builds a new metric key each time).
 */
export const statusCounter = () => {
  const byStatus = new Map<number, Metric.Metric.Counter<number>>()
  return (status: number, labels: ReadonlyArray<MetricLabel.MetricLabel>): void => {
    let counter = byStatus.get(status)
    if (counter === undefined) {
      counter = Metric.tagged(Metrics.requests, "status", String(status))
      byStatus.set(status, counter)
    }
    counter.unsafeUpdate(1, labels)
    if (status === 429) Metrics.rateLimited.unsafeUpdate(1, labels)
  }
}

/** Where requests go and their time limits: what `ClientConfig` says of them. */
export interface Endpoints {
  readonly baseUrl: string
  readonly v1Url: string
  readonly queueUrl: string
  readonly timeout: Duration.Duration
  readonly connectTimeout: Duration.Duration
  readonly firstByteTimeout: Duration.Duration
  readonly queueTimeout: Duration.Duration
}

/**
 * The request as sent, from a service's relative one: on its base, with the key, what it accepts and the client's
 * name, its endpoint as errors name it, its time limits (the queue waits for capacity, so longer). What does not
 * change from request to request (the headers, the bases' paths) is made once.
 */
export const preparer = (config: Endpoints, credentials: Credentials) => {
  const bases: Record<Base, string> = { v2: config.baseUrl, v1: config.v1Url, queue: config.queueUrl }
  // a base at an origin's root has the path "/": the request's own path follows it
  const pathOfBase = (url: string) => Transport.pathOf(url).replace(/\/$/, "")
  const paths: Record<Base, string> = {
    v2: pathOfBase(config.baseUrl),
    v1: pathOfBase(config.v1Url),
    queue: pathOfBase(config.queueUrl)
  }
  const headers = new Map<string, Headers.Headers>()
  let generation = credentials.generation()
  const headersFor = (accept: string) => {
    // a renewed key: the headers made with the old one go
    if (credentials.generation() !== generation) {
      headers.clear()
      generation = credentials.generation()
    }
    let made = headers.get(accept)
    if (made === undefined) {
      made = Headers.fromInput({
        authorization: credentials.authorization(),
        accept,
        "user-agent": Transport.userAgent
      })
      headers.set(accept, made)
    }
    return made
  }
  return (request: HttpClientRequest.HttpClientRequest, options: RequestOptions, accept: string) => {
    const base = options.base ?? "v2"
    const queue = base === "queue"
    const prepared = HttpClientRequest.setHeaders(
      HttpClientRequest.prependUrl(request, bases[base]),
      headersFor(accept)
    )
    return {
      prepared,
      // a service's URL is relative to its base: the endpoint needs no URL parsed
      endpoint: `${request.method} ${paths[base]}${Transport.pathOf(request.url)}`,
      timeouts: {
        firstByte: options.firstByteTimeout === undefined
          ? queue ? config.queueTimeout : config.firstByteTimeout
          : Duration.decode(options.firstByteTimeout),
        total: options.timeout === undefined
          ? queue ? config.queueTimeout : config.timeout
          : Duration.decode(options.timeout)
      }
    }
  }
}

/** One exchange up to the status line (see `Transport.send`), each status counted. */
export const sender = (
  client: HttpClient.HttpClient,
  config: Endpoints,
  redact: (text: string) => string
): Deps["send"] => {
  const observe = statusCounter()
  const hint = notFoundHint(config.baseUrl)
  return (request, endpoint, responded) =>
    Transport.send(client, request, endpoint, redact, {
      connect: config.connectTimeout,
      observe: responded === undefined ? observe : (status, labels) => {
        responded()
        observe(status, labels)
      }
    }).pipe(Effect.mapError((error) => hint(error, request.url)))
}

/**
 * A 404 on a base URL whose path does not end in `/v2` (where the service's routes are): the URL it went to, and the
 * question, so that "Not Found" is not all a misconfigured client says.
 */
export const notFoundHint = (baseUrl: string) => {
  const suspect = !/\/v2\/?$/.test(Transport.pathOf(baseUrl))
  return (error: ApiError, url: string): ApiError =>
    suspect && error._tag === "NotFound" && url.startsWith(baseUrl)
      ? new NotFound({ ...error, message: `${error.message} at ${url}: does the base URL (${baseUrl}) end in /v2?` })
      : error
}
