/**
 * The Files service on a scripted transport: bases by purpose, multipart field names, query parameters,
 * pagination, and decoding of the documented records (ISO timestamps, camelCase extras, `validation`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as Tracer from "effect/Tracer"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Testing from "../../src/layers/Testing.js"
import { FileDeleted, FileList, FileObject, FileValidationRequest } from "../../src/schemas/Files.js"
import * as Files from "../../src/services/Files.js"
import { recording } from "../helpers/spans.js"
import { tempDir } from "../helpers/tempDir.js"
import { capturing, formOf, streamedText, urlOf } from "./surfaceHelpers.js"

const decode = <A, I>(schema: Schema.Schema<A, I>, json: string): A =>
  Schema.decodeUnknownSync(schema)(JSON.parse(json), { onExcessProperty: "ignore" })

// verbatim from API-FACTS.md
const documentedFile =
  `{"id": "file-abc123", "object": "file", "bytes": 1, "created_at": "2024-10-22T15:10:45.770750+02:00",
  "filename": "your_file.pdf", "purpose": "visual-rag", "status": "uploaded", "expires_at": null,
  "status_details": null, "userId": "...", "groupId": "...", "createdAt": "...", "projectId": "..."}`
const documentedValidation = `{"object": "validation", "is_checked": false, "is_valid": false,
  "message": "...", "errors": {}, "is_generated_dataset": false}`
const documentedDeleted = `{"id": "file-abc123", "object": "file", "deleted": true}`
const documentedValidate = `{"file_id": "file-abc123", "object": "validation", "message": "Your validation
 request is in progress. ..."}`.replace("\n", "")

const fileBody = (id: string, purpose = "fine-tune") => ({ ...JSON.parse(documentedFile), id, purpose })

describe("Files schemas", () => {
  it("decodes the documented file record with its ISO timestamp and camelCase extras", () => {
    const file = decode(FileObject, documentedFile)
    assert.instanceOf(file, FileObject)
    assert.strictEqual(file.id, "file-abc123")
    assert.strictEqual(file.bytes, 1)
    assert.strictEqual(file.created_at, "2024-10-22T15:10:45.770750+02:00")
    assert.strictEqual(file.filename, "your_file.pdf")
    assert.strictEqual(file.purpose, "visual-rag")
    assert.strictEqual(file.status, "uploaded")
    assert.isNull(file.expires_at)
    assert.isNull(file.status_details)
    assert.strictEqual(file.userId, "...")
    assert.strictEqual(file.groupId, "...")
    assert.strictEqual(file.createdAt, "...")
    assert.strictEqual(file.projectId, "...")
  })

  it("decodes a fine-tune upload's validation object", () => {
    const file = decode(
      FileObject,
      `{"id": "file-1", "object": "file", "purpose": "fine-tune", "validation": ${documentedValidation}}`
    )
    assert.deepStrictEqual(file.validation, {
      object: "validation",
      is_checked: false,
      is_valid: false,
      message: "...",
      errors: {},
      is_generated_dataset: false
    })
  })

  it("tolerates numbers for times, unknown purposes and statuses, nulls and extra fields", () => {
    const file = decode(
      FileObject,
      JSON.stringify({
        id: "file-2",
        created_at: 1729602645,
        purpose: "assistants",
        status: "quarantined",
        bytes: null,
        validation: null,
        brand_new: { nested: true }
      })
    )
    assert.strictEqual(file.created_at, 1729602645)
    assert.strictEqual(file.purpose, "assistants")
    assert.strictEqual(file.status, "quarantined")
    assert.isNull(file.bytes)
  })

  it("decodes the deletion and validation answers", () => {
    const deleted = decode(FileDeleted, documentedDeleted)
    assert.isTrue(deleted.deleted)
    const validate = decode(FileValidationRequest, documentedValidate)
    assert.strictEqual(validate.file_id, "file-abc123")
    assert.match(validate.message ?? "", /in progress/)
  })

  it("decodes a list with and without has_more", () => {
    const list = decode(FileList, `{"object": "list", "data": [${documentedFile}], "has_more": false}`)
    assert.strictEqual(list.data.length, 1)
    assert.isFalse(list.has_more)
    assert.strictEqual(decode(FileList, `{"data": []}`).has_more, undefined)
  })
})

describe("Files service", () => {
  it.effect("upload of a fine-tune file: POST /v2/files, multipart fields purpose and file", () => {
    const { layer, requests } = capturing(() => ({ body: fileBody("file-1") }))
    return Effect.gen(function*() {
      const files = yield* Files.Files
      const file = yield* files.upload({
        file: Files.fromBytes("{\"messages\":[]}\n", "train.jsonl", "application/jsonl"),
        purpose: "fine-tune"
      })
      assert.strictEqual(file.id, "file-1")
      const request = requests[0]!
      assert.strictEqual(request.method, "POST")
      assert.strictEqual(new URL(request.url).pathname, "/v2/files")
      assert.strictEqual(request.headers["authorization"], "Bearer test-key")
      const form = yield* formOf(request)
      assert.deepStrictEqual(form.names, ["purpose", "file"])
      assert.strictEqual(form.fields.purpose, "fine-tune")
      assert.deepStrictEqual(form.files.file, {
        filename: "train.jsonl",
        contentType: "application/jsonl",
        content: "{\"messages\":[]}\n"
      })
      // bytes in memory are sent as they are (their length is known)
      assert.strictEqual(request.body._tag, "Uint8Array")
    }).pipe(Effect.provide(layer))
  })

  it.effect("upload of a visual-rag file goes to /v1", () => {
    const { layer, requests } = capturing(() => ({ body: fileBody("file-2", "visual-rag") }))
    return Effect.gen(function*() {
      const files = yield* Files.Files
      yield* files.upload({ file: Files.fromBytes(new Uint8Array([1, 2, 3]), "page.png"), purpose: "visual-rag" })
      assert.strictEqual(new URL(requests[0]!.url).pathname, "/v1/files")
      assert.strictEqual((yield* formOf(requests[0])).fields.purpose, "visual-rag")
    }).pipe(Effect.provide(layer))
  })

  it.scoped("a path is sent from a file-backed blob (read while sending), named after the path", () => {
    const { layer, requests } = capturing(() => ({ body: fileBody("file-3") }))
    return Effect.gen(function*() {
      const path = join(yield* tempDir("aifs-files-"), "data.jsonl")
      writeFileSync(path, "line one\nline two\n")
      const files = yield* Files.Files
      yield* files.upload({ file: Files.fromPath(path), purpose: "fine-tune" })
      const form = yield* formOf(requests[0])
      assert.strictEqual(form.files.file?.filename, "data.jsonl")
      assert.strictEqual(form.files.file?.content, "line one\nline two\n")
      // the body can be read again (a retry re-opens the file)
      assert.strictEqual((yield* formOf(requests[0])).files.file?.content, "line one\nline two\n")
    }).pipe(Effect.provide(layer))
  })

  it.effect("a missing path fails with BadRequest before sending anything", () => {
    const { layer, requests } = capturing(() => ({ body: fileBody("file-3") }))
    return Effect.gen(function*() {
      const files = yield* Files.Files
      const error = yield* Effect.flip(
        files.upload({ file: Files.fromPath("/nonexistent/aifs/file.jsonl"), purpose: "fine-tune" })
      )
      assert.strictEqual(error._tag, "BadRequest")
      assert.match(error.message, /cannot read \/nonexistent\/aifs\/file\.jsonl/)
      assert.strictEqual(requests.length, 0)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a stream is sent as a hand-built multipart body, once (no retry on 503)", () => {
    let calls = 0
    const { layer, requests } = capturing(() => {
      calls++
      return { status: 503, body: { detail: "busy" } }
    }, {})
    return Effect.gen(function*() {
      const files = yield* Files.Files
      const error = yield* Effect.flip(files.upload({
        file: Files.fromStream(Stream.make(new TextEncoder().encode("abc"), new TextEncoder().encode("def")), "s.txt", {
          size: 6
        }),
        purpose: "fine-tune"
      }))
      assert.strictEqual(error._tag, "ServerError")
      assert.strictEqual(calls, 1)
      const request = requests[0]!
      assert.match(request.body._tag === "Stream" ? request.body.contentType : "", /^multipart\/form-data; boundary=/)
      const text = yield* streamedText(request)
      assert.include(text, "name=\"purpose\"\r\n\r\nfine-tune\r\n")
      assert.include(text, "name=\"file\"; filename=\"s.txt\"")
      assert.include(text, "\r\n\r\nabcdef\r\n--")
      assert.strictEqual(
        request.body._tag === "Stream" ? request.body.contentLength : -1,
        new TextEncoder().encode(text).length
      )
    }).pipe(Effect.provide(layer))
  })

  it.effect("list by purpose sends the query; visual-rag lists on /v1", () => {
    const { layer, requests } = capturing(() => ({ body: { object: "list", data: [], has_more: false } }))
    return Effect.gen(function*() {
      const files = yield* Files.Files
      yield* files.list({ purpose: "fine-tune", limit: 5, after: "file-0", order: "asc" })
      yield* files.list({ purpose: "visual-rag" })
      const first = urlOf(requests[0])
      assert.strictEqual(first.pathname, "/v2/files")
      assert.strictEqual(first.searchParams.get("purpose"), "fine-tune")
      assert.strictEqual(first.searchParams.get("limit"), "5")
      assert.strictEqual(first.searchParams.get("after"), "file-0")
      assert.strictEqual(first.searchParams.get("order"), "asc")
      assert.strictEqual(new URL(requests[1]!.url).pathname, "/v1/files")
    }).pipe(Effect.provide(layer))
  })

  it.effect("listAll follows after/has_more across pages and stops", () =>
    Effect.gen(function*() {
      const files = yield* Files.Files
      const all = yield* Stream.runCollect(files.listAll({ limit: 2 }))
      assert.deepStrictEqual(Chunk.toReadonlyArray(all).map((f) => f.id), ["f1", "f2", "f3"])
    }).pipe(Effect.provide(Testing.layerHttp((request) => {
      const after = request.url.searchParams.get("after")
      return after === null
        ? { body: { object: "list", data: [fileBody("f1"), fileBody("f2")], has_more: true } }
        : after === "f2"
        ? { body: { object: "list", data: [fileBody("f3")], has_more: false } }
        : { status: 400, body: { detail: `unexpected cursor ${after}` } }
    }))))

  /** The files routes: a validation, a deletion, an empty list, else the file `file-abc123`. */
  const fileRoutes: Testing.Handler = (request) =>
    request.path.includes("/validate/")
      ? { body: JSON.parse(documentedValidate) }
      : request.method === "DELETE"
      ? { body: JSON.parse(documentedDeleted) }
      : request.path.endsWith("/files") && request.method === "GET"
      ? { body: { object: "list", data: [], has_more: false } }
      : { body: fileBody("file-abc123") }

  it.effect("list without parameters sends no query", () => {
    const { layer, requests } = capturing(() => ({ body: { object: "list", data: [], has_more: false } }))
    return Effect.gen(function*() {
      yield* Effect.flatMap(Files.Files, (files) => files.list())
      assert.strictEqual(urlOf(requests[0]).search, "")
    }).pipe(Effect.provide(layer))
  })

  it.effect("each operation has its span, named after it, on the purpose's base", () => {
    const { layer, requests } = capturing(fileRoutes)
    return Effect.gen(function*() {
      const spans: Array<Tracer.Span> = []
      const tracer = yield* recording(spans)
      const files = yield* Files.Files
      const purpose = { purpose: "visual-rag" } as const
      yield* Effect.all([
        files.upload({ purpose: "visual-rag", file: Files.fromBytes(new Uint8Array([1]), "a.pdf") }),
        files.list(purpose),
        files.retrieve("file-abc123", purpose),
        files.delete("file-abc123", purpose),
        files.validate("file-abc123", purpose)
      ]).pipe(Effect.withTracer(tracer))
      assert.deepStrictEqual(
        spans.map((span) => span.name).filter((name) => name.startsWith("Files.")),
        ["Files.upload", "Files.list", "Files.retrieve", "Files.delete", "Files.validate"]
      )
      assert.deepStrictEqual(requests.map((r) => new URL(r.url).pathname.split("/")[1]), ["v1", "v1", "v1", "v1", "v1"])
    }).pipe(Effect.provide(layer))
  })

  it.effect("retrieve, delete and validate hit their routes on the purpose's base", () => {
    const { layer, requests } = capturing(fileRoutes)
    return Effect.gen(function*() {
      const files = yield* Files.Files
      const file = yield* files.retrieve("file-abc123")
      assert.strictEqual(file.id, "file-abc123")
      const deleted = yield* files.delete("file-abc123", { purpose: "visual-rag" })
      assert.isTrue(deleted.deleted)
      const validation = yield* files.validate("file-abc123")
      assert.strictEqual(validation.file_id, "file-abc123")
      assert.deepStrictEqual(requests.map((r) => `${r.method} ${new URL(r.url).pathname}`), [
        "GET /v2/files/file-abc123",
        "DELETE /v1/files/file-abc123",
        "GET /v2/files/validate/file-abc123"
      ])
    }).pipe(Effect.provide(layer))
  })

  it.effect("a 404 becomes NotFound", () =>
    Effect.gen(function*() {
      const files = yield* Files.Files
      const error = yield* Effect.flip(files.retrieve("file-missing"))
      assert.strictEqual(error._tag, "NotFound")
      assert.strictEqual(error.message, "File 'file-missing' not found")
    }).pipe(
      Effect.provide(Testing.layerHttp(() => ({ status: 404, body: { detail: "File 'file-missing' not found" } })))
    ))
})
