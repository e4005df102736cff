/**
 * Files against the emulator over loopback: upload (bytes, path, stream), list, retrieve, validate, delete,
 * per-key isolation, the purpose-to-base split and the upload limit (413).
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Emulator from "../../src/emulator/Emulator.js"
import { multipart } from "../../src/internal/multipart.js"
import * as Node from "../../src/layers/Node.js"
import * as Testing from "../../src/layers/Testing.js"
import { FileObject } from "../../src/schemas/Files.js"
import * as Files from "../../src/services/Files.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { tempDir } from "../helpers/tempDir.js"

const training = [
  { messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }] },
  { messages: [{ role: "user", content: "Bye" }, { role: "assistant", content: "Goodbye" }] }
].map((line) => JSON.stringify(line)).join("\n")

const emulator = (options: Testing.LayerEmulatorOptions = {}) =>
  Testing.layerEmulator({ client: { maxRetries: 0 }, ...options })

describe("Files against the emulator", () => {
  it.effect("upload, list, retrieve, delete: fine-tune on /v2 with ISO times and camelCase extras", () =>
    Effect.gen(function*() {
      const files = yield* Files.Files
      const file = yield* files.upload({ file: Files.fromBytes(training, "train.jsonl"), purpose: "fine-tune" })
      assert.match(file.id, /^file-/)
      assert.strictEqual(file.bytes, new TextEncoder().encode(training).length)
      assert.strictEqual(file.filename, "train.jsonl")
      assert.strictEqual(file.purpose, "fine-tune")
      assert.match(String(file.created_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00$/)
      assert.strictEqual(file.createdAt, file.created_at)
      assert.match(file.userId ?? "", /^user-/)
      assert.isFalse(file.validation?.is_checked)
      const listed = yield* files.list({ purpose: "fine-tune" })
      assert.deepStrictEqual(listed.data.map((f) => f.id), [file.id])
      assert.isFalse(listed.has_more)
      assert.strictEqual((yield* files.retrieve(file.id)).filename, "train.jsonl")
      const deleted = yield* files.delete(file.id)
      assert.deepStrictEqual({ id: deleted.id, deleted: deleted.deleted }, { id: file.id, deleted: true })
      assert.strictEqual((yield* Effect.flip(files.retrieve(file.id)))._tag, "NotFound")
      assert.strictEqual((yield* files.list()).data.length, 0)
    }).pipe(Effect.provide(emulator())))

  it.effect("visual-rag files live on /v1: /v2 does not see them and refuses the purpose", () =>
    Effect.gen(function*() {
      const files = yield* Files.Files
      const file = yield* files.upload({ file: Files.fromBytes("a page", "doc.txt"), purpose: "visual-rag" })
      assert.strictEqual(file.purpose, "visual-rag")
      assert.strictEqual((yield* files.retrieve(file.id, { purpose: "visual-rag" })).id, file.id)
      assert.strictEqual((yield* Effect.flip(files.retrieve(file.id)))._tag, "NotFound")
      assert.deepStrictEqual((yield* files.list({ purpose: "visual-rag" })).data.map((f) => f.id), [file.id])
      assert.strictEqual((yield* files.list({ purpose: "fine-tune" })).data.length, 0)
      // /v2 refuses visual-rag uploads with a pointer to /v1 (the service never sends one: a hand-made request)
      const http = yield* InferenceHttpClient
      const { request } = yield* multipart(
        HttpClientRequest.post("/files"),
        { purpose: "visual-rag" },
        "file",
        Files.fromBytes("x", "x.txt")
      )
      const onV2 = yield* Effect.flip(http.json(request, FileObject, { base: "v2" }))
      assert.strictEqual(onV2._tag, "BadRequest")
      assert.match(onV2.message, /upload 'visual-rag' files to \/v1/)
    }).pipe(Effect.provide(emulator())))

  it.effect("listAll pages with after/has_more through every file", () =>
    Effect.gen(function*() {
      const files = yield* Files.Files
      const ids: Array<string> = []
      for (let i = 0; i < 5; i++) {
        ids.push((yield* files.upload({ file: Files.fromBytes(`${i}`, `f${i}.jsonl`), purpose: "fine-tune" })).id)
      }
      const page = yield* files.list({ limit: 2 })
      assert.strictEqual(page.data.length, 2)
      assert.isTrue(page.has_more)
      const all = Chunk.toReadonlyArray(yield* Stream.runCollect(files.listAll({ limit: 2 })))
      assert.deepStrictEqual(all.map((f) => f.id), [...ids].reverse())
    }).pipe(Effect.provide(emulator())))

  it.scoped("a path upload streams from disk; a stream upload arrives whole", () => {
    const line = `${JSON.stringify({ messages: [{ role: "user", content: "x".repeat(200) }] })}\n`
    return Effect.gen(function*() {
      const path = join(yield* tempDir("aifs-int-files-"), "big.jsonl")
      writeFileSync(path, line.repeat(5_000))
      const files = yield* Files.Files
      const fromPath = yield* files.upload({ file: Files.fromPath(path), purpose: "fine-tune" })
      assert.strictEqual(fromPath.bytes, line.length * 5_000)
      assert.strictEqual(fromPath.filename, "big.jsonl")
      const chunks = Stream.range(1, 100).pipe(Stream.map(() => new TextEncoder().encode("0123456789")))
      const fromStream = yield* files.upload({ file: Files.fromStream(chunks, "s.jsonl"), purpose: "fine-tune" })
      assert.strictEqual(fromStream.bytes, 1_000)
    }).pipe(Effect.provide(emulator()))
  })

  it.effect("validate: in progress, then checked on the emulator's clock, valid or not", () =>
    Effect.gen(function*() {
      const files = yield* Files.Files
      const good = yield* files.upload({ file: Files.fromBytes(training, "good.jsonl"), purpose: "fine-tune" })
      const bad = yield* files.upload({ file: Files.fromBytes("not json\n", "bad.jsonl"), purpose: "fine-tune" })
      const request = yield* files.validate(good.id)
      assert.strictEqual(request.file_id, good.id)
      assert.match(request.message ?? "", /in progress/)
      yield* files.validate(bad.id)
      assert.isFalse((yield* files.retrieve(good.id)).validation?.is_checked)
      yield* TestClock.adjust("2 seconds")
      const checkedGood = (yield* files.retrieve(good.id)).validation
      assert.isTrue(checkedGood?.is_checked)
      assert.isTrue(checkedGood?.is_valid)
      const checkedBad = (yield* files.retrieve(bad.id)).validation
      assert.isFalse(checkedBad?.is_valid)
      assert.match(checkedBad?.message ?? "", /line 1 .* not valid JSON/)
    }).pipe(Effect.provide(emulator())))

  it.effect("another key gets 404 for a file, and its list is empty", () =>
    Effect.gen(function*() {
      const emulatorService = yield* Emulator.Emulator
      const files = yield* Files.Files
      const mine = yield* files.upload({ file: Files.fromBytes(training, "mine.jsonl"), purpose: "fine-tune" })
      const other = Emulator.keyOf("basic")
      assert.notStrictEqual(other, emulatorService.keyFor("standard4000"))
      const theirs = yield* Effect.gen(function*() {
        const otherFiles = yield* Files.Files
        const error = yield* Effect.flip(otherFiles.retrieve(mine.id))
        const deleteError = yield* Effect.flip(otherFiles.delete(mine.id))
        const list = yield* otherFiles.list()
        return { error: error._tag, deleteError: deleteError._tag, count: list.data.length }
      }).pipe(Effect.provide(layerOtherKey(emulatorService, other)))
      assert.deepStrictEqual(theirs, { error: "NotFound", deleteError: "NotFound", count: 0 })
      assert.strictEqual((yield* files.retrieve(mine.id)).id, mine.id)
    }).pipe(Effect.provide(emulator())))

  it.effect("an upload over the limit gets 413 with a detail; the emulator keeps serving", () =>
    Effect.gen(function*() {
      const files = yield* Files.Files
      const big = new Uint8Array(200_000).fill(65)
      const error = yield* Effect.flip(files.upload({ file: Files.fromBytes(big, "big.jsonl"), purpose: "fine-tune" }))
      assert.strictEqual(error._tag, "BadRequest")
      if (error._tag === "BadRequest") assert.strictEqual(error.status, 413)
      assert.match(error.message, /File too large: the upload limit is 100000 bytes/)
      // a stream of unknown length is cut off while it streams in
      const endless = Stream.repeatValue(new Uint8Array(16_384).fill(66)).pipe(Stream.take(64))
      const streamed = yield* Effect.flip(
        files.upload({ file: Files.fromStream(endless, "s.jsonl"), purpose: "fine-tune" })
      )
      assert.match(streamed.message, /File too large|closed|reset|socket/i)
      const small = yield* files.upload({ file: Files.fromBytes("ok", "small.jsonl"), purpose: "fine-tune" })
      assert.strictEqual(small.bytes, 2)
    }).pipe(Effect.provide(emulator({ maxUploadBytes: 100_000 }))))
})

/** A client of the same emulator with another key. */
const layerOtherKey = (emulator: Emulator.Emulator["Type"], apiKey: string) =>
  Node.layer({ apiKey, baseUrl: emulator.baseUrl, maxRetries: 0 })
