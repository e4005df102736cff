/**
 * VectorStores on a scripted transport: every route on `/v1`, the documented bodies, the search result
 * shapes (`text` and `base64` content, the data URL as an image part), pagination, and the wait helper.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Testing from "../../src/layers/Testing.js"
import {
  SearchResponse,
  SearchResultPage,
  VectorStore,
  VectorStoreDeleted,
  VectorStoreFile
} from "../../src/schemas/VectorStores.js"
import * as VectorStores from "../../src/services/VectorStores.js"
import { capturing, urlOf } from "./surfaceHelpers.js"

const decode = <A, I>(schema: Schema.Schema<A, I>, json: string): A =>
  Schema.decodeUnknownSync(schema)(JSON.parse(json), { onExcessProperty: "ignore" })

// the documented shapes of API-FACTS.md, with the placeholders filled in
const documentedStore =
  `{"id": "vs_abc", "object": "vector_store", "created_at": "2025-11-28T08:06:42.123456", "name": "my_vs",
  "status": "completed", "file_counts": {"cancelled": 0, "completed": 1, "failed": 0, "in_progress": 0, "total": 1},
  "usage_bytes": 1234, "metadata": {"text_embedding_model": "text-embedding-bge-m3",
  "vision_embedding_model": "tsi-embedding-colqwen2-2b-v1"}, "last_active_at": "2025-11-28T08:06:42.123456",
  "expires_after": null, "expires_at": null}`
const documentedStoreFile = `{"id": "file-abc123", "object": "vector_store.file", "status": "in_progress",
  "last_error": null, "vector_store_id": "vs_abc"}`
const documentedResults = `[{"file_id": "file-abc123", "filename": "report.pdf", "score": 0.82, "attributes": {},
  "content": [{"type": "text", "text": "Quarterly revenue grew."}], "file_type": ".pdf",
  "created_at": "2025-11-28 08:06:42", "page_number": 3},
  {"file_id": "file-abc123", "filename": "report.pdf", "score": 17.5, "attributes": null,
  "content": [{"type": "base64", "text": "data:image/png;base64,iVBORw0KGgo="}], "file_type": ".pdf",
  "created_at": null, "page_number": 4}]`

describe("VectorStores schemas", () => {
  it("decodes the documented store with its embedding models in metadata", () => {
    const store = decode(VectorStore, documentedStore)
    assert.strictEqual(store.created_at, "2025-11-28T08:06:42.123456")
    assert.strictEqual(store.status, "completed")
    assert.deepStrictEqual(store.file_counts, { cancelled: 0, completed: 1, failed: 0, in_progress: 0, total: 1 })
    assert.strictEqual(store.textEmbeddingModel, "text-embedding-bge-m3")
    assert.strictEqual(store.visionEmbeddingModel, "tsi-embedding-colqwen2-2b-v1")
    assert.isNull(store.expires_at)
  })

  it("tolerates unknown statuses, partial counts, numbers for times, extra fields", () => {
    const store = decode(
      VectorStore,
      JSON.stringify({ id: "vs_1", status: "rebuilding", file_counts: { total: 2 }, created_at: 1732781202, x: 1 })
    )
    assert.strictEqual(store.status, "rebuilding")
    assert.strictEqual(store.file_counts?.completed, 0)
    assert.strictEqual(store.created_at, 1732781202)
    const file = decode(VectorStoreFile, `{"id": "f", "status": "queued_for_ocr", "last_error": {"code": null}}`)
    assert.strictEqual(file.status, "queued_for_ocr")
    assert.isTrue(file.isDone)
  })

  it("decodes a store file in progress and the delete answers", () => {
    const file = decode(VectorStoreFile, documentedStoreFile)
    assert.strictEqual(file.status, "in_progress")
    assert.isFalse(file.isDone)
    assert.strictEqual(file.vector_store_id, "vs_abc")
    const deleted = decode(VectorStoreDeleted, `{"id": "vs_abc", "deleted": true, "object": "vector_store.deleted"}`)
    assert.isTrue(deleted.deleted)
    const fileDeleted = decode(
      VectorStoreDeleted,
      `{"id": "file-1", "deleted": true, "object": "vector_store.file.deleted"}`
    )
    assert.strictEqual(fileDeleted.object, "vector_store.file.deleted")
  })

  it("decodes search results as a page, a {results} object or a bare array", () => {
    for (
      const body of [
        documentedResults,
        `{"results": ${documentedResults}}`,
        `{"object": "vector_store.search_results.page", "data": ${documentedResults}, "has_more": false}`
      ]
    ) {
      const page = decode(SearchResponse, body)
      assert.instanceOf(page, SearchResultPage)
      assert.strictEqual(page.data.length, 2)
      const [text, image] = page.data
      assert.strictEqual(text!.text, "Quarterly revenue grew.")
      assert.strictEqual(text!.page_number, 3)
      assert.strictEqual(text!.created_at, "2025-11-28 08:06:42")
      assert.deepStrictEqual(text!.images, [])
      assert.deepStrictEqual(image!.images, ["data:image/png;base64,iVBORw0KGgo="])
      assert.deepStrictEqual(image!.content[0]!.imagePart, {
        type: "image_url",
        image_url: { url: "data:image/png;base64,iVBORw0KGgo=" }
      })
      assert.isNull(image!.created_at)
      assert.strictEqual(page.texts.length, 1)
      assert.strictEqual(page.imageResults.length, 1)
    }
  })

  it("bare base64 gets a PNG data-URL prefix; unknown content types are kept as text", () => {
    const page = decode(
      SearchResponse,
      `[{"content": [{"type": "base64", "text": "AAAA"}, {"type": "table", "text": "a|b"}]}]`
    )
    assert.deepStrictEqual(page.data[0]!.images, ["data:image/png;base64,AAAA"])
    assert.strictEqual(page.data[0]!.text, "a|b")
  })
})

describe("VectorStores service", () => {
  it.effect("every route is on /v1 with the documented bodies", () => {
    const { layer, requests } = capturing((request) => {
      if (request.path.endsWith("/search")) return { body: JSON.parse(documentedResults) }
      if (request.method === "DELETE") return { body: { id: "x", deleted: true } }
      if (request.path.includes("/files")) {
        return request.method === "GET" && request.path.endsWith("/files")
          ? { body: { object: "list", data: [JSON.parse(documentedStoreFile)], has_more: false } }
          : { body: JSON.parse(documentedStoreFile) }
      }
      return request.method === "GET"
        ? { body: { object: "list", data: [JSON.parse(documentedStore)], has_more: false } }
        : { body: JSON.parse(documentedStore) }
    })
    return Effect.gen(function*() {
      const vs = yield* VectorStores.VectorStores
      const store = yield* vs.create({
        name: "my_vs",
        chunking_strategy: {
          text_embedding_model: "text-embedding-bge-m3",
          vision_embedding_model: "tsi-embedding-colqwen2-2b-v1"
        }
      })
      assert.strictEqual(store.id, "vs_abc")
      yield* vs.list({ limit: 3 })
      yield* vs.addFile("vs_abc", {
        file_id: "file-abc123",
        chunking_strategy: { chunk_size: 1024, chunk_overlap: 100 }
      })
      yield* vs.listFiles("vs_abc", { after: "file-0" })
      yield* vs.retrieveFile("vs_abc", "file-abc123")
      const results = yield* vs.search("vs_abc", { query: "revenue", top_k_texts: 3, top_k_images: 2 })
      assert.strictEqual(results.data.length, 2)
      yield* vs.deleteFile("vs_abc", "file-abc123")
      yield* vs.delete("vs_abc")
      assert.deepStrictEqual(requests.map((r) => `${r.method} ${urlOf(r).pathname}${urlOf(r).search}`), [
        "POST /v1/vector_stores",
        "GET /v1/vector_stores?limit=3",
        "POST /v1/vector_stores/vs_abc/files",
        "GET /v1/vector_stores/vs_abc/files?after=file-0",
        "GET /v1/vector_stores/vs_abc/files/file-abc123",
        "POST /v1/vector_stores/vs_abc/search",
        "DELETE /v1/vector_stores/vs_abc/files/file-abc123",
        "DELETE /v1/vector_stores/vs_abc"
      ])
      const bodies = requests.filter((r) => r.method === "POST").map((r) =>
        r.body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(r.body.body)) : undefined
      )
      assert.deepStrictEqual(bodies, [
        {
          name: "my_vs",
          chunking_strategy: {
            text_embedding_model: "text-embedding-bge-m3",
            vision_embedding_model: "tsi-embedding-colqwen2-2b-v1"
          }
        },
        { file_id: "file-abc123", chunking_strategy: { chunk_size: 1024, chunk_overlap: 100 } },
        { query: "revenue", top_k_texts: 3, top_k_images: 2 }
      ])
    }).pipe(Effect.provide(layer))
  })

  it.effect("listAll and listAllFiles page with after/has_more", () =>
    Effect.gen(function*() {
      const vs = yield* VectorStores.VectorStores
      const stores = yield* Stream.runCollect(vs.listAll())
      assert.deepStrictEqual(Chunk.toReadonlyArray(stores).map((s) => s.id), ["a", "b"])
      const files = yield* Stream.runCollect(vs.listAllFiles("vs"))
      assert.deepStrictEqual(Chunk.toReadonlyArray(files).map((f) => f.id), ["a", "b"])
    }).pipe(Effect.provide(Testing.layerHttp((request) => {
      const after = request.url.searchParams.get("after")
      const item = (id: string) => ({ id, status: "completed" })
      return after === null
        ? { body: { data: [item("a")], has_more: true } }
        : { body: { data: after === "a" ? [item("b")] : [], has_more: false } }
    }))))

  it.effect("waitForFile polls until the file is done", () =>
    Effect.gen(function*() {
      const vs = yield* VectorStores.VectorStores
      const fiber = yield* Effect.fork(vs.waitForFile("vs", "f", { interval: "1 second" }))
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("1 second")
      const file = yield* Fiber.join(fiber)
      assert.strictEqual(file.status, "failed")
      assert.strictEqual(file.last_error?.message, "bad")
    }).pipe(Effect.provide(Testing.layerHttp((() => {
      let calls = 0
      return () => {
        calls++
        return calls < 3
          ? { body: { id: "f", status: "in_progress" } }
          : { body: { id: "f", status: "failed", last_error: { code: "x", message: "bad" } } }
      }
    })()))))

  it.effect("waitForFile gives up with Timeout", () =>
    Effect.gen(function*() {
      const vs = yield* VectorStores.VectorStores
      const fiber = yield* Effect.fork(Effect.flip(vs.waitForFile("vs", "f", { timeout: "5 seconds" })))
      yield* TestClock.adjust("6 seconds")
      const error = yield* Fiber.join(fiber)
      assert.strictEqual(error._tag, "Timeout")
      assert.match(error.message, /still being indexed after 5s/)
    }).pipe(Effect.provide(Testing.layerHttp(() => ({ body: { id: "f", status: "in_progress" } })))))
})
