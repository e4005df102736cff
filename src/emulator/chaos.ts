/**
 * Chaos switches of the emulator: rules that answer a share of the requests with an error status, a delay,
 * a dropped connection, a truncated stream or a malformed body, and the counters that fault tests read.
 *
 * @since 0.1.0
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http"
import { seeded } from "./text.js"

/**
 * One kind of failure the emulator can inject.
 *
 * - `status`: answer this status with a realistic body (429 like the service's rate limit, 5xx a `detail`);
 * - `latency`: wait, then handle normally;
 * - `slowFirstByte`: handle, then hold the response (no status line yet) for `delay`;
 * - `resetBeforeBody`: destroy the connection before any response byte;
 * - `resetDuringBody`: send status line, headers and part of the body, then destroy the connection;
 * - `truncatedSse`: (streams) end the stream cleanly after two events, without `[DONE]`;
 * - `malformedJson`: 200 `application/json` whose body is not JSON;
 * - `wrongContentType`: 200 `text/html` page instead of JSON;
 * - `bodyLargerThanDeclared`: a `content-length` smaller than the bytes actually sent.
 *
 * @since 0.1.0
 * @category models
 */
export type Fault =
  | { readonly kind: "status"; readonly status: 429 | 500 | 502 | 503 }
  | { readonly kind: "latency"; readonly delay: Duration.DurationInput }
  | { readonly kind: "slowFirstByte"; readonly delay: Duration.DurationInput }
  | { readonly kind: "resetBeforeBody" }
  | { readonly kind: "resetDuringBody" }
  | { readonly kind: "truncatedSse" }
  | { readonly kind: "malformedJson" }
  | { readonly kind: "wrongContentType" }
  | { readonly kind: "bodyLargerThanDeclared" }

/**
 * When to inject a fault.
 *
 * @since 0.1.0
 * @category models
 */
export interface FaultRule {
  /** What to inject. */
  readonly fault: Fault
  /** Path prefix the rule applies to, e.g. `/v2/chat/completions` (default: every route). */
  readonly route?: string | undefined
  /** HTTP method the rule applies to, any case (default: every method). */
  readonly method?: string | undefined
  /** Probability, 0 to 1, that a matching request gets the fault (default 1). */
  readonly rate?: number | undefined
  /** Inject into at most this many requests, then stop (default unlimited). */
  readonly times?: number | undefined
}

/**
 * The rules, in order: the first matching rule that fires wins.
 *
 * @since 0.1.0
 * @category models
 */
export type Chaos = ReadonlyArray<FaultRule>

/**
 * What the emulator has seen, for fault tests.
 *
 * @since 0.1.0
 * @category models
 */
export interface Stats {
  /** Requests that reached the application. */
  readonly received: number
  /** Requests being handled now (a streamed body counts until it ends). */
  readonly inFlight: number
  /** Requests interrupted because the client closed the connection. */
  readonly aborted: number
  /** Open TCP connections of the server now. */
  readonly connections: number
  /** Injected faults by kind. */
  readonly faults: Readonly<Record<string, number>>
  /** Requests answered 429 because the key's window was full (injected 429s are faults). */
  readonly rateLimited: number
}

interface ActiveRule {
  readonly rule: FaultRule
  used: number
}

/** A rule that fired for one request: `release` gives its use back when the fault turns out not to apply. */
interface Picked {
  readonly fault: Fault
  readonly release: () => void
}

/**
 * The rules in force and the counters of one emulator.
 *
 * @since 0.1.0
 * @category models
 */
export class ChaosState {
  received = 0
  inFlight = 0
  aborted = 0
  rateLimited = 0
  readonly faults: Record<string, number> = {}
  private rules: ReadonlyArray<ActiveRule> = []
  private readonly random: () => number

  constructor(chaos: Chaos = [], seed = 1) {
    this.random = seeded(seed)
    this.set(chaos)
  }

  /** Replaces the rules; `times` counts start again. */
  set(chaos: Chaos): void {
    this.rules = chaos.map((rule) => ({ rule, used: 0 }))
  }

  /** The fault for a request, if a rule fires. */
  pick(method: string, path: string): Picked | undefined {
    for (const active of this.rules) {
      const { rule } = active
      if (rule.route !== undefined && !path.startsWith(rule.route)) continue
      if (rule.method !== undefined && rule.method.toUpperCase() !== method.toUpperCase()) continue
      if (rule.times !== undefined && active.used >= rule.times) continue
      // rules that always fire do not draw, so adding one keeps the sequence of the others
      const rate = rule.rate ?? 1
      if (rate < 1 && !(this.random() < rate)) continue
      active.used++
      return { fault: rule.fault, release: () => active.used-- }
    }
    return undefined
  }

  /** Counts an injected fault. */
  injected(fault: Fault): void {
    this.faults[fault.kind] = (this.faults[fault.kind] ?? 0) + 1
  }

  /** The counters now, with the connection count read from the server. */
  snapshot(connections: number): Stats {
    return {
      received: this.received,
      inFlight: this.inFlight,
      aborted: this.aborted,
      connections,
      faults: { ...this.faults },
      rateLimited: this.rateLimited
    }
  }
}

/**
 * A mix of 5xx answers and dropped connections that together hit a share `rate` of the requests: what
 * `aifs emulator --fault-rate` installs.
 *
 * @since 0.1.0
 * @category constructors
 */
export const faultMix = (rate: number): Chaos => {
  const total = Math.min(1, Math.max(0, rate))
  const shares: ReadonlyArray<readonly [Fault, number]> = [
    [{ kind: "status", status: 503 }, 0.3],
    [{ kind: "status", status: 500 }, 0.2],
    [{ kind: "status", status: 502 }, 0.2],
    [{ kind: "resetBeforeBody" }, 0.15],
    [{ kind: "resetDuringBody" }, 0.15]
  ]
  // the first rule that fires wins: each later rate is conditional on the earlier ones not firing
  let left = 1
  return shares.map(([fault, share]) => {
    const p = total * share
    const conditional = left <= 0 ? 0 : Math.min(1, p / left)
    left -= p
    return { fault, rate: conditional }
  })
}

const statusBody = (status: 429 | 500 | 502 | 503): HttpServerResponse.HttpServerResponse => {
  switch (status) {
    case 429:
      return HttpServerResponse.unsafeJson(
        { detail: "Rate limit exceeded: please retry after 1 second" },
        { status, headers: { "retry-after": "1" } }
      )
    case 500:
      return HttpServerResponse.unsafeJson({ detail: "Internal Server Error" }, { status })
    case 502:
      return HttpServerResponse.unsafeJson({ detail: "Bad Gateway: the upstream model did not answer" }, { status })
    case 503:
      return HttpServerResponse.unsafeJson({ detail: "Model temporarily unavailable, please try again later" }, {
        status
      })
  }
}

const htmlPage = "<!DOCTYPE html>\n<html><head><title>Sign in - Access Portal</title></head>" +
  "<body><h1>Sign in</h1><p>Your session has expired. Please sign in again.</p></body></html>\n"

const encoder = new TextEncoder()

/** Resolves when the request body has been read to its end (or the request is gone). */
const drain = (incoming: IncomingMessage): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (incoming.complete || incoming.destroyed) return resume(Effect.void)
    const done = () => resume(Effect.void)
    incoming.once("end", done).once("close", done).once("error", done)
    incoming.resume()
    return Effect.sync(() => {
      incoming.off("end", done).off("close", done).off("error", done)
    })
  })

/**
 * Writes raw bytes to the connection, then destroys it. The response object never sends anything itself,
 * so the server sees what it sees on any client abort: a closed connection whose handler it interrupts.
 */
const writeAndDestroy = (response: ServerResponse, bytes: Uint8Array): Effect.Effect<never> =>
  Effect.async<never>((resume) => {
    const socket = response.socket
    const closed = () => resume(Effect.interrupt)
    if (socket === null || socket.destroyed) return closed()
    response.once("close", closed)
    if (bytes.length === 0) socket.destroy()
    else socket.write(bytes, () => socket.destroy())
    return Effect.sync(() => {
      response.off("close", closed)
    })
  })

const head = (status: number, headers: Record<string, string>): string =>
  `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Unknown"}\r\n` +
  Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("") + "\r\n"

/** The headers of a response, without the framing ones (the raw writers set their own). */
const plainHeaders = (response: HttpServerResponse.HttpServerResponse): Record<string, string> =>
  Object.fromEntries(
    Object.entries(response.headers).filter(([name]) =>
      !["content-length", "transfer-encoding", "connection"].includes(name.toLowerCase())
    )
  )

/** The first bytes of a body: all of an in-memory body, the first event of a stream. */
const bodyStart = (body: HttpBody.HttpBody, events: number): Effect.Effect<Uint8Array> => {
  switch (body._tag) {
    case "Uint8Array":
      return Effect.succeed(body.body)
    case "Stream":
      return Stream.runCollect(Stream.take(body.stream, events)).pipe(
        Effect.map((chunks) => Buffer.concat(Chunk.toReadonlyArray(chunks))),
        Effect.orElseSucceed(() => new Uint8Array(0))
      )
    default:
      return Effect.succeed(new Uint8Array(0))
  }
}

/** A stream of SSE events cut after `keep` events, never passing `[DONE]`. */
const truncateSse = (stream: Stream.Stream<Uint8Array, unknown>, keep: number): Stream.Stream<Uint8Array, unknown> =>
  stream.pipe(
    Stream.decodeText(),
    Stream.mapAccum("", (buffer, text) => {
      const parts = (buffer + text).split("\n\n")
      const rest = parts.pop() ?? ""
      return [rest, parts.map((event) => `${event}\n\n`)] as const
    }),
    Stream.flattenIterables,
    Stream.filter((event) => event.trim() !== ""),
    Stream.takeWhile((event) => !/^data:\s*\[DONE\]/m.test(event)),
    Stream.take(keep),
    Stream.encodeText
  )

/** A response's head and the start of its body, cut where no client can take it for complete. */
const cutInBody = (response: HttpServerResponse.HttpServerResponse): Effect.Effect<Uint8Array> =>
  Effect.map(bodyStart(response.body, 1), (start) => {
    if (response.body._tag === "Stream") {
      // chunked framing: the body is cut inside a chunk sequence, which no client can take for complete
      const chunk = start.length === 0 ? new Uint8Array(0) : Buffer.concat([
        encoder.encode(`${start.length.toString(16)}\r\n`),
        start,
        encoder.encode("\r\n")
      ])
      return Buffer.concat([
        encoder.encode(head(response.status, { ...plainHeaders(response), "transfer-encoding": "chunked" })),
        chunk
      ])
    }
    const part = start.subarray(0, Math.floor(start.length / 2))
    const declared = Math.max(start.length, part.length + 1)
    return Buffer.concat([
      encoder.encode(head(response.status, { ...plainHeaders(response), "content-length": String(declared) })),
      part
    ])
  })

/** A response whose whole body follows a head that declares half of it. */
const overlongBody = (response: HttpServerResponse.HttpServerResponse): Effect.Effect<Uint8Array> =>
  Effect.map(bodyStart(response.body, Number.MAX_SAFE_INTEGER), (body) => {
    const full = body.length > 1 ? body : encoder.encode("{\"detail\": \"chaos\"}")
    return Buffer.concat([
      encoder.encode(head(response.status, {
        ...plainHeaders(response),
        "content-length": String(Math.floor(full.length / 2)),
        connection: "close"
      })),
      full
    ])
  })

const inject = <E, R>(
  chaos: ChaosState,
  picked: Picked,
  request: HttpServerRequest.HttpServerRequest,
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  hijack: () => void
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
  const { fault } = picked
  const count = Effect.sync(() => chaos.injected(fault))
  const raw = (bytes: Effect.Effect<Uint8Array, E, R>) =>
    Effect.gen(function*() {
      const incoming = NodeHttpServerRequest.toIncomingMessage(request)
      const response = NodeHttpServerRequest.toServerResponse(request)
      const data = yield* bytes
      yield* drain(incoming)
      yield* count
      hijack()
      return yield* writeAndDestroy(response, data)
    })
  switch (fault.kind) {
    case "status":
      return Effect.as(count, statusBody(fault.status))
    case "latency":
      return Effect.zipRight(Effect.zipRight(count, Effect.sleep(fault.delay)), app)
    case "slowFirstByte":
      return Effect.tap(app, () => Effect.zipRight(count, Effect.sleep(fault.delay)))
    case "malformedJson":
      return Effect.as(
        count,
        HttpServerResponse.text(
          "{\"id\": \"chatcmpl-chaos\", \"object\": \"chat.completion\", \"choices\": [{\"index\"",
          {
            contentType: "application/json"
          }
        )
      )
    case "wrongContentType":
      return Effect.as(count, HttpServerResponse.text(htmlPage, { contentType: "text/html; charset=utf-8" }))
    case "resetBeforeBody":
      return raw(Effect.succeed(new Uint8Array(0)))
    case "resetDuringBody":
      return raw(Effect.flatMap(app, cutInBody))
    case "bodyLargerThanDeclared":
      return raw(Effect.flatMap(app, overlongBody))
    case "truncatedSse":
      return Effect.flatMap(app, (response) => {
        const body = response.body
        if (body._tag !== "Stream" || !(body.contentType ?? "").includes("text/event-stream")) {
          picked.release()
          return Effect.succeed(response)
        }
        return Effect.as(
          count,
          HttpServerResponse.setBody(response, HttpBody.stream(truncateSse(body.stream, 2), body.contentType))
        )
      })
  }
}

const isClientAbort = (cause: Cause.Cause<unknown>): boolean =>
  [...Cause.interruptors(cause)].some((id) => Equal.equals(id, HttpServerError.clientAbortFiberId))

/**
 * Wraps the application: counts requests, injects the fault of the first rule that fires, and counts the
 * handlers that a client abort interrupted. A streamed body stays in flight until it ends.
 *
 * @since 0.1.0
 * @category middleware
 */
export const middleware = (chaos: ChaosState) =>
<E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    chaos.received++
    chaos.inFlight++
    let hijacked = false
    let settled = false
    const settle = (aborted: boolean) => {
      if (settled) return
      settled = true
      chaos.inFlight--
      if (aborted && !hijacked) chaos.aborted++
    }
    const abortedBy = (exit: Exit.Exit<unknown, unknown>) => Exit.isFailure(exit) && isClientAbort(exit.cause)
    const streams = (response: HttpServerResponse.HttpServerResponse) =>
      response.body._tag === "Stream" && request.method !== "HEAD"
    const picked = chaos.pick(request.method, pathOf(request.url))
    const handled = picked === undefined ? app : inject(chaos, picked, request, app, () => {
      hijacked = true
    })
    // the server runs handlers uninterruptibly and only routes opt in: chaos waits must be interruptible
    return Effect.interruptible(handled).pipe(
      Effect.onExit((exit) =>
        Exit.isSuccess(exit) && streams(exit.value) ? Effect.void : Effect.sync(() => settle(abortedBy(exit)))
      ),
      Effect.map((response) => {
        const body = response.body
        if (body._tag !== "Stream" || !streams(response)) return response
        // the connection's close settles a stream that never started (an abort right after the handler)
        const node = NodeHttpServerRequest.toServerResponse(request)
        node.once("close", () => settle(!node.writableEnded))
        return HttpServerResponse.setBody(
          response,
          HttpBody.stream(
            Stream.ensuringWith(body.stream, (exit) => Effect.sync(() => settle(abortedBy(exit)))),
            body.contentType,
            body.contentLength
          )
        )
      })
    )
  })

const pathOf = (url: string): string => {
  try {
    return new URL(url, "http://emulator").pathname
  } catch {
    return url.split("?")[0] ?? url
  }
}
