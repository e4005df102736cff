/**
 * The official `openai` client against the emulator for files, audio transcriptions, images, responses,
 * vector stores and fine-tuning: users of that client must see the service's behaviour unchanged.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import OpenAI, { toFile } from "openai"
import * as Emulator from "../../src/emulator/Emulator.js"
import { png } from "../../src/emulator/png.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Responses from "../../src/services/Responses.js"

const openai = (base: "v2" | "v1" = "v2") =>
  Effect.map(Emulator.Emulator, (emulator) =>
    new OpenAI({
      apiKey: emulator.keyFor("standard4000")!,
      baseURL: base === "v2" ? emulator.baseUrl : emulator.v1Url,
      maxRetries: 0,
      timeout: 10_000
    }))

const call = <A>(f: () => PromiseLike<A>) => Effect.promise(() => Promise.resolve(f()))

const emulator = () => Testing.layerEmulator({ client: { maxRetries: 0 } })

const training = `${
  JSON.stringify({ messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }] })
}\n`

describe("openai client: the rest of the surface", () => {
  it.live("files: create, list by purpose, retrieve, delete", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const file = yield* call(async () =>
        client.files.create({ file: await toFile(Buffer.from(training), "train.jsonl"), purpose: "fine-tune" })
      )
      assert.match(file.id, /^file-/)
      assert.strictEqual(file.filename, "train.jsonl")
      const listed = yield* call(async () => {
        const out: Array<string> = []
        for await (const f of client.files.list({ purpose: "fine-tune" })) out.push(f.id)
        return out
      })
      assert.deepStrictEqual(listed, [file.id])
      assert.strictEqual((yield* call(() => client.files.retrieve(file.id))).bytes, training.length)
      assert.isTrue((yield* call(() => client.files.delete(file.id))).deleted)
    }).pipe(Effect.provide(emulator())))

  it.live("audio.transcriptions.create, as JSON and as text", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const file = () => toFile(Buffer.alloc(32_000, 3), "speech.wav")
      const json = yield* call(async () =>
        client.audio.transcriptions.create({ file: await file(), model: "whisper-large-v3" })
      )
      assert.isAbove(json.text.length, 0)
      const text = yield* call(async () =>
        client.audio.transcriptions.create({ file: await file(), model: "whisper-large-v3", response_format: "text" })
      )
      assert.strictEqual(String(text).trim(), json.text)
    }).pipe(Effect.provide(emulator())))

  it.live("images.generate returns a PNG in b64_json", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const result = yield* call(() => client.images.generate({ model: "gpt-image-1", prompt: "a lighthouse" }))
      const bytes = Buffer.from(result.data![0]!.b64_json!, "base64")
      assert.strictEqual(bytes.subarray(1, 4).toString("ascii"), "PNG")
    }).pipe(Effect.provide(emulator())))

  it.live("responses.create and stream: output_text matches our client", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const theirs = yield* call(() => client.responses.create({ model: "gpt-4.1", input: "Explain quotas" }))
      const ours = yield* Effect.flatMap(Responses.Responses, (r) =>
        r.create({ model: "gpt-4.1", input: "Explain quotas" }))
      assert.strictEqual(theirs.output_text, ours.text)
      const streamed = yield* call(async () => {
        let text = ""
        const stream = await client.responses.create({ model: "o4-mini", input: "Explain quotas", stream: true })
        for await (const event of stream) {
          if (event.type === "response.output_text.delta") {
            text += event.delta
          }
        }
        return text
      })
      assert.isAbove(streamed.length, 0)
    }).pipe(Effect.provide(emulator())))

  it.live("vectorStores on /v1: create, add a file, search, delete", () =>
    Effect.gen(function*() {
      const v1 = yield* openai("v1")
      const results = yield* call(async () => {
        const text = await v1.files.create({
          file: await toFile(Buffer.from("Bonn is a city on the Rhine with a long history."), "bonn.txt"),
          purpose: "visual-rag" as "assistants"
        })
        const image = await v1.files.create({
          file: await toFile(Buffer.from(png(5)), "page.png"),
          purpose: "visual-rag" as "assistants"
        })
        const store = await v1.vectorStores.create({
          name: "compat",
          chunking_strategy: {
            text_embedding_model: "text-embedding-bge-m3",
            vision_embedding_model: "tsi-embedding-colqwen2-2b-v1"
          } as unknown as OpenAI.VectorStores.FileChunkingStrategyParam
        })
        await v1.vectorStores.files.create(store.id, { file_id: text.id })
        await v1.vectorStores.files.create(store.id, { file_id: image.id })
        // indexing takes half a second on the emulator's (live) clock: wait for both files
        let status = "in_progress"
        for (let i = 0; i < 200 && status !== "completed"; i++) {
          await new Promise((resolve) => setTimeout(resolve, 50))
          const statuses = await Promise.all(
            [text.id, image.id].map(async (id) =>
              (await v1.vectorStores.files.retrieve(id, { vector_store_id: store.id })).status
            )
          )
          status = statuses.every((s) => s === "completed") ? "completed" : "in_progress"
        }
        const page = await v1.vectorStores.search(store.id, {
          query: "Rhine city",
          top_k_texts: 1,
          top_k_images: 1
        } as OpenAI.VectorStores.VectorStoreSearchParams)
        const hits = page.getPaginatedItems() as unknown as Array<{ content: Array<{ type: string; text: string }> }>
        const deleted = await v1.vectorStores.delete(store.id)
        return { status, hits, deleted: deleted.deleted }
      })
      assert.strictEqual(results.status, "completed")
      assert.deepStrictEqual(results.hits.map((h) => h.content[0]!.type), ["text", "base64"])
      assert.include(results.hits[0]!.content[0]!.text, "Rhine")
      assert.match(results.hits[1]!.content[0]!.text, /^data:image\/png;base64,/)
      assert.isTrue(results.deleted)
    }).pipe(Effect.provide(emulator())))

  it.live("fineTuning.jobs: create, list, retrieve, listEvents, cancel", () =>
    Effect.gen(function*() {
      const client = yield* openai()
      const outcome = yield* call(async () => {
        const file = await client.files.create({
          file: await toFile(Buffer.from(training), "t.jsonl"),
          purpose: "fine-tune"
        })
        const job = await client.fineTuning.jobs.create({ model: "Llama-3.3-70B-Instruct", training_file: file.id })
        const ids: Array<string> = []
        for await (const j of client.fineTuning.jobs.list()) ids.push(j.id)
        const retrieved = await client.fineTuning.jobs.retrieve(job.id)
        const events = await client.fineTuning.jobs.listEvents(job.id)
        const cancelled = await client.fineTuning.jobs.cancel(job.id)
        return { job, ids, retrieved, events: events.getPaginatedItems(), cancelled }
      })
      assert.strictEqual(outcome.job.status, "queued")
      assert.deepStrictEqual(outcome.ids, [outcome.job.id])
      assert.strictEqual(outcome.retrieved.id, outcome.job.id)
      assert.strictEqual(outcome.events[0]?.message.includes("submitted"), true)
      assert.strictEqual(outcome.cancelled.status as string, "stopped")
    }).pipe(Effect.provide(emulator())))
})
