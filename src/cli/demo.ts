/**
 * `aifs demo` (`npm start`): a tour on the embedded emulator. Lists a current plan's models, streams a chat answer,
 * embeds two texts, handles a typed error, and fires a burst of 30 requests on a key of 20 requests a window twice:
 * with retries alone (it meets 429s and waits exactly as long as the rate-limit headers say) and with the proactive
 * rate limiter (it meets none).
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Stream from "effect/Stream"
import * as Emulator from "../emulator/Emulator.js"
import * as ClientMetrics from "../layers/ClientMetrics.js"
import * as Node from "../layers/Node.js"
import * as Chat from "../services/Chat.js"
import * as Embeddings from "../services/Embeddings.js"
import * as Models from "../services/Models.js"

/** The demo emulator's window: short, so that the burst's waits take seconds. */
const demoWindow = Duration.seconds(5)
const chatModel = "Llama-3.3-70B-Instruct"
const burstModels = ["gpt-4o", "gpt-4.1"] as const
const learningModel = "Mistral-Small-3"
const burstSize = 30

const write = (text: string) => Effect.sync(() => process.stdout.write(text))

const heading = (text: string) => Console.log(process.stdout.isTTY ? `\n\u001b[1m${text}\u001b[0m` : `\n${text}`)

const cosine = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  let dot = 0
  let na = 0
  let nb = 0
  a.forEach((x, i) => {
    const y = b[i] ?? 0
    dot += x * y
    na += x * x
    nb += y * y
  })
  return dot / Math.sqrt(na * nb)
}

const counter = (metric: typeof ClientMetrics.rateLimited) => Effect.map(Metric.value(metric), (state) => state.count)

const listModels = Effect.gen(function*() {
  const models = yield* Models.Models
  const list = yield* models.list()
  yield* heading(`1. Models (${list.data.length})`)
  for (const model of list.data) {
    const meta = model.meta_data
    yield* Console.log(
      `   ${model.id.padEnd(32)} ${(meta?.model_type ?? "?").padEnd(10)} ${(meta?.source_type ?? "").padEnd(12)} ${
        meta?.is_externally_hosted ? "rate-limit headers" : ""
      }`
    )
  }
})

const streamChat = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  yield* heading(`2. A chat answer from ${chatModel}, streamed token by token`)
  yield* write("   ")
  const answer = yield* Chat.collect(
    chat.createStream({
      model: chatModel,
      messages: [
        { role: "system", content: "You are a concise assistant." },
        { role: "user", content: "Why do rate limits matter for batch jobs?" }
      ],
      max_tokens: 60
    }).pipe(Stream.tap((chunk) => write(chunk.text)))
  )
  const usage = answer.usage
  yield* Console.log(
    `\n   [${
      answer.choices[0]?.finish_reason
    }; ${usage?.prompt_tokens} prompt + ${usage?.completion_tokens} completion tokens]`
  )
})

const embedTexts = Effect.gen(function*() {
  const embeddings = yield* Embeddings.Embeddings
  yield* heading("3. Embeddings of two texts (text-embedding-bge-m3)")
  const texts = [
    "The client waits for the rate-limit reset.",
    "The rate-limit reset tells the client how long to wait."
  ]
  const result = yield* embeddings.create({ model: "text-embedding-bge-m3", input: texts, encoding_format: "base64" })
  const [a, b] = result.vectors
  yield* Console.log(
    `   ${result.vectors.length} vectors of ${a?.length} dimensions (sent as base64, decoded to numbers)`
  )
  yield* Console.log(`   cosine similarity: ${cosine(a ?? [], b ?? []).toFixed(3)}`)
})

const typedError = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  yield* heading("4. A typed error, handled by tag")
  const answer = yield* chat.create({ model: "gpt-5-ultra", messages: [{ role: "user", content: "Hello" }] }).pipe(
    Effect.catchTag(
      "NotFound",
      (error) =>
        Console.log(`   caught NotFound: ${error.message} -> falling back to ${chatModel}`).pipe(
          Effect.zipRight(
            chat.create({ model: chatModel, messages: [{ role: "user", content: "Hello" }], max_tokens: 12 })
          )
        )
    )
  )
  yield* Console.log(`   ${answer.model}: ${answer.text}`)
})

/** Fires the burst through whatever client is provided and reports what it met. */
const burst = (model: string) =>
  Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const met429Before = yield* counter(ClientMetrics.rateLimited)
    const waitedBefore = yield* counter(ClientMetrics.retryWaitMillis)
    const limiterWaitBefore = yield* counter(ClientMetrics.limiterWaitMillis)
    const start = yield* Clock.currentTimeMillis
    const results = yield* Effect.forEach(
      Array.from({ length: burstSize }, (_, i) => i),
      (i) =>
        chat.createWithResponse({
          model,
          messages: [{ role: "user", content: `Request ${i + 1}: say something short.` }],
          max_tokens: 16
        }),
      { concurrency: "unbounded" }
    )
    const elapsed = (yield* Clock.currentTimeMillis) - start
    const met429 = (yield* counter(ClientMetrics.rateLimited)) - met429Before
    const waited = (yield* counter(ClientMetrics.retryWaitMillis)) - waitedBefore
    const queued = (yield* counter(ClientMetrics.limiterWaitMillis)) - limiterWaitBefore
    yield* Console.log(`   ${results.length}/${burstSize} succeeded in ${(elapsed / 1000).toFixed(1)} s`)
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
    yield* Console.log(
      met429 === 0
        ? `   429s met: 0 (requests waited ${seconds(queued)} in all in the client's limiter instead)`
        : queued === 0
        ? `   429s met: ${met429}; each was retried after the server's reset (${seconds(waited)} waited in all)`
        : `   429s met: ${met429}, while learning; then requests waited ${seconds(queued)} in all in the limiter`
    )
  })

const bursts = (emulator: Emulator.Emulator.Service) =>
  Effect.gen(function*() {
    // the seed's basic figures on every model: a basic key itself has no proprietary model
    const client = { apiKey: emulator.keyFor("seed") ?? "", baseUrl: emulator.baseUrl }
    yield* heading(
      `5. A burst of ${burstSize} requests on a key of 20 requests per ${Duration.format(demoWindow)} window`
    )
    yield* Console.log(`   a) retries alone, on ${burstModels[0]}: the server says 429, the client waits for its reset`)
    yield* burst(burstModels[0]).pipe(Effect.provide(Node.layer({ ...client, tier: "basic", rateLimiter: false })))
    yield* Console.log(
      `   b) with the proactive rate limiter, on ${burstModels[1]}: requests wait before they are sent`
    )
    yield* burst(burstModels[1]).pipe(
      Effect.provide(Node.layer({ ...client, tier: "basic", rateLimiter: { window: demoWindow } }))
    )
    yield* Console.log(
      `   c) told nothing of the plan (tier auto, the default), on ${learningModel}, which sends no rate-limit ` +
        `headers:\n      the first 429s measure the window, then requests wait for it`
    )
    yield* burst(learningModel).pipe(
      Effect.provide(Node.layer({ ...client, tier: "auto", rateLimiter: { window: demoWindow } }))
    )
  })

/**
 * The demo program.
 *
 * @since 0.1.0
 * @category programs
 */
export const demo = Effect.gen(function*() {
  const emulator = yield* Emulator.Emulator
  yield* Console.log(`effect-aifs demo: embedded emulator at ${emulator.url} (no key, no network)`)
  yield* Effect.all([listModels, streamChat, embedTexts, typedError], { discard: true }).pipe(
    Effect.provide(
      Node.layer({
        apiKey: emulator.keyFor("essential") ?? "",
        baseUrl: emulator.baseUrl,
        rateLimiter: { window: demoWindow }
      })
    )
  )
  yield* bursts(emulator)
  yield* Console.log("\nDone. Try: npm run aifs -- chat \"Hello\" --model gpt-5, or read README.md.")
}).pipe(
  Effect.provide(Layer.orDie(Emulator.layer({
    window: demoWindow,
    streamChunkDelay: Duration.millis(25),
    tiers: { seed: Emulator.fallbackQuotas.basic }
  })))
)
