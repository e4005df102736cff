/**
 * Vector stores against the emulator: real indexing (text chunked by size and overlap, PNG pages as
 * `base64` results), search, the wait helper on the TestClock, deletes that remove from the index,
 * per-key isolation.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as Emulator from "../../src/emulator/Emulator.js"
import { png } from "../../src/emulator/png.js"
import * as Node from "../../src/layers/Node.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Files from "../../src/services/Files.js"
import * as VectorStores from "../../src/services/VectorStores.js"

const emulator = () => Testing.layerEmulator({ client: { maxRetries: 0 } })

const document = [
  "The quarterly report says revenue grew by twelve percent in the north region.",
  "Weather in Bonn was rainy for most of the week and the river rose.",
  "Our rate limiter keeps requests under the quota of every key and model."
].join(" ")

const upload = (content: Uint8Array | string, filename: string) =>
  Effect.flatMap(
    Files.Files,
    (files) => files.upload({ file: Files.fromBytes(content, filename), purpose: "visual-rag" })
  )

/** Adds a file and lets the emulator's clock run until it is indexed. */
const addAndWait = (storeId: string, fileId: string, chunking?: { chunk_size: number; chunk_overlap: number }) =>
  Effect.gen(function*() {
    const vs = yield* VectorStores.VectorStores
    const added = yield* vs.addFile(storeId, { file_id: fileId, ...(chunking ? { chunking_strategy: chunking } : {}) })
    assert.strictEqual(added.status, "in_progress")
    const fiber = yield* Effect.fork(vs.waitForFile(storeId, fileId, { interval: "200 millis", timeout: "10 seconds" }))
    for (let i = 0; i < 5; i++) yield* TestClock.adjust("200 millis")
    return yield* Fiber.join(fiber)
  })

describe("VectorStores against the emulator", () => {
  it.effect("create with embedding models, index text and a PNG, search both, delete", () =>
    Effect.gen(function*() {
      const vs = yield* VectorStores.VectorStores
      const store = yield* vs.create({
        name: "reports",
        chunking_strategy: {
          text_embedding_model: "jina-embeddings-v2-base-de",
          vision_embedding_model: "tsi-embedding-colqwen2-2b-v1"
        }
      })
      assert.strictEqual(store.textEmbeddingModel, "jina-embeddings-v2-base-de")
      assert.match(String(store.created_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+$/)
      const text = yield* upload(document, "report.txt")
      const image = yield* upload(png(7), "chart.png")
      const indexed = yield* addAndWait(store.id, text.id, { chunk_size: 8, chunk_overlap: 2 })
      assert.strictEqual(indexed.status, "completed")
      assert.deepStrictEqual(indexed.chunking_strategy, { chunk_size: 8, chunk_overlap: 2 })
      assert.strictEqual((yield* addAndWait(store.id, image.id)).status, "completed")
      const listed = yield* vs.listFiles(store.id)
      assert.deepStrictEqual(listed.data.map((f) => f.id).sort(), [image.id, text.id].sort())
      const counts = (yield* vs.list()).data.find((s) => s.id === store.id)?.file_counts
      assert.strictEqual(counts?.completed, 2)

      const results = yield* vs.search(store.id, { query: "revenue quarterly report", top_k_texts: 2, top_k_images: 1 })
      assert.strictEqual(results.texts.length, 2)
      // chunks of 8 words with an overlap of 2: the first chunk holds the matching words
      assert.include(results.texts[0]!.text, "revenue")
      assert.isAtMost(results.texts[0]!.text.split(" ").length, 8)
      assert.isAbove(results.texts[0]!.score!, results.texts[1]!.score!)
      assert.strictEqual(results.texts[0]!.file_type, ".txt")
      assert.match(String(results.texts[0]!.created_at), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)
      const [hit] = results.imageResults
      const url = hit!.images[0]!
      assert.match(url, /^data:image\/png;base64,/)
      const bytes = Buffer.from(url.slice("data:image/png;base64,".length), "base64")
      assert.deepStrictEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47])
      assert.deepStrictEqual(hit!.content[0]!.imagePart?.image_url.url, url)

      const removed = yield* vs.deleteFile(store.id, text.id)
      assert.deepStrictEqual({ deleted: removed.deleted, object: removed.object }, {
        deleted: true,
        object: "vector_store.file.deleted"
      })
      const after = yield* vs.search(store.id, { query: "revenue", top_k_texts: 3, top_k_images: 0 })
      assert.strictEqual(after.data.length, 0)
      assert.strictEqual((yield* Effect.flip(vs.retrieveFile(store.id, text.id)))._tag, "NotFound")

      const deleted = yield* vs.delete(store.id)
      assert.strictEqual(deleted.object, "vector_store.deleted")
      assert.strictEqual((yield* Effect.flip(vs.search(store.id, { query: "x" })))._tag, "NotFound")
    }).pipe(Effect.provide(emulator())))

  it.effect("a file is not searchable while in progress; an unsupported file fails with last_error", () =>
    Effect.gen(function*() {
      const vs = yield* VectorStores.VectorStores
      const store = yield* vs.create({ name: "s" })
      const text = yield* upload(document, "a.txt")
      yield* vs.addFile(store.id, { file_id: text.id })
      assert.strictEqual((yield* vs.search(store.id, { query: "revenue" })).data.length, 0)
      const binary = yield* upload(new Uint8Array([0, 1, 2, 3, 0, 255]), "blob.bin")
      const failed = yield* addAndWait(store.id, binary.id)
      assert.strictEqual(failed.status, "failed")
      assert.match(failed.last_error?.message ?? "", /text and PNG files only/)
      assert.isAbove((yield* vs.search(store.id, { query: "revenue" })).data.length, 0)
    }).pipe(Effect.provide(emulator())))

  it.effect("names are unique per user (409); bad chunking is a 400; unknown models 404", () =>
    Effect.gen(function*() {
      const vs = yield* VectorStores.VectorStores
      yield* vs.create({ name: "dup" })
      assert.strictEqual((yield* Effect.flip(vs.create({ name: "dup" })))._tag, "Conflict")
      const store = yield* vs.create({ name: "other" })
      const file = yield* upload("words", "w.txt")
      const bad = yield* Effect.flip(
        vs.addFile(store.id, { file_id: file.id, chunking_strategy: { chunk_size: 10, chunk_overlap: 10 } })
      )
      assert.strictEqual(bad._tag, "BadRequest")
      const model = yield* Effect.flip(vs.create({ name: "m", chunking_strategy: { text_embedding_model: "nope" } }))
      assert.strictEqual(model._tag, "NotFound")
    }).pipe(Effect.provide(emulator())))

  it.effect("another key sees none of the stores: 404 on search, files and delete", () =>
    Effect.gen(function*() {
      const vs = yield* VectorStores.VectorStores
      const store = yield* vs.create({ name: "private" })
      const em = yield* Emulator.Emulator
      const theirs = yield* Effect.gen(function*() {
        const other = yield* VectorStores.VectorStores
        return [
          (yield* Effect.flip(other.search(store.id, { query: "x" })))._tag,
          (yield* Effect.flip(other.listFiles(store.id)))._tag,
          (yield* Effect.flip(other.delete(store.id)))._tag,
          String((yield* other.list()).data.length)
        ]
      }).pipe(Effect.provide(Node.layer({ apiKey: Emulator.keyOf("basic"), baseUrl: em.baseUrl, maxRetries: 0 })))
      assert.deepStrictEqual(theirs, ["NotFound", "NotFound", "NotFound", "0"])
      assert.strictEqual((yield* vs.list()).data.length, 1)
    }).pipe(Effect.provide(emulator())))
})
