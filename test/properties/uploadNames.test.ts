/**
 * Every upload's field and file names arrive intact at the emulator: names holding quotes, backslashes, CR, LF and
 * other control characters, `;`, `=`, `%` and percent-escapes, non-ASCII and astral characters, sent by every
 * operation that uploads (Files on /v2 and on /v1 where vector stores take theirs, Audio, Images, the queue, the
 * gateway's FileManager and `Gateway.request` with fields named by the caller). What the emulator's routes receive is
 * read where they receive it (its upload reader, wrapped to keep each upload it reads); Files and the gateway's
 * FileManager also answer with the names they stored.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { vi } from "vitest"
import * as Emulator from "../../src/emulator/Emulator.js"
import type * as Upload from "../../src/emulator/upload.js"
import * as Node from "../../src/layers/Node.js"
import * as Testing from "../../src/layers/Testing.js"
import type { FileObject } from "../../src/schemas/Files.js"
import * as Audio from "../../src/services/Audio.js"
import * as Files from "../../src/services/Files.js"
import * as FileManager from "../../src/services/gateway/FileManager.js"
import * as Gateway from "../../src/services/gateway/Gateway.js"
import * as Images from "../../src/services/Images.js"
import * as JobQueue from "../../src/services/JobQueue.js"

/** The uploads the emulator's routes read, in order. */
const received: Array<Upload.Upload> = []

vi.mock("../../src/emulator/upload.js", async (importOriginal) => {
  const actual = await importOriginal<typeof Upload>()
  return {
    ...actual,
    readUpload: (...args: Parameters<typeof actual.readUpload>) =>
      Effect.tap(actual.readUpload(...args), (upload) => Effect.sync(() => received.push(upload)))
  }
})

/** A name as a part header must carry it: what the parts of one upload should arrive as. */
interface Expected {
  /** The file parts: their field and file names, in order. */
  readonly files: ReadonlyArray<readonly [field: string, filename: string]>
  /** The text fields' names. */
  readonly fields: ReadonlyArray<string>
}

type Services =
  | Files.Files
  | Audio.Audio
  | Images.Images
  | JobQueue.JobQueue
  | FileManager.FileManager
  | Gateway.Gateway
  | Emulator.Emulator

interface Uploading {
  readonly name: string
  /** Uploads with file name `file` and, where the caller names fields, field name `field`. */
  readonly call: (file: string, field: string) => Effect.Effect<unknown, unknown, Services>
  readonly expected: (file: string, field: string) => Expected
  /** The name the answer says was stored, when the route answers with it. */
  readonly stored?: (answer: unknown) => ReadonlyArray<string | null | undefined>
}

/** Eight bytes that are enough of a PNG for the emulator's image edits. */
const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

const uploads: ReadonlyArray<Uploading> = [
  {
    name: "Files.upload (fine-tune, /v2)",
    call: (file) =>
      Effect.flatMap(
        Files.Files,
        (s) => s.upload({ file: Files.fromBytes("{}\n", file), purpose: "fine-tune" })
      ),
    expected: (file) => ({ files: [["file", file]], fields: ["purpose"] }),
    stored: (answer) => [(answer as FileObject).filename]
  },
  {
    name: "Files.upload (visual-rag, /v1: vector stores)",
    call: (file) =>
      Effect.flatMap(Files.Files, (s) => s.upload({ file: Files.fromBytes("a page", file), purpose: "visual-rag" })),
    expected: (file) => ({ files: [["file", file]], fields: ["purpose"] }),
    stored: (answer) => [(answer as FileObject).filename]
  },
  {
    name: "Audio.transcribe",
    call: (file) =>
      Effect.flatMap(
        Audio.Audio,
        (s) => s.transcribe({ model: "whisper-large-v3", file: Files.fromBytes(new Uint8Array(64), file) })
      ),
    expected: (file) => ({ files: [["file", file]], fields: ["model"] })
  },
  {
    name: "Audio.translate",
    call: (file) =>
      Effect.flatMap(
        Audio.Audio,
        (s) => s.translate({ model: "whisper-large-v3", file: Files.fromBytes(new Uint8Array(64), file) })
      ),
    expected: (file) => ({ files: [["file", file]], fields: ["model"] })
  },
  {
    name: "Images.edit",
    call: (file) =>
      Effect.flatMap(
        Images.Images,
        (s) => s.edit({ model: "gpt-image-1", prompt: "a hat", image: Files.fromBytes(png, file) })
      ),
    expected: (file) => ({ files: [["image", file]], fields: ["model", "prompt"] })
  },
  {
    name: "JobQueue.transcribe",
    call: (file) =>
      Effect.flatMap(
        JobQueue.JobQueue,
        (s) => s.transcribe({ model: "whisper-large-v3", file: Files.fromBytes(new Uint8Array(64), file) })
      ),
    expected: (file) => ({ files: [["file", file]], fields: ["model"] })
  },
  {
    name: "FileManager.upload",
    call: (file) =>
      Effect.flatMap(
        FileManager.FileManager,
        (s) => s.upload([{ name: file, content: "x" }, { name: "b.txt", content: "y" }])
      ),
    expected: (file) => ({ files: [["files", file], ["files", "b.txt"]], fields: [] }),
    stored: (answer) => (answer as ReadonlyArray<{ readonly fileName: string }>).map((f) => f.fileName).slice(0, 1)
  },
  {
    name: "Gateway.request (multipart, fields named by the caller)",
    call: (file, field) =>
      Gateway.request("file-manager", "POST", "/api/v1/files/", {
        query: { kb: "local" },
        multipart: [
          { name: field, value: "a value" },
          { name: "files", filename: file, content: "x" },
          { name: `${field}-file`, filename: `${file}-2`, content: "y" }
        ],
        response: Schema.Unknown
      }),
    expected: (file, field) => ({ files: [["files", file], [`${field}-file`, `${file}-2`]], fields: [field] })
  }
]

/** Pieces names are made of: what breaks a part header, and anything else. */
const piece = FastCheck.oneof(
  {
    weight: 3,
    arbitrary: FastCheck.constantFrom(
      "\"",
      "\\",
      "\r",
      "\n",
      "\r\n",
      "\t",
      "\u0000",
      "\u007f",
      ";",
      "=",
      " ",
      "%",
      "%22",
      "%0D%0A",
      "'",
      "*",
      "filename=\"x\"",
      "\u00e9",
      "\u00ff",
      "\u0100",
      "\u65e5\u672c\u8a9e",
      "\u{1F600}",
      "report.pdf",
      "a"
    )
  },
  { weight: 1, arbitrary: FastCheck.string({ unit: "grapheme", maxLength: 4 }) }
)

/** Names every run checks first: a trailing backslash, quotes, line breaks, escapes, past Latin-1, RFC 5987's own. */
const examples: Array<[file: string, field: string]> = [
  ["a\\", "b\\"],
  ["\"", "\""],
  ["\r\n", "\r\n"],
  ["\u65e5\u672c\u{1F600}.txt", "\u540d\u524d"],
  ["50%22 off", "x%0Dy"],
  ["a;b=c", "d; e=\"f\""],
  ["\u0000\t\u007f", "\u0001"],
  ["utf-8''x'*()", "name*=utf-8''y"]
]

const name = FastCheck.array(piece, { minLength: 1, maxLength: 6 }).map((pieces) => pieces.join(""))

/** What the upload `received` lacks of `expected`; undefined when it has it all. */
const missing = (got: Upload.Upload | undefined, expected: Expected): string | undefined => {
  if (got === undefined) return "no upload read"
  const files = got.parts.map((part) => [part.key, part.filename] as const)
  if (JSON.stringify(files) !== JSON.stringify(expected.files)) {
    return `files ${JSON.stringify(files)}, not ${JSON.stringify(expected.files)}`
  }
  const fields = expected.fields.filter((field) => !(field in got.fields))
  return fields.length === 0 ? undefined : `fields ${JSON.stringify(fields)} missing from ${JSON.stringify(got.fields)}`
}

/** The inference client and the gateway client on one emulator. */
const clients = Layer.unwrapEffect(
  Effect.map(
    Emulator.Emulator,
    (emulator) => Node.layerGateway({ url: emulator.gatewayUrl, username: "demo", password: "demo-password" })
  )
).pipe(
  Layer.provideMerge(Testing.layerEmulator({ client: { maxRetries: 0 }, rateLimiter: false }))
)

describe("upload names", () => {
  it.scoped("every upload's field and file names arrive intact at the emulator", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(clients)
      yield* Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(name, name, async (file, field) => {
            for (const upload of uploads) {
              received.length = 0
              const story = `${upload.name} of ${JSON.stringify(file)}, field ${JSON.stringify(field)}`
              const answer = await Effect.runPromise(Effect.either(Effect.provide(upload.call(file, field), context)))
              assert.isUndefined(missing(received[0], upload.expected(file, field)), story)
              if (upload.stored !== undefined) {
                assert.strictEqual(answer._tag, "Right", `${story}: ${JSON.stringify(answer)}`)
                if (answer._tag === "Right") assert.deepStrictEqual(upload.stored(answer.right), [file], story)
              }
            }
          }),
          { numRuns: 25, examples }
        )
      )
    }))
})
