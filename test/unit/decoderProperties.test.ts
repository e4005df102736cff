/**
 * "Bad input" properties: arbitrary JSON, arbitrary text and mutated valid bodies fed to every response
 * decoder; arbitrary bytes to the SSE decoder and to the streaming client; arbitrary statuses and bodies to
 * the error mapping; arbitrary header values to the header parser. Each answers a value or a typed error,
 * never a defect (a throw, or a `die` in the Cause).
 */
import * as Sse from "@effect/experimental/Sse"
import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { parseDurationInput, parseResetMillis } from "../../src/internal/duration.js"
import { excerpt, fromResponse, fromStreamError, maxExcerpt, retryAfterFromMessage } from "../../src/internal/errors.js"
import { parseRateLimitInfo, parseRetryAfter } from "../../src/internal/headers.js"
import { makeRedactor } from "../../src/internal/redact.js"
import * as Decode from "../../src/internal/request/decode.js"
import { ResponseMetadata } from "../../src/internal/request/types.js"
import { decodeEvents } from "../../src/internal/sse.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import * as AudioSchemas from "../../src/schemas/Audio.js"
import * as ChatSchemas from "../../src/schemas/Chat.js"
import * as CompletionsSchemas from "../../src/schemas/Completions.js"
import * as EmbeddingsSchemas from "../../src/schemas/Embeddings.js"
import * as ErrorsSchemas from "../../src/schemas/Errors.js"
import * as FilesSchemas from "../../src/schemas/Files.js"
import * as FineTuningSchemas from "../../src/schemas/FineTuning.js"
import * as GatewaySchemas from "../../src/schemas/Gateway.js"
import * as ImagesSchemas from "../../src/schemas/Images.js"
import * as JobQueueSchemas from "../../src/schemas/JobQueue.js"
import * as ModelsSchemas from "../../src/schemas/Models.js"
import * as RateLimitSchemas from "../../src/schemas/RateLimit.js"
import * as ResponsesSchemas from "../../src/schemas/Responses.js"
import * as SharedSchemas from "../../src/schemas/Shared.js"
import * as UploadSchemas from "../../src/schemas/Upload.js"
import * as VectorStoresSchemas from "../../src/schemas/VectorStores.js"
import * as Chat from "../../src/services/Chat.js"
import * as Completions from "../../src/services/Completions.js"
import * as Models from "../../src/services/Models.js"
import * as Responses from "../../src/services/Responses.js"
import { layerWithClient } from "./helpers.js"

const { DecodeError, isApiError, TransportError } = ErrorsSchemas
const { RateLimitInfo } = RateLimitSchemas

/** Every module of `src/schemas`, by file name: a new module must be added here (a test checks the folder). */
const schemaModules: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  "Audio.ts": AudioSchemas,
  "Chat.ts": ChatSchemas,
  "Completions.ts": CompletionsSchemas,
  "Embeddings.ts": EmbeddingsSchemas,
  "Errors.ts": ErrorsSchemas,
  "Files.ts": FilesSchemas,
  "FineTuning.ts": FineTuningSchemas,
  "Gateway.ts": GatewaySchemas,
  "Images.ts": ImagesSchemas,
  "JobQueue.ts": JobQueueSchemas,
  "Models.ts": ModelsSchemas,
  "RateLimit.ts": RateLimitSchemas,
  "Responses.ts": ResponsesSchemas,
  "Shared.ts": SharedSchemas,
  "Upload.ts": UploadSchemas,
  "VectorStores.ts": VectorStoresSchemas
}

type AnySchema = Schema.Schema<unknown, unknown>

/** Every exported schema, so that a new one is fed arbitrary input without anyone listing it. */
const exportedSchemas: ReadonlyArray<readonly [string, AnySchema]> = Object.entries(schemaModules).flatMap((
  [file, module]
) =>
  Object.entries(module).flatMap(([name, value]) =>
    Schema.isSchema(value) ? [[`${file.replace(/\.ts$/, "")}.${name}`, value as AnySchema] as const] : []
  )
)

/** Schemas the services build from exported ones (the queue's result-or-handle answers). */
const derivedSchemas: ReadonlyArray<readonly [string, AnySchema]> = [
  ["JobQueue.resultOrHandle(ChatCompletion)", JobQueueSchemas.resultOrHandle(ChatSchemas.ChatCompletion)],
  ["JobQueue.resultOrHandle(Completion)", JobQueueSchemas.resultOrHandle(CompletionsSchemas.Completion)],
  ["JobQueue.resultOrHandle(EmbeddingList)", JobQueueSchemas.resultOrHandle(EmbeddingsSchemas.EmbeddingList)],
  ["JobQueue.resultOrHandle(Transcription)", JobQueueSchemas.resultOrHandle(AudioSchemas.Transcription)],
  ["JobQueue.resultOrHandle(ImagesResponse)", JobQueueSchemas.resultOrHandle(ImagesSchemas.ImagesResponse)]
].map(([name, schema]) => [name as string, schema as AnySchema] as const)

const schemas = [...exportedSchemas, ...derivedSchemas]

/** The schemas the services pass to `json`/`jsonStream` (and the error bodies the mapping decodes). */
const responseSchemas: ReadonlyArray<unknown> = [
  AudioSchemas.Transcription,
  AudioSchemas.AudioModelsResponse,
  ChatSchemas.ChatCompletion,
  ChatSchemas.ChatCompletionChunk,
  CompletionsSchemas.Completion,
  EmbeddingsSchemas.EmbeddingList,
  FilesSchemas.FileObject,
  FilesSchemas.FileList,
  FilesSchemas.FileDeleted,
  FilesSchemas.FileValidationRequest,
  FineTuningSchemas.FineTuningJob,
  FineTuningSchemas.FineTuningJobList,
  FineTuningSchemas.FineTuningJobEventList,
  ImagesSchemas.ImagesResponse,
  ModelsSchemas.Model,
  ModelsSchemas.ModelList,
  ResponsesSchemas.Response,
  ResponsesSchemas.RawStreamEvent,
  ResponsesSchemas.ResponseStreamEvent,
  VectorStoresSchemas.VectorStore,
  VectorStoresSchemas.VectorStoreList,
  VectorStoresSchemas.VectorStoreDeleted,
  VectorStoresSchemas.VectorStoreFile,
  VectorStoresSchemas.VectorStoreFileList,
  VectorStoresSchemas.SearchResponse,
  JobQueueSchemas.QueueHandle,
  JobQueueSchemas.AcceptedBody,
  GatewaySchemas.AccessToken,
  GatewaySchemas.ChatSession,
  GatewaySchemas.ChatSessionList,
  GatewaySchemas.Deleted,
  GatewaySchemas.UserConfigList,
  GatewaySchemas.GatewayFileList,
  GatewaySchemas.IngestTask,
  GatewaySchemas.IngestTaskList,
  GatewaySchemas.ChatAnswerFromWire,
  GatewaySchemas.GatewayUser,
  SharedSchemas.DetailErrorBody,
  SharedSchemas.OpenAIErrorBody
]

const secret = "gen-" + "PROPERTYCANARY0123456789".repeat(2)
const redact = makeRedactor([Redacted.make(secret)])
const endpoint = "POST /property"
const info = new ResponseMetadata({
  status: 200,
  requestId: "req-property",
  rateLimit: RateLimitInfo.empty(0),
  headers: Headers.empty
})

/** Room for the "... (N more characters)" suffix of a truncated excerpt. */
const suffixRoom = 40

/** A decoder's answer: a value, or a bounded, redacted `DecodeError` naming the request. */
const assertOutcome = (name: string, result: unknown): void => {
  assert.isTrue(Either.isEither(result), `${name}: not an Either`)
  const either = result as Either.Either<unknown, unknown>
  if (Either.isRight(either)) return
  const error = either.left
  assert.instanceOf(error, DecodeError, name)
  if (!(error instanceof DecodeError)) return
  assert.strictEqual(error.endpoint, endpoint, name)
  assert.strictEqual(error.status, 200, name)
  assert.strictEqual(error.requestId, "req-property", name)
  assert.isAtMost(error.excerpt.length, maxExcerpt + suffixRoom, name)
  assert.isAtMost(error.message.length, 1024 + suffixRoom, name)
  assert.notInclude(JSON.stringify(error), secret, name)
}

/** Runs `check` for every schema with its own fast-check run, naming the schema when it fails. */
const forEachSchema = <Ts>(
  runs: number,
  check: (name: string, schema: AnySchema) => FastCheck.IPropertyWithHooks<Ts> | undefined
) => {
  for (const [name, schema] of schemas) {
    const property = check(name, schema)
    if (property === undefined) continue
    try {
      FastCheck.assert(property, { numRuns: runs })
    } catch (error) {
      throw new Error(`${name}: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
}

/** JSON that survives `JSON.stringify` unchanged: finite numbers, plain objects and arrays. */
const isJsonSafe = (u: unknown): boolean => {
  if (u === null || typeof u === "string" || typeof u === "boolean") return true
  if (typeof u === "number") return Number.isFinite(u)
  if (Array.isArray(u)) return u.every(isJsonSafe)
  if (typeof u === "object") {
    const proto = Object.getPrototypeOf(u)
    if (proto !== Object.prototype && proto !== null) return false
    return Object.values(u).every((v) => v === undefined || isJsonSafe(v))
  }
  return false
}

type Path = ReadonlyArray<string | number>

const pathsOf = (value: unknown, prefix: Path = []): Array<Path> => {
  const out: Array<Path> = [prefix]
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...pathsOf(v, [...prefix, i])))
  else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]))
  }
  return out
}

type Edit =
  | { readonly _tag: "replace"; readonly at: number; readonly value: unknown }
  | { readonly _tag: "remove"; readonly at: number }
  | { readonly _tag: "add"; readonly at: number; readonly key: string; readonly value: unknown }

/** Applies edits to a plain JSON copy; each edit picks its path by index modulo the paths present then. */
const mutate = (sample: unknown, edits: ReadonlyArray<Edit>): unknown => {
  let root: unknown = JSON.parse(JSON.stringify(sample) ?? "null")
  for (const edit of edits) {
    const paths = pathsOf(root)
    const path = paths[edit.at % paths.length]!
    if (path.length === 0) {
      if (edit._tag === "replace") root = edit.value
      continue
    }
    const parent = path.slice(0, -1).reduce<unknown>((node, k) => (node as Record<string | number, unknown>)[k], root)
    const last = path[path.length - 1]!
    const container = parent as Record<string | number, unknown>
    if (edit._tag === "replace") container[last] = edit.value
    else if (edit._tag === "remove") {
      if (Array.isArray(parent)) parent.splice(Number(last), 1)
      else delete container[last]
    } else {
      const target = container[last]
      if (typeof target === "object" && target !== null && !Array.isArray(target)) {
        ;(target as Record<string, unknown>)[edit.key] = edit.value
      }
    }
  }
  return root
}

const json = FastCheck.jsonValue({ maxDepth: 3 })

/** Text that mixes the secret, bearer tokens, quotes and escapes: what redaction must survive. */
const tricky = FastCheck.array(
  FastCheck.oneof(
    FastCheck.constantFrom(
      "Bearer ",
      "bearer\t",
      "\"",
      "\\",
      "\\\"",
      "'",
      ",",
      ";",
      " ",
      "\n",
      "gen-",
      secret,
      "é",
      "😀"
    ),
    FastCheck.string({ maxLength: 4 })
  ),
  { maxLength: 12 }
).map((parts) => parts.join(""))

const edit: FastCheck.Arbitrary<Edit> = FastCheck.oneof(
  FastCheck.record({
    _tag: FastCheck.constant("replace" as const),
    at: FastCheck.nat(),
    value: FastCheck.oneof(json, tricky)
  }),
  FastCheck.record({ _tag: FastCheck.constant("remove" as const), at: FastCheck.nat() }),
  FastCheck.record({
    _tag: FastCheck.constant("add" as const),
    at: FastCheck.nat(),
    key: FastCheck.string({ maxLength: 6 }),
    value: json
  })
)

/** Valid values of a schema in their wire form, or `undefined` when the schema has no arbitrary. */
const validSamples = (schema: AnySchema): FastCheck.Arbitrary<unknown> | undefined => {
  const encode = Schema.encodeUnknownEither(schema)
  try {
    return Arbitrary.make(schema).map((value) => Either.getOrUndefined(encode(value)))
  } catch {
    return undefined
  }
}

describe("the list of schemas", () => {
  it("covers every module of src/schemas", () => {
    const dir = fileURLToPath(new URL("../../src/schemas/", import.meta.url))
    const files = fs.readdirSync(dir).filter((f) => f.endsWith(".ts")).sort()
    assert.deepStrictEqual(Object.keys(schemaModules).sort(), files)
  })

  it("holds every schema the services decode responses with", () => {
    const listed = new Set<unknown>(schemas.map(([, schema]) => schema))
    for (const schema of responseSchemas) {
      assert.isTrue(listed.has(schema), `missing ${String(schema)}`)
    }
    assert.isAtLeast(schemas.length, responseSchemas.length)
  })

  it("every schema has an arbitrary of valid values (so the mutations start from a valid body)", () => {
    const without = schemas.filter(([, schema]) => validSamples(schema) === undefined).map(([name]) => name)
    assert.deepStrictEqual(without, [])
  })
})

describe("every response decoder, on bad input", () => {
  // the same inputs go to every decoder: a counterexample names the schema that broke
  const decoders = schemas.map(([name, schema]) => [name, Decode.decoder(schema, endpoint, redact)] as const)

  it("arbitrary JSON gives a value or a DecodeError", () => {
    FastCheck.assert(
      FastCheck.property(json, (value) => {
        const text = JSON.stringify(value)
        for (const [name, decode] of decoders) {
          assertOutcome(name, decode.text(text, info))
          assertOutcome(name, decode.value(value, text, info))
        }
      }),
      { numRuns: 15 }
    )
  })

  it("arbitrary text (not JSON, or JSON-looking soup) gives a value or a DecodeError", () => {
    const text = FastCheck.oneof(
      FastCheck.string(),
      FastCheck.string({ unit: "binary" }),
      FastCheck.string({ unit: FastCheck.constantFrom(..."{}[]\":,0123456789.-eE truefalsn\\u") }),
      tricky
    )
    FastCheck.assert(
      FastCheck.property(text, (body) => {
        for (const [name, decode] of decoders) assertOutcome(name, decode.text(body, info))
      }),
      { numRuns: 20 }
    )
  })

  it("a valid body decodes, and a valid response still decodes with unknown fields added", () => {
    const responses = new Set<unknown>([...responseSchemas, ...derivedSchemas.map(([, schema]) => schema)])
    forEachSchema(6, (name, schema) => {
      const samples = validSamples(schema)
      if (samples === undefined) return undefined
      const decode = Decode.decoder(schema, endpoint, redact)
      const added = FastCheck.array(
        FastCheck.record({
          at: FastCheck.nat(),
          key: FastCheck.string({ minLength: 1, maxLength: 6 }).map((k) => `x_${k}`),
          value: json
        }),
        { maxLength: 3 }
      )
      return FastCheck.property(samples, added, (sample, extras) => {
        // NaN, Infinity and class instances (durations in errors) do not survive JSON: nothing to check
        if (sample === undefined || !isJsonSafe(sample)) return
        const body = JSON.stringify(sample)
        const plain = decode.text(body, info)
        assert.isTrue(Either.isRight(plain), `${name}: a valid body failed: ${body}: ${String(Either.flip(plain))}`)
        // params and parts may hold records of typed values (metadata): extra fields are a response's concern
        if (!responses.has(schema)) return
        const extended = JSON.stringify(mutate(sample, extras.map((e) => ({ _tag: "add" as const, ...e }))))
        const tolerant = decode.text(extended, info)
        assert.isTrue(
          Either.isRight(tolerant),
          `${name}: extra fields were refused: ${extended}: ${String(Either.flip(tolerant))}`
        )
      })
    })
  })

  it("a valid body with fields replaced by arbitrary JSON, removed or added gives a value or a DecodeError", () => {
    forEachSchema(8, (name, schema) => {
      const samples = validSamples(schema)
      if (samples === undefined) return undefined
      const decode = Decode.decoder(schema, endpoint, redact)
      return FastCheck.property(samples, FastCheck.array(edit, { minLength: 1, maxLength: 4 }), (sample, edits) => {
        const body = JSON.stringify(mutate(sample, edits)) ?? "null"
        assertOutcome(name, decode.text(body, info))
        // and the same body cut short, as a dropped connection leaves it
        assertOutcome(name, decode.text(body.slice(0, Math.floor(body.length / 2)), info))
      })
    })
  })

  it("large and moderately deep bodies give a value or a DecodeError", () => {
    const large = JSON.stringify({ object: "list", data: Array.from({ length: 5_000 }, (_, i) => ({ id: i })) })
    const deep = "[".repeat(500) + "]".repeat(500)
    for (const [name, schema] of schemas) {
      const decode = Decode.decoder(schema, endpoint, redact)
      for (const body of [large, deep, `{"id":${deep},"data":${deep},"choices":${deep}}`]) {
        assertOutcome(name, decode.text(body, info))
      }
    }
  })

  // a 10 KB body nested 5,000 deep parses, fails its schema, and formatting the ParseError overflows the stack
  it("a body nested 5,000 deep gives a DecodeError, not a stack overflow", () => {
    const deepArray = "[".repeat(5_000) + "]".repeat(5_000)
    const deepObject = "{\"a\":".repeat(5_000) + "1" + "}".repeat(5_000)
    const decode = Decode.decoder(ModelsSchemas.Model as AnySchema, endpoint, redact)
    for (const body of [deepArray, deepObject, `{"id":${deepArray}}`]) assertOutcome("Model", decode.text(body, info))
  })
})

const encoder = new TextEncoder()

/** Cuts bytes at the given offsets (in any order, possibly inside a multi-byte character). */
const cut = (bytes: Uint8Array, offsets: ReadonlyArray<number>): Array<Uint8Array> => {
  const points = [...new Set(offsets.map((o) => o % (bytes.length + 1)))].sort((a, b) => a - b)
  const chunks: Array<Uint8Array> = []
  let previous = 0
  for (const point of points) {
    chunks.push(bytes.slice(previous, point))
    previous = point
  }
  chunks.push(bytes.slice(previous))
  return chunks
}

/** A `retry:` field at the start of a line (after any of the three line endings). */
const retryField = /(?:^|[\r\n])retry/

/** SSE-looking text: fields, comments, the three line endings, [DONE], JSON, non-ASCII. */
const sseText = FastCheck.array(
  FastCheck.oneof(
    FastCheck.constantFrom(
      "data: ",
      "data:",
      "data",
      "event: error\n",
      "event: message\n",
      "id: 7\n",
      "id\n",
      ": keep-alive\n",
      "\n",
      "\r\n",
      "\r",
      "\n\n",
      "[DONE]",
      "{\"choices\":[]}",
      "{",
      "\"",
      "\u0000",
      "\ufeff",
      "é",
      "😀"
    ),
    FastCheck.string({ maxLength: 8 }),
    json.map((v) => JSON.stringify(v))
  ),
  { maxLength: 30 }
).map((parts) => parts.join(""))
  // a `retry:` field makes the parser sleep: see the known defect below
  .filter((text) => !retryField.test(text))

const runEvents = (chunks: ReadonlyArray<Uint8Array>) =>
  Effect.runSyncExit(Stream.runCollect(decodeEvents(Stream.fromIterable(chunks), endpoint)))

/** An exit that is a success or a typed failure (one of `tags`), with no defect or interruption in it. */
const assertTyped = (exit: Exit.Exit<unknown, unknown>, tags: ReadonlyArray<string>, label = "") => {
  if (Exit.isSuccess(exit)) return
  assert.isFalse(Cause.isDie(exit.cause), `${label} defect: ${Cause.pretty(exit.cause)}`)
  assert.isFalse(Cause.isInterrupted(exit.cause), `${label} interrupted: ${Cause.pretty(exit.cause)}`)
  const failures = [...Cause.failures(exit.cause)]
  assert.isAbove(failures.length, 0, label)
  for (const failure of failures) {
    const tag = (failure as { readonly _tag?: unknown })._tag
    assert.include(tags, tag, `${label} unexpected failure ${String(tag)}`)
  }
}

describe("the SSE decoder, on bad input", () => {
  it("arbitrary bytes in arbitrary chunks give events or a DecodeError", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.array(FastCheck.uint8Array({ maxLength: 64 }), { maxLength: 8 }),
        (chunks) => assertTyped(runEvents(chunks), ["DecodeError"])
      ),
      { numRuns: 150 }
    )
  })

  it("SSE-looking text gives the same events however the bytes are chunked", () => {
    FastCheck.assert(
      FastCheck.property(sseText, FastCheck.array(FastCheck.nat(), { maxLength: 6 }), (text, offsets) => {
        const bytes = encoder.encode(text)
        const whole = runEvents([bytes])
        assertTyped(whole, ["DecodeError"])
        const chunked = runEvents(cut(bytes, offsets))
        assertTyped(chunked, ["DecodeError"])
        assert.deepStrictEqual(
          Exit.map(chunked, (events) => [...events]),
          Exit.map(whole, (events) => [...events]),
          JSON.stringify(text)
        )
      }),
      { numRuns: 150 }
    )
  })

  // the reader cuts lines itself and feeds the parser a line at a time (the parser rescans its buffer per line, and
  // fed many lines at once, a \r\n can make it skip the blank line after the next line): the reference cuts the
  // whole text with a regular expression
  it("SSE-looking text in any chunks gives the events of its lines (\\n, \\r\\n or \\r) fed one by one", () => {
    FastCheck.assert(
      FastCheck.property(sseText, FastCheck.array(FastCheck.nat(), { maxLength: 6 }), (text, offsets) => {
        const bytes = encoder.encode(text)
        const expected: Array<Sse.Event> = []
        const parser = Sse.makeParser((event) => {
          if (event._tag === "Event") expected.push(event)
        })
        // as the reader's decoder reads the bytes: a leading byte order mark is dropped
        const lines = new TextDecoder().decode(bytes).split(/\r\n|\r|\n/)
        // the last is the line begun (empty after a break), fed at the end
        for (const line of lines.at(-1) === "" ? lines.slice(0, -1) : lines) parser.feed(`${line}\n`)
        const exit = runEvents(cut(bytes, offsets))
        assert.deepStrictEqual(Exit.map(exit, (events) => [...events]), Exit.succeed(expected), JSON.stringify(text))
      }),
      { numRuns: 300 }
    )
  })

  it("a body that fails mid-stream passes its typed error through", () => {
    FastCheck.assert(
      FastCheck.property(sseText, (text) => {
        const body = Stream.concat(
          Stream.make(encoder.encode(text)),
          Stream.fail(new TransportError({ message: "connection reset", endpoint }))
        )
        const exit = Effect.runSyncExit(Stream.runCollect(decodeEvents(body, endpoint)))
        assert.isTrue(Exit.isFailure(exit))
        assertTyped(exit, ["TransportError"])
      }),
      { numRuns: 100 }
    )
  })

  // `Sse.makeChannel` answers a `retry: N` field by sleeping N ms and starting a fresh parser: a server's
  // `retry: 86400000` would stall the stream for a day and lose the first lines of the event around it
  it("a retry field neither waits nor loses data", () => {
    const text = "data: a\nretry: 86400000\ndata: b\n\n"
    const exit = runEvents([encoder.encode("data: a\n"), encoder.encode("retry: 86400000\ndata: b\n\n")])
    assertTyped(exit, ["DecodeError"])
    assert.deepStrictEqual(Exit.map(exit, (events) => [...events].map((e) => e.data)), Exit.succeed(["a\nb"]), text)
  })

  it("an oversized event is a DecodeError", () => {
    const big = encoder.encode(`data: ${"x".repeat(1024 * 1024 + 10)}\n\n`)
    const exit = runEvents(cut(big, [100_000, 700_000]))
    assertTyped(exit, ["DecodeError"])
    assert.isTrue(Exit.isFailure(exit))
  })
})

/** A stream body of `text` from a platform client, as a server would send it. */
const sseClient = (text: string, status = 200) =>
  HttpClient.make((request) =>
    Effect.succeed(
      HttpClientResponse.fromWeb(
        request,
        new Response(encoder.encode(text), { status, headers: { "content-type": "text/event-stream" } })
      )
    )
  )

const streamBody = FastCheck.oneof(
  sseText,
  // framed events whose payloads are arbitrary, error-shaped or tricky
  FastCheck.array(
    FastCheck.oneof(
      json.map((v) => JSON.stringify(v)),
      tricky.map((message) => JSON.stringify({ error: { message, type: "server_error" } })),
      FastCheck.record({ message: tricky, code: FastCheck.oneof(json, FastCheck.integer({ min: 100, max: 599 })) })
        .map((error) => JSON.stringify({ error })),
      tricky,
      FastCheck.constant("[DONE]")
    ),
    { maxLength: 6 }
  ).map((events) => events.map((e) => `data: ${e}\n\n`).join(""))
)

describe("the streaming client, on bad input", () => {
  const params = { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user" as const, content: "Hi" }] }
  type Drain = Effect.Effect<void, ErrorsSchemas.ApiError, Chat.Chat | Completions.Completions | Responses.Responses>
  const streams: ReadonlyArray<readonly [string, Drain]> = [
    ["Chat.createStream", Effect.flatMap(Chat.Chat, (chat) => Stream.runDrain(chat.createStream(params)))],
    [
      "Completions.createStream",
      Effect.flatMap(
        Completions.Completions,
        (c) => Stream.runDrain(c.createStream({ model: "Llama-3.3-70B-Instruct", prompt: "Hi" }))
      )
    ],
    [
      "Responses.createStream",
      Effect.flatMap(
        Responses.Responses,
        (r) => Stream.runDrain(r.createStream({ model: "Llama-3.3-70B-Instruct", input: "Hi" }))
      )
    ]
  ]

  const tags = [
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "UnprocessableEntity",
    "RateLimited",
    "QuotaExceeded",
    "RequestTooLarge",
    "ServerError",
    "TransportError",
    "Timeout",
    "DecodeError"
  ]

  it.effect("an arbitrary event stream gives values or a typed ApiError, and never shows the key", () =>
    Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(
          FastCheck.constantFrom(...streams),
          streamBody,
          async ([name, drain], body) => {
            const layer = layerWithClient(sseClient(body), {
              config: { apiKey: secret },
              retry: RetryPolicy.layerDisabled
            })
            const exit = await Effect.runPromiseExit(Effect.provide(drain, layer))
            assertTyped(exit, tags, `${name} on ${JSON.stringify(body)}:`)
            if (Exit.isFailure(exit)) {
              for (const failure of Cause.failures(exit.cause)) {
                assert.isTrue(isApiError(failure), name)
                assert.notInclude(JSON.stringify(failure), secret, `${name} on ${JSON.stringify(body)}`)
              }
            }
          }
        ),
        { numRuns: 40 }
      )
    ))

  it.effect("an error event whose message holds a bearer token and an escaped quote is a typed error", () =>
    Effect.gen(function*() {
      const body = `data: ${JSON.stringify({ error: { message: `upstream refused Bearer abc"def ${secret}` } })}\n\n`
      const layer = layerWithClient(sseClient(body), { config: { apiKey: secret }, retry: RetryPolicy.layerDisabled })
      const error = yield* Effect.flip(Effect.provide(streams[0]![1], layer))
      assert.strictEqual(error._tag, "ServerError")
      assert.include(error.message, "Bearer <redacted>")
      assert.notInclude(JSON.stringify(error), secret)
    }))
})

const statuses = FastCheck.oneof(
  FastCheck.integer({ min: 100, max: 599 }),
  FastCheck.constantFrom(400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 500, 501, 502, 503, 504),
  FastCheck.integer(),
  FastCheck.constantFrom(0, -1, 1000, Number.NaN, Number.MAX_SAFE_INTEGER)
)

const errorBodies = FastCheck.oneof(
  FastCheck.string(),
  FastCheck.string({ unit: "binary" }),
  tricky,
  json.map((v) => JSON.stringify(v)),
  json.map((detail) => JSON.stringify({ detail })),
  json.map((error) => JSON.stringify({ error })),
  FastCheck.record({ message: json, type: json, code: json }, { requiredKeys: [] }).map((error) =>
    JSON.stringify({ error })
  ),
  FastCheck.array(FastCheck.record({ loc: json, msg: json, type: json }, { requiredKeys: [] }), { maxLength: 3 })
    .map((detail) => JSON.stringify({ detail })),
  json.map((message) => JSON.stringify({ message })),
  FastCheck.string().map((s) => `<html><head><title>${s}</title></head><body>${s}</body></html>`),
  FastCheck.string().map((s) => `<html><script>${s}</script><p>${s}`),
  tricky.map((s) => JSON.stringify({ error: { message: `${s} Please retry after ${s} seconds`, code: 429 } }))
)

const headerValue = FastCheck.oneof(
  FastCheck.string(),
  FastCheck.string({ unit: "binary" }),
  FastCheck.string({ unit: FastCheck.constantFrom(..."0123456789.-+eEhmsµu xNaIfinty,") }),
  FastCheck.bigInt().map(String),
  FastCheck.double().map(String),
  // hundreds of digits, below the 300 that trip the known defect at the end of this file
  FastCheck.integer({ min: 17, max: 290 }).map((n) => "9".repeat(n)),
  FastCheck.integer({ min: 309, max: 400 }).map((n) => "9".repeat(n)),
  FastCheck.constantFrom(
    "NaN",
    "Infinity",
    "-Infinity",
    "-0",
    "+5",
    "0x10",
    "1e3",
    "1e999",
    "-1",
    "١٢",
    "",
    " ",
    "3s3s",
    "99999999999999999999h",
    "Fri, 31 Dec 275760 23:59:59 GMT",
    "Sat, 01 Jan 0000 00:00:00 GMT"
  ),
  FastCheck.date().map((d) => (Number.isNaN(d.getTime()) ? "Invalid Date" : d.toUTCString()))
)

const rateLimitHeaders = FastCheck.record({
  "x-ratelimit-limit-requests": headerValue,
  "x-ratelimit-limit-tokens": headerValue,
  "x-ratelimit-remaining-requests": headerValue,
  "x-ratelimit-remaining-tokens": headerValue,
  "x-ratelimit-reset-requests": headerValue,
  "x-ratelimit-reset-tokens": headerValue,
  "retry-after": headerValue,
  "retry-after-ms": headerValue
}, { requiredKeys: [] })

const now = Date.parse("2025-01-15T12:00:00Z")

/** A wait read from a header: a duration that is not negative and not NaN. */
const assertWait = (d: Duration.Duration | undefined, label: string) => {
  if (d === undefined) return
  const ms = Duration.toMillis(d)
  assert.isFalse(Number.isNaN(ms), label)
  assert.isAtLeast(ms, 0, label)
}

describe("the error mapping, on bad input", () => {
  it("any status and body map to a tagged ApiError that matches the status", () => {
    FastCheck.assert(
      FastCheck.property(statuses, errorBodies, rateLimitHeaders, (status, body, headers) => {
        const rateLimit = parseRateLimitInfo(headers, now)
        const error = fromResponse({ status, body, endpoint, requestId: undefined, rateLimit })
        assert.isTrue(isApiError(error), `${status} ${body}`)
        assert.isString(error.message)
        const expected: Record<number, ReadonlyArray<string>> = {
          400: ["BadRequest"],
          401: ["Unauthorized"],
          402: ["QuotaExceeded"],
          403: ["Forbidden"],
          404: ["NotFound"],
          408: ["Timeout"],
          409: ["Conflict"],
          422: ["UnprocessableEntity"],
          429: ["RateLimited", "QuotaExceeded", "RequestTooLarge"]
        }
        const tags = expected[status] ??
          (status >= 500 ? ["ServerError"] : status >= 400 ? ["BadRequest"] : ["DecodeError"])
        assert.include(tags, error._tag, `${status} ${body}`)
        if (error._tag === "RateLimited") assertWait(error.retryAfter, `${status} ${body}`)
        if (error._tag === "DecodeError") assert.isAtMost(error.excerpt.length, maxExcerpt + suffixRoom)
      }),
      { numRuns: 500 }
    )
  })

  // `{"message": ""}` and `{"error": ""}` fall back to the status text like the other forms
  it("an error body with an empty message still gives a message", () => {
    FastCheck.assert(
      FastCheck.property(statuses, errorBodies, (status, body) => {
        const error = fromResponse({ status, body, endpoint, requestId: undefined, rateLimit: RateLimitInfo.empty(0) })
        assert.isAbove(error.message.trim().length, 0, `empty message for ${status} ${body}`)
      }),
      { numRuns: 200, examples: [[400, "{\"message\":\"\"}"], [500, "{\"error\":\"\"}"]] }
    )
  })

  it("any stream error payload maps to a tagged ApiError", () => {
    const payload = FastCheck.oneof(
      json,
      json.map((error) => ({ error })),
      FastCheck.record({ message: json, type: json, code: json }, { requiredKeys: [] }).map((error) => ({ error }))
    )
    FastCheck.assert(
      FastCheck.property(payload, (p) => {
        const error = fromStreamError(p, { endpoint, requestId: undefined, rateLimit: RateLimitInfo.empty(now) })
        assert.isTrue(isApiError(error), JSON.stringify(p))
      }),
      { numRuns: 500 }
    )
  })

  it("a wait asked for in a message is never negative or NaN", () => {
    const message = FastCheck.oneof(
      FastCheck.string(),
      FastCheck.tuple(
        FastCheck.constantFrom("retry after ", "Please try again in ", "TRY AGAIN IN "),
        headerValue,
        FastCheck.constantFrom("", " ", "s", " seconds", "ms", " minutes", "m", "h")
      ).map((parts) => parts.join(""))
    )
    FastCheck.assert(
      FastCheck.property(message, (m) => assertWait(retryAfterFromMessage(m), m)),
      { numRuns: 500 }
    )
  })

  it("an excerpt is bounded whatever the body", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.string({ unit: "binary", maxLength: 2000 }), (body) => {
        assert.isAtMost(excerpt(body).length, maxExcerpt + suffixRoom)
      }),
      { numRuns: 200 }
    )
  })
})

describe("the redactor, on arbitrary secrets echoed in JSON", () => {
  const secretText = FastCheck.string({
    minLength: 4,
    maxLength: 16,
    unit: FastCheck.oneof(
      FastCheck.constantFrom(..."abcXYZ019 -_.\"\\/<&>é€😀\n\t"),
      FastCheck.string({ unit: "binary", minLength: 1, maxLength: 1 })
    )
  }).filter((secret) => !"<redacted>".includes(secret) && !"Bearer ".includes(secret))

  it("the body stays valid JSON, and what it says no longer holds the secret", () => {
    FastCheck.assert(
      FastCheck.property(secretText, tricky, json, (secret, words, value) => {
        // a secret that is also part of the JSON around the message (`"valu` of a key `"value"`) cannot be cut
        // out and leave valid JSON: redacting it there is right, the property holds for the others
        const skeleton = JSON.stringify({ error: { message: "" }, value })
        const asciiOf = (text: string) =>
          text.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
        const escaped = JSON.stringify(secret).slice(1, -1)
        FastCheck.pre(
          [skeleton, asciiOf(skeleton)].every((text) =>
            !text.includes(secret) && !text.includes(escaped) && !text.includes(asciiOf(escaped))
          )
        )
        const body = JSON.stringify({ error: { message: `${words} key ${secret} (Bearer ${secret})` }, value })
        const redacted = makeRedactor([Redacted.make(secret)])(body)
        let parsed: unknown
        assert.doesNotThrow(
          () => {
            parsed = JSON.parse(redacted)
          },
          undefined,
          `${JSON.stringify(secret)} in ${body} -> ${redacted}`
        )
        const message = (parsed as { error: { message: string } }).error.message
        assert.notInclude(message, secret, `${JSON.stringify(secret)} in ${body} -> ${redacted}`)
        // and the same for the escaping of servers that write every non-ASCII character as \uXXXX
        const ascii = asciiOf(body)
        const fromAscii = JSON.parse(makeRedactor([Redacted.make(secret)])(ascii)) as { error: { message: string } }
        assert.notInclude(fromAscii.error.message, secret, `${JSON.stringify(secret)} in ${ascii}`)
      }),
      { numRuns: 500 }
    )
  })
})

describe("the header parser, on bad input", () => {
  it("full-unicode, number-like, huge, negative and NaN-like values give a valid RateLimitInfo", () => {
    const isRateLimitInfo = Schema.is(RateLimitInfo)
    FastCheck.assert(
      FastCheck.property(rateLimitHeaders, FastCheck.integer({ min: 0, max: 8_640_000_000_000 }), (headers, at) => {
        const parsed = parseRateLimitInfo(headers, at)
        const label = JSON.stringify(headers)
        assert.isTrue(isRateLimitInfo(parsed), label)
        for (
          const count of [parsed.limitRequests, parsed.limitTokens, parsed.remainingRequests, parsed.remainingTokens]
        ) {
          if (count !== undefined) assert.isTrue(Number.isSafeInteger(count) && count >= 0, label)
        }
        for (const d of [parsed.resetRequests, parsed.resetTokens, parsed.retryAfter]) assertWait(d, label)
        // the derived wait is computed from them: it must not throw either
        assert.isDefined(parsed.serverWait)
      }),
      { numRuns: 500 }
    )
  })

  it("retry-after, the reset parser and user durations never throw on any text", () => {
    FastCheck.assert(
      FastCheck.property(headerValue, headerValue, (a, b) => {
        assertWait(parseRetryAfter(a, b, now), `${a} ${b}`)
        assertWait(parseRetryAfter(undefined, a, now), a)
        parseResetMillis(a)
        parseDurationInput(a)
        parseDurationInput(`${a} seconds`)
      }),
      { numRuns: 500 }
    )
  })

  // a wait of 300 digits would overflow Duration arithmetic in nanoseconds: header values are capped at a day
  it.effect("a 429 whose retry-after has 300 digits is a typed RateLimited, not a defect", () =>
    Effect.gen(function*() {
      const layer = Testing.layerHttp(() => ({
        status: 429,
        headers: { "retry-after": "9".repeat(300) },
        body: { detail: "slow down" }
      }))
      const exit = yield* Effect.exit(
        Effect.flatMap(Models.Models, (models) => models.list()).pipe(Effect.provide(layer))
      )
      assertTyped(exit, ["RateLimited"])
    }))

  it("values with hundreds of digits are not a NaN wait", () => {
    const huge = "9".repeat(400)
    for (const name of ["retry-after", "retry-after-ms", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]) {
      const parsed = parseRateLimitInfo({ [name]: huge, "x-ratelimit-limit-tokens": huge }, now)
      assert.strictEqual(parsed.limitTokens, undefined)
      for (const d of [parsed.resetRequests, parsed.resetTokens, parsed.retryAfter]) assertWait(d, name)
    }
  })
})
