/**
 * Overhead: chat requests against a local server that answers instantly, sequential and 64 in flight,
 * for this client (no limiter, no retries), the `openai` client, and raw `undici.request`.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import OpenAI from "openai"
import { request as undiciRequest } from "undici"
import * as Node from "../src/layers/Node.js"
import * as Chat from "../src/services/Chat.js"
import { drain, fixed, listen, percentile, type Report, thousands, within } from "./common.js"

const sequentialCount = Number(process.env.BENCH_OVERHEAD_SEQUENTIAL ?? 2000)
const concurrentCount = Number(process.env.BENCH_OVERHEAD_CONCURRENT ?? 10_000)
const inFlight = 64
const warmup = 300
const stepLimitMs = 120_000

const completion = Buffer.from(JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "Llama-3.3-70B-Instruct",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello." }, finish_reason: "stop" }],
  usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 }
}))

const params = {
  model: "Llama-3.3-70B-Instruct",
  messages: [{ role: "user" as const, content: "Say hello." }],
  max_tokens: 16
}
const body = JSON.stringify(params)
const apiKey = "gen-benchbenchbenchbenchbenchbenchbenchbenchbenchbe"

/** Sends one request and resolves when its answer is decoded. */
type Send = () => Promise<unknown>

interface Measure {
  readonly rps: number
  readonly p50: number
  readonly p99: number
}

/** `count` sends, at most `width` at once; latency of each from its start. */
const measure = async (send: Send, count: number, width: number): Promise<Measure> => {
  const latencies = new Array<number>(count)
  let next = 0
  const worker = async () => {
    while (next < count) {
      const i = next++
      const started = performance.now()
      await send()
      latencies[i] = performance.now() - started
    }
  }
  const started = performance.now()
  await Promise.all(Array.from({ length: width }, worker))
  const elapsed = performance.now() - started
  return { rps: (count * 1000) / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}

/** The same loop inside Effect, as an Effect program would run it (no `runPromise` per request). */
const measureEffect = (send: Effect.Effect<unknown, unknown>, count: number, width: number) =>
  Effect.gen(function*() {
    const latencies = new Array<number>(count)
    let next = 0
    const worker = Effect.gen(function*() {
      while (next < count) {
        const i = next++
        const started = performance.now()
        yield* send
        latencies[i] = performance.now() - started
      }
    })
    const started = performance.now()
    yield* Effect.all(Array.from({ length: width }, () => worker), { concurrency: "unbounded", discard: true })
    const elapsed = performance.now() - started
    return { rps: (count * 1000) / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
  })

export const run = async (): Promise<Report> => {
  const server = await listen((request, response) => {
    drain(request, () => {
      if (request.method === "POST" && request.url === "/v2/chat/completions") {
        response.writeHead(200, { "content-type": "application/json", "content-length": completion.length })
        response.end(completion)
      } else {
        response.writeHead(404, { "content-type": "application/json" })
        response.end("{\"error\":{\"message\":\"not found\"}}")
      }
    })
  })
  const results: Record<string, { sequential: Measure; concurrent: Measure }> = {}
  try {
    const baseUrl = `${server.url}/v2`

    // raw undici: the floor
    const undiciSend: Send = async () => {
      const response = await undiciRequest(`${baseUrl}/chat/completions`, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` }
      })
      return response.body.json()
    }
    // openai
    const openai = new OpenAI({ apiKey, baseURL: baseUrl, maxRetries: 0 })
    const openaiSend: Send = () => openai.chat.completions.create(params)

    for (const [name, send] of [["raw undici", undiciSend], ["openai", openaiSend]] as const) {
      await within(stepLimitMs, `overhead ${name}`, measure(send, warmup, 8))
      results[name] = {
        sequential: await within(stepLimitMs, `overhead ${name}`, measure(send, sequentialCount, 1)),
        concurrent: await within(stepLimitMs, `overhead ${name}`, measure(send, concurrentCount, inFlight))
      }
    }

    // effect-aifs, no limiter, no retries
    const ours = Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const send = chat.create(params)
      yield* measureEffect(send, warmup, 8)
      const sequential = yield* measureEffect(send, sequentialCount, 1)
      const concurrent = yield* measureEffect(send, concurrentCount, inFlight)
      return { sequential, concurrent }
    }).pipe(
      Effect.provide(Node.layer({ apiKey, baseUrl, maxRetries: 0, rateLimiter: false })),
      Effect.timeout(2 * stepLimitMs)
    )
    results["effect-aifs"] = await Effect.runPromise(ours)

    // the stack this client is built on, alone: @effect/platform's HttpClient over undici, the JSON parsed, nothing
    // else (no decoding, retries, limiter or span of its own): the floor for any client on it
    const platform = Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const send = Effect.scoped(
        Effect.flatMap(
          client.execute(
            HttpClientRequest.post(`${baseUrl}/chat/completions`).pipe(
              HttpClientRequest.bearerToken(apiKey),
              HttpClientRequest.bodyUnsafeJson(params)
            )
          ),
          (response) => response.json
        )
      )
      yield* measureEffect(send, warmup, 8)
      const sequential = yield* measureEffect(send, sequentialCount, 1)
      const concurrent = yield* measureEffect(send, concurrentCount, inFlight)
      return { sequential, concurrent }
    }).pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.timeout(2 * stepLimitMs))
    results["@effect/platform HttpClient"] = await Effect.runPromise(platform)
  } finally {
    await server.close()
  }

  const names = ["effect-aifs", "openai", "@effect/platform HttpClient", "raw undici"]
  const rows = names.flatMap((name) => {
    const r = results[name]!
    return [
      [
        name,
        `sequential (${thousands(sequentialCount)})`,
        thousands(r.sequential.rps),
        fixed(r.sequential.p50, 3),
        fixed(r.sequential.p99, 3)
      ],
      [
        name,
        `${inFlight} in flight (${thousands(concurrentCount)})`,
        thousands(r.concurrent.rps),
        fixed(r.concurrent.p50, 3),
        fixed(r.concurrent.p99, 3)
      ]
    ]
  })
  const ours = results["effect-aifs"]!
  const openai = results["openai"]!
  const raw = results["raw undici"]!
  const floor = results["@effect/platform HttpClient"]!
  const vsOpenai = (mode: "sequential" | "concurrent") => ours[mode].rps / openai[mode].rps
  const vsRaw = (mode: "sequential" | "concurrent") => raw[mode].rps / ours[mode].rps
  return {
    name: "overhead",
    title: "Overhead per request",
    headers: ["client", "mode", "requests/s", "p50 ms", "p99 ms"],
    rows: [
      ...rows,
      [
        "effect-aifs / openai",
        "sequential | concurrent",
        `${fixed(vsOpenai("sequential"))}x | ${fixed(vsOpenai("concurrent"))}x`,
        "",
        ""
      ],
      [
        "raw undici / effect-aifs",
        "sequential | concurrent",
        `${fixed(vsRaw("sequential"))}x | ${fixed(vsRaw("concurrent"))}x`,
        "",
        ""
      ]
    ],
    targets: [
      {
        target: "at least the openai client's throughput",
        met: vsOpenai("sequential") >= 1 && vsOpenai("concurrent") >= 1,
        detail: `${fixed(vsOpenai("sequential"))}x sequential, ${fixed(vsOpenai("concurrent"))}x concurrent`
      },
      {
        target: "within 1.3x of raw undici",
        met: vsRaw("sequential") <= 1.3 && vsRaw("concurrent") <= 1.3,
        detail: `undici is ${fixed(vsRaw("sequential"))}x faster sequential, ${fixed(vsRaw("concurrent"))}x ` +
          `concurrent; @effect/platform's HttpClient alone is ${fixed(raw.sequential.rps / floor.sequential.rps)}x / ` +
          `${fixed(raw.concurrent.rps / floor.concurrent.rps)}x slower than undici`
      }
    ],
    how: `A node:http server on 127.0.0.1 answers every \`POST /v2/chat/completions\` at once with a fixed ` +
      `${completion.length}-byte ChatCompletion. Each client sends ${warmup} warm-up requests, then ` +
      `${thousands(sequentialCount)} one after the other and ${thousands(concurrentCount)} with ${inFlight} in ` +
      `flight (workers pulling from a shared counter); latency from send to decoded answer. effect-aifs: ` +
      `\`Node.layer({ rateLimiter: false, maxRetries: 0 })\`, \`Chat.create\` inside one Effect program ` +
      `(no \`runPromise\` per request); openai: \`maxRetries: 0\`, global \`fetch\`; raw undici: ` +
      `\`undici.request\` + \`body.json()\` (no validation); @effect/platform HttpClient: its \`HttpClient\` over ` +
      `undici (\`NodeHttpClient.layerUndici\`, as the Node layer uses), \`response.json\`, nothing else. All in one process, server included, so the server's ` +
      `cost is in every figure alike.`,
    notes: [
      "The @effect/platform row is the floor for any client on the stack this one is built on (its `HttpClient`): " +
      "\"within 1.3x of raw undici\" lies below that floor. Of this client's own cost, the largest single part is " +
      "the total time limit of each attempt (`Effect.timeout` forks the exchange and a timer and merges their " +
      "fiber refs): about a quarter of requests/s at 64 in flight against a server that answers at once. The " +
      "openai client's figures vary by ±15% from run to run on this machine: across today's runs this client was 0.92x-1.06x of it sequential and 0.85x-1.07x at 64 in flight."
    ]
  }
}
