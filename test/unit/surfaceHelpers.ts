/**
 * Fixtures of the unit tests of the upload-carrying services: a scripted transport that also keeps the raw
 * requests, so that a test can read the multipart fields a service sent.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import { layerWithClient } from "./helpers.js"

/** Every inference service on a scripted transport, and the raw requests it received. */
export const capturing = (handler: Testing.Handler, config: Partial<ClientConfig.Options> = {}) => {
  const requests: Array<HttpClientRequest.HttpClientRequest> = []
  const client = HttpClient.tapRequest(
    Testing.httpClient(handler),
    (request) => Effect.sync(() => requests.push(request))
  )
  const layer = layerWithClient(client, { config, retry: RetryPolicy.layer({ maxRetries: 0 }) })
  return { layer, requests }
}

/** The text of a (multipart) body: bytes in memory, or a stream. */
export const streamedText = (request: HttpClientRequest.HttpClientRequest | undefined) =>
  Effect.gen(function*() {
    if (request?.body._tag === "Uint8Array") return new TextDecoder().decode(request.body.body)
    if (request?.body._tag !== "Stream") {
      return yield* Effect.dieMessage(`expected a body of bytes or a stream, got ${request?.body._tag}`)
    }
    const chunks = yield* Stream.runCollect(request.body.stream).pipe(Effect.orDie)
    return new TextDecoder().decode(Buffer.concat([...chunks]))
  })

/** A parsed multipart body. */
export interface ParsedForm {
  readonly contentType: string
  readonly fields: Record<string, string>
  readonly files: Record<string, { readonly filename: string; readonly contentType: string; readonly content: string }>
  /** Field names in the order sent. */
  readonly names: Array<string>
}

/** Parses the multipart body of a captured request (a small parser: enough for our own bodies). */
export const formOf = (request: HttpClientRequest.HttpClientRequest | undefined) =>
  Effect.gen(function*() {
    const text = yield* streamedText(request)
    const contentType = request?.body._tag === "Stream" || request?.body._tag === "Uint8Array"
      ? request.body.contentType
      : ""
    const boundary = /boundary=(.+)$/.exec(contentType)?.[1]
    if (boundary === undefined) return yield* Effect.dieMessage(`not multipart: ${contentType}`)
    const form: ParsedForm = { contentType, fields: {}, files: {}, names: [] }
    const parts = text.split(`--${boundary}`).slice(1, -1)
    for (const part of parts) {
      const [head = "", ...rest] = part.replace(/^\r\n/, "").split("\r\n\r\n")
      const content = rest.join("\r\n\r\n").replace(/\r\n$/, "")
      const name = /name="([^"]*)"/.exec(head)?.[1] ?? ""
      const filename = /filename="([^"]*)"/.exec(head)?.[1]
      form.names.push(name)
      if (filename === undefined) form.fields[name] = content
      else form.files[name] = { filename, contentType: /content-type: (.*)/i.exec(head)?.[1] ?? "", content }
    }
    return form
  })

/** The full URL of a captured request, query parameters included. */
export const urlOf = (request: HttpClientRequest.HttpClientRequest | undefined): URL => {
  if (request === undefined) throw new Error("no request was captured")
  const url = new URL(request.url)
  for (const [name, value] of request.urlParams) url.searchParams.append(name, value)
  return url
}
