/**
 * Limits nobody told the client: a server that strictly enforces a sliding window per key, sends no rate-limit
 * headers (an open-source model) and answers after a latency, for keys of 45 and 300 requests per window. The
 * client runs with `tier: "auto"`, with the key's true limits configured (the right preset), with too low a preset
 * (`basic`, 20) and with too high a preset (`standard4000`, 600), each as users run it (the defaults: margin, retries),
 * from 32 workers sending for three windows. All rows run side by side, each with its own emulator.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Emulator from "../src/emulator/Emulator.js"
import * as ClientConfig from "../src/layers/ClientConfig.js"
import * as Inference from "../src/layers/Inference.js"
import * as LimiterStore from "../src/layers/LimiterStore.js"
import * as Node from "../src/layers/Node.js"
import * as RateLimiter from "../src/layers/RateLimiter.js"
import * as Chat from "../src/services/Chat.js"
import * as Chart from "./chart.js"
import { type Chart as Drawn, fixed, type Report, type Target } from "./common.js"
import { binned, colors, watchWindows, type WindowEvent } from "./windows.js"

/** The window of the emulator and of the limiter: a minute, as the service (`BENCH_LEARNING_WINDOW_MS` to change). */
const windowMs = Number(process.env.BENCH_LEARNING_WINDOW_MS ?? 60_000)
/** The server's answer time: 300 ms on a minute's window, in proportion on a shorter one. */
const latencyMs = Math.round(windowMs * 0.005)
const windows = 3
/** Workers sending at once: the CLI's default `--concurrency`. */
const workers = 32
const model = "Llama-3.3-70B-Instruct"
const keys = [45, 300] as const

type Client = "auto" | "right preset" | "too low (basic)" | "too high (standard4000)"
const clients: ReadonlyArray<Client> = ["auto", "right preset", "too low (basic)", "too high (standard4000)"]

const limiterOf = (client: Client, rpm: number): Pick<RateLimiter.Options, "tier" | "limits"> => {
  switch (client) {
    case "auto":
      return { tier: "auto" }
    case "right preset":
      return { tier: "basic", limits: { [model]: { rpm, tpm: 100_000_000 } } }
    case "too low (basic)":
      return { tier: "basic", limits: { [model]: { tpm: 100_000_000 } } }
    case "too high (standard4000)":
      return { tier: "standard4000", limits: { [model]: { tpm: 100_000_000 } } }
  }
}

interface Row {
  readonly rpm: number
  readonly client: Client
  /** Successful answers in the first window, and in the two after it. */
  readonly first: number
  readonly later: number
  /** 429s the server answered in the first window, and in the two after it. */
  readonly refusedFirst: number
  readonly refusedLater: number
  readonly failed: number
}

const runRow = (rpm: number, client: Client) =>
  Effect.scoped(Effect.gen(function*() {
    const emulator = yield* Emulator.Emulator
    yield* emulator.setChaos([{ fault: { kind: "latency", delay: Duration.millis(latencyMs) } }])
    return yield* load(rpm, client, emulator).pipe(Effect.provide(Node.layer({
      apiKey: emulator.keys[0]!.key,
      baseUrl: emulator.baseUrl,
      rateLimiter: { window: Duration.millis(windowMs), ...limiterOf(client, rpm) }
    })))
  })).pipe(
    Effect.provide(Emulator.layer({
      window: Duration.millis(windowMs),
      port: 0,
      tiers: { key: { rpm, tpm: 100_000_000 } },
      keys: [{ key: Emulator.developmentKey("key"), tier: "key" }]
    })),
    // the retries' log lines (429s met while learning) are counted, not printed
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )

/** The workers, for three windows, and what they got. */
const load = (rpm: number, client: Client, emulator: Emulator.Emulator.Service) =>
  Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const start = performance.now()
    const done: Array<number> = []
    let failed = 0
    let refusedFirst = 0
    const worker = (i: number) =>
      Effect.forever(Effect.flatMap(
        Effect.either(chat.create({
          model,
          messages: [{ role: "user", content: `worker ${i}: what is a sliding window?` }],
          max_tokens: 16
        })),
        Either.match({
          onLeft: () => Effect.sync(() => failed++),
          onRight: () => Effect.sync(() => done.push(performance.now() - start))
        })
      ))
    const firstWindow = Effect.delay(
      Effect.flatMap(emulator.stats, (stats) => Effect.sync(() => refusedFirst = stats.rateLimited)),
      Duration.millis(windowMs)
    )
    yield* Effect.all([
      Effect.forEach(Array.from({ length: workers }, (_, i) => i), worker, { concurrency: "unbounded" }).pipe(
        Effect.timeout(Duration.millis(windows * windowMs + latencyMs))
      ),
      firstWindow
    ], { concurrency: "unbounded" }).pipe(Effect.ignore)
    const refused = (yield* emulator.stats).rateLimited
    return {
      rpm,
      client,
      first: done.filter((t) => t < windowMs + latencyMs).length,
      later: done.filter((t) => t >= windowMs + latencyMs).length,
      refusedFirst,
      refusedLater: refused - refusedFirst,
      failed
    } satisfies Row
  })

const share = (n: number, of: number) => n / of

/** The chaos rows: a 30-a-window key, 3% of requests refused at random, for `chaosWindows` windows of `chaosWindowMs`. */
const chaosWindowMs = Number(process.env.BENCH_LEARNING_CHAOS_WINDOW_MS ?? 10_000)
const chaosWindows = 12
const chaosKey = 30
const chaosRate = 0.03
const chaosLatencyMs = Math.round(chaosWindowMs * 0.005)
type ChaosClient = "auto" | "right preset"

/** One window of the first chaos job, by the emulator's counter of random 429s and the limiter. */
interface ChaosWindow {
  readonly injected: number
  /** The lowest and highest request limit the limiter held in the window (none while it knew none). */
  readonly lowest: number | null
  readonly highest: number | null
}

/** A chaos row's key: one of its own, so that the windows' log tells the rows apart. */
const chaosKeyOf = (client: ChaosClient): string => Emulator.developmentKey(`chaos${client}`)

interface ChaosRow {
  readonly client: ChaosClient
  /** Answers after the first window, and the windows after it. */
  readonly later: number
  readonly refusedByWindow: number
  readonly injected: number
  /** The lowest request limit the limiter held after its first measurement, and the last. */
  readonly lowest: number | undefined
  readonly last: number | undefined
  /** Seconds a later job of 20 requests of 1,500 input tokens took, on what the first job kept. */
  readonly laterJobSeconds: number
  /** The first job, window by window (for the chart), and when it started (epoch ms, the emulator's clock). */
  readonly windows: ReadonlyArray<ChaosWindow>
  readonly startedAt: number
}

/** One chaos row: the small-request job with random 429s, then the larger job on the limits it kept. */
const chaosRow = (client: ChaosClient) =>
  Effect.scoped(Effect.gen(function*() {
    const emulator = yield* Emulator.Emulator
    const cache = yield* Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "aifs-bench-learning-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    )
    const clientOf = () =>
      Inference.layerHttpLimitedWith({
        window: Duration.millis(chaosWindowMs),
        ...(client === "auto" ? {} : { limits: { [model]: { rpm: chaosKey, tpm: 1_000_000 } } })
      }).pipe(
        Layer.provide(LimiterStore.layerMemoryCached(cache)),
        Layer.provide(Layer.mergeAll(NodeContext.layer, Node.httpClient)),
        Layer.provide(ClientConfig.layer({ apiKey: emulator.keys[0]!.key, baseUrl: emulator.baseUrl, tier: "auto" }))
      )
    // the first rule that fires wins: the random 429s first, the latency for every other request
    yield* emulator.setChaos([
      { fault: { kind: "status", status: 429 }, rate: chaosRate },
      { fault: { kind: "latency", delay: Duration.millis(chaosLatencyMs) } }
    ])
    const first = yield* chaosJob(emulator).pipe(Effect.provide(clientOf()))
    yield* emulator.setChaos([{ fault: { kind: "latency", delay: Duration.millis(chaosLatencyMs) } }])
    // later: once the server's window no longer holds the first job's requests
    yield* Effect.sleep(Duration.millis(chaosWindowMs + 1_000))
    const laterJobSeconds = yield* largerJob.pipe(Effect.provide(clientOf()))
    return { client, ...first, laterJobSeconds } satisfies ChaosRow
  })).pipe(
    Effect.provide(Emulator.layer({
      window: Duration.millis(chaosWindowMs),
      port: 0,
      chaosSeed: 11,
      tiers: { key: { rpm: chaosKey, tpm: 1_000_000 } },
      keys: [{ key: chaosKeyOf(client), tier: "key" }]
    })),
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )

/** The first job: workers sending small requests for `chaosWindows` windows, the learnt limit watched. */
const chaosJob = (emulator: Emulator.Emulator.Service) =>
  Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const limiter = yield* RateLimiter.RateLimiter
    const startedAt = Date.now()
    const start = performance.now()
    const done: Array<number> = []
    const seen: Array<{ readonly at: number; readonly limit: number }> = []
    const worker = (i: number) =>
      Effect.forever(Effect.flatMap(
        Effect.either(chat.create({ model, messages: [{ role: "user", content: `worker ${i}: hi` }], max_tokens: 16 })),
        Either.match({
          onLeft: () => Effect.void,
          onRight: () => Effect.sync(() => done.push(performance.now() - start))
        })
      ))
    const watch = Effect.forever(Effect.zipRight(
      Effect.flatMap(limiter.snapshot, (buckets) =>
        Effect.sync(() => {
          const limit = buckets[0]?.budgets.requests.limit
          if (limit !== undefined) seen.push({ at: performance.now() - start, limit })
        })),
      Effect.sleep(Duration.millis(100))
    ))
    const [, windows] = yield* Effect.all([
      Effect.all([
        Effect.forEach(Array.from({ length: workers }, (_, i) => i), worker, { concurrency: "unbounded" }),
        watch
      ], { concurrency: "unbounded" }).pipe(
        Effect.timeout(Duration.millis(chaosWindows * chaosWindowMs + chaosLatencyMs)),
        Effect.ignore
      ),
      tally(emulator, start, seen)
    ], { concurrency: "unbounded" })
    const stats = yield* emulator.stats
    const limits = seen.map((s) => s.limit)
    return {
      later: done.filter((t) => t >= chaosWindowMs + chaosLatencyMs).length,
      refusedByWindow: stats.rateLimited,
      injected: stats.faults["status"] ?? 0,
      lowest: limits.length === 0 ? undefined : Math.min(...limits),
      last: limits[limits.length - 1],
      windows,
      startedAt
    }
  })

/** At the end of each window of the first job: the random 429s the emulator counted in it, the learnt limits held. */
const tally = (
  emulator: Emulator.Emulator.Service,
  start: number,
  seen: ReadonlyArray<{ readonly at: number; readonly limit: number }>
) =>
  Effect.gen(function*() {
    const windows: Array<ChaosWindow> = []
    let before = yield* emulator.stats
    for (let k = 1; k <= chaosWindows; k++) {
      yield* Effect.suspend(() =>
        Effect.sleep(Duration.millis(Math.max(0, start + k * chaosWindowMs - performance.now())))
      )
      const after = yield* emulator.stats
      const held = seen.filter((s) => s.at >= (k - 1) * chaosWindowMs && s.at < k * chaosWindowMs).map((s) => s.limit)
      windows.push({
        injected: (after.faults["status"] ?? 0) - (before.faults["status"] ?? 0),
        lowest: held.length === 0 ? null : Math.min(...held),
        highest: held.length === 0 ? null : Math.max(...held)
      })
      before = after
    }
    return windows
  })

/** A chaos row's first job by its window's log: admitted and refused (the window full) per window from its start. */
const logged = (row: ChaosRow, log: ReadonlyArray<WindowEvent>) => {
  const end = row.startedAt + chaosWindows * chaosWindowMs
  const events = log.filter((e) => e.key === chaosKeyOf(row.client) && e.at >= row.startedAt && e.at < end)
  const bins = binned(events, chaosWindowMs, row.startedAt)
  const count = (admitted: boolean) =>
    Array.from({ length: chaosWindows }, (_, i) => (bins[i] ?? []).filter((e) => e.admitted === admitted).length)
  return { ...row, admitted: count(true), refused: count(false), injected: row.windows.map((w) => w.injected) }
}

/** The chart: the chaos rows' first job, window by window, auto beside the right preset. */
const chart = (rows: ReadonlyArray<ChaosRow>, log: ReadonlyArray<WindowEvent>): Drawn => {
  const shown = (["auto", "right preset"] as const).map((client) => logged(rows.find((r) => r.client === client)!, log))
  const yMax = Math.max(...shown.flatMap((r) => r.admitted.map((a, i) => a + r.refused[i]! + r.injected[i]!)))
  const auto = shown[0]!
  const lowest = auto.windows.map((w) => w.lowest)
  const highest = auto.windows.map((w) => w.highest)
  const list = (xs: ReadonlyArray<number | null>) => xs.map((x) => x ?? "none").join(", ")
  return {
    name: "learning",
    alt: `tier auto on a key of ${chaosKey} requests per ${chaosWindowMs / 1000} s window with 3% random 429s: ` +
      "its learnt request limit per window against the real limit, with the 429s marked, beside the right preset",
    svg: Chart.render({
      id: "learning",
      title: `A limit learnt: a key of ${chaosKey} requests a window, ${
        chaosRate * 100
      }% of requests refused at random`,
      description: `${workers} workers send back to back for ${chaosWindows} windows of ${chaosWindowMs / 1000} s; ` +
        "per window, the requests the emulator admitted, refused for the window and refused at random, and for " +
        `tier auto the highest and lowest request limit it held. Auto's 429s by the window: ` +
        `${auto.refused.join(", ")}; admitted: ${auto.admitted.join(", ")}; the highest learnt limit in each ` +
        `window: ${list(highest)}; the lowest: ${list(lowest)} (the key's: ${chaosKey}).`,
      columns: 2,
      panels: shown.map((r) => ({
        title: r.client === "auto" ? "tier auto: learns the limit" : `the right preset (${chaosKey}) configured`,
        yLabel: "requests per window",
        xLabel: `window of the job (${chaosWindowMs / 1000} s each)`,
        windows: chaosWindows,
        yMax,
        quota: { value: chaosKey, label: `the key's limit: ${chaosKey}` },
        series: [
          { name: "admitted", color: colors.admitted, kind: "bar" as const, values: r.admitted },
          { name: "429: window full", color: colors.refused, kind: "bar" as const, values: r.refused },
          { name: "429: at random", color: colors.injected, kind: "bar" as const, values: r.injected },
          ...(r.client === "auto"
            ? [
              { name: "learnt limit: highest", color: colors.learnt, kind: "line" as const, values: highest },
              { name: "lowest", color: colors.learntLow, kind: "line" as const, values: lowest }
            ]
            : [])
        ]
      }))
    })
  }
}

/** The later job: 20 requests of about 1,500 input tokens at once, which the key's quota takes in one window. */
const largerJob = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  const text = Array.from({ length: 1_500 }, () => "word").join(" ")
  const start = performance.now()
  yield* Effect.forEach(
    Array.from({ length: 20 }, (_, i) => i),
    (i) => chat.create({ model, messages: [{ role: "user", content: `${i} ${text}` }], max_tokens: 16 }),
    { concurrency: "unbounded", discard: true }
  )
  return (performance.now() - start) / 1000
}).pipe(Effect.timeout(Duration.millis(5 * chaosWindowMs)), Effect.orElseSucceed(() => Number.POSITIVE_INFINITY))

/** The chaos rows' table and targets. */
const chaosReport = (rows: ReadonlyArray<ChaosRow>) => {
  const ideal = (chaosWindows - 1) * chaosKey
  const find = (client: ChaosClient) => rows.find((r) => r.client === client)!
  const auto = find("auto")
  const right = find("right preset")
  const table = rows.map((r) => [
    `${chaosKey} (3% random 429s)`,
    r.client,
    "",
    fixed(share(r.later, ideal)),
    "",
    `${r.refusedByWindow} by the window`,
    `${r.injected} injected`,
    r.client === "auto" ? `learnt ${r.lowest ?? "-"} at lowest, ${r.last ?? "-"} last` : "",
    `later job ${fixed(r.laterJobSeconds)} s`
  ])
  const targets: Array<Target> = [
    {
      target: "3% random 429s on a 30-a-window key: auto ≥ 0.8 of the ideal after the first window",
      met: share(auto.later, ideal) >= 0.8,
      detail: `${fixed(share(auto.later, ideal))} (the right preset: ${fixed(share(right.later, ideal))})`
    },
    {
      target: "…and it never learns under 0.8 of the real limit",
      met: auto.lowest !== undefined && auto.lowest >= 0.8 * chaosKey,
      detail: `lowest ${auto.lowest ?? "none"}, last ${auto.last ?? "none"} of ${chaosKey}`
    },
    {
      target: "what it keeps never slows a later job of larger requests (20 of 1,500 tokens, all in one window)",
      met: auto.laterJobSeconds <= right.laterJobSeconds + chaosWindowMs / 10_000,
      detail: `${fixed(auto.laterJobSeconds)} s against the right preset's ${fixed(right.laterJobSeconds)} s`
    }
  ]
  return { table, targets }
}

export const run = async (): Promise<Report> => {
  const [[rows, chaosRows], log] = await Effect.runPromise(watchWindows(Effect.all([
    Effect.all(keys.flatMap((rpm) => clients.map((client) => runRow(rpm, client))), { concurrency: "unbounded" }),
    Effect.all((["auto", "right preset"] as const).map(chaosRow), { concurrency: "unbounded" })
  ], { concurrency: "unbounded" })))
  const chaos = chaosReport(chaosRows)
  const table = rows.map((r) => [
    `${r.rpm}`,
    r.client,
    fixed(share(r.first, r.rpm)),
    fixed(share(r.later, 2 * r.rpm)),
    fixed(share(r.first + r.later, windows * r.rpm)),
    `${r.refusedFirst}`,
    `${r.refusedLater}`,
    `${r.failed}`
  ])
  const find = (rpm: number, client: Client) => rows.find((r) => r.rpm === rpm && r.client === client)!
  const targets: Array<Target> = keys.flatMap((rpm) => {
    const auto = find(rpm, "auto")
    const right = find(rpm, "right preset")
    const whole = share(auto.first + auto.later, windows * rpm)
    const refused = auto.refusedFirst + auto.refusedLater
    const gap = share(right.later, 2 * rpm) - share(auto.later, 2 * rpm)
    return [
      {
        target: `${rpm}/window, auto: ≥ 0.85 of the ideal over three windows, ≤ 10 429s`,
        met: whole >= 0.85 && refused <= 10,
        detail: `${fixed(whole)} of the ideal, ${refused} 429s`
      },
      {
        target: `${rpm}/window, auto after the first window: within 0.05 of the right preset, no 429`,
        met: gap <= 0.05 && auto.refusedLater === 0,
        detail: `${fixed(share(auto.later, 2 * rpm))} against ${fixed(share(right.later, 2 * rpm))}, ` +
          `${auto.refusedLater} 429s`
      }
    ]
  })
  return {
    name: "learning",
    title: "Limits nobody told the client",
    headers: [
      "key limit / window",
      "client",
      "first window / ideal",
      "windows 2-3 / ideal",
      "three windows / ideal",
      "429s in the first",
      "429s after",
      "failed",
      "later job"
    ],
    rows: [...table.map((row) => [...row, ""]), ...chaos.table],
    targets: [...targets, ...chaos.targets],
    charts: [chart(chaosRows, log)],
    how:
      `One emulator per row, one key whose limit is the row's requests per ${
        windowMs / 1000
      } s sliding window (tokens far above use), no rate-limit headers (${model}), every answer after ${latencyMs} ms. ` +
      `The client is \`Node.layer\` with its defaults (limiter margin, retries) and the row's limiter settings: ` +
      `\`tier: "auto"\`; the key's limit configured per model (the right preset); the basic preset (20); the ` +
      `standard4000 preset (600). ${workers} workers send chat requests back to back for ${windows} windows. ` +
      `Ideal: the key's limit in every window; "windows 2-3" counts the answers after the first window. 429s are ` +
      `those the emulator answered. All rows run at once in one process (each is light: at most ` +
      `${Math.max(...keys) / (windowMs / 1000)} requests a second).`,
    notes: [
      `The chaos rows: one key of ${chaosKey} requests per ${
        chaosWindowMs / 1000
      } s window, and the emulator refuses ` +
      `${chaosRate * 100}% of requests at random with a 429 (besides the window's own), for ${chaosWindows} windows; ` +
      `each client keeps what it learns in a cache directory of its own (\`LimiterStore.layerMemoryCached\`), and a ` +
      `later job (a new client on the same directory, no random 429s, a window after the first job) sends 20 ` +
      `requests of about 1,500 input tokens ` +
      `at once, which the key's tokens (1,000,000 a window) take at once. The learnt limit is read every 100 ms. ` +
      "The chart: the first job of each chaos row, window by window from its start: what the emulator's window " +
      "admitted and refused (its `SlidingWindow` reports each request to the benchmark as it is counted or refused), " +
      "the random 429s by its counter read at each window's end, and for auto the highest and the lowest request " +
      "limit the limiter held in the window (a careful raise shows as a step up, the 429s it meets beside it).",
      "The presets are per window here (the limiter's window is the emulator's). Too high a preset loses no answer on this server only because its 429s carry a `retry-after` that the retries wait out exactly: it meets 429s in every window, each one a request sent for nothing. Too low a preset meets none and runs at its preset's share of the key, silently. `auto`'s 429s are those of the requests in flight when the first one came (the probe's ceiling, 8); after them it runs at the limit it measured, and its first careful raise comes after three calm windows, beyond this run."
    ]
  }
}
