/**
 * Streaming: a local server sends a pre-built 20,000-chunk SSE chat stream; chunks per second decoded by
 * this client (`Chat.createStream`) and by the `openai` client's stream.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import OpenAI from "openai"
import * as Node from "../src/layers/Node.js"
import * as Chat from "../src/services/Chat.js"
import { drain, fixed, listen, percentile, type Report, thousands, within } from "./common.js"

const chunkCount = Number(process.env.BENCH_STREAMING_CHUNKS ?? 20_000)
const repetitions = 7
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
const bytes = Buffer.from(
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

export const run = async (): Promise<Report> => {
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
    // alternate the clients, two warm-ups each, so that neither gets a warmer process
    const ours = Effect.gen(function*() {
      for (let i = 0; i < 2; i++) {
        yield* oursOnce
        yield* Effect.promise(openaiOnce)
      }
      for (let i = 0; i < repetitions; i++) {
        rates["effect-aifs"]!.push(yield* oursOnce)
        rates.openai!.push(yield* Effect.promise(openaiOnce))
      }
    }).pipe(
      Effect.provide(
        Node.layer({ apiKey, baseUrl, maxRetries: 0, rateLimiter: false, streamIdleTimeout: "30 seconds" })
      )
    )
    await within(stepLimitMs * (repetitions + 1), "streaming", Effect.runPromise(ours))
  } finally {
    await server.close()
  }
  const median = (name: string) => percentile(rates[name]!, 50)
  const ratio = median("effect-aifs") / median("openai")
  const rows = ["effect-aifs", "openai"].map((name) => [
    name,
    thousands(counts[name] ?? Number.NaN),
    thousands(median(name)),
    thousands(Math.min(...rates[name]!)),
    thousands(Math.max(...rates[name]!))
  ])
  return {
    name: "streaming",
    title: "Streaming decode",
    headers: ["client", "chunks per stream", "chunks/s (median)", "min", "max"],
    rows: [...rows, ["effect-aifs / openai", "", `${fixed(ratio)}x`, "", ""]],
    targets: [{
      target: "at least as fast as the openai client's stream",
      met: ratio >= 1,
      detail: `${fixed(ratio)}x the openai client's chunks/s`
    }],
    how: `A node:http server on 127.0.0.1 answers every request with the same pre-built ` +
      `${(bytes.length / 1e6).toFixed(1)} MB SSE body of ${thousands(chunkCount)} \`chat.completion.chunk\` events ` +
      `(role, content pieces, finish, usage) and \`[DONE]\`, written at once. Each client streams it ` +
      `${repetitions} times after two warm-ups each, alternating; chunks/s = chunks decoded / time from request to the ` +
      `end of the stream. effect-aifs: \`Chat.createStream\` (schema-decoded \`ChatCompletionChunk\`s) counted ` +
      `with \`Stream.runCount\`; openai: \`for await\` over \`chat.completions.create({ stream: true })\`.`
  }
}
