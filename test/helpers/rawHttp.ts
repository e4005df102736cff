/**
 * A raw HTTP/1.1 client for wire-level tests of the emulator: paths go out byte for byte (no URL
 * normalisation, so `%2e%2e` stays `%2e%2e`), bodies are sent as given, every exchange is bounded by a socket
 * timeout of real time (independent of the `TestClock`), and nothing is pooled between requests.
 */
import * as Effect from "effect/Effect"
import { type IncomingHttpHeaders, request } from "node:http"
import { connect } from "node:net"

/** One raw request. */
export interface RawRequest {
  readonly method: string
  /** The request target exactly as sent: path and query, already percent-encoded. */
  readonly path: string
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly body?: string | Uint8Array | undefined
}

/** What came back. */
export interface RawReply {
  readonly status: number
  readonly headers: IncomingHttpHeaders | Readonly<Record<string, string>>
  readonly text: string
}

const target = (origin: string) => {
  const url = new URL(origin)
  return { host: url.hostname, port: Number(url.port) }
}

/** Sends one request and reads the whole answer: fails when there is no answer within `timeoutMs` of real time. */
export const send = (origin: string, req: RawRequest, timeoutMs = 10_000): Effect.Effect<RawReply, Error> =>
  Effect.async<RawReply, Error>((resume) => {
    const outgoing = request({
      ...target(origin),
      method: req.method,
      path: req.path,
      headers: req.headers,
      agent: false,
      timeout: timeoutMs
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        resume(Effect.succeed({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString("utf8")
        })))
      res.on("error", (error) => resume(Effect.fail(error)))
    })
    outgoing.on(
      "timeout",
      () => outgoing.destroy(new Error(`${req.method} ${req.path}: no answer within ${timeoutMs} ms`))
    )
    outgoing.on("error", (error) => resume(Effect.fail(error)))
    outgoing.end(req.body)
    return Effect.sync(() => outgoing.destroy())
  })

/** What a streamed upload saw: the answer, and how much of the body had gone out when it came. */
export interface StreamedReply extends RawReply {
  /** Bytes of the body written when the answer came. */
  readonly sentBytes: number
  /** True when the answer came before the client had finished the body. */
  readonly answeredEarly: boolean
  /** With `keepSending` and `then`: the answer to the request sent after the body, on the same connection. */
  readonly next: RawReply | undefined
}

/** Reads HTTP/1.1 responses with a `content-length` off a byte stream, in order. */
const responseReader = (onReply: (reply: RawReply) => void) => {
  let buffer = Buffer.alloc(0)
  return (data: Buffer) => {
    buffer = Buffer.concat([buffer, data])
    while (true) {
      const headEnd = buffer.indexOf("\r\n\r\n")
      if (headEnd < 0) return
      const [statusLine = "", ...lines] = buffer.subarray(0, headEnd).toString("latin1").split("\r\n")
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const colon = line.indexOf(":")
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      const length = Number(headers["content-length"] ?? "0")
      if (buffer.length < headEnd + 4 + length) return
      const text = buffer.subarray(headEnd + 4, headEnd + 4 + length).toString("utf8")
      buffer = buffer.subarray(headEnd + 4 + length)
      onReply({ status: Number(statusLine.split(" ")[1]), headers, text })
    }
  }
}

/**
 * Streams a body of `totalBytes` in 64 KiB chunks over a raw keep-alive connection, with chunked transfer
 * encoding (or a `content-length` when `announce` is set). It stops writing as soon as an answer arrives, or
 * with `keepSending` goes on to the end of the body, as clients that do not watch for early answers do, and
 * then sends `then` on the same connection.
 */
export const stream = (
  origin: string,
  req: Omit<RawRequest, "body"> & {
    readonly totalBytes: number
    readonly announce?: boolean | undefined
    readonly keepSending?: boolean | undefined
    readonly then?: RawRequest | undefined
  },
  timeoutMs = 20_000
): Effect.Effect<StreamedReply, Error> =>
  Effect.async<StreamedReply, Error>((resume) => {
    const { host, port } = target(origin)
    const socket = connect(port, host)
    let sent = 0
    let finished = false
    let first: Omit<StreamedReply, "next"> | undefined = undefined
    const settle = (next: RawReply | undefined) => {
      if (first === undefined) return
      resume(Effect.succeed({ ...first, next }))
      socket.destroy()
    }
    const head = (r: Omit<RawRequest, "body">, framing: string) =>
      `${r.method} ${r.path} HTTP/1.1\r\nHost: ${host}:${port}\r\nConnection: keep-alive\r\n` +
      Object.entries(r.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join("") + framing + "\r\n"
    const sendThen = () => {
      const then = req.then
      if (then === undefined) return settle(undefined)
      const body = then.body === undefined ? Buffer.alloc(0) : Buffer.from(then.body)
      socket.write(head(then, `Content-Length: ${body.length}\r\n`))
      socket.write(body)
    }
    socket.on(
      "data",
      responseReader((reply) => {
        if (first === undefined) {
          first = { ...reply, sentBytes: sent, answeredEarly: !finished }
          if (req.keepSending !== true) settle(undefined)
          else if (finished) sendThen()
        } else {
          settle(reply)
        }
      })
    )
    socket.setTimeout(timeoutMs, () =>
      socket.destroy(new Error(`${req.method} ${req.path}: stalled for ${timeoutMs} ms`)))
    socket.on("error", (error) =>
      resume(Effect.fail(error)))
    socket.on("close", () => resume(Effect.fail(new Error(`${req.method} ${req.path}: connection closed`))))
    socket.write(
      head(req, req.announce === true ? `Content-Length: ${req.totalBytes}\r\n` : "Transfer-Encoding: chunked\r\n")
    )
    const payload = Buffer.alloc(64 * 1024, 0x20)
    const pump = () => {
      while (sent < req.totalBytes && (first === undefined || req.keepSending === true)) {
        const piece = payload.subarray(0, Math.min(payload.length, req.totalBytes - sent))
        sent += piece.length
        const framed = req.announce === true
          ? piece
          : Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")])
        if (!socket.write(framed)) {
          socket.once("drain", pump)
          return
        }
      }
      if (sent >= req.totalBytes && !finished) {
        socket.write(req.announce === true ? "" : "0\r\n\r\n", () => {
          finished = true
          if (first !== undefined && req.keepSending === true) sendThen()
        })
      }
    }
    pump()
    return Effect.sync(() => socket.destroy())
  })

/**
 * Sends the headers and the first `sentBytes` of a body announced as `announcedBytes`, then drops the
 * connection: a client that goes away mid-body.
 */
export const abandon = (
  origin: string,
  req: Omit<RawRequest, "body"> & { readonly announcedBytes: number; readonly sentBytes: number }
): Effect.Effect<void, Error> =>
  Effect.async<void, Error>((resume) => {
    const outgoing = request({
      ...target(origin),
      method: req.method,
      path: req.path,
      headers: { ...req.headers, "content-length": String(req.announcedBytes) },
      agent: false
    })
    outgoing.on("error", () => resume(Effect.void))
    outgoing.on("close", () => resume(Effect.void))
    outgoing.write(Buffer.alloc(req.sentBytes, 0x7b), () => {
      // give the server a moment to start reading, then vanish
      setTimeout(() => outgoing.destroy(), 20)
    })
    return Effect.sync(() => outgoing.destroy())
  })

/** The `detail` of a FastAPI-style error body: a string or a list, else `undefined`. */
export const detailOf = (reply: RawReply): string | ReadonlyArray<unknown> | undefined => {
  try {
    const body = JSON.parse(reply.text) as unknown
    if (typeof body !== "object" || body === null || !("detail" in body)) return undefined
    const detail = (body as { readonly detail: unknown }).detail
    return typeof detail === "string" || Array.isArray(detail) ? detail : undefined
  } catch {
    return undefined
  }
}
