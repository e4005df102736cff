/**
 * The measured side of the memory benchmark (bench/memory.ts starts it): the client as published (`dist/`, no
 * TypeScript loader), alone in its process. Forks BENCH_MEMORY_REQUESTS `Chat.create` calls against the emulator
 * at BENCH_BASE_URL with BENCH_KEY through a limiter with a one-hour window, samples the resident memory, then
 * interrupts them all; prints its figures as one JSON line. With BENCH_MEMORY_PROFILE set, it then measures where a
 * waiting call's heap comes from (V8's sampling heap profiler) for 2,000 more waiting calls and for the floor.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { Session } from "node:inspector/promises"
import * as Node from "../dist/esm/layers/Node.js"
import { RateLimiter } from "../dist/esm/layers/RateLimiter.js"
import * as Chat from "../dist/esm/services/Chat.js"

const queued = Number(process.env.BENCH_MEMORY_REQUESTS ?? 10_000)
const profiledCount = process.env.BENCH_MEMORY_PROFILE === undefined ? 0 : 2_000
const model = "Llama-3.3-70B-Instruct"
const settleLimitMs = 60_000
const collect = () => {
  globalThis.gc?.()
  globalThis.gc?.()
}

const paramsOf = (i) => ({
  model,
  messages: [{ role: "user", content: `Queued request ${i}: say something short.` }],
  max_tokens: 16
})

/**
 * The floor: a fiber holding what a `Chat.create` call holds before it reaches the client (its parameters and the
 * request built from them), suspended in one step under one frame. What a waiting call costs any Effect client.
 */
const floorWaiter = (i) => {
  const params = paramsOf(i)
  const request = HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson(params))
  return Effect.map(Effect.async((resume) => void resume), () => [params, request])
}

const range = (count) => Array.from({ length: count }, (_, i) => i)

/** Forks `count` `make(i)`, lets them suspend, collects garbage and reads `measure(count)`; interrupts them after. */
const whileSuspended = (count, make, measure, settleMs = 200) =>
  Effect.gen(function*() {
    collect()
    const read = yield* measure
    const fibers = yield* Effect.forEach(range(count), (i) => Effect.fork(make(i)), { concurrency: 1 })
    yield* Effect.sleep(Duration.millis(settleMs))
    collect()
    const result = yield* read(count)
    yield* Fiber.interruptAll(fibers)
    return result
  })

/** The live heap per fiber of `count` forked `make(i)`, each suspended. */
const heapPerFiber = (count, make) =>
  whileSuspended(
    count,
    make,
    Effect.sync(() => {
      const before = process.memoryUsage().heapUsed
      return (n) => Effect.sync(() => (process.memoryUsage().heapUsed - before) / n)
    })
  )

/**
 * Where the live heap of `count` forked `make(i)` was allocated, per fiber: V8's sampling heap profiler (a sample
 * every 64 bytes allocated, kept while the object lives), summed by the allocating frame, as
 * `[functionName, url, line, bytes]` rows.
 */
const heapByFrame = (count, make, settleMs) => {
  const session = new Session()
  const post = (method, params) => Effect.promise(() => session.post(method, params))
  const frames = new Map()
  const walk = (node) => {
    const { functionName, lineNumber, url } = node.callFrame
    if (node.selfSize > 0) {
      const key = `${functionName}\u0000${url}\u0000${lineNumber + 1}`
      frames.set(key, (frames.get(key) ?? 0) + node.selfSize)
    }
    for (const child of node.children) walk(child)
  }
  return whileSuspended(
    count,
    make,
    Effect.zipRight(
      Effect.sync(() => session.connect()),
      Effect.as(
        post("HeapProfiler.startSampling", { samplingInterval: 64 }),
        (n) =>
          Effect.map(post("HeapProfiler.getSamplingProfile"), ({ profile }) => {
            walk(profile.head)
            return [...frames].map(([key, bytes]) => [...key.split("\u0000"), bytes / n])
          })
      )
    ),
    settleMs
  ).pipe(
    Effect.ensuring(Effect.promise(() => session.post("HeapProfiler.stopSampling").finally(() => session.disconnect())))
  )
}

let peak = 0
const sample = () => {
  peak = Math.max(peak, process.memoryUsage().rss)
}
const sampler = setInterval(sample, 50)

const program = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  const limiter = yield* RateLimiter
  // one request first, so that the layers and the connection are warm in the baseline
  yield* chat.create({ model, messages: [{ role: "user", content: "warm up" }], max_tokens: 16 })
  collect()
  const baseline = process.memoryUsage().rss
  const heapBefore = process.memoryUsage().heapUsed
  peak = baseline
  const started = performance.now()
  const fibers = yield* Effect.forEach(range(queued), (i) => Effect.fork(chat.create(paramsOf(i))), { concurrency: 1 })
  // wait (bounded) until everything that can go has gone and the rest waits in line
  let waiting = 0
  const deadline = performance.now() + settleLimitMs
  while (performance.now() < deadline) {
    const buckets = yield* limiter.snapshot
    waiting = buckets.reduce((n, b) => n + b.waiting, 0)
    if (waiting >= queued - 20) break
    yield* Effect.sleep(Duration.millis(50))
  }
  const queuedMs = performance.now() - started
  yield* Effect.sleep(Duration.seconds(1))
  sample()
  const peakQueued = peak
  collect()
  const heapQueued = process.memoryUsage().heapUsed
  const interruptStarted = performance.now()
  yield* Fiber.interruptAll(fibers)
  const interruptMs = performance.now() - interruptStarted
  const left = (yield* limiter.snapshot).reduce((n, b) => n + b.waiting, 0)
  yield* Effect.sleep(Duration.millis(500))
  collect()
  const after = process.memoryUsage().rss
  const perWaiter = (heapQueued - heapBefore) / Math.max(1, waiting)
  const floorPerWaiter = yield* heapPerFiber(queued, floorWaiter)
  const profile = profiledCount === 0 ? undefined : {
    count: profiledCount,
    // the window is still full: each call waits in the limiter's line
    waiting: yield* heapByFrame(profiledCount, (i) => chat.create(paramsOf(i)), 500),
    floor: yield* heapByFrame(profiledCount, floorWaiter)
  }
  return {
    queued,
    baseline,
    peakQueued,
    perWaiter,
    floorPerWaiter,
    waiting,
    queuedMs,
    interruptMs,
    left,
    after,
    profile
  }
}).pipe(
  Effect.provide(Node.layer({
    apiKey: process.env.BENCH_KEY ?? "",
    baseUrl: process.env.BENCH_BASE_URL ?? "",
    tier: "basic",
    rateLimiter: { window: Duration.hours(1), reconcile: "actual" }
  })),
  Effect.timeout(Duration.millis(settleLimitMs * 2))
)

Effect.runPromise(program).then(
  (result) => {
    clearInterval(sampler)
    process.stdout.write(`${JSON.stringify(result)}\n`)
  },
  (error) => {
    clearInterval(sampler)
    process.stderr.write(`${String(error)}\n`)
    process.exitCode = 1
  }
)
