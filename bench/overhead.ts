/**
 * Overhead: chat requests against a local server that answers instantly, sequential and 64 in flight,
 * for this client (no limiter, no retries), the `openai` client, and raw `undici.request`.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import type * as Resource from "@effect/opentelemetry/Resource"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { BatchSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import OpenAI from "openai"
import { request as undiciRequest } from "undici"
import { drain, fixed, listen, percentile, published, type Report, textTable, thousands, within } from "./common.js"
import { profiled, stepCost, stepsOf } from "./profile.js"

const sequentialCount = Number(process.env.BENCH_OVERHEAD_SEQUENTIAL ?? 2000)
const concurrentCount = Number(process.env.BENCH_OVERHEAD_CONCURRENT ?? 10_000)
const inFlight = 64
const warmup = 300
const stepLimitMs = 120_000
/** Rounds of every client; each figure is the round with the median requests/s. */
const rounds = Number(process.env.BENCH_OVERHEAD_ROUNDS ?? 3)
/** `npm run bench -- overhead --profile`: CPU profiles of this client's sequential loops by package, and the Effect steps per request. */
const profile = process.argv.includes("--profile")
/**
 * Another checkout of this client, built (`dist/`), measured in the same rounds as a baseline (before and after a
 * change, in one run): `BENCH_OVERHEAD_BASELINE=/path/to/checkout npm run bench -- overhead`.
 */
const baselineCheckout = process.env.BENCH_OVERHEAD_BASELINE

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

/** The process's CPU time since `since`, per request, in µs. */
const cpuPerRequest = (since: NodeJS.CpuUsage, count: number): number => {
  const used = process.cpuUsage(since)
  return (used.user + used.system) / count
}

interface Measure {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  /** The process's CPU time (user and system, the server's included) per request, µs. */
  readonly cpuUs: number
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
  const cpu = process.cpuUsage()
  await Promise.all(Array.from({ length: width }, worker))
  const elapsed = performance.now() - started
  return {
    rps: (count * 1000) / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    cpuUs: cpuPerRequest(cpu, count)
  }
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
    const cpu = process.cpuUsage()
    yield* Effect.all(Array.from({ length: width }, () => worker), { concurrency: "unbounded", discard: true })
    const elapsed = performance.now() - started
    return {
      rps: (count * 1000) / elapsed,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      cpuUs: cpuPerRequest(cpu, count)
    }
  })

/**
 * The tracers of the traced rows: `@effect/opentelemetry`'s bridge, or `effect-aifs/otel`'s (as it comes, and with
 * the HTTP spans' header attributes it leaves out by default).
 */
type Traced = "NodeSdk" | "effect-aifs/otel" | "effect-aifs/otel, httpHeaders" | "effect-aifs/otel, nested folded"

export const run = async (): Promise<Report> => {
  const { AifsOtel, Chat, Node } = await published()
  const baseline = baselineCheckout === undefined ? undefined : await published(baselineCheckout)
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
  const runs: Record<string, Array<{ sequential: Measure; concurrent: Measure }>> = {}
  const record = (name: string, figures: { sequential: Measure; concurrent: Measure }) => {
    runs[name] = [...(runs[name] ?? []), figures]
  }
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

    const promised = async (name: string, send: Send) => {
      await within(stepLimitMs, `overhead ${name}`, measure(send, warmup, 8))
      record(name, {
        sequential: await within(stepLimitMs, `overhead ${name}`, measure(send, sequentialCount, 1)),
        concurrent: await within(stepLimitMs, `overhead ${name}`, measure(send, concurrentCount, inFlight))
      })
    }

    // effect-aifs as users run it (limiter on, with limits far above the load; retries on) and bare (no limiter,
    // no retries); with --profile, the sequential loop of each again under the CPU profiler
    // tracing on: the OpenTelemetry SDK for Effect, every span batched to an exporter that drops them (what an
    // app exporting traces pays in this process, without the collector's network)
    const dropping: SpanExporter = { export: (_, done) => done({ code: 0 }), shutdown: () => Promise.resolve() }
    // the same through `effect-aifs/otel`'s tracer (no hook around every step, arrays as arrays)
    const configuration = () => ({
      resource: { serviceName: "bench" },
      spanProcessor: new BatchSpanProcessor(dropping)
    })
    const tracers: Record<Traced, Layer.Layer<Resource.Resource>> = {
      NodeSdk: NodeSdk.layer(configuration),
      "effect-aifs/otel": AifsOtel!.layer(configuration),
      "effect-aifs/otel, httpHeaders": AifsOtel!.layer(configuration, { httpHeaders: true }),
      "effect-aifs/otel, nested folded": AifsOtel!.layer(configuration, { nestedClientSpans: false })
    }
    const ourRow = (
      options: Omit<Parameters<typeof Node.layer>[0], "apiKey" | "baseUrl"> & { traced?: Traced },
      modules: { readonly Chat: typeof Chat; readonly Node: typeof Node } = { Chat, Node }
    ) => {
      const { traced, ...rest } = options
      const client = modules.Node.layer({ apiKey, baseUrl, ...rest })
      const layer = traced === undefined ? client : Layer.provideMerge(client, tracers[traced])
      return Effect.gen(function*() {
        const chat = yield* modules.Chat.Chat
        const send = chat.create(params)
        yield* measureEffect(send, warmup, 8)
        const sequential = yield* measureEffect(send, sequentialCount, 1)
        const concurrent = yield* measureEffect(send, concurrentCount, inFlight)
        return { sequential, concurrent }
      }).pipe(Effect.provide(layer), Effect.timeout(2 * stepLimitMs))
    }
    // the defaults, with the model's limits far above the load (an unknown plan would be probed)
    const defaults = { rateLimiter: { limits: { [params.model]: { rpm: 100_000_000, tpm: 100_000_000_000 } } } }
    const ourOptions = {
      "effect-aifs": { maxRetries: 0, rateLimiter: false },
      "effect-aifs (defaults)": defaults,
      "effect-aifs (defaults, OpenTelemetry)": { ...defaults, traced: "NodeSdk" },
      "effect-aifs (defaults, effect-aifs/otel)": { ...defaults, traced: "effect-aifs/otel" },
      "effect-aifs (defaults, effect-aifs/otel, httpHeaders)": { ...defaults, traced: "effect-aifs/otel, httpHeaders" },
      "effect-aifs (defaults, effect-aifs/otel, nestedClientSpans: false)": {
        ...defaults,
        traced: "effect-aifs/otel, nested folded"
      }
    } as const
    // the stack this client is built on, alone: @effect/platform's HttpClient over undici, the JSON parsed, nothing
    // else (no decoding, retries, limiter or span of its own): the floor for any client on it
    const platformSend = Effect.map(HttpClient.HttpClient, (client) =>
      Effect.scoped(
        Effect.flatMap(
          client.execute(
            HttpClientRequest.post(`${baseUrl}/chat/completions`).pipe(
              HttpClientRequest.bearerToken(apiKey),
              HttpClientRequest.bodyUnsafeJson(params)
            )
          ),
          (response) => response.json
        )
      ))
    if (profile) {
      // the Effect steps of one request: the fiber runtime's share of its cost, steady however busy the machine is
      const steps: Array<Array<string>> = []
      const countSteps = (name: string, send: Effect.Effect<unknown, unknown>) =>
        Effect.map(stepsOf(send, 200), (counted) => {
          steps.push([name, thousands(counted.steps), fixed(counted.fibers, 2)])
        })
      await Effect.runPromise(
        Effect.flatMap(
          platformSend,
          (send) => Effect.zipRight(measureEffect(send, warmup, 1), countSteps("@effect/platform HttpClient", send))
        ).pipe(
          Effect.provide(NodeHttpClient.layerUndici)
        )
      )
      for (const [name, options] of Object.entries(ourOptions)) {
        const loop = Effect.gen(function*() {
          const send = (yield* Chat.Chat).create(params)
          yield* measureEffect(send, warmup, 1)
          yield* countSteps(name, send)
          // on this fiber's runtime: `Effect.runPromise` would run the loop without the layer's tracer
          const runtime = yield* Effect.runtime<never>()
          return yield* Effect.promise(() =>
            profiled(`${name}, sequential`, () => Runtime.runPromise(runtime, measureEffect(send, sequentialCount, 1)))
          )
        })
        const { traced, ...rest } = options as typeof options & { traced?: Traced }
        const client = Node.layer({ apiKey, baseUrl, ...rest })
        await Effect.runPromise(
          loop.pipe(Effect.provide(traced === undefined ? client : Layer.provideMerge(client, tracers[traced])))
        )
      }
      console.log("\n-- Effect steps and fibers per request (one at a time, 200 requests) --")
      console.log(textTable(["client", "steps", "fibers"], steps))
      // what tracing costs per step: `@effect/opentelemetry`'s tracer wraps every step inside a span in its hook
      const cost = await stepCost(tracers.NodeSdk)
      const ours = await stepCost(tracers["effect-aifs/otel"])
      console.log("\n-- one Effect step inside a span, µs (200,000 steps, median of 7) --")
      console.log(textTable(["tracer", "µs per step"], [
        ["Effect's own", fixed(cost.native, 3)],
        ["`NodeSdk.layer` (the traced row's)", fixed(cost.traced, 3)],
        ["`effect-aifs/otel`'s `layer`", fixed(ours.traced, 3)]
      ]))
    }

    const platform = Effect.gen(function*() {
      const send = yield* platformSend
      yield* measureEffect(send, warmup, 8)
      const sequential = yield* measureEffect(send, sequentialCount, 1)
      const concurrent = yield* measureEffect(send, concurrentCount, inFlight)
      return { sequential, concurrent }
    }).pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.timeout(2 * stepLimitMs))
    // every client in each round, the median of the rounds: one run's figures swing with the machine's other work
    // and the JIT's state, the median of a few does less
    for (let round = 0; round < rounds; round++) {
      await promised("raw undici", undiciSend)
      await promised("openai", openaiSend)
      // our rows in the opposite order every other round: the row that runs first warms the others
      const ours = async () => {
        const entries = Object.entries(ourOptions)
        for (const [name, options] of round % 2 === 0 ? entries : entries.reverse()) {
          record(name, await Effect.runPromise(ourRow(options)))
        }
      }
      const baselines = async () => {
        if (baseline === undefined) return
        const { "effect-aifs": bare, "effect-aifs (defaults)": defaults } = ourOptions
        record("effect-aifs (baseline)", await Effect.runPromise(ourRow(bare, baseline)))
        record("effect-aifs (defaults, baseline)", await Effect.runPromise(ourRow(defaults, baseline)))
      }
      // the baseline first in every other round: the code that runs first warms what runs after it
      if (round % 2 === 0) {
        await ours()
        await baselines()
      } else {
        await baselines()
        await ours()
      }
      record("@effect/platform HttpClient", await Effect.runPromise(platform))
    }
  } finally {
    await server.close()
  }

  const medianOf = (figures: ReadonlyArray<Measure>): Measure =>
    [...figures].sort((a, b) => a.rps - b.rps)[figures.length >> 1]!
  const results = Object.fromEntries(
    Object.entries(runs).map(([name, all]) => [name, {
      sequential: medianOf(all.map((f) => f.sequential)),
      concurrent: medianOf(all.map((f) => f.concurrent))
    }])
  )
  const names = [
    "effect-aifs",
    "effect-aifs (defaults)",
    "effect-aifs (defaults, OpenTelemetry)",
    "effect-aifs (defaults, effect-aifs/otel)",
    "effect-aifs (defaults, effect-aifs/otel, httpHeaders)",
    "effect-aifs (defaults, effect-aifs/otel, nestedClientSpans: false)",
    ...(baseline === undefined ? [] : ["effect-aifs (baseline)", "effect-aifs (defaults, baseline)"]),
    "openai",
    "@effect/platform HttpClient",
    "raw undici"
  ]
  const rows = names.flatMap((name) => {
    const r = results[name]!
    return [
      [
        name,
        `sequential (${thousands(sequentialCount)})`,
        thousands(r.sequential.rps),
        fixed(r.sequential.p50, 3),
        fixed(r.sequential.p99, 3),
        fixed(r.sequential.cpuUs, 0)
      ],
      [
        name,
        `${inFlight} in flight (${thousands(concurrentCount)})`,
        thousands(r.concurrent.rps),
        fixed(r.concurrent.p50, 3),
        fixed(r.concurrent.p99, 3),
        fixed(r.concurrent.cpuUs, 0)
      ]
    ]
  })
  type Mode = "sequential" | "concurrent"
  const ratio = (ours: string, theirs: string) => (mode: Mode) => results[ours]![mode].rps / results[theirs]![mode].rps
  const both = (r: (mode: Mode) => number) => `${fixed(r("sequential"))}x | ${fixed(r("concurrent"))}x`
  const atLeast = (r: (mode: Mode) => number, floor: number) => r("sequential") >= floor && r("concurrent") >= floor
  const defaultsVsOpenai = ratio("effect-aifs (defaults)", "openai")
  const bareVsPlatform = ratio("effect-aifs", "@effect/platform HttpClient")
  const defaultsVsPlatform = ratio("effect-aifs (defaults)", "@effect/platform HttpClient")
  const tracedVsOpenai = ratio("effect-aifs (defaults, OpenTelemetry)", "openai")
  const tracedVsDefaults = ratio("effect-aifs (defaults, OpenTelemetry)", "effect-aifs (defaults)")
  const oursVsDefaults = ratio("effect-aifs (defaults, effect-aifs/otel)", "effect-aifs (defaults)")
  // two rows run side by side in every round: the median of the rounds' own ratios (of requests/s), and of the
  // requests each CPU-second serves (the inverse ratio of CPU time per request, which another process on the machine
  // moves far less than it moves requests/s)
  const medianRatio = (ours: string, theirs: string, of: (m: Measure) => number) => (mode: Mode) => {
    const ratios = runs[ours]!.map((round, i) => of(round[mode]) / of(runs[theirs]![i]![mode]))
    return ratios.sort((a, b) => a - b)[ratios.length >> 1]!
  }
  const pairedOurs = medianRatio("effect-aifs (defaults, effect-aifs/otel)", "effect-aifs (defaults)", (m) => m.rps)
  const cpuOurs = medianRatio("effect-aifs (defaults)", "effect-aifs (defaults, effect-aifs/otel)", (m) => m.cpuUs)
  const pairedHeaders = medianRatio(
    "effect-aifs (defaults, effect-aifs/otel)",
    "effect-aifs (defaults, effect-aifs/otel, httpHeaders)",
    (m) => m.rps
  )
  const foldedVsDefaults = ratio(
    "effect-aifs (defaults, effect-aifs/otel, nestedClientSpans: false)",
    "effect-aifs (defaults)"
  )
  const pairedFolded = medianRatio(
    "effect-aifs (defaults, effect-aifs/otel, nestedClientSpans: false)",
    "effect-aifs (defaults)",
    (m) => m.rps
  )
  const cpuFolded = medianRatio(
    "effect-aifs (defaults)",
    "effect-aifs (defaults, effect-aifs/otel, nestedClientSpans: false)",
    (m) => m.cpuUs
  )
  const cpuBridge = medianRatio("effect-aifs (defaults)", "effect-aifs (defaults, OpenTelemetry)", (m) => m.cpuUs)
  const ratioRow = (
    name: string,
    r: (mode: Mode) => number
  ) => [name, "ratio: sequential | 64 in flight", both(r), "", "", ""]
  return {
    name: "overhead",
    title: "Overhead per request",
    headers: ["client", "mode", "requests/s", "p50 ms", "p99 ms", "CPU µs / request"],
    rows: [
      ...rows,
      ratioRow("effect-aifs (defaults) / openai", defaultsVsOpenai),
      ratioRow("effect-aifs (defaults, OpenTelemetry) / openai", tracedVsOpenai),
      ratioRow("effect-aifs (defaults, OpenTelemetry) / effect-aifs (defaults)", tracedVsDefaults),
      ratioRow("effect-aifs (defaults, effect-aifs/otel) / effect-aifs (defaults)", oursVsDefaults),
      ratioRow("the same, the median of each round's own ratio", pairedOurs),
      ratioRow("the same, requests per CPU-second (CPU µs per request untraced / traced)", cpuOurs),
      ratioRow("effect-aifs (defaults, OpenTelemetry), requests per CPU-second / untraced", cpuBridge),
      ratioRow("effect-aifs/otel without the header attributes / with them (httpHeaders), paired", pairedHeaders),
      ratioRow("effect-aifs/otel, nestedClientSpans: false / effect-aifs (defaults)", foldedVsDefaults),
      ratioRow("the same, paired", pairedFolded),
      ratioRow("the same, requests per CPU-second", cpuFolded),
      ratioRow("effect-aifs / openai", ratio("effect-aifs", "openai")),
      ratioRow("effect-aifs / @effect/platform HttpClient", bareVsPlatform),
      ratioRow("effect-aifs (defaults) / @effect/platform HttpClient", defaultsVsPlatform),
      ratioRow("@effect/platform HttpClient / raw undici", ratio("@effect/platform HttpClient", "raw undici")),
      ...(baseline === undefined ? [] : [
        ratioRow(
          "effect-aifs (defaults) / the baseline's",
          ratio("effect-aifs (defaults)", "effect-aifs (defaults, baseline)")
        ),
        ratioRow("effect-aifs / the baseline's", ratio("effect-aifs", "effect-aifs (baseline)"))
      ])
    ],
    targets: [
      {
        target: "defaults: at least 1.25x the openai client's requests/s",
        met: atLeast(defaultsVsOpenai, 1.25),
        detail: `${both(defaultsVsOpenai)} (sequential | 64 in flight)`
      },
      {
        target: "tracing on (OpenTelemetry SDK): inside the defaults target, at least 1.25x the openai client",
        met: atLeast(tracedVsOpenai, 1.25),
        detail: `${both(tracedVsOpenai)}; ${
          both(tracedVsDefaults)
        } of the defaults row untraced (sequential | 64 in flight)`
      },
      {
        target: "tracing through `effect-aifs/otel`: at least 0.95x the defaults row untraced",
        met: atLeast(oursVsDefaults, 0.95),
        detail: `${both(oursVsDefaults)}; paired by round ${both(pairedOurs)}, by CPU time per request ` +
          `${both(cpuOurs)} (sequential | 64 in flight)`
      },
      {
        target:
          "tracing through `effect-aifs/otel` with `nestedClientSpans: false` (one client span a call): at least " +
          "0.95x the defaults row untraced",
        met: atLeast(foldedVsDefaults, 0.95),
        detail: `${both(foldedVsDefaults)}; paired by round ${both(pairedFolded)}, by CPU time per request ` +
          `${both(cpuFolded)} (sequential | 64 in flight)`
      },
      {
        target: "at least 0.6x the @effect/platform HttpClient alone",
        met: atLeast(bareVsPlatform, 0.6),
        detail: `bare ${both(bareVsPlatform)}, defaults ${both(defaultsVsPlatform)} (sequential | 64 in flight)`
      }
    ],
    how: `A node:http server on 127.0.0.1 answers every \`POST /v2/chat/completions\` at once with a fixed ` +
      `${completion.length}-byte ChatCompletion. In each of ${rounds} rounds every client sends ${warmup} warm-up requests, then ` +
      `${thousands(sequentialCount)} one after the other and ${thousands(concurrentCount)} with ${inFlight} in ` +
      `flight (workers pulling from a shared counter); each figure is the round with the median requests/s; latency from ` +
      `send to decoded answer; CPU time is the whole process's (user and system, the server's included) over the loop. ` +
      `This client's rows run in the opposite order every other round. effect-aifs, as published (\`dist/\`, built by the benchmark, not through the ` +
      `TypeScript loader): \`Chat.create\` inside one Effect program (no \`runPromise\` per request), bare with ` +
      `\`Node.layer({ rateLimiter: false, maxRetries: 0 })\`, defaults with \`Node.layer\`'s defaults (the ` +
      `limiter on, retries on) and the model's limits set far above the load (an unknown plan would be probed), ` +
      `and the same with \`@effect/opentelemetry\`'s \`NodeSdk\` batching every span to an exporter that drops ` +
      `them, and with \`effect-aifs/otel\`'s \`layer\` (the same configuration, its tracer in place of the ` +
      `bridge's; as it comes, with \`httpHeaders: true\`, which keeps the HTTP spans' header attributes, and with ` +
      `\`nestedClientSpans: false\`, which folds the HTTP client span into the call's); openai: \`maxRetries: 0\`, global \`fetch\`; raw undici: ` +
      `\`undici.request\` + \`body.json()\` (no validation); @effect/platform HttpClient: its \`HttpClient\` over ` +
      `undici (\`NodeHttpClient.layerUndici\`, as the Node layer uses), \`response.json\`, nothing else. All in one process, server included, so the server's ` +
      `cost is in every figure alike.`,
    notes: [
      "The @effect/platform row is the floor for any client on the stack this one is built on (its `HttpClient`, " +
      "which opens a span per request of its own). `npm run bench -- overhead --profile` prints where this " +
      "client's time goes, by package, and the Effect steps and fibers one request takes for each client: about " +
      "half of the time is Effect's fiber runtime running those steps (no single hot spot), then Node.js and " +
      "undici, garbage collection, and this client's own code (about a tenth: the limiter's admission, the token " +
      "estimate, parsing and decoding the answer)."
    ]
  }
}
