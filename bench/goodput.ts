/**
 * Goodput under a quota: 200 chat requests of mixed sizes against the emulator's basic tier with a short
 * window, sent by this client (all at once, the limiter paces them), by the `openai` client in batches of 8
 * (its default retries), and by the `openai` client behind a concurrency limiter of 8 (a p-limit stand-in).
 * Each run gets a fresh emulator, so that no window leaks from one run into the next.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Metric from "effect/Metric"
import OpenAI from "openai"
import * as Emulator from "../src/emulator/Emulator.js"
import { meterOf } from "../src/emulator/limits.js"
import { type Amounts, type Dimension, dimensions, unlimited } from "../src/internal/budgets.js"
import { hasModel } from "../src/internal/plans.js"
import * as ClientMetrics from "../src/layers/ClientMetrics.js"
import * as Node from "../src/layers/Node.js"
import type { ChatCompletion } from "../src/schemas/Chat.js"
import * as Chat from "../src/services/Chat.js"
import * as Chart from "./chart.js"
import { type Chart as Drawn, fixed, limitConcurrency, type Report, type Target, thousands } from "./common.js"
import { binned, colors, sumOf, watchWindows, type WindowEvent } from "./windows.js"

/** The window of the emulator and of our limiter: the example, 6 s (`BENCH_GOODPUT_WINDOW_MS` to change). */
const windowMs = Number(process.env.BENCH_GOODPUT_WINDOW_MS ?? 6000)
/**
 * The limits per model, as the emulator meters them: Llama on a basic key, by its row of the basic plan's table (20
 * requests, 13,800 input and 5,000 output tokens, no combined budget); gpt-4o, which a basic key may not use (404), on
 * a key of the seed quota (20 requests, 18,750 tokens combined: what `meterOf` gives a model basic's table lacks). A
 * budget not metered is `unlimited`.
 */
const limitsOf = (model: string): Amounts => meterOf("basic", undefined, model).limits
/** The tier of the key a model's runs use: basic for its own models, the seed quota's for the others. */
const tierOf = (model: string): string => hasModel("basic", model) ? "basic" : "seed"
const requestCount = Number(process.env.BENCH_GOODPUT_REQUESTS ?? 200)
/** Our limiter's safety margin: loopback latency is a few ms, the margin covers the send-to-count delay. */
const marginMs = 50
const concurrency = 8
/** No run may take longer than this. */
const runLimitMs = 180_000
const models = ["Llama-3.3-70B-Instruct", "gpt-4o"] as const

const vocabulary = [
  "quota",
  "window",
  "token",
  "request",
  "limiter",
  "budget",
  "stream",
  "answer",
  "model",
  "latency",
  "throughput",
  "header",
  "retry",
  "server",
  "client",
  "effect",
  "fiber",
  "schedule",
  "sliding",
  "reserve"
]

/** Deterministic requests of mixed sizes: prompts of 20 to 884 words, `max_tokens` from 32 to 512. */
interface Params {
  model: string
  messages: Array<{ role: "user"; content: string }>
  max_tokens: number
}

const workload = (model: string, count = requestCount): Array<Params> =>
  Array.from({ length: count }, (_, i) => {
    const words = 20 + ((i * 7919) % 97) * 9
    const text = Array.from({ length: words }, (_, w) => vocabulary[(i * 31 + w * 7) % vocabulary.length]).join(" ")
    return {
      model,
      messages: [{ role: "user" as const, content: `Request ${i}: summarise ${text}` }],
      max_tokens: [32, 64, 128, 256, 512][(i * 3) % 5]!
    }
  })

interface Run {
  readonly model: string
  readonly client: string
  readonly ok: number
  readonly failures: number
  readonly rateLimited: number
  /** Prompt and completion tokens the emulator charged (successful requests). */
  readonly input: number
  readonly output: number
  readonly elapsedMs: number
  /** The budgets the run was metered by, when not the basic key's for its model. */
  readonly limits?: Amounts | undefined
  /** What the emulator charged each successful request, in the order they were sent. */
  readonly charged: ReadonlyArray<{ readonly input: number; readonly output: number }>
  /** What the emulator's window admitted and refused, request by request (for the chart). */
  readonly windows?: ReadonlyArray<WindowEvent> | undefined
}

/**
 * The output-bound run: a key of 600 requests, 150,000 input and 2,400 output tokens a window (the client told the
 * same, as a plan's table tells it), short prompts and `max_tokens` 24, which the emulator's answers fill: about 100
 * answers a window fit the output budget, against 600 requests.
 */
const outputBound = { rpm: 600, itpm: 150_000, otpm: 2_400 } as const
const outputBoundCount = Number(process.env.BENCH_GOODPUT_OUTPUT_REQUESTS ?? 1000)
const outputBoundLimits: Amounts = {
  requests: outputBound.rpm,
  input: outputBound.itpm,
  output: outputBound.otpm,
  tokens: unlimited
}

/**
 * The least time the quota allows between the first and the last send: with `k` = the windows the work
 * needs (the most, over every metered budget, of `ceil(work / limit)`: requests, input, output, combined tokens),
 * the last request cannot go before `(k - 1)` windows have passed (any `k - 1` back-to-back windows hold at most
 * `(k - 1) * limit` of each budget), and the first requests go at once. So `ideal = (k - 1) * window`.
 */
const idealMs = (r: Run): number => {
  const limits = r.limits ?? limitsOf(r.model)
  const work: Amounts = { requests: r.ok, input: r.input, output: r.output, tokens: r.input + r.output }
  const windows = Math.max(...dimensions.map((d) => limits[d] === unlimited ? 1 : Math.ceil(work[d] / limits[d])))
  return (windows - 1) * windowMs
}

/**
 * The least time a client that sends in order can take: the work, request by request in the order it was sent, on an
 * exact sliding window of every metered budget, each request going as soon as it fits (no latency, no margin). With
 * requests of different sizes the window cannot always be filled to its limit without sending a later, smaller
 * request first, so this is above `idealMs` wherever tokens bind.
 */
const inOrderMs = (r: Run): number => {
  const limits = r.limits ?? limitsOf(r.model)
  const entries: Array<{ readonly at: number; readonly cost: Amounts }> = []
  let now = 0
  for (const { input, output } of r.charged) {
    const cost: Amounts = { requests: 1, input, output, tokens: input + output }
    for (let step = 0; step < 10_000; step++) {
      const live = entries.filter((e) => e.at + windowMs > now)
      const fits = dimensions.every((d) => live.reduce((n, e) => n + e.cost[d], 0) + cost[d] <= limits[d])
      if (fits || live.length === 0) break
      now = Math.min(...live.map((e) => e.at + windowMs))
    }
    entries.push({ at: now, cost })
  }
  return now
}

/** The budget a run's work used most of, over the windows it needs. */
const binding = (r: Run): Dimension => {
  const limits = r.limits ?? limitsOf(r.model)
  const work: Amounts = { requests: r.ok, input: r.input, output: r.output, tokens: r.input + r.output }
  return dimensions.reduce((a, d) => work[d] / limits[d] > work[a] / limits[a] ? d : a)
}

/** A run's tokens, input and output together. */
const tokensOf = (r: Run): number => r.input + r.output

/** A budget's limit as the report says it. */
const limitText = (limits: Amounts, d: Dimension, noun: string): Array<string> =>
  limits[d] === unlimited ? [] : [`${thousands(limits[d])} ${noun}`]

/** A model's limits per window, as the report says them. */
const describeLimits = (model: string): string => {
  const limits = limitsOf(model)
  return [
    ...limitText(limits, "requests", "requests"),
    ...limitText(limits, "input", "input tokens"),
    ...limitText(limits, "output", "output tokens"),
    ...limitText(limits, "tokens", "tokens combined")
  ].join(", ")
}

/** A run on a fresh emulator, with what its window admitted and refused. */
const withEmulator = <E, R>(f: (emulator: Emulator.Emulator.Service) => Effect.Effect<Run, E, R>) =>
  Effect.scoped(Effect.flatMap(Emulator.Emulator, f)).pipe(
    Effect.provide(Emulator.layer({
      window: Duration.millis(windowMs),
      port: 0,
      tiers: { seed: Emulator.fallbackQuotas.basic }
    })),
    watchWindows,
    Effect.map(([run, windows]): Run => ({ ...run, windows }))
  )

/** The usage of each answer, in order. */
const chargedOf = (answers: ReadonlyArray<ChatCompletion>) =>
  answers.map((a) => ({ input: a.usage?.prompt_tokens ?? 0, output: a.usage?.completion_tokens ?? 0 }))

const runOurs = (model: string, count = requestCount) =>
  withEmulator((emulator) =>
    Effect.gen(function*() {
      const chat = yield* Chat.Chat
      const before = (yield* Metric.value(ClientMetrics.rateLimited)).count
      const started = performance.now()
      const results = yield* Effect.forEach(
        workload(model, count),
        (params) => Effect.either(chat.create(params)),
        { concurrency: "unbounded" }
      )
      const elapsedMs = performance.now() - started
      const after = (yield* Metric.value(ClientMetrics.rateLimited)).count
      const ok = results.filter(Either.isRight)
      return {
        model,
        client: "effect-aifs (unbounded, limiter)",
        ok: ok.length,
        failures: results.length - ok.length,
        rateLimited: Number(after - before),
        input: ok.reduce((n, r) => n + (r.right.usage?.prompt_tokens ?? 0), 0),
        output: ok.reduce((n, r) => n + (r.right.usage?.completion_tokens ?? 0), 0),
        elapsedMs,
        charged: chargedOf(ok.map((r) => r.right))
      } satisfies Run
    }).pipe(
      Effect.provide(Node.layer({
        apiKey: emulator.keyFor(tierOf(model))!,
        baseUrl: emulator.baseUrl,
        tier: "basic",
        rateLimiter: { window: Duration.millis(windowMs), margin: Duration.millis(marginMs), reconcile: "actual" }
      }))
    )
  ).pipe(Effect.timeoutFail({ duration: runLimitMs, onTimeout: () => new Error(`goodput: ${model} ran too long`) }))

/** The output-bound run of this client: the key's budgets configured, reconciled with what the emulator charges. */
const runOutputBound = Effect.scoped(Effect.gen(function*() {
  const emulator = yield* Emulator.Emulator
  const model = models[0]
  const run = Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const before = (yield* Metric.value(ClientMetrics.rateLimited)).count
    const started = performance.now()
    const results = yield* Effect.forEach(
      Array.from({ length: outputBoundCount }, (_, i) => ({
        model,
        messages: [{ role: "user" as const, content: `Question ${i}: tell a story about a sliding window.` }],
        max_tokens: 24
      })),
      (params) => Effect.either(chat.create(params)),
      { concurrency: "unbounded" }
    )
    const elapsedMs = performance.now() - started
    const ok = results.filter(Either.isRight)
    return {
      model,
      client: "effect-aifs (output budget binds)",
      ok: ok.length,
      failures: results.length - ok.length,
      rateLimited: Number((yield* Metric.value(ClientMetrics.rateLimited)).count - before),
      input: ok.reduce((n, r) => n + (r.right.usage?.prompt_tokens ?? 0), 0),
      output: ok.reduce((n, r) => n + (r.right.usage?.completion_tokens ?? 0), 0),
      elapsedMs,
      limits: outputBoundLimits,
      charged: chargedOf(ok.map((r) => r.right))
    } satisfies Run
  })
  return yield* run.pipe(Effect.provide(Node.layer({
    apiKey: emulator.keyFor("output")!,
    baseUrl: emulator.baseUrl,
    rateLimiter: {
      window: Duration.millis(windowMs),
      margin: Duration.millis(marginMs),
      reconcile: "actual",
      limits: { [model]: outputBound }
    }
  })))
})).pipe(
  Effect.provide(Emulator.layer({
    window: Duration.millis(windowMs),
    port: 0,
    tiers: { output: outputBound },
    keys: [{ key: Emulator.developmentKey("output"), tier: "output" }]
  })),
  Effect.timeoutFail({ duration: runLimitMs, onTimeout: () => new Error("goodput: the output-bound run ran too long") })
)

const runOpenAI = (model: string, mode: "batches" | "pool", count = requestCount) =>
  withEmulator((emulator) =>
    Effect.promise(async (): Promise<Run> => {
      let rateLimited = 0
      const client = new OpenAI({
        apiKey: emulator.keyFor(tierOf(model))!,
        baseURL: emulator.baseUrl,
        fetch: async (url, init) => {
          const response = await fetch(url, init)
          if (response.status === 429) rateLimited++
          return response
        }
      })
      const one = (params: Params) =>
        client.chat.completions.create(params).then(
          (completion) => ({
            ok: true as const,
            input: completion.usage?.prompt_tokens ?? 0,
            output: completion.usage?.completion_tokens ?? 0
          }),
          () => ({ ok: false as const, input: 0, output: 0 })
        )
      const requests = workload(model, count)
      const started = performance.now()
      const results: Array<{ ok: boolean; input: number; output: number }> = []
      if (mode === "batches") {
        // "concurrency 8" as often written by hand: eight at a time, the next eight when all are done
        for (let i = 0; i < requests.length; i += concurrency) {
          results.push(...await Promise.all(requests.slice(i, i + concurrency).map(one)))
        }
      } else {
        const limit = limitConcurrency(concurrency)
        results.push(...await Promise.all(requests.map((params) => limit(() => one(params)))))
      }
      const elapsedMs = performance.now() - started
      const ok = results.filter((r) => r.ok)
      return {
        model,
        client: mode === "batches" ? "openai (batches of 8)" : "openai (limiter of 8, p-limit stand-in)",
        ok: ok.length,
        failures: results.length - ok.length,
        rateLimited,
        input: ok.reduce((n, r) => n + r.input, 0),
        output: ok.reduce((n, r) => n + r.output, 0),
        elapsedMs,
        charged: ok
      }
    })
  ).pipe(Effect.timeoutFail({ duration: runLimitMs, onTimeout: () => new Error(`goodput: ${model} ran too long`) }))

/** A run's window, per window of the run: admitted and refused, in requests or in one token budget. */
const perWindow = (r: Run, d: Dimension) => {
  const bins = binned(r.windows ?? [], windowMs)
  const sum = (admitted: boolean) =>
    bins.map((bin) => sumOf(bin.filter((e) => e.admitted === admitted), (e) => e.cost[d]))
  return { admitted: sum(true), refused: sum(false) }
}

const nouns: { readonly [D in Dimension]: string } = {
  requests: "requests",
  input: "input tokens",
  output: "output tokens",
  tokens: "tokens"
}

/** The panels of one budget, one per run, on one scale. */
const budgetPanels = (shown: ReadonlyArray<{ run: Run; title: string }>, d: Dimension): Array<Chart.Panel> => {
  const limit = limitsOf(shown[0]!.run.model)[d]
  const series = shown.map(({ run }) => perWindow(run, d))
  const windows = Math.max(...series.map((s) => s.admitted.length))
  const yMax = Math.max(...series.flatMap((s) => s.admitted.map((a, i) => a + s.refused[i]!)))
  return shown.map(({ title }, i) => ({
    title: `${title}: ${nouns[d]}`,
    yLabel: `${nouns[d]} per window`,
    xLabel: `window of the run (${windowMs / 1000} s each)`,
    windows,
    yMax,
    quota: { value: limit, label: `quota: ${thousands(limit)} ${nouns[d]}` },
    series: [
      { name: "admitted", color: colors.admitted, kind: "bar", values: series[i]!.admitted },
      {
        name: d === "requests" ? "answered 429" : "asked by requests answered 429",
        color: colors.refused,
        kind: "bar",
        values: series[i]!.refused
      }
    ]
  }))
}

/** What a run's window held at most and refused, in words. */
const summary = (r: Run, d: Dimension): string => {
  const requests = perWindow(r, "requests")
  const tokens = perWindow(r, d)
  return `${r.client}: ${requests.admitted.length} windows, at most ${Math.max(...requests.admitted)} requests and ` +
    `${thousands(Math.max(...tokens.admitted))} ${nouns[d]} admitted in a window, ` +
    `${sumOf(requests.refused, (n) => n)} requests answered 429`
}

/** The chart: the headerless model's batch, with this client's limiter and with openai's concurrency limit of 8. */
const chart = (runs: ReadonlyArray<Run>): Drawn => {
  const model = models[0]
  const find = (prefix: string) => runs.find((r) => r.model === model && r.client.startsWith(prefix))!
  const ours = find("effect-aifs")
  const theirs = find("openai (limiter")
  const d = binding(ours)
  const shown = [
    { run: ours, title: "effect-aifs with its limiter" },
    { run: theirs, title: `openai, ${concurrency} at a time, no limiter` }
  ]
  const limits = limitsOf(model)
  return {
    name: "goodput",
    alt: `${model}, ${requestCount} requests: requests and ${nouns[d]} per ${windowMs / 1000} s window against the ` +
      "quota, effect-aifs with its limiter beside openai with a concurrency limit of 8",
    svg: Chart.render({
      id: "goodput",
      title: `${requestCount} requests at once to ${model} on a basic key, window by window`,
      description: `The emulator's ${windowMs / 1000} s windows of one key (${thousands(limits.requests)} requests ` +
        `and ${thousands(limits[d])} ${nouns[d]} a window, the budget that binds this work), window by window. ` +
        `${summary(ours, d)}. ` +
        `${summary(theirs, d)}.`,
      columns: 2,
      panels: [...budgetPanels(shown, "requests"), ...budgetPanels(shown, d)]
    })
  }
}

export const run = async (): Promise<Report> => {
  // warm the process (JIT, modules) on throwaway emulators: the timed runs then start with fresh quotas and
  // fresh clients, but not with cold code (a cold first burst reaches the server up to ~0.8 s late)
  await Effect.runPromise(runOurs(models[0], 10))
  await Effect.runPromise(runOpenAI(models[0], "pool", 10))
  const runs: Array<Run> = []
  for (const model of models) {
    const makes: ReadonlyArray<Effect.Effect<Run, unknown>> = [
      runOurs(model),
      runOpenAI(model, "batches"),
      runOpenAI(model, "pool")
    ]
    for (const make of makes) {
      const result = await Effect.runPromise(make)
      console.error(`  goodput ${result.model} ${result.client}: ${fixed(result.elapsedMs / 1000, 1)} s`)
      runs.push(result)
    }
  }
  const bound = await Effect.runPromise(runOutputBound)
  console.error(`  goodput ${bound.client}: ${fixed(bound.elapsedMs / 1000, 1)} s`)
  runs.push(bound)
  const rows = runs.map((r) => {
    const ideal = idealMs(r)
    const inOrder = inOrderMs(r)
    return [
      r.model,
      r.client,
      String(r.ok),
      String(r.failures),
      String(r.rateLimited),
      thousands(tokensOf(r)),
      fixed(r.elapsedMs / 1000, 1),
      fixed(ideal / 1000, 1),
      fixed(ideal / r.elapsedMs, 3),
      fixed(inOrder / 1000, 1),
      fixed(inOrder / r.elapsedMs, 3)
    ]
  })
  const ours = (model: string) => runs.find((r) => r.model === model && r.client.startsWith("effect-aifs"))!
  const headerless = ours(models[0])
  const header = ours(models[1])
  const ratio = (r: Run) => idealMs(r) / r.elapsedMs
  const inOrderRatio = (r: Run) => inOrderMs(r) / r.elapsedMs
  const targets: Array<Target> = [
    {
      target: `${models[0]} (no headers): ≥ 0.95 of the ideal in order, zero 429s`,
      met: inOrderRatio(headerless) >= 0.95 && headerless.rateLimited === 0 && headerless.failures === 0,
      detail: `${fixed(inOrderRatio(headerless), 3)} of the ideal in order (${fixed(ratio(headerless), 3)} of the ` +
        `bound), ${headerless.rateLimited} 429s, ${headerless.failures} failures`
    },
    {
      target: "a run where the output budget binds: ≥ 0.95 of ideal, zero 429s",
      met: binding(bound) === "output" && ratio(bound) >= 0.95 && bound.rateLimited === 0 && bound.failures === 0,
      detail: `${fixed(ratio(bound), 3)} of ideal, ${bound.rateLimited} 429s, ${bound.failures} failures; the ` +
        `binding budget: ${binding(bound)} (${thousands(bound.output)} output tokens for ${bound.ok} answers)`
    },
    {
      target: `${models[1]} (headers): ≤ 1 429 per run`,
      met: header.rateLimited <= 1 && header.failures === 0,
      detail: `${header.rateLimited} 429s, ${fixed(ratio(header), 3)} of ideal, ${header.failures} failures`
    }
  ]
  return {
    name: "goodput",
    title: "Goodput under a quota",
    headers: [
      "model",
      "client",
      "ok",
      "failed",
      "429s",
      "tokens charged",
      "elapsed s",
      "ideal s",
      "ideal/elapsed",
      "in order s",
      "in order/elapsed"
    ],
    rows,
    targets,
    charts: [chart(runs)],
    how: `A fresh emulator per run (per ${windowMs / 1000} s window: ${models[0]} on a basic key, ` +
      `${describeLimits(models[0])} by the plan's table, ${models[1]} ${describeLimits(models[1])} on a key of the ` +
      `seed quota, as in the issue's example), ${requestCount} chat requests of mixed sizes ` +
      `(deterministic prompts of 20 to 884 words, \`max_tokens\` 32 to 512). effect-aifs: \`Node.layer\` with ` +
      `\`rateLimiter: { window, margin: ${marginMs} ms, reconcile: "actual" }\`, all requests forked at once; 429s ` +
      `from \`ClientMetrics.rateLimited\`. openai: default retries (2), either in batches of ${concurrency} ` +
      `(\`Promise.all\` per batch) or through a ${concurrency}-slot concurrency limiter written in ` +
      `bench/common.ts as a stand-in for \`p-limit\` (not a dependency); 429s counted by a \`fetch\` wrapper. ` +
      `Before the timed runs, 10 requests per client kind warm the process up on a throwaway emulator. Ideal time: with k = the most, over the model's metered budgets, of ceil(work / limit) windows of ` +
      `work (requests, input, output, combined tokens), the last request cannot be sent before (k − 1) windows ` +
      `have passed, so ideal = (k − 1) × window, a lower bound; requests and tokens are those the emulator ` +
      `charged (successful requests, \`usage.prompt_tokens\` and \`usage.completion_tokens\`).`,
    notes: [
      `The chart: what the emulator's window admitted and refused in each ${windowMs / 1000} s window from the ` +
      `run's first request (its \`SlidingWindow\` reports each request to the benchmark as it is counted or refused), ` +
      `for ${models[0]} with this client and with openai behind its concurrency limit of ${concurrency}.`,
      "Two ideals. The bound (`ideal`): (k − 1) windows, k the windows the work needs in its most used budget, as if " +
      "every window could be filled to its limit. In order (`in order`): the same work sent in the order it was, each " +
      "request as soon as every budget has room on an exact sliding window (no latency, no margin): where requests " +
      "of different sizes share a token budget, a window often cannot take the next request whole, and only a client " +
      "that sends a later, smaller one first (the openai rows do, by retrying after 429s in any order) can come " +
      "nearer the bound. Since the plans' tables, Llama-3.3-70B-Instruct on basic is metered by its input budget " +
      "(13,800 a window for prompts of up to 900 tokens), where the two part: this client keeps its callers in order.",
      `The output-bound run: a key of ${outputBound.rpm} requests, ${thousands(outputBound.itpm)} input and ` +
      `${thousands(outputBound.otpm)} output tokens a window, ${outputBoundCount} requests with short prompts and ` +
      "`max_tokens` 24 (the emulator's answers run to the cap), this client with the key's budgets configured and, " +
      "as the other rows, `reconcile: \"actual\"` (the emulator charges the answer, not the cap): the output " +
      "budget binds.",
      "openai failures are requests that still met a 429 after its 2 retries; their tokens are not charged, " +
      "so their ideal is computed on less work."
    ]
  }
}
