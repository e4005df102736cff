/**
 * The measured side of the memory benchmark (bench/memory.ts starts it): the client as published (`dist/`, no
 * TypeScript loader), alone in its process. Forks BENCH_MEMORY_REQUESTS `Chat.create` calls against the emulator
 * at BENCH_BASE_URL with BENCH_KEY through a limiter with a one-hour window, samples the resident memory, then
 * interrupts them all; prints its figures as one JSON line.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Node from "../dist/esm/layers/Node.js"
import { RateLimiter } from "../dist/esm/layers/RateLimiter.js"
import * as Chat from "../dist/esm/services/Chat.js"

const queued = Number(process.env.BENCH_MEMORY_REQUESTS ?? 10_000)
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

/** The live heap per fiber of `count` forked `make(i)`, each suspended; the fibers are interrupted after. */
const heapPerFiber = (count, make) =>
  Effect.gen(function*() {
    collect()
    const before = process.memoryUsage().heapUsed
    const fibers = yield* Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => Effect.fork(make(i)), {
      concurrency: 1
    })
    yield* Effect.sleep(Duration.millis(200))
    collect()
    const perFiber = (process.memoryUsage().heapUsed - before) / count
    yield* Fiber.interruptAll(fibers)
    return perFiber
  })

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
  const fibers = yield* Effect.forEach(
    Array.from({ length: queued }, (_, i) => i),
    (i) => Effect.fork(chat.create(paramsOf(i))),
    { concurrency: 1 }
  )
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
  return { queued, baseline, peakQueued, perWaiter, floorPerWaiter, waiting, queuedMs, interruptMs, left, after }
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
