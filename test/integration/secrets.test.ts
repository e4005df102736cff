/**
 * The security sweep: with recognisable canaries as the API key and the gateway password, every failure path
 * runs (against the emulator, against a loopback server that echoes credentials back into its errors, a closed
 * port, a stalled server, bad configuration, and the CLI as a process) while a recording logger (all levels), a
 * recording tracer and every rendering of every error capture what the library shows. The canary appears
 * nowhere; each capture is checked to be non-empty and to name the request, so that no test passes vacuously.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import type * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberRefs from "effect/FiberRefs"
import * as Inspectable from "effect/Inspectable"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Tracer from "effect/Tracer"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { inspect } from "node:util"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as GatewayConfig from "../../src/layers/GatewayConfig.js"
import * as Node from "../../src/layers/Node.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import { ApiError } from "../../src/schemas/Errors.js"
import * as Chat from "../../src/services/Chat.js"
import * as Completions from "../../src/services/Completions.js"
import * as Embeddings from "../../src/services/Embeddings.js"
import * as UserManager from "../../src/services/gateway/UserManager.js"
import * as Images from "../../src/services/Images.js"
import * as Models from "../../src/services/Models.js"
import * as Responses from "../../src/services/Responses.js"
import * as VectorStores from "../../src/services/VectorStores.js"
import { aifs } from "../helpers/cli.js"
import { sleepsBetween, waitUntil } from "../helpers/emulator.js"

/** The part every secret shares: found anywhere in the output, even in part of a secret, it is a leak. */
const canary = "SECRETCANARY"
/** The API key: the real `gen-` + 48 characters form. */
const apiKey = `gen-${canary.repeat(4)}`
/** A key the server does not accept: still a secret. */
const wrongKey = `gen-${`${canary}WRONGKEY`.padEnd(48, "0")}`
/** The gateway password, with the characters that JSON escapes (a quote, a backslash) and a space. */
const password = `pw-${canary} "quoted" back\\slash`
/** A wrong gateway password: still a secret. */
const wrongPassword = `wrong-${canary}-password`
/** The token the echoing gateway hands out. */
const gatewayToken = `tok-${canary}-gateway-token`

const model = "Llama-3.3-70B-Instruct"
const ask = (content: string, extra: object = {}) => ({
  model,
  messages: [{ role: "user" as const, content }],
  ...extra
})

// ---------------------------------------------------------------------------------------------------------------
// capture

/** Everything shown: log lines, ended spans, renderings of errors and causes, metrics. */
class Capture {
  readonly logs: Array<string> = []
  readonly spans: Array<string> = []
  readonly errors: Array<string> = []
  readonly other: Array<string> = []
  get text(): string {
    return [...this.logs, ...this.spans, ...this.errors, ...this.other].join("\n")
  }
}

const safely = (render: () => unknown): string => {
  try {
    const out = render()
    return typeof out === "string" ? out : String(out)
  } catch (error) {
    return `<render failed: ${String(error)}>`
  }
}

/** Every way an application or a library might show an error. */
const renderError = (error: unknown): Array<string> => {
  const e = error as { readonly message?: unknown; readonly stack?: unknown }
  return [
    safely(() => String(error)),
    safely(() => JSON.stringify(error)),
    safely(() => e.message),
    safely(() => e.stack),
    safely(() => Inspectable.format(error)),
    safely(() => Inspectable.toStringUnknown(error)),
    safely(() => inspect(error, { depth: 10 })),
    safely(() => Cause.pretty(Cause.fail(error), { renderErrorCause: true })),
    // what `aifs batch` persists for a failed line
    safely(() => JSON.stringify(Schema.encodeUnknownSync(ApiError)(error)))
  ]
}

const renderCause = (cause: Cause.Cause<unknown>): Array<string> => [
  safely(() => Cause.pretty(cause, { renderErrorCause: true })),
  safely(() => Inspectable.format(cause)),
  safely(() => JSON.stringify(cause)),
  safely(() => inspect(cause, { depth: 10 })),
  ...[...Cause.failures(cause), ...Cause.defects(cause)].flatMap(renderError)
]

/**
 * A failed span's cause as an exporter shows it (OpenTelemetry records `Cause.pretty` and the errors' messages
 * and stacks), and as JSON with redaction on, as a logger would print it. Raw `JSON.stringify` is not used here:
 * the platform's own `http.client` span ends with the platform's `RequestError`, whose request headers are
 * redacted only inside `Inspectable.withRedactableContext` (which Effect enters for loggers, not for tracers).
 */
const renderSpanCause = (cause: Cause.Cause<unknown>): string =>
  [
    safely(() => Cause.pretty(cause, { renderErrorCause: true })),
    ...Cause.prettyErrors(cause).map((e) => `${e.message}\n${e.stack ?? ""}`),
    safely(() => Inspectable.withRedactableContext(FiberRefs.empty(), () => Inspectable.format(cause)))
  ].join("\n")

/** A logger that keeps every line in three formats, with its cause, annotations and spans. */
const recordingLogger = (capture: Capture) =>
  Logger.make((options) => {
    capture.logs.push(
      safely(() => Logger.logfmtLogger.log(options)),
      safely(() => Logger.stringLogger.log(options)),
      safely(() => JSON.stringify(Logger.structuredLogger.log(options)))
    )
    if (!Cause.isEmpty(options.cause)) capture.logs.push(...renderCause(options.cause))
  })

/** A span that renders itself (name, attributes, events, links, exit) into the capture when it ends. */
class RecordingSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly spanId: string
  readonly traceId: string
  readonly sampled = true
  readonly attributes = new Map<string, unknown>()
  readonly events: Array<{ readonly name: string; readonly attributes: unknown }> = []
  readonly links: Array<Tracer.SpanLink>
  status: Tracer.SpanStatus
  constructor(
    readonly capture: Capture,
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    links: ReadonlyArray<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    id: number
  ) {
    this.spanId = `span${id}`
    this.traceId = Option.match(parent, { onNone: () => `trace${id}`, onSome: (p) => p.traceId })
    this.links = [...links]
    this.status = { _tag: "Started", startTime }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
    const attributes = [...this.attributes].map(([k, v]) => `${k}=${safely(() => Inspectable.format(v))}`)
    this.capture.spans.push(
      [
        `span ${this.name} (${this.kind})`,
        ...attributes,
        ...this.events.map((e) => `event ${e.name} ${safely(() => Inspectable.format(e.attributes))}`),
        ...this.links.map((l) => `link ${safely(() => Inspectable.format(l.attributes))}`),
        Exit.isFailure(exit) ? renderSpanCause(exit.cause) : "ok"
      ].join("\n")
    )
  }
  attribute(key: string, value: unknown): void {
    this.attributes.set(key, value)
  }
  event(name: string, _startTime: bigint, attributes?: Record<string, unknown>): void {
    this.events.push({ name, attributes })
  }
  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    this.links.push(...links)
  }
}

const recordingTracer = (capture: Capture): Tracer.Tracer => {
  let ids = 0
  return Tracer.make({
    span: (name, parent, context, links, startTime, kind) =>
      new RecordingSpan(capture, name, parent, context, links, startTime, kind, ++ids),
    context: (f) => f()
  })
}

/** The logger (added: @effect/vitest removes the default one) at every level, and the tracer. */
const captureLayer = (capture: Capture): Layer.Layer<never> =>
  Layer.mergeAll(
    Logger.add(recordingLogger(capture)),
    Logger.minimumLogLevel(LogLevel.All),
    Layer.setTracer(recordingTracer(capture))
  )

/**
 * Runs one failure path as an application would (logging the failure with its cause) and records the
 * renderings of its outcome. Answers the exit so that the test can check it failed the expected way.
 */
const sweep = <A, E, R>(capture: Capture, effect: Effect.Effect<A, E, R>): Effect.Effect<Exit.Exit<A, E>, never, R> =>
  effect.pipe(
    Effect.tapErrorCause((cause) => Effect.logError("aifs call failed", cause)),
    Effect.withSpan("test.sweep"),
    Effect.exit,
    Effect.tap((exit) =>
      Effect.sync(() => {
        capture.errors.push(safely(() => Inspectable.format(exit)))
        if (Exit.isFailure(exit)) capture.errors.push(...renderCause(exit.cause))
      })
    )
  )

/** The tag of a failed exit's error (or "success"/"defect"). */
const tagOf = (exit: Exit.Exit<unknown, unknown>): string => {
  if (Exit.isSuccess(exit)) return "success"
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) return `defect: ${Cause.pretty(exit.cause)}`
  const tag = (failure.value as { readonly _tag?: unknown })._tag
  return typeof tag === "string" ? tag : String(failure.value)
}

const secrets = [canary, apiKey, wrongKey, password, wrongPassword, gatewayToken]

/** Where a secret appears in `text`, with some context, or undefined. */
const findLeak = (text: string): string | undefined => {
  for (const secret of secrets) {
    const at = text.indexOf(secret)
    if (at >= 0) return `${JSON.stringify(secret)} at ...${text.slice(Math.max(0, at - 300), at + 80)}...`
  }
  // the password as JSON writes it (escaped quote and backslash)
  const escaped = JSON.stringify(password).slice(1, -1)
  const at = text.indexOf(escaped)
  return at >= 0 ? `the escaped password at ...${text.slice(Math.max(0, at - 300), at + 80)}...` : undefined
}

/** Metrics are output too: their tags must not carry a secret. */
const recordMetrics = (capture: Capture) =>
  Effect.flatMap(Metric.snapshot, (pairs) =>
    Effect.sync(() => {
      for (const pair of pairs) capture.other.push(safely(() => Inspectable.format(pair)))
    }))

/**
 * The capture holds logs, spans and errors, mentions each of `expected` (so that it saw the failures it is
 * about), and no secret.
 */
const assertClean = (capture: Capture, expected: ReadonlyArray<string>) => {
  assert.isAbove(capture.logs.length, 0, "no log line was captured")
  assert.isAbove(capture.spans.length, 0, "no span was captured")
  assert.isAbove(capture.errors.length, 0, "no error was captured")
  const text = capture.text
  for (const mention of expected) assert.include(text, mention, `the capture does not mention ${mention}`)
  assert.isUndefined(findLeak(text))
}

// ---------------------------------------------------------------------------------------------------------------
// a server that echoes credentials back

interface EchoServer {
  readonly url: string
  /** Paths requested so far, as `METHOD /path`. */
  readonly seen: ReadonlyArray<string>
}

const readBody = (request: IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    let body = ""
    request.setEncoding("utf8")
    request.on("data", (chunk: string) => {
      body += chunk
    })
    request.on("end", () => resolve(body))
  })

const sendJson = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(JSON.stringify(body))
}

const chunk = (content: string) => ({
  id: "chatcmpl-echo",
  object: "chat.completion.chunk",
  created: 1710000000,
  model,
  choices: [{ index: 0, delta: { role: "assistant", content }, finish_reason: null }]
})

const completionChunk = {
  id: "cmpl-echo",
  object: "text_completion",
  created: 1710000000,
  model,
  choices: [{ index: 0, text: "Hel", finish_reason: null }]
}

/** Routes of the echoing server: each failure path puts the credentials it received into its answer. */
const echoRoute = async (request: IncomingMessage, response: ServerResponse, seen: Array<string>) => {
  const body = await readBody(request)
  const url = new URL(request.url ?? "/", "http://echo")
  const route = `${request.method} ${url.pathname}`
  seen.push(route)
  const auth = request.headers.authorization ?? "(none)"
  const key = auth.replace(/^bearer\s+/i, "")
  const json = (() => {
    try {
      return JSON.parse(body) as Record<string, unknown>
    } catch {
      return {}
    }
  })()
  switch (route) {
    case "GET /v2/models":
      return sendJson(response, 401, { detail: `Incorrect API key provided: ${auth}` })
    case "GET /v2/models/decode":
      // a body of the wrong shape whose values are the key
      return sendJson(response, 200, { id: 42, object: key, owned_by: auth, meta_data: [key] })
    case "GET /v2/models/text":
      response.writeHead(200, { "content-type": "text/plain" })
      return response.end(`not json at all: ${auth}`)
    case "GET /v2/models/slow":
      // never answers: the client's time limit must fire
      return
    case "POST /v2/chat/completions":
      if (json.stream === true) {
        response.writeHead(200, { "content-type": "text/event-stream" })
        response.write(`data: ${JSON.stringify(chunk("Hel"))}\n\n`)
        response.write(
          `data: ${
            JSON.stringify({ error: { message: `upstream rejected ${auth} (key ${key})`, type: "server_error" } })
          }\n\n`
        )
        return response.end()
      }
      response.writeHead(500, { "content-type": "text/plain" })
      return response.end(`upstream rejected Authorization: ${auth} key=${key}`)
    case "POST /v2/completions":
      if (json.stream === true) {
        // one chunk, then the connection drops mid-stream
        response.writeHead(200, { "content-type": "text/event-stream" })
        response.write(`data: ${JSON.stringify(completionChunk)}\n\n`)
        return setImmediate(() => response.destroy())
      }
      response.writeHead(502, { "content-type": "text/html" })
      return response.end(`<html><head><title>Bad gateway for ${auth}</title></head><body>${key}</body></html>`)
    case "POST /v2/embeddings":
      return sendJson(response, 429, {
        error: { message: `Rate limit reached for key ${key}. Please retry after 1 seconds`, code: 429 }
      }, { "retry-after": "1" })
    case "POST /v2/images/generations":
      return sendJson(response, 429, {
        error: { message: `You exceeded your current quota for ${key}`, type: "insufficient_quota" }
      })
    case "POST /v1/vector_stores":
      return sendJson(response, 409, {
        error: { message: `a store named ${String(json.name)} exists for ${key}`, type: "conflict", code: "409" }
      })
    case "GET /v1/vector_stores":
      return sendJson(response, 422, {
        detail: [{ loc: ["header", "authorization", auth], msg: `bad key ${key}`, type: "value_error" }]
      })
    case "POST /v2/responses":
      response.writeHead(200, { "content-type": "text/event-stream" })
      if (json.model === "leak-log") response.write(`data: ${JSON.stringify({ type: `custom.${key}` })}\n\n`)
      if (json.model === "leak-decode") {
        response.write(`data: ${JSON.stringify({ type: "response.output_text.delta", delta: { echo: key } })}\n\n`)
      }
      return response.end()
    case "POST /gw-wrong/api/v1/auth/user":
      return sendJson(response, 401, {
        detail: `Invalid password '${String(json.password)}' for user ${String(json.username)}`
      })
    case "POST /gw-500/api/v1/auth/user":
      response.writeHead(500, { "content-type": "text/plain" })
      return response.end(`login failed for ${body}`)
    case "POST /gw-401/api/v1/auth/user":
      return sendJson(response, 200, { access_token: gatewayToken, token_type: "bearer" })
  }
  // every gateway service refuses the token it was given at login
  if (url.pathname.startsWith("/gw-401/")) return sendJson(response, 401, { detail: `token rejected: ${auth}` })
  return sendJson(response, 404, { detail: `no route ${route} for ${auth}` })
}

/** The echoing server on a loopback port, closed (with its open connections) with the scope. */
const echoServer: Effect.Effect<EchoServer, never, Scope.Scope> = Effect.acquireRelease(
  Effect.async<EchoServer & { readonly close: () => void }>((resume) => {
    const seen: Array<string> = []
    const server = createServer((request, response) => {
      void echoRoute(request, response, seen)
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({
        url: `http://127.0.0.1:${port}`,
        seen,
        close: () => {
          server.closeAllConnections()
          server.close()
        }
      }))
    })
  }),
  (server) => Effect.sync(() => server.close())
)

/** A port that was just free and is now closed: connecting to it is refused. */
const closedPort = Effect.async<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** The inference client against `url` with the canary key (or `key`), told the key's tier. */
const client = (url: string, options: Partial<ClientConfig.Options> = {}) =>
  Node.layer({ apiKey, baseUrl: `${url}/v2`, maxRetries: 0, tier: "standard4000", ...options })

// ---------------------------------------------------------------------------------------------------------------
// in-process sweeps

describe("secrets never show: against the emulator", () => {
  const emulatorOptions: Emulator.ServeOptions = {
    keys: [{ key: apiKey, tier: "standard4000" }],
    gateway: {
      users: [
        { username: "canary", password, roles: ["CHAT_USER"] },
        { username: "canary-viewer", password, roles: [] }
      ]
    }
  }

  it.scoped("successes, a wrong key, a 404, a 400 and the limiter refusing a too-large request", () => {
    const capture = new Capture()
    return Effect.gen(function*() {
      const emulator = yield* Layer.build(Emulator.layer(emulatorOptions)).pipe(
        Effect.map(Context.get(Emulator.Emulator))
      )
      const good = client(emulator.url)
      const run = <A, E>(effect: Effect.Effect<A, E, Node.Services>, layer = good) =>
        sweep(capture, Effect.provide(effect, layer))
      // the successes that put the key on the wire: list, chat, stream, embeddings
      assert.strictEqual(tagOf(yield* run(Effect.flatMap(Models.Models, (m) => m.list()))), "success")
      assert.strictEqual(tagOf(yield* run(Effect.flatMap(Chat.Chat, (c) => c.create(ask("hello"))))), "success")
      assert.strictEqual(
        tagOf(yield* run(Effect.flatMap(Chat.Chat, (c) => Stream.runDrain(c.createStream(ask("stream")))))),
        "success"
      )
      assert.strictEqual(
        tagOf(
          yield* run(
            Effect.flatMap(Embeddings.Embeddings, (e) => e.create({ model: "text-embedding-bge-m3", input: "x" }))
          )
        ),
        "success"
      )
      // failures
      const wrong = client(emulator.url, { apiKey: wrongKey })
      assert.strictEqual(tagOf(yield* run(Effect.flatMap(Models.Models, (m) => m.list()), wrong)), "Unauthorized")
      assert.strictEqual(
        tagOf(yield* run(Effect.flatMap(Chat.Chat, (c) => Stream.runDrain(c.createStream(ask("x")))), wrong)),
        "Unauthorized"
      )
      assert.strictEqual(
        tagOf(yield* run(Effect.flatMap(Chat.Chat, (c) => c.create({ ...ask("x"), model: "no-such-model" })))),
        "NotFound"
      )
      assert.include(
        ["BadRequest", "UnprocessableEntity"],
        tagOf(yield* run(Effect.flatMap(Chat.Chat, (c) => c.create({ model, messages: [] }))))
      )
      // over the plan's 50,000 output tokens a minute, within the model's window; then over the window
      assert.strictEqual(
        tagOf(yield* run(Effect.flatMap(Chat.Chat, (c) => c.create(ask("x", { max_tokens: 60_000 }))))),
        "RequestTooLarge"
      )
      assert.strictEqual(
        tagOf(yield* run(Effect.flatMap(Chat.Chat, (c) => c.create(ask("x", { max_tokens: 10_000_000 }))))),
        "ContextLengthExceeded"
      )
      // the limiter's buckets name the key by a fingerprint only
      const buckets = yield* Effect.provide(
        Effect.zipRight(
          Effect.flatMap(Chat.Chat, (c) => c.create(ask("snapshot"))),
          Effect.flatMap(RateLimiter.RateLimiter, (limiter) => limiter.snapshot)
        ),
        good
      )
      assert.isAbove(buckets.length, 0)
      capture.other.push(JSON.stringify(buckets), Inspectable.format(buckets))
      yield* recordMetrics(capture)
      assertClean(capture, [
        "key#",
        "Models.list",
        "Chat.create",
        "/v2/chat/completions",
        "Unauthorized",
        "Incorrect API key provided",
        "NotFound",
        "RequestTooLarge",
        "aifs call failed"
      ])
    }).pipe(Effect.provide(captureLayer(capture)))
  })

  it.scoped("the gateway: a wrong password, a user without the role, and a login that works", () => {
    const capture = new Capture()
    return Effect.gen(function*() {
      const emulator = yield* Layer.build(Emulator.layer(emulatorOptions)).pipe(
        Effect.map(Context.get(Emulator.Emulator))
      )
      const as = (username: string, secret: string) =>
        Node.layerGateway({ url: emulator.gatewayUrl, username, password: secret, maxRetries: 0 })
      const me = Effect.flatMap(UserManager.UserManager, (users) => users.me())
      assert.strictEqual(tagOf(yield* sweep(capture, Effect.provide(me, as("canary", password)))), "success")
      assert.strictEqual(
        tagOf(yield* sweep(capture, Effect.provide(me, as("canary", wrongPassword)))),
        "Unauthorized"
      )
      assert.strictEqual(tagOf(yield* sweep(capture, Effect.provide(me, as("canary-viewer", password)))), "Forbidden")
      assertClean(capture, ["Auth.login", "/gateway/api/v1/auth/user", "Unauthorized", "Forbidden"])
    }).pipe(Effect.provide(captureLayer(capture)))
  })
})

describe("secrets never show: a server that echoes them back", () => {
  it.scoped("4xx and 5xx bodies, decode errors, a stream error event and a connection dropped mid-stream", () => {
    const capture = new Capture()
    return Effect.gen(function*() {
      const echo = yield* echoServer
      const run = <A, E>(effect: Effect.Effect<A, E, Node.Services>) =>
        Effect.map(sweep(capture, Effect.provide(effect, client(echo.url))), tagOf)
      assert.strictEqual(yield* run(Effect.flatMap(Models.Models, (m) => m.list())), "Unauthorized")
      assert.strictEqual(yield* run(Effect.flatMap(Models.Models, (m) => m.retrieve("decode"))), "DecodeError")
      assert.strictEqual(yield* run(Effect.flatMap(Models.Models, (m) => m.retrieve("text"))), "DecodeError")
      assert.strictEqual(yield* run(Effect.flatMap(Chat.Chat, (c) => c.create(ask("x")))), "ServerError")
      assert.strictEqual(
        yield* run(Effect.flatMap(Chat.Chat, (c) => Stream.runDrain(c.createStream(ask("x"))))),
        "ServerError"
      )
      assert.strictEqual(
        yield* run(Effect.flatMap(Completions.Completions, (c) => c.create({ model, prompt: "x" }))),
        "ServerError"
      )
      assert.strictEqual(
        yield* run(
          Effect.flatMap(Completions.Completions, (c) => Stream.runDrain(c.createStream({ model, prompt: "x" })))
        ),
        "TransportError"
      )
      assert.strictEqual(
        yield* run(Effect.flatMap(Images.Images, (i) => i.generate({ model: "gpt-image-1", prompt: "x" }))),
        "QuotaExceeded"
      )
      assert.strictEqual(
        yield* run(Effect.flatMap(VectorStores.VectorStores, (v) => v.create({ name: "docs" }))),
        "Conflict"
      )
      assert.strictEqual(yield* run(Effect.flatMap(VectorStores.VectorStores, (v) => v.list())), "UnprocessableEntity")
      assert.strictEqual(
        yield* run(Effect.flatMap(Responses.Responses, (r) => Stream.runDrain(r.createStream({ model, input: "x" })))),
        "success"
      )
      yield* recordMetrics(capture)
      assert.includeMembers([...echo.seen], ["GET /v2/models", "POST /v2/chat/completions", "POST /v1/vector_stores"])
      assertClean(capture, [
        "GET /v2/models",
        "Incorrect API key provided: Bearer <redacted>",
        "upstream rejected",
        "<redacted>",
        "DecodeError",
        "TransportError",
        "QuotaExceeded",
        "Conflict",
        "UnprocessableEntity",
        "Models.retrieve",
        "VectorStores.create"
      ])
    }).pipe(Effect.provide(captureLayer(capture)))
  })

  it.scoped("a 429 echoing the key, met again after the retry's wait (on the TestClock)", () => {
    const capture = new Capture()
    return Effect.gen(function*() {
      const echo = yield* echoServer
      const layer = client(echo.url, { maxRetries: 1 })
      const fiber = yield* Effect.fork(
        sweep(
          capture,
          Effect.provide(Effect.flatMap(Embeddings.Embeddings, (e) => e.create({ model, input: "x" })), layer)
        )
      )
      yield* waitUntil("the retry sleeps the server's 1 s", Effect.map(sleepsBetween(900, 1_300), (n) => n > 0))
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual(tagOf(yield* Fiber.join(fiber)), "RateLimited")
      assert.strictEqual(echo.seen.filter((route) => route === "POST /v2/embeddings").length, 2)
      assertClean(capture, ["Embeddings.create", "retry 1 of 1 in", "Rate limit reached for key <redacted>"])
    }).pipe(Effect.provide(captureLayer(capture)))
  })

  it.scoped("a server that never answers: the time limit fires (on the TestClock)", () => {
    const capture = new Capture()
    return Effect.gen(function*() {
      const echo = yield* echoServer
      const layer = client(echo.url, { timeout: "5 seconds" })
      const fiber = yield* Effect.fork(
        sweep(capture, Effect.provide(Effect.flatMap(Models.Models, (m) => m.retrieve("slow")), layer))
      )
      yield* waitUntil("the request reaches the server", Effect.sync(() => echo.seen.includes("GET /v2/models/slow")))
      yield* TestClock.adjust("6 seconds")
      assert.strictEqual(tagOf(yield* Fiber.join(fiber)), "Timeout")
      assertClean(capture, ["Timeout", "/v2/models/slow"])
    }).pipe(Effect.provide(captureLayer(capture)))
  })

  it.scoped("a closed port: the connection is refused", () => {
    const capture = new Capture()
    return Effect.gen(function*() {
      const port = yield* closedPort
      const exit = yield* sweep(
        capture,
        Effect.provide(Effect.flatMap(Models.Models, (m) => m.list()), client(`http://127.0.0.1:${port}`))
      )
      assert.strictEqual(tagOf(exit), "TransportError")
      assertClean(capture, ["TransportError", "connection failed", "GET /v2/models"])
    }).pipe(Effect.provide(captureLayer(capture)))
  })

  it.scoped("the gateway: a wrong password echoed in a 401 and in a 500, and a 401 after login", () => {
    const capture = new Capture()
    return Effect.gen(function*() {
      const echo = yield* echoServer
      const me = Effect.flatMap(UserManager.UserManager, (users) => users.me())
      const at = (prefix: string, secret: string) =>
        Node.layerGateway({ url: `${echo.url}/${prefix}`, username: "canary", password: secret, maxRetries: 0 })
      assert.strictEqual(
        tagOf(yield* sweep(capture, Effect.provide(me, at("gw-wrong", wrongPassword)))),
        "Unauthorized"
      )
      assert.strictEqual(tagOf(yield* sweep(capture, Effect.provide(me, at("gw-wrong", password)))), "Unauthorized")
      assert.strictEqual(tagOf(yield* sweep(capture, Effect.provide(me, at("gw-500", password)))), "ServerError")
      assert.strictEqual(tagOf(yield* sweep(capture, Effect.provide(me, at("gw-401", password)))), "Unauthorized")
      // the 401 after login: logged in again once, then gave up
      assert.strictEqual(echo.seen.filter((r) => r === "POST /gw-401/api/v1/auth/user").length, 2)
      assertClean(capture, [
        "Invalid password '<redacted>' for user canary",
        "login failed for",
        "token rejected: Bearer <redacted>",
        "Auth.login",
        "Auth.reauthenticate"
      ])
    }).pipe(Effect.provide(captureLayer(capture)))
  })

  // an unknown event type is logged without its text, and a known event of the wrong shape is a DecodeError of the
  // transport's decoder (redacted and bounded like every other)
  it.scoped("a Responses stream echoing the key in an event type or an event body", () => {
    const capture = new Capture()
    return Effect.gen(function*() {
      const echo = yield* echoServer
      const stream = (name: string) =>
        Effect.provide(
          Effect.flatMap(Responses.Responses, (r) => Stream.runDrain(r.createStream({ model: name, input: "x" }))),
          client(echo.url)
        )
      assert.strictEqual(tagOf(yield* sweep(capture, stream("leak-log"))), "success")
      assert.strictEqual(tagOf(yield* sweep(capture, stream("leak-decode"))), "DecodeError")
      assertClean(capture, ["skipping a response stream event of an unknown type", "DecodeError"])
    }).pipe(Effect.provide(captureLayer(capture)))
  })
})

describe("secrets never show: configuration", () => {
  const environment = (overrides: Record<string, string> = {}) =>
    ConfigProvider.fromMap(
      new Map(Object.entries({
        AIFS_API_KEY: apiKey,
        AIFS_GATEWAY_URL: "http://127.0.0.1:1/gateway",
        AIFS_GATEWAY_USERNAME: "canary",
        AIFS_GATEWAY_PASSWORD: password,
        ...overrides
      }))
    )

  it.effect("the resolved configuration prints its Redacted values as <redacted>, in logs, spans and text", () => {
    const capture = new Capture()
    return Effect.gen(function*() {
      const config = yield* ClientConfig.ClientConfig
      const gateway = yield* GatewayConfig.GatewayConfig
      yield* Effect.log("configuration", config, gateway)
      yield* Effect.logDebug("annotated").pipe(Effect.annotateLogs({ config, gateway, key: config.apiKey }))
      yield* Effect.annotateCurrentSpan({ config, gateway, password: gateway.password }).pipe(
        Effect.withSpan("test.config", { attributes: { apiKey: config.apiKey } })
      )
      capture.other.push(
        String(config.apiKey),
        `${gateway.password}`,
        JSON.stringify({ config, gateway }),
        Inspectable.format({ config, gateway }),
        inspect({ config, gateway }, { depth: 10 })
      )
      yield* sweep(capture, Effect.fail(new Error(`no luck with ${String(config.apiKey)}`)))
      assertClean(capture, ["configuration", "test.config", "<redacted>", "llm-server.llmhub.t-systems.net"])
    }).pipe(
      Effect.provide(Layer.merge(ClientConfig.layerFromEnv, GatewayConfig.layerFromEnv)),
      Effect.withConfigProvider(environment()),
      Effect.provide(captureLayer(capture))
    )
  })

  it.effect("a configuration that fails on a bad value does not show the key or the password", () => {
    const capture = new Capture()
    return Effect.gen(function*() {
      const bad: ReadonlyArray<readonly [string, string]> = [
        ["AIFS_MAX_RETRIES", "lots"],
        ["AIFS_TIMEOUT", "soon"],
        ["AIFS_TIER", "gold"],
        ["AIFS_API_VERSION", "9.9.9"],
        ["AIFS_GATEWAY_MAX_RETRIES", "-1"],
        ["AIFS_GATEWAY_TIMEOUT", "later"]
      ]
      for (const [name, value] of bad) {
        const layer: Layer.Layer<never, ConfigError.ConfigError> = name.startsWith("AIFS_GATEWAY")
          ? GatewayConfig.layerFromEnv
          : ClientConfig.layerFromEnv
        const exit = yield* sweep(
          capture,
          Effect.provide(Effect.void, layer).pipe(Effect.withConfigProvider(environment({ [name]: value })))
        )
        assert.isTrue(Exit.isFailure(exit), name)
      }
      // a whole client stack that cannot start
      yield* sweep(
        capture,
        Effect.provide(Effect.flatMap(Models.Models, (m) => m.list()), Node.layerFromEnv).pipe(
          Effect.withConfigProvider(environment({ AIFS_STREAM_IDLE_TIMEOUT: "whenever" }))
        )
      )
      assertClean(capture, ["AIFS_MAX_RETRIES", "AIFS_TIMEOUT", "AIFS_GATEWAY_TIMEOUT", "AIFS_STREAM_IDLE_TIMEOUT"])
    }).pipe(Effect.provide(captureLayer(capture)))
  })
})

// ---------------------------------------------------------------------------------------------------------------
// the CLI, as a process

describe("secrets never show: the CLI", () => {
  it.live(
    "stdout and stderr of failing commands hold the error, never the key or the password",
    () =>
      Effect.gen(function*() {
        const echo = yield* echoServer
        const port = yield* closedPort
        const key = { AIFS_API_KEY: apiKey, AIFS_MAX_RETRIES: "0" }
        const gatewayEnv = (prefix: string, secret: string) => ({
          AIFS_GATEWAY_URL: `${echo.url}/${prefix}`,
          AIFS_GATEWAY_USERNAME: "canary",
          AIFS_GATEWAY_PASSWORD: secret,
          AIFS_GATEWAY_MAX_RETRIES: "0"
        })
        const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, Record<string, string>, number, string]> = [
          ["a 401 echoing the key", ["models"], { ...key, AIFS_BASE_URL: `${echo.url}/v2` }, 1, "Unauthorized"],
          [
            "a stream error event echoing the key",
            ["chat", "hi"],
            { ...key, AIFS_BASE_URL: `${echo.url}/v2` },
            1,
            "ServerError"
          ],
          [
            "a refused connection",
            ["models"],
            { ...key, AIFS_BASE_URL: `http://127.0.0.1:${port}/v2` },
            1,
            "TransportError"
          ],
          ["a bad configuration value", ["models"], { ...key, AIFS_MAX_RETRIES: "lots" }, 2, "AIFS_MAX_RETRIES"],
          [
            "a wrong gateway password echoed",
            ["rag", "chat", "hi"],
            gatewayEnv("gw-wrong", wrongPassword),
            1,
            "Unauthorized"
          ],
          ["a gateway login echoing its body", ["rag", "chat", "hi"], gatewayEnv("gw-500", password), 1, "ServerError"],
          ["a 401 after the gateway login", ["rag", "chat", "hi"], gatewayEnv("gw-401", password), 1, "Unauthorized"]
        ]
        const runs = yield* Effect.forEach(cases, ([, args, env]) => aifs(args, env), { concurrency: 2 })
        cases.forEach(([name, , , code, mention], i) => {
          const run = runs[i]!
          const output = `${run.stdout}\n${run.stderr}`
          assert.strictEqual(run.code, code, `${name}: exit ${run.code}: ${output}`)
          assert.include(run.stderr, mention, name)
          assert.match(run.stderr, /aifs: error: /, name)
          assert.notMatch(run.stderr, /^\s+at /m, `${name}: a stack trace`)
          assert.isUndefined(findLeak(output), name)
        })
      }).pipe(Effect.scoped),
    120_000
  )
})
