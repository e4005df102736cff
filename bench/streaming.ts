/**
 * Streaming: a local server sends pre-built SSE chat streams of 1,000, 20,000 and 100,000 chunks; chunks per
 * second decoded by this client (`Chat.createStream`, defaults on) and by the `openai` client's stream.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import OpenAI from "openai"
import { drain, fixed, listen, percentile, published, type Report, thousands, within } from "./common.js"

/** Stream lengths, in chunks (BENCH_STREAMING_CHUNKS: a comma-separated list), and repetitions of each. */
const sizes = (process.env.BENCH_STREAMING_CHUNKS ?? "1000,20000,100000").split(",").map(Number)
const repetitionsOf = (chunks: number) => chunks <= 1000 ? 60 : chunks <= 20_000 ? 7 : 3
/** Warm-ups of each client before measuring: enough for the code of both to be compiled by the JIT. */
const warmupsOf = (chunks: number) => chunks <= 1000 ? 50 : 2
const stepLimitMs = 60_000
const model = "Llama-3.3-70B-Instruct"
const apiKey = "gen-benchbenchbenchbenchbenchbenchbenchbenchbenchbe"

/** One SSE event of a chunk with these `choices` (and `usage`, on the last). */
const frame = (fields: Record<string, unknown>) =>
  `data: ${
    JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1_700_000_000, model, ...fields })
  }\n\n`

const chunk = (delta: Record<string, unknown>, finish: string | null) =>
  frame({ choices: [{ index: 0, delta, finish_reason: finish }] })

/** `chunkCount` chunks in all: a role chunk, content chunks, a finish chunk, a usage chunk, then `[DONE]`. */
const streamOf = (chunkCount: number) =>
  Buffer.from(
    [
      chunk({ role: "assistant", content: "" }, null),
      ...Array.from({ length: chunkCount - 3 }, (_, i) => chunk({ content: `token${i % 100} ` }, null)),
      chunk({}, "stop"),
      frame({
        choices: [],
        usage: { prompt_tokens: 9, completion_tokens: chunkCount - 3, total_tokens: chunkCount + 6 }
      }),
      "data: [DONE]\n\n"
    ].join("")
  )

const params = { model, messages: [{ role: "user" as const, content: "Count." }] }

interface Figures {
  readonly chunks: number
  readonly bytes: number
  readonly rates: Record<string, Array<number>>
  readonly counts: Record<string, number>
}

/** Streams a `chunkCount`-chunk body with each client, alternating, after warm-ups. */
const measure = async (chunkCount: number): Promise<Figures> => {
  const { Chat, Node } = await published()
  const bytes = streamOf(chunkCount)
  const server = await listen((request, response) => {
    drain(request, () => {
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      response.end(bytes)
    })
  })
  const rates: Record<string, Array<number>> = { "effect-aifs": [], openai: [] }
  const counts: Record<string, number> = {}
  try {
    const baseUrl = `${server.url}/v2`
    const openai = new OpenAI({ apiKey, baseURL: baseUrl, maxRetries: 0 })
    const openaiOnce = async () => {
      const started = performance.now()
      let n = 0
      const stream = await openai.chat.completions.create({ ...params, stream: true })
      for await (const _ of stream) n++
      counts.openai = n
      return (n * 1000) / (performance.now() - started)
    }
    const oursOnce = Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const started = performance.now()
      const n = yield* Stream.runCount(chat.createStream(params))
      counts["effect-aifs"] = n
      return (n * 1000) / (performance.now() - started)
    })
    const repetitions = repetitionsOf(chunkCount)
    const warmups = warmupsOf(chunkCount)
    // alternate the clients, two warm-ups each, so that neither gets a warmer process; this client as users run
    // it (the limiter on, retries on), with the model's limits far above the load
    const ours = Effect.gen(function*() {
      for (let i = 0; i < warmups; i++) {
        yield* oursOnce
        yield* Effect.promise(openaiOnce)
      }
      for (let i = 0; i < repetitions; i++) {
        rates["effect-aifs"]!.push(yield* oursOnce)
        rates.openai!.push(yield* Effect.promise(openaiOnce))
      }
    }).pipe(
      Effect.provide(
        Node.layer({
          apiKey,
          baseUrl,
          streamIdleTimeout: "30 seconds",
          rateLimiter: { limits: { [model]: { rpm: 100_000_000, tpm: 100_000_000_000 } } }
        })
      )
    )
    await within(stepLimitMs * (repetitions + 2) * 2, `streaming ${chunkCount}`, Effect.runPromise(ours))
  } finally {
    await server.close()
  }
  return { chunks: chunkCount, bytes: bytes.length, rates, counts }
}

export const run = async (): Promise<Report> => {
  const figures: Array<Figures> = []
  for (const size of sizes) figures.push(await measure(size))
  const median = (f: Figures, name: string) => percentile(f.rates[name]!, 50)
  const ratioOf = (f: Figures) => median(f, "effect-aifs") / median(f, "openai")
  const rows = figures.flatMap((f) => [
    ...["effect-aifs", "openai"].map((name) => [
      name,
      thousands(f.counts[name] ?? Number.NaN),
      thousands(median(f, name)),
      thousands(Math.min(...f.rates[name]!)),
      thousands(Math.max(...f.rates[name]!))
    ]),
    ["effect-aifs / openai", thousands(f.chunks), `${fixed(ratioOf(f))}x`, "", ""]
  ])
  const ratios = figures.map((f) => `${fixed(ratioOf(f))}x at ${thousands(f.chunks)} chunks`).join(", ")
  return {
    name: "streaming",
    title: "Streaming decode",
    headers: ["client", "chunks per stream", "chunks/s (median)", "min", "max"],
    rows,
    targets: [{
      target: "at least 1.5x the openai client's chunks/s",
      met: figures.every((f) => ratioOf(f) >= 1.5),
      detail: ratios
    }],
    how: `A node:http server on 127.0.0.1 answers every request with the same pre-built SSE body of ` +
      `${sizes.map(thousands).join(", ")} \`chat.completion.chunk\` events (role, content pieces, finish, usage) ` +
      `and \`[DONE]\` (${figures.map((f) => `${(f.bytes / 1e6).toFixed(1)} MB`).join(", ")}), written at once. ` +
      `Each client streams it (60, 7 or 3 times by length: a short stream's time swings most) after warm-ups (50 for the shortest, else 2), alternating; chunks/s = chunks ` +
      `decoded / time from request to the end of the stream. effect-aifs, as published (\`dist/\`, built by the ` +
      `benchmark): \`Chat.createStream\` with ` +
      `\`Node.layer\`'s defaults (the limiter on, with the model's limits far above the load; retries on), ` +
      `schema-decoded \`ChatCompletionChunk\`s counted with \`Stream.runCount\`; openai: \`for await\` over ` +
      `\`chat.completions.create({ stream: true })\` (no validation of the chunks).`
  }
}
