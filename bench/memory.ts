/**
 * Memory: 10,000 chat requests queued in the limiter at once (a limiter with a one-hour window, so that after
 * the first 20 every request waits). The client runs as published (`dist/`, built first) alone in a child
 * process (bench/memory-client.mjs), the emulator in another; the client's peak resident memory is sampled every
 * 50 ms; then every request is interrupted and the memory measured again.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { buildPublished, fixed, type Report, startEmulator, thousands } from "./common.js"

const mb = (bytes: number) => bytes / (1024 * 1024)
const childLimitMs = 180_000

interface Figures {
  readonly queued: number
  readonly baseline: number
  readonly peakQueued: number
  readonly perWaiter: number
  readonly floorPerWaiter: number
  readonly waiting: number
  readonly queuedMs: number
  readonly interruptMs: number
  readonly left: number
  readonly after: number
}

/** Runs bench/memory-client.mjs against the emulator; its figures from the JSON line it prints. */
const measure = (root: string, emulator: { baseUrl: string; key: string }) =>
  new Promise<Figures>((resolve, reject) => {
    const child = spawn(process.execPath, ["--expose-gc", "bench/memory-client.mjs"], {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, BENCH_BASE_URL: emulator.baseUrl, BENCH_KEY: emulator.key }
    })
    let output = ""
    const timer = setTimeout(() => child.kill("SIGKILL"), childLimitMs)
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
    })
    child.once("error", reject)
    child.once("close", (code) => {
      clearTimeout(timer)
      const line = output.trim().split("\n").pop() ?? ""
      try {
        if (code !== 0) throw new Error(`exit code ${code}`)
        resolve(JSON.parse(line) as Figures)
      } catch (error) {
        reject(new Error(`bench/memory-client.mjs failed (${String(error)}): ${output.slice(-500)}`))
      }
    })
  })

export const run = async (): Promise<Report> => {
  const root = fileURLToPath(new URL("..", import.meta.url))
  // the client as published: compiled, without the TypeScript loader the benchmarks run under
  buildPublished()
  const emulator = await startEmulator("basic")
  try {
    const result = await measure(root, emulator)
    const { after, baseline, floorPerWaiter, interruptMs, left, peakQueued, perWaiter, queuedMs, waiting } = result
    const { queued } = result
    return {
      name: "memory",
      title: "Memory with requests queued in the limiter",
      headers: [
        "requests forked",
        "waiting in limiter",
        "RSS before MB",
        "peak RSS MB",
        "peak − before MB",
        "live heap per waiting request KB",
        "floor KB",
        "interrupt ms",
        "waiting after",
        "RSS after interrupt MB"
      ],
      rows: [[
        thousands(queued),
        thousands(waiting),
        fixed(mb(baseline), 1),
        fixed(mb(peakQueued), 1),
        fixed(mb(peakQueued - baseline), 1),
        fixed(perWaiter / 1024, 1),
        fixed(floorPerWaiter / 1024, 1),
        fixed(interruptMs, 0),
        String(left),
        fixed(mb(after), 1)
      ]],
      targets: [{
        target: `peak RSS under 200 MB with ${thousands(queued)} requests queued`,
        met: mb(peakQueued) < 200 && waiting >= queued - 20,
        detail: `${fixed(mb(peakQueued), 1)} MB peak (${fixed(mb(peakQueued - baseline), 1)} MB over the baseline), ` +
          `${thousands(waiting)} waiting after ${fixed(queuedMs / 1000, 1)} s`
      }, {
        target: "at most 2.5 KB of heap per waiting `Chat.create`, the caller's fiber included",
        met: perWaiter <= 2.5 * 1024,
        detail: `${fixed(perWaiter / 1024, 1)} KB; the floor, a bare fiber holding the same request, ` +
          `${fixed(floorPerWaiter / 1024, 1)} KB`
      }],
      how: `The client runs as published (\`dist/\`, built by the benchmark) alone in a child process ` +
        `(bench/memory-client.mjs, plain \`node --expose-gc\`), the emulator in another (\`aifs emulator --port 0\`). A limiter with a one-hour window on the basic tier (20 requests per window): ${
          thousands(queued)
        } ` +
        `\`Chat.create\` calls are forked at once through \`Node.layer\`; the first 20 go, the rest wait in the ` +
        `limiter (counted with \`RateLimiter.snapshot\`). \`process.memoryUsage().rss\` is sampled every 50 ms from ` +
        `before the fork until one second after all are waiting (the peak includes the process's baseline: Node.js, ` +
        `Effect and the client's modules); the live heap per waiting request is the heap ` +
        `after a forced collection, less the one before the fork, over the requests waiting. Then every fiber is ` +
        `interrupted, the limiter's line checked empty, and RSS read again (RSS rarely shrinks: the heap is kept ` +
        `for reuse).`,
      notes: [
        "The floor: the same number of fibers, each holding what a `Chat.create` call holds before it reaches the " +
        "client (its parameters and the request built from them), suspended in one `Effect.async` under one frame, " +
        "measured the same way after the waiting requests are interrupted. A forked fiber suspended on nothing takes " +
        "1.4 KB; the target lies below the floor. Over the floor, a waiting call holds four frames (the service's, the " +
        "limiter's region, one match, the suspension), the continuation the transport hands the limiter " +
        "(`RateLimiter.acquireWith`: the operation's, exchange's and reader's closures) and its node in the line."
      ]
    }
  } finally {
    emulator.stop()
  }
}
