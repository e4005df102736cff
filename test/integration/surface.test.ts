/**
 * Audio, images, responses, fine-tuning and the queue against the emulator over loopback: every operation,
 * the job lifecycle on the TestClock, per-key isolation of jobs.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Emulator from "../../src/emulator/Emulator.js"
import { png } from "../../src/emulator/png.js"
import * as Node from "../../src/layers/Node.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Audio from "../../src/services/Audio.js"
import * as Files from "../../src/services/Files.js"
import * as FineTuning from "../../src/services/FineTuning.js"
import * as Images from "../../src/services/Images.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import * as JobQueue from "../../src/services/JobQueue.js"
import * as Responses from "../../src/services/Responses.js"
import { ask } from "../helpers/emulator.js"

const emulator = (client: Testing.LayerEmulatorOptions["client"] = {}) =>
  Testing.layerEmulator({ client: { maxRetries: 0, ...client } })

/** The emulator with a 1.0.0 client (fine-tuning allowed without opting in). */
const emulator100 = () => emulator({ apiVersion: "1.0.0" })

const audio = Audio.fromBytes(new Uint8Array(48_000).map((_, i) => (i * 7) % 256), "speech.wav", "audio/wav")

const training = [
  { messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }] },
  { messages: [{ role: "user", content: "Bye" }, { role: "assistant", content: "Goodbye" }] }
].map((line) => JSON.stringify(line)).join("\n")

const uploadTraining = (content: string) =>
  Effect.flatMap(
    Files.Files,
    (files) => files.upload({ file: Files.fromBytes(content, "train.jsonl"), purpose: "fine-tune" })
  )

describe("Audio against the emulator", () => {
  it.effect("transcribe and translate any upload deterministically; models lists the speech models", () =>
    Effect.gen(function*() {
      const service = yield* Audio.Audio
      const first = yield* service.transcribe({
        model: "whisper-large-v3",
        file: audio,
        language: "de",
        temperature: 0
      })
      const again = yield* service.transcribe({ model: "whisper-large-v3", file: audio })
      assert.isAbove(first.text.length, 10)
      assert.strictEqual(first.text, again.text)
      assert.strictEqual(first.usage?.completion_tokens, first.usage?.total_tokens)
      const verbose = yield* service.transcribe({
        model: "whisper-large-v3",
        file: audio,
        response_format: "verbose_json"
      })
      assert.strictEqual(verbose.task, "transcribe")
      assert.strictEqual(verbose.language, "english")
      assert.strictEqual(verbose.duration, 3)
      const translated = yield* service.translate({
        model: "whisper-large-v3-turbo",
        file: audio,
        response_format: "verbose_json"
      })
      assert.strictEqual(translated.task, "translate")
      assert.notStrictEqual(translated.text, first.text)
      const models = yield* service.models()
      assert.deepStrictEqual(models.ids, ["whisper-large-v3", "whisper-large-v3-turbo"])
      const wrong = yield* Effect.flip(service.transcribe({ model: "Llama-3.3-70B-Instruct", file: audio }))
      assert.strictEqual(wrong._tag, "BadRequest")
    }).pipe(Effect.provide(emulator())))

  it.effect("text, srt and vtt come back as the transcript's text", () =>
    Effect.gen(function*() {
      const service = yield* Audio.Audio
      const json = yield* service.transcribe({ model: "whisper-large-v3", file: audio })
      const text = yield* service.transcribe({ model: "whisper-large-v3", file: audio, response_format: "text" })
      assert.strictEqual(text.text.trim(), json.text)
      const srt = yield* service.transcribe({ model: "whisper-large-v3", file: audio, response_format: "srt" })
      assert.match(srt.text, /^1\n00:00:00,000 --> /)
      assert.include(srt.text, json.text)
      const vtt = yield* service.translate({ model: "whisper-large-v3", file: audio, response_format: "vtt" })
      assert.match(vtt.text, /^WEBVTT\n\n00:00:00\.000 --> /)
    }).pipe(Effect.provide(emulator())))
})

describe("Images against the emulator", () => {
  it.effect("generate returns real PNGs; edit goes through the queue", () =>
    Effect.gen(function*() {
      const images = yield* Images.Images
      const generated = yield* images.generate({ model: "gpt-image-1", prompt: "a red fox", n: 2, size: "1024x512" })
      assert.strictEqual(generated.data.length, 2)
      const [bytes] = generated.bytes
      assert.deepStrictEqual([...bytes!.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
      // IHDR: width 32, height 16 (the requested size, scaled down)
      const view = new DataView(bytes!.buffer, bytes!.byteOffset)
      assert.deepStrictEqual([view.getUint32(16), view.getUint32(20)], [32, 16])
      assert.match(generated.urls[0]!, /^data:image\/png;base64,iVBOR/)
      const edited = yield* images.edit({
        model: "gpt-image-1",
        prompt: "make it blue",
        image: Images.fromBytes(png(1), "in.png")
      })
      assert.strictEqual(edited.data.length, 1)
      assert.notStrictEqual(edited.data[0]!.b64_json, generated.data[0]!.b64_json)
      const refused = yield* Effect.flip(images.generate({ model: "whisper-large-v3", prompt: "x" }))
      assert.strictEqual(refused._tag, "BadRequest")
    }).pipe(Effect.provide(emulator())))
})

describe("Responses against the emulator", () => {
  it.effect("create returns output text; the stream's deltas join to the same text", () =>
    Effect.gen(function*() {
      const responses = yield* Responses.Responses
      const params = { model: "gpt-4.1", input: "Tell me about rate limits", instructions: "Be brief" }
      const response = yield* responses.create(params)
      assert.strictEqual(response.status, "completed")
      assert.isAbove(response.text.length, 0)
      assert.strictEqual(Responses.outputText(response), response.text)
      assert.isAbove(response.usage!.input_tokens, 0)
      const streamed = yield* Responses.collectText(responses.createStream(params))
      assert.strictEqual(streamed, response.text)
      const final = yield* Responses.finalResponse(responses.createStream(params))
      assert.strictEqual(Option.getOrThrow(final).text, response.text)
    }).pipe(Effect.provide(emulator())))

  it.effect("a reasoning model's unknown stream events are skipped, not failures", () =>
    Effect.gen(function*() {
      const responses = yield* Responses.Responses
      const http = yield* InferenceHttpClient
      const raw = yield* Stream.runCollect(http.sse(
        HttpClientRequest.post("/responses").pipe(
          HttpClientRequest.bodyUnsafeJson({ model: "o4-mini", input: "Think", stream: true })
        )
      ))
      const types = Chunk.toReadonlyArray(raw).map((e) => e.event)
      assert.include(types, "response.reasoning_summary_text.delta")
      const events = Chunk.toReadonlyArray(
        yield* Stream.runCollect(responses.createStream({ model: "o4-mini", input: "Think" }))
      )
      assert.notInclude(events.map((e) => e.type), "response.reasoning_summary_text.delta")
      assert.strictEqual(events.at(-1)?.type, "response.completed")
    }).pipe(Effect.provide(emulator())))

  it.effect("function tools (flat form) and text.format JSON-schema output", () =>
    Effect.gen(function*() {
      const responses = yield* Responses.Responses
      const called = yield* responses.create({
        model: "gpt-4o",
        input: "What is the weather in Berlin? use get_weather",
        tools: [{
          type: "function",
          name: "get_weather",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
        }]
      })
      const [call] = called.functionCalls
      assert.strictEqual(call?.name, "get_weather")
      assert.deepStrictEqual(JSON.parse(call!.arguments!), { city: "Berlin" })
      const answered = yield* responses.create({
        model: "gpt-4o",
        input: [
          { role: "user", content: "What is the weather in Berlin? use get_weather" },
          { type: "function_call_output", call_id: call!.call_id!, output: "{\"temp\": 21}" }
        ]
      })
      assert.isAbove(answered.text.length, 0)
      const structured = yield* responses.create({
        model: "gpt-4.1",
        input: "List a city",
        text: {
          format: {
            type: "json_schema",
            name: "city",
            schema: { type: "object", properties: { name: { type: "string" }, population: { type: "integer" } } }
          }
        }
      })
      assert.deepStrictEqual(JSON.parse(structured.text), { name: "example", population: 1 })
      const refused = yield* Effect.flip(responses.create({ model: "Llama-3.3-70B-Instruct", input: "hi" }))
      assert.strictEqual(refused._tag, "BadRequest")
    }).pipe(Effect.provide(emulator())))
})

describe("FineTuning against the emulator", () => {
  it.effect("under 1.1.0 every operation is Unsupported before sending; opting in sends", () =>
    Effect.gen(function*() {
      const jobs = yield* FineTuning.FineTuning
      const error = yield* Effect.flip(jobs.list())
      assert.strictEqual(error._tag, "Unsupported")
      assert.match(error.message, /interface 1\.1\.0 has no fine-tuning routes/)
      const optedIn = yield* Effect.flatMap(FineTuning.FineTuning, (s) => s.list()).pipe(
        Effect.provide(
          FineTuning.layerWith({ allowFineTuning: true }).pipe(
            Layer.provide(Layer.succeed(InferenceHttpClient, yield* InferenceHttpClient))
          )
        )
      )
      assert.strictEqual(optedIn.data.length, 0)
    }).pipe(Effect.provide(emulator())))

  it.effect("queued -> running -> succeeded on the clock, with events; list pages", () =>
    Effect.gen(function*() {
      const jobs = yield* FineTuning.FineTuning
      const file = yield* uploadTraining(training)
      const job = yield* jobs.create({ model: "Llama-3.3-70B-Instruct", training_file: file.id, suffix: "mine" })
      assert.strictEqual(job.status, "queued")
      assert.match(String(job.created_at), /\+00:00$/)
      assert.deepStrictEqual(job.hyperparameters?.n_epochs, 2)
      yield* TestClock.adjust("6 seconds")
      assert.strictEqual((yield* jobs.retrieve(job.id)).status, "running")
      yield* TestClock.adjust("20 seconds")
      const done = yield* jobs.retrieve(job.id)
      assert.strictEqual(done.status, "succeeded")
      assert.isTrue(done.isFinished)
      assert.match(done.fine_tuned_model ?? "", /^ft:Llama-3\.3-70B-Instruct:mine:/)
      assert.isAbove(done.trained_tokens ?? 0, 0)
      const events = yield* jobs.events(job.id)
      assert.deepStrictEqual(events.data.map((e) => e.type), ["succeeded", "metrics", "start", "submitted"])
      assert.match(String(events.data[0]!.created_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/)
      const allEvents = yield* Stream.runCollect(jobs.eventsAll(job.id, { limit: 1 }))
      assert.strictEqual(Chunk.size(allEvents), 4)
      for (let i = 0; i < 4; i++) yield* jobs.create({ model: "Llama-3.3-70B-Instruct", training_file: file.id })
      const page = yield* jobs.list()
      assert.strictEqual(page.data.length, 3)
      assert.isTrue(page.has_more)
      const all = yield* Stream.runCollect(jobs.listAll())
      assert.strictEqual(Chunk.size(all), 5)
    }).pipe(Effect.provide(emulator100())))

  it.effect("cancel stops a job; a bad training file fails its job readably; other keys get 404", () =>
    Effect.gen(function*() {
      const jobs = yield* FineTuning.FineTuning
      const good = yield* uploadTraining(training)
      const job = yield* jobs.create({ model: "Llama-3.3-70B-Instruct", training_file: good.id })
      yield* TestClock.adjust("8 seconds")
      const stopped = yield* jobs.cancel(job.id)
      assert.strictEqual(stopped.status, "stopped")
      yield* TestClock.adjust("1 minute")
      assert.strictEqual((yield* jobs.retrieve(job.id)).status, "stopped")
      assert.strictEqual((yield* jobs.events(job.id)).data[0]!.type, "stopped")
      assert.strictEqual((yield* Effect.flip(jobs.cancel(job.id)))._tag, "Conflict")

      const bad = yield* uploadTraining("{\"messages\": []}\nnot json\n")
      const failing = yield* jobs.create({ model: "Llama-3.3-70B-Instruct", training_file: bad.id })
      yield* TestClock.adjust("6 seconds")
      const failed = yield* jobs.retrieve(failing.id)
      assert.strictEqual(failed.status, "failed")
      assert.match(failed.errorMessage ?? "", /line 1 of the training file has no "messages" array/)
      const events = yield* jobs.events(failing.id)
      assert.strictEqual(events.data[0]!.level, "error")

      const em = yield* Emulator.Emulator
      const other = yield* Effect.flip(Effect.flatMap(FineTuning.FineTuning, (s) => s.retrieve(job.id))).pipe(
        Effect.provide(
          Node.layer({ apiKey: Emulator.keyOf("basic"), baseUrl: em.baseUrl, apiVersion: "1.0.0", maxRetries: 0 })
        )
      )
      assert.strictEqual(other._tag, "NotFound")
    }).pipe(Effect.provide(emulator100())))
})

describe("JobQueue against the emulator", () => {
  it.effect("every queue route answers a Completed result", () =>
    Effect.gen(function*() {
      const queue = yield* JobQueue.JobQueue
      const chat = yield* queue.chat(ask("Llama-3.3-70B-Instruct", "Hello queue"))
      assert.strictEqual(chat._tag, "Completed")
      if (chat._tag === "Completed") assert.isAbove(chat.value.text.length, 0)
      const streamed = yield* Stream.runCollect(queue.chatStream(ask("Llama-3.3-70B-Instruct", "Hello queue")))
      assert.isAbove(Chunk.size(streamed), 2)
      const completion = yield* queue.completions({ model: "Llama-3.3-70B-Instruct", prompt: "Once" })
      assert.strictEqual(completion._tag, "Completed")
      const embeddings = yield* queue.embeddings({ model: "text-embedding-bge-m3", input: ["a", "b"] })
      assert.strictEqual(embeddings._tag === "Completed" ? embeddings.value.vectors.length : 0, 2)
      const transcription = yield* queue.transcribe({ model: "whisper-large-v3", file: audio })
      const translation = yield* queue.translate({ model: "whisper-large-v3", file: audio })
      assert.deepStrictEqual([transcription._tag, translation._tag], ["Completed", "Completed"])
      const generated = yield* queue.generateImages({ model: "gpt-image-1", prompt: "a cat" })
      const edited = yield* queue.editImages({
        model: "gpt-image-1",
        prompt: "a dog",
        image: Images.fromBytes(png(3), "cat.png")
      })
      assert.deepStrictEqual([generated._tag, edited._tag], ["Completed", "Completed"])
      const models = yield* queue.models()
      assert.isAbove(models.data.length, 5)
    }).pipe(Effect.provide(emulator())))
})
