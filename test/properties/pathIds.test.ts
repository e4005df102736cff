/**
 * Every operation that puts an id into a path sends it as one segment of the path it names, checked on the wire: a
 * loopback server records each request target as it arrives (before any parsing), for ids holding `/`, `..`, `?`,
 * `#`, `%`, spaces, control characters, non-ASCII and astral characters. An id that no encoding can carry (empty, `.`,
 * `..`, a lone surrogate) is refused before anything is sent. Ids that go into a query (the gateway's file ids and
 * file paths, list cursors) arrive as sent too.
 *
 * The operations with ids in their paths: Files (retrieve, delete, validate, on /v2 and /v1), Models.retrieve,
 * FineTuning (retrieve, cancel, events), VectorStores (delete, addFile, listFiles, retrieveFile, deleteFile,
 * waitForFile, search) and the gateway's ChatSessions (get, delete). Responses, Batch, JobQueue, Chat, Completions,
 * Embeddings, Audio, Images and the other gateway services put no id into a path.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Node from "../../src/layers/Node.js"
import type { ApiError } from "../../src/schemas/Errors.js"
import * as Files from "../../src/services/Files.js"
import * as FineTuning from "../../src/services/FineTuning.js"
import * as ChatSessions from "../../src/services/gateway/ChatSessions.js"
import * as FileManager from "../../src/services/gateway/FileManager.js"
import * as IngestMaster from "../../src/services/gateway/IngestMaster.js"
import * as Models from "../../src/services/Models.js"
import * as VectorStores from "../../src/services/VectorStores.js"

interface Received {
  readonly method: string
  /** The request target as it arrived. */
  readonly target: string
}

/** A loopback server that records every request and answers 404, but for the gateway's login. */
const recorder = Effect.acquireRelease(
  Effect.async<{ readonly origin: string; readonly received: Array<Received>; readonly close: () => void }>(
    (resume) => {
      const received: Array<Received> = []
      const server = createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          if (req.url === "/gateway/api/v1/auth/user") {
            res.writeHead(200, { "content-type": "application/json" })
            res.end(JSON.stringify({ access_token: "token", expires_in: 3600 }))
            return
          }
          received.push({ method: req.method ?? "", target: req.url ?? "" })
          res.writeHead(404, { "content-type": "application/json" })
          res.end(JSON.stringify({ detail: "Not Found" }))
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ origin: `http://127.0.0.1:${port}`, received, close: () => server.close() }))
      })
    }
  ),
  (server) => Effect.sync(server.close)
)

const ID = Symbol("id")
const OTHER = Symbol("other id")

type Segment = string | typeof ID | typeof OTHER

type Services =
  | Files.Files
  | FineTuning.FineTuning
  | Models.Models
  | VectorStores.VectorStores
  | ChatSessions.ChatSessions
  | FileManager.FileManager
  | IngestMaster.IngestMaster

/** An operation with ids in its path: the call, its method, and its path as segments. */
interface InPath {
  readonly name: string
  readonly call: (id: string, other: string) => Effect.Effect<unknown, ApiError, Services>
  readonly method: string
  readonly path: ReadonlyArray<Segment>
}

const drain = <A, R>(stream: Stream.Stream<A, ApiError, R>) => Stream.runDrain(Stream.take(stream, 1))

const inPath: ReadonlyArray<InPath> = [
  {
    name: "Models.retrieve",
    call: (id) => Effect.flatMap(Models.Models, (s) => s.retrieve(id)),
    method: "GET",
    path: ["v2", "models", ID]
  },
  {
    name: "Files.retrieve",
    call: (id) => Effect.flatMap(Files.Files, (s) => s.retrieve(id)),
    method: "GET",
    path: ["v2", "files", ID]
  },
  {
    name: "Files.retrieve (visual-rag)",
    call: (id) => Effect.flatMap(Files.Files, (s) => s.retrieve(id, { purpose: "visual-rag" })),
    method: "GET",
    path: ["v1", "files", ID]
  },
  {
    name: "Files.delete",
    call: (id) => Effect.flatMap(Files.Files, (s) => s.delete(id)),
    method: "DELETE",
    path: ["v2", "files", ID]
  },
  {
    name: "Files.validate",
    call: (id) => Effect.flatMap(Files.Files, (s) => s.validate(id)),
    method: "GET",
    path: ["v2", "files", "validate", ID]
  },
  {
    name: "FineTuning.retrieve",
    call: (id) => Effect.flatMap(FineTuning.FineTuning, (s) => s.retrieve(id)),
    method: "GET",
    path: ["v2", "fine_tuning", "jobs", ID]
  },
  {
    name: "FineTuning.cancel",
    call: (id) => Effect.flatMap(FineTuning.FineTuning, (s) => s.cancel(id)),
    method: "POST",
    path: ["v2", "fine_tuning", "jobs", ID, "cancel"]
  },
  {
    name: "FineTuning.events",
    call: (id) => Effect.flatMap(FineTuning.FineTuning, (s) => s.events(id)),
    method: "GET",
    path: ["v2", "fine_tuning", "jobs", ID, "events"]
  },
  {
    name: "FineTuning.eventsAll",
    call: (id) => Effect.flatMap(FineTuning.FineTuning, (s) => drain(s.eventsAll(id))),
    method: "GET",
    path: ["v2", "fine_tuning", "jobs", ID, "events"]
  },
  {
    name: "VectorStores.delete",
    call: (id) => Effect.flatMap(VectorStores.VectorStores, (s) => s.delete(id)),
    method: "DELETE",
    path: ["v1", "vector_stores", ID]
  },
  {
    name: "VectorStores.addFile",
    call: (id) => Effect.flatMap(VectorStores.VectorStores, (s) => s.addFile(id, { file_id: "file-1" })),
    method: "POST",
    path: ["v1", "vector_stores", ID, "files"]
  },
  {
    name: "VectorStores.listFiles",
    call: (id) => Effect.flatMap(VectorStores.VectorStores, (s) => s.listFiles(id)),
    method: "GET",
    path: ["v1", "vector_stores", ID, "files"]
  },
  {
    name: "VectorStores.listAllFiles",
    call: (id) => Effect.flatMap(VectorStores.VectorStores, (s) => drain(s.listAllFiles(id))),
    method: "GET",
    path: ["v1", "vector_stores", ID, "files"]
  },
  {
    name: "VectorStores.retrieveFile",
    call: (id, other) => Effect.flatMap(VectorStores.VectorStores, (s) => s.retrieveFile(id, other)),
    method: "GET",
    path: ["v1", "vector_stores", ID, "files", OTHER]
  },
  {
    name: "VectorStores.deleteFile",
    call: (id, other) => Effect.flatMap(VectorStores.VectorStores, (s) => s.deleteFile(id, other)),
    method: "DELETE",
    path: ["v1", "vector_stores", ID, "files", OTHER]
  },
  {
    name: "VectorStores.waitForFile",
    call: (id, other) => Effect.flatMap(VectorStores.VectorStores, (s) => s.waitForFile(id, other)),
    method: "GET",
    path: ["v1", "vector_stores", ID, "files", OTHER]
  },
  {
    name: "VectorStores.search",
    call: (id) => Effect.flatMap(VectorStores.VectorStores, (s) => s.search(id, { query: "q" })),
    method: "POST",
    path: ["v1", "vector_stores", ID, "search"]
  },
  {
    name: "ChatSessions.get",
    call: (id) => Effect.flatMap(ChatSessions.ChatSessions, (s) => s.get(id)),
    method: "GET",
    path: ["gateway", "chat-session-manager", "api", "v1", "sessions", ID]
  },
  {
    name: "ChatSessions.delete",
    call: (id) => Effect.flatMap(ChatSessions.ChatSessions, (s) => s.delete(id)),
    method: "DELETE",
    path: ["gateway", "chat-session-manager", "api", "v1", "sessions", ID]
  }
]

/** An operation with an id in its query: the call, and the parameter it goes in. */
interface InQuery {
  readonly name: string
  readonly call: (id: string) => Effect.Effect<unknown, ApiError, Services>
  readonly parameter: string
}

const inQuery: ReadonlyArray<InQuery> = [
  {
    name: "FileManager.list",
    call: (id) => Effect.flatMap(FileManager.FileManager, (s) => s.list([id])),
    parameter: "fileIds"
  },
  {
    name: "IngestMaster.tasksForFile",
    call: (id) => Effect.flatMap(IngestMaster.IngestMaster, (s) => s.tasksForFile(id)),
    parameter: "file_path"
  },
  { name: "Files.list", call: (id) => Effect.flatMap(Files.Files, (s) => s.list({ after: id })), parameter: "after" },
  {
    name: "FineTuning.list",
    call: (id) => Effect.flatMap(FineTuning.FineTuning, (s) => s.list({ after: id })),
    parameter: "after"
  },
  {
    name: "VectorStores.list",
    call: (id) => Effect.flatMap(VectorStores.VectorStores, (s) => s.list({ after: id })),
    parameter: "after"
  }
]

/** A segment as RFC 3986 allows it (`pchar`): unreserved and sub-delimiter characters, `:`, `@`, percent-escapes. */
const pchars = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-F]{2})+$/

/** Not well-formed Unicode: a lone surrogate. */
const illFormed = (id: string) => /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(id)

/** An id that cannot be a segment: empty, a dot segment, or not well-formed Unicode. */
const unsendable = (id: string) => id === "" || id === "." || id === ".." || illFormed(id)

/** What is wrong with the request `op` sent for `id` and `other`, as it arrived; undefined when nothing is. */
const wrongPath = (op: InPath, got: Received, id: string, other: string): string | undefined => {
  if (got.method !== op.method) return `${got.method} instead of ${op.method}`
  const path = got.target.split("?")[0]!
  const segments = path.split("/").slice(1)
  if (segments.length !== op.path.length) return `${segments.length} segments in ${got.target}`
  for (const [i, expected] of op.path.entries()) {
    const segment = segments[i]!
    if (typeof expected === "string") {
      if (segment !== expected) return `segment ${i} is ${segment} in ${got.target}`
      continue
    }
    const value = expected === ID ? id : other
    if (!pchars.test(segment)) return `the id went out as ${JSON.stringify(segment)}, not one escaped segment`
    if (decodeURIComponent(segment) !== value) return `the id arrived as ${JSON.stringify(decodeURIComponent(segment))}`
  }
  return undefined
}

/** Pieces ids are made of: the characters that break paths, and any others. */
const piece = FastCheck.oneof(
  FastCheck.constantFrom(
    "/",
    "..",
    ".",
    "?",
    "#",
    "%",
    "%2F",
    "%2e%2e",
    " ",
    "+",
    "&",
    "=",
    ";",
    "\\",
    "\u0000",
    "\n",
    "\u00fc",
    "\u65e5\u672c",
    "\u{1F600}",
    "\uD800",
    "file-1",
    "a"
  ),
  FastCheck.string({ unit: "grapheme", maxLength: 3 }),
  FastCheck.string({ unit: "binary", maxLength: 2 })
)

const id = FastCheck.oneof(
  {
    arbitrary: FastCheck.constantFrom("", ".", "..", "../x", "x/..", "./", "%2e%2e", ".%2E", "a b", "?x#y"),
    weight: 1
  },
  { arbitrary: FastCheck.array(piece, { minLength: 1, maxLength: 5 }).map((pieces) => pieces.join("")), weight: 5 }
)

describe("ids on the wire", () => {
  it.scoped("every operation with an id in its path sends it as the one segment it names, or sends nothing", () =>
    Effect.gen(function*() {
      const server = yield* recorder
      const clients = yield* Layer.build(Layer.mergeAll(
        Node.layer({
          apiKey: "gen-test",
          baseUrl: `${server.origin}/v2`,
          apiVersion: "1.0.0",
          maxRetries: 0,
          rateLimiter: false
        }),
        Node.layerGateway({ url: `${server.origin}/gateway`, username: "demo", password: "demo-password" })
      ))
      const run = <A>(effect: Effect.Effect<A, ApiError, Services>) =>
        Effect.runPromise(Effect.either(Effect.provide(effect, clients)))
      yield* Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(id, id, async (first, second) => {
            for (const op of inPath) {
              server.received.length = 0
              const result = await run(op.call(first, second))
              const story = `${op.name}(${JSON.stringify(first)}, ${JSON.stringify(second)})`
              assert.isTrue(result._tag === "Left", story)
              const refused = unsendable(first) || (op.path.includes(OTHER) && unsendable(second))
              if (refused) {
                // refused as it is, nothing sent
                assert.deepStrictEqual(server.received, [], story)
                if (result._tag === "Left") assert.strictEqual(result.left._tag, "BadRequest", story)
                continue
              }
              assert.strictEqual(server.received.length, 1, story)
              assert.isUndefined(wrongPath(op, server.received[0]!, first, second), story)
            }
            for (const op of inQuery) {
              // a lone surrogate goes into a query as U+FFFD (the URL standard's encoding)
              if (illFormed(first)) continue
              server.received.length = 0
              await run(op.call(first))
              const story = `${op.name}(${JSON.stringify(first)})`
              assert.strictEqual(server.received.length, 1, story)
              const query = new URLSearchParams(server.received[0]!.target.split("?").slice(1).join("?"))
              assert.deepStrictEqual(query.getAll(op.parameter), [first], story)
            }
          }),
          { numRuns: 30 }
        )
      )
    }))
})
