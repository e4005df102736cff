/**
 * The multipart encoder (src/internal/multipart.ts) one part at a time: each part's head as it is written (names
 * quoted and escaped as browsers do, with `name*` where the quoted form cannot carry a name), each kind of file's
 * content type, whether the body may be sent again, its length when every size is known, and the request an
 * unreadable path names. The property that names arrive intact at the emulator is test/properties/uploadNames.test.ts.
 */
import type * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { encode, multipart, type Part } from "../../src/internal/multipart.js"
import { fromBlob, fromBytes, fromPath, fromStream } from "../../src/schemas/Upload.js"
import { tempDir } from "../helpers/tempDir.js"

/** The whole body as text, however it is held. */
const textOf = (body: HttpBody.HttpBody) =>
  Effect.gen(function*() {
    if (body._tag === "Uint8Array") return new TextDecoder().decode(body.body)
    if (body._tag !== "Stream") return yield* Effect.dieMessage(`a body of ${body._tag}`)
    const chunks = yield* Stream.runCollect(body.stream)
    return Chunk.toReadonlyArray(chunks).map((chunk) => new TextDecoder().decode(chunk)).join("")
  })

/** The part heads' content-disposition and content-type lines of an encoded body. */
const heads = (parts: ReadonlyArray<Part>) =>
  Effect.gen(function*() {
    const { body } = yield* encode(parts, "POST /files")
    const text = yield* textOf(body)
    return text.split("\r\n").filter((line) => /^content-(disposition|type):/.test(line))
  })

describe("multipart bodies", () => {
  it.effect("names quoted as browsers do (%22, %0D, %0A, a trailing backslash), and again as name* when needed", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* heads([{ name: "plain", value: "v" }]), [
        "content-disposition: form-data; name=\"plain\""
      ])
      assert.deepStrictEqual(yield* heads([{ name: "a\"b\r\n", value: "v" }]), [
        "content-disposition: form-data; name=\"a%22b%0D%0A\"; name*=utf-8''a%22b%0D%0A"
      ])
      assert.deepStrictEqual(yield* heads([{ name: "a\\b\\", value: "v" }]), [
        "content-disposition: form-data; name=\"a\\b%5C\"; name*=utf-8''a%5Cb%5C"
      ])
      assert.deepStrictEqual(
        yield* heads([{ name: "f", file: fromBytes(new Uint8Array([1]), "it's (1).txt\u007f") }]),
        [
          "content-disposition: form-data; name=\"f\"; filename=\"it's (1).txt%7F\"; filename*=utf-8''it%27s%20%281%29.txt%7F",
          "content-type: application/octet-stream"
        ]
      )
    }))

  it.scoped("each kind of file: its content type, and whether the body may be sent again", () =>
    Effect.gen(function*() {
      const path = join(yield* tempDir("aifs-multipart-"), "doc.pdf")
      writeFileSync(path, "%PDF")
      const cases = [
        [fromBytes(new Uint8Array([1]), "a.bin", "image/png"), "image/png", true],
        [fromBytes(new Uint8Array([1]), "a.bin"), "application/octet-stream", true],
        [fromPath(path, { contentType: "application/pdf" }), "application/pdf", true],
        [fromPath(path), "application/octet-stream", true],
        [fromBlob(new Blob(["x"], { type: "text/plain" }), "a.txt"), "text/plain", true],
        [fromBlob(new Blob(["x"]), "a.txt"), "application/octet-stream", true],
        [fromStream(Stream.make(new Uint8Array([1])), "s.bin", { contentType: "audio/wav" }), "audio/wav", false]
      ] as const
      for (const [file, type, retry] of cases) {
        const encoded = yield* encode([{ name: "file", file }], "POST /files")
        assert.strictEqual(encoded.retry, retry, `${file._tag} ${type}`)
        const text = yield* textOf(encoded.body)
        assert.include(text, `\r\ncontent-type: ${type}\r\n\r\n`, `${file._tag} ${type}`)
      }
      // one part sent once makes the whole body so
      const mixed = yield* encode([
        { name: "a", file: fromBytes(new Uint8Array([1]), "a") },
        { name: "b", file: fromStream(Stream.make(new Uint8Array([2])), "b") }
      ], "POST /files")
      assert.isFalse(mixed.retry)
    }))

  it.effect("a streamed body has its length when every size is known, none otherwise", () =>
    Effect.gen(function*() {
      const blob = fromBlob(new Blob(["12345"]), "a.txt")
      const known = yield* encode([{ name: "a", file: blob }, { name: "f", value: "v" }], "POST /files")
      assert.strictEqual(known.body._tag, "Stream")
      const text = yield* textOf(known.body)
      assert.strictEqual(known.body._tag === "Stream" ? known.body.contentLength : -1, Buffer.byteLength(text))
      const unknown = yield* encode([
        { name: "a", file: blob },
        { name: "b", file: fromStream(Stream.make(new Uint8Array([1])), "b") }
      ], "POST /files")
      assert.isUndefined(unknown.body._tag === "Stream" ? unknown.body.contentLength : -1)
    }))

  it.effect("a path that cannot be read fails before sending, naming the request", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(
        multipart(HttpClientRequest.post("/files"), { purpose: "fine-tune" }, "file", fromPath("/no/such/file.jsonl"))
      )
      assert.strictEqual(refused._tag, "BadRequest")
      assert.strictEqual(refused.status, 0)
      assert.strictEqual(refused.endpoint, "POST /files")
      assert.match(refused.message, /^cannot read \/no\/such\/file\.jsonl: \S/)
    }))
})
