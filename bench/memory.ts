/**
 * Memory: 10,000 chat requests queued in the limiter at once (a fresh emulator with a one-hour window, so
 * that after the first 20 every request waits), peak resident memory sampled every 50 ms; then every request
 * is interrupted and the memory measured again.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Emulator from "../src/emulator/Emulator.js"
import * as Node from "../src/layers/Node.js"
import { RateLimiter } from "../src/layers/RateLimiter.js"
import * as Chat from "../src/services/Chat.js"
import { canCollect, collect, fixed, type Report, thousands } from "./common.js"

const queued = Number(process.env.BENCH_MEMORY_REQUESTS ?? 10_000)
const window = Duration.hours(1)
const model = "Llama-3.3-70B-Instruct"
const settleLimitMs = 60_000
const mb = (bytes: number) => bytes / (1024 * 1024)

export const run = async (): Promise<Report> => {
  let peak = 0
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage().rss)
  }
  const sampler = setInterval(sample, 50)
  try {
    const result = await Effect.runPromise(
      Effect.gen(function*() {
        const emulator = yield* Emulator.Emulator
        return yield* Effect.gen(function*() {
          const chat = yield* Chat.Chat
          const limiter = yield* RateLimiter
          // one request first, so that the layers and the connection are warm in the baseline
          yield* chat.create({ model, messages: [{ role: "user", content: "warm up" }], max_tokens: 16 })
          collect()
          const baseline = process.memoryUsage().rss
          peak = baseline
          const started = performance.now()
          const fibers = yield* Effect.forEach(
            Array.from({ length: queued }, (_, i) => i),
            (i) =>
              Effect.fork(chat.create({
                model,
                messages: [{ role: "user", content: `Queued request ${i}: say something short.` }],
                max_tokens: 16
              })),
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
          const interruptStarted = performance.now()
          yield* Fiber.interruptAll(fibers)
          const interruptMs = performance.now() - interruptStarted
          const left = (yield* limiter.snapshot).reduce((n, b) => n + b.waiting, 0)
          yield* Effect.sleep(Duration.millis(500))
          collect()
          const after = process.memoryUsage().rss
          return { baseline, peakQueued, waiting, queuedMs, interruptMs, left, after }
        }).pipe(
          Effect.provide(Node.layer({
            apiKey: emulator.keyFor("basic")!,
            baseUrl: emulator.baseUrl,
            tier: "basic",
            rateLimiter: { window, reconcile: "actual" }
          }))
        )
      }).pipe(
        Effect.scoped,
        Effect.provide(Emulator.layer({ window, port: 0 })),
        Effect.timeout(Duration.millis(settleLimitMs * 2))
      )
    )
    const { after, baseline, interruptMs, left, peakQueued, queuedMs, waiting } = result
    const gcNote = !canCollect() ? " (no --expose-gc: no forced collection)" : ""
    return {
      name: "memory",
      title: "Memory with requests queued in the limiter",
      headers: [
        "requests forked",
        "waiting in limiter",
        "RSS before MB",
        "peak RSS MB",
        "peak − before MB",
        "interrupt ms",
        "waiting after",
        `RSS after interrupt MB${gcNote}`
      ],
      rows: [[
        thousands(queued),
        thousands(waiting),
        fixed(mb(baseline), 1),
        fixed(mb(peakQueued), 1),
        fixed(mb(peakQueued - baseline), 1),
        fixed(interruptMs, 0),
        String(left),
        fixed(mb(after), 1)
      ]],
      targets: [{
        target: `peak RSS under 200 MB with ${thousands(queued)} requests queued`,
        met: mb(peakQueued) < 200 && waiting >= queued - 20,
        detail: `${fixed(mb(peakQueued), 1)} MB peak (${fixed(mb(peakQueued - baseline), 1)} MB over the baseline), ` +
          `${thousands(waiting)} waiting after ${fixed(queuedMs / 1000, 1)} s`
      }],
      how: `A fresh emulator and limiter with a one-hour window on the basic tier (20 requests per window): ` +
        `${thousands(queued)} \`Chat.create\` calls are forked at once through \`Node.layer\`; the first 20 go, the ` +
        `rest wait in the limiter (counted with \`RateLimiter.snapshot\`). \`process.memoryUsage().rss\` is sampled ` +
        `every 50 ms from before the fork until one second after all are waiting (the peak includes the ` +
        `benchmark process, the emulator in it, and each request's fiber and encoded body). Then every fiber is ` +
        `interrupted, the limiter's line checked empty, and RSS read again (RSS rarely shrinks: the heap is kept ` +
        `for reuse).`
    }
  } finally {
    clearInterval(sampler)
  }
}
