/**
 * One key's budget shared by N processes (1, 2, 4, 8): each process sends its share of the work all at once, on the
 * Redis limiter store (one budget) and, side by side, on its own memory store (each process alone), against one
 * emulator that strictly enforces the basic tier over a short window and sends no rate-limit headers. Reports
 * goodput over the ideal, the 429s the server answered, Redis round trips per admitted request, and the admission
 * latency of a limiter on Redis when no wait is needed.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Redis } from "ioredis"
import { type ChildProcess, spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import * as Emulator from "../src/emulator/Emulator.js"
import * as RateLimiter from "../src/layers/RateLimiter.js"
import * as TokenEstimator from "../src/layers/TokenEstimator.js"
import * as RedisLimiterStore from "../src/redis.js"
import { startRedis } from "../test/helpers/redisServer.js"
import * as Chart from "./chart.js"
import { type Chart as Drawn, collect, fixed, percentile, type Report, type Target } from "./common.js"
import { binned, colors, watchWindows, type WindowEvent } from "./windows.js"

const windowMs = Number(process.env.BENCH_SHARED_WINDOW_MS ?? 10_000)
const total = Number(process.env.BENCH_SHARED_REQUESTS ?? 80)
const processCounts = [1, 2, 4, 8]
/** The run the chart shows. */
const charted = 4
/** The basic tier: 20 requests per window (tokens do not bind: 80 requests of ~60 tokens). */
const rpm = 20
const root = fileURLToPath(new URL("..", import.meta.url))

/** The last request cannot go before (k - 1) windows have passed, k = the windows the work needs. */
const idealMs = (Math.ceil(total / rpm) - 1) * windowMs

interface Outcome {
  readonly ok: number
  readonly failed: number
  readonly start: number
  readonly end: number
}

const worker = (env: Record<string, string>): { child: ChildProcess; ready: Promise<void>; done: Promise<Outcome> } => {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/shared-worker.ts"], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "inherit"]
  })
  const lines = createInterface({ input: child.stdout! })
  let onReady: () => void = () => {}
  let onDone: (outcome: Outcome) => void = () => {}
  const ready = new Promise<void>((resolve) => (onReady = resolve))
  const done = new Promise<Outcome>((resolve, reject) => {
    onDone = resolve
    child.once("exit", (code) => code !== 0 && reject(new Error(`a worker exited with ${code}`)))
  })
  // besides `ready` and its outcome (a JSON line), a worker's stdout has the client's log lines (the Redis store's)
  lines.on("line", (line) => {
    if (line === "ready") onReady()
    else if (line.startsWith("{")) onDone(JSON.parse(line) as Outcome)
    else process.stderr.write(`${line}\n`)
  })
  return { child, ready, done }
}

/** Script calls (one round trip each) the server has run so far. */
const scriptCalls = async (client: Redis): Promise<number> => {
  const info = await client.info("commandstats")
  return [...info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0)
}

const runOnce = (processes: number, redisUrl: string | undefined, prefix: string) =>
  Effect.scoped(Effect.gen(function*() {
    const emulator = yield* Effect.map(
      Layer.build(Emulator.layer({ window: Duration.millis(windowMs) })),
      Context.get(Emulator.Emulator)
    )
    const workers = Array.from({ length: processes }, (_, index) =>
      worker({
        BASE_URL: emulator.baseUrl,
        KEY: Emulator.keyOf("basic"),
        WINDOW_MS: String(windowMs),
        COUNT: String(total / processes),
        INDEX: String(index),
        PREFIX: prefix,
        ...(redisUrl === undefined ? {} : { REDIS_URL: redisUrl })
      }))
    yield* Effect.addFinalizer(() => Effect.sync(() => workers.forEach((w) => w.child.kill("SIGKILL"))))
    yield* Effect.promise(() => Promise.all(workers.map((w) => w.ready)))
    for (const w of workers) w.child.stdin!.write("go\n")
    const outcomes = yield* Effect.promise(() => Promise.all(workers.map((w) => w.done)))
    const stats = yield* emulator.stats
    return {
      ok: outcomes.reduce((n, o) => n + o.ok, 0),
      failed: outcomes.reduce((n, o) => n + o.failed, 0),
      elapsedMs: Math.max(...outcomes.map((o) => o.end)) - Math.min(...outcomes.map((o) => o.start)),
      rateLimited: stats.rateLimited
    }
  })).pipe(watchWindows, Effect.map(([result, windows]) => ({ ...result, windows })))

/** The floor: a script call that does nothing but read the server's time, on a plain ioredis client. */
const rawRoundTrips = async (client: Redis, samples: number) => {
  const times: Array<number> = []
  for (let i = 0; i < samples + 500; i++) {
    const started = performance.now()
    await client.eval("return redis.call('TIME')", 0)
    if (i >= 500) times.push(performance.now() - started)
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) }
}

/** `acquire` on a limiter on Redis with limits far above the load: what admission costs when nobody waits. */
const admissionLatency = (redisUrl: string, samples: number) =>
  Effect.gen(function*() {
    const limiter = yield* RateLimiter.RateLimiter
    const times: Array<number> = []
    for (let i = 0; i < samples + 500; i++) {
      const started = performance.now()
      const permit = yield* limiter.acquire({ key: "bench", model: "m", input: 100 })
      if (i >= 500) times.push(performance.now() - started)
      yield* permit.settle("unanswered")
    }
    return { p50: percentile(times, 50), p99: percentile(times, 99) }
  }).pipe(
    Effect.provide(
      RateLimiter.layerWith({ limits: { m: { rpm: 1_000_000, tpm: 1_000_000_000 } } }).pipe(
        Layer.provide(Layer.merge(RedisLimiterStore.layer(redisUrl, { prefix: "latency" }), TokenEstimator.layer))
      )
    )
  )

/** Per window of the key's from its first request: what it admitted of each process, and refused of them all. */
const perWindow = (log: ReadonlyArray<WindowEvent>) => {
  const bins = binned(log, windowMs)
  return {
    byProcess: Array.from(
      { length: charted },
      (_, p) => bins.map((bin) => bin.filter((e) => e.admitted && e.tag === String(p)).length)
    ),
    refused: bins.map((bin) => bin.filter((e) => !e.admitted).length)
  }
}

/** The chart: the same work from `charted` processes on one Redis budget and each on its own memory. */
const chart = (shared: ReadonlyArray<WindowEvent>, alone: ReadonlyArray<WindowEvent>): Drawn => {
  const runs = [
    { title: "one budget on Redis", ...perWindow(shared) },
    { title: "each process on its own memory store", ...perWindow(alone) }
  ]
  const windows = Math.max(...runs.map((r) => r.refused.length))
  const admitted = (r: (typeof runs)[number]) =>
    r.refused.map((_, i) => r.byProcess.reduce((sum, p) => sum + (p[i] ?? 0), 0))
  const yMax = Math.max(...runs.flatMap((r) => admitted(r).map((n, i) => n + r.refused[i]!)))
  const words = (r: (typeof runs)[number]) =>
    `${r.title}: ${r.refused.length} windows, at most ${Math.max(...admitted(r))} admitted and ` +
    `${Math.max(...r.refused)} answered 429 in a window, ${r.refused.reduce((a, b) => a + b, 0)} 429s in all`
  return {
    name: "shared",
    alt: `${charted} processes sharing one key of ${rpm} requests per ${windowMs / 1000} s window: each process's ` +
      "requests per window stacked against the quota, on one Redis budget and each on its own memory",
    svg: Chart.render({
      id: "shared",
      title: `${charted} processes, one key of ${rpm} requests a window: what each window admitted`,
      description:
        `${total} requests split over ${charted} processes sending at once; per ${
          windowMs / 1000
        } s window of the key from its first request, the requests the emulator admitted of each process, stacked, ` +
        `and the 429s it answered on top, against the key's quota of ${rpm}. ${words(runs[0]!)}. ${words(runs[1]!)}.`,
      columns: 2,
      panels: runs.map((r) => ({
        title: r.title,
        yLabel: "requests per window",
        xLabel: `window of the key (${windowMs / 1000} s each)`,
        windows,
        yMax,
        quota: { value: rpm, label: `quota: ${rpm} requests` },
        series: [
          ...r.byProcess.map((values, p) => ({
            name: `process ${p + 1}`,
            color: colors.processes[p % colors.processes.length]!,
            kind: "bar" as const,
            values
          })),
          { name: "answered 429", color: colors.refused, kind: "bar" as const, values: r.refused }
        ]
      }))
    })
  }
}

export const run = async (): Promise<Report> => {
  const redis = await startRedis()
  const client = new Redis(redis.url)
  try {
    const rows: Array<Array<string>> = []
    const targets: Array<Target> = []
    // first, on a quiet machine: admission when nobody waits, beside the floor of one round trip
    collect()
    const raw = await rawRoundTrips(client, 5_000)
    collect()
    const latency = await Effect.runPromise(Effect.scoped(admissionLatency(redis.url, 5_000)))
    targets.push({
      target: "admission p99 < 2 ms on loopback when no wait is needed",
      met: latency.p99 < 2,
      detail: `acquire on Redis p50 ${fixed(latency.p50, 3)} ms, p99 ${fixed(latency.p99, 3)} ms; one bare script ` +
        `call p50 ${fixed(raw.p50, 3)} ms, p99 ${fixed(raw.p99, 3)} ms (5,000 each)`
    })
    let worstTrips = 0
    let drawn: Drawn | undefined
    for (const processes of processCounts) {
      const callsBefore = await scriptCalls(client)
      const shared = await Effect.runPromise(runOnce(processes, redis.url, `bench${processes}`))
      const trips = (await scriptCalls(client) - callsBefore) / Math.max(1, shared.ok)
      worstTrips = Math.max(worstTrips, trips)
      const alone = await Effect.runPromise(runOnce(processes, undefined, ""))
      if (processes === charted) drawn = chart(shared.windows, alone.windows)
      for (
        const [store, r, perRequest] of [["Redis (one budget)", shared, fixed(trips, 2)], [
          "memory (each alone)",
          alone,
          "-"
        ]] as const
      ) {
        rows.push([
          String(processes),
          store,
          String(r.ok),
          String(r.failed),
          String(r.rateLimited),
          fixed(r.elapsedMs / 1000, 1),
          fixed(idealMs / 1000, 1),
          fixed(idealMs / r.elapsedMs, 3),
          perRequest
        ])
      }
      if (processes >= 4) {
        targets.push({
          target: `${processes} processes on Redis: ≥ 0.95 of ideal, zero 429s`,
          met: idealMs / shared.elapsedMs >= 0.95 && shared.rateLimited === 0 && shared.failed === 0,
          detail:
            `${fixed(idealMs / shared.elapsedMs, 3)} of ideal, ${shared.rateLimited} 429s, ${shared.failed} failed` +
            ` (memory stores: ${
              fixed(idealMs / alone.elapsedMs, 3)
            }, ${alone.rateLimited} 429s, ${alone.failed} failed)`
        })
      }
    }
    targets.push({
      target: "≤ 3 Redis round trips per admitted request",
      met: worstTrips <= 3,
      detail: `at most ${fixed(worstTrips, 2)} script calls per admitted request across the runs`
    })
    return {
      name: "shared",
      title: "One key shared by many processes",
      headers: [
        "processes",
        "store",
        "ok",
        "failed",
        "429s",
        "elapsed s",
        "ideal s",
        "ideal/elapsed",
        "round trips/request"
      ],
      rows,
      targets,
      charts: drawn === undefined ? [] : [drawn],
      how: `${total} chat requests (\`max_tokens\` 50) split evenly over N child processes (bench/shared-worker.ts: ` +
        "`Inference.layerHttpLimitedWith` with the defaults but the window, on `Node.httpClient`), each sending its " +
        "share at once after a common go signal, against one emulator in the bench process (basic tier: " +
        `${rpm} requests per ${windowMs / 1000} s window, an open-source model: no rate-limit headers, 429s counted ` +
        "by the emulator). \"Redis\": every process on one `RedisLimiterStore` (a redis-server on loopback started " +
        "for the run); \"memory\": each process on its own memory store. Elapsed: first send to last answer. Ideal: " +
        "(ceil(requests / rpm) − 1) × window. Round trips: the server's `EVALSHA`/`EVAL` calls during the run " +
        "(`INFO commandstats`) over the requests admitted. Latency: `RateLimiter.acquire` on the Redis store, " +
        "5,000 times in sequence after 500 warm-ups, limits far above the load, each followed by its `answered`; beside it " +
        "the floor, a bare `EVAL` of `TIME` on a plain ioredis client, measured the same way just before.",
      notes: [
        `The chart: the ${charted}-process runs, per ${windowMs / 1000} s window from the key's first request, what ` +
        "the emulator's window admitted of each process (stacked; its `SlidingWindow` reports each request to the " +
        "benchmark as it is counted or refused, and each worker names itself in a header of the benchmark's) and " +
        "the 429s it answered (on top).",
        "The processes alone finish about as fast here only because the emulator's 429s say exactly when to come " +
        "back (`retry-after`) and the retry policy waits that long: every 429 is a request refused and sent again, " +
        "counted against the key by servers that count refusals, and a server that says nothing turns them into " +
        "backoff guesses and failed lines. On Redis the same work meets none."
      ]
    }
  } finally {
    client.disconnect()
    await redis.stop()
  }
}
