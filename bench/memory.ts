/**
 * Memory: 10,000 chat requests queued in the limiter at once (a limiter with a one-hour window, so that after
 * the first 20 every request waits). The client runs as published (`dist/`, built first) alone in a child
 * process (bench/memory-client.mjs), the emulator in another; the client's peak resident memory is sampled every
 * 50 ms; then every request is interrupted and the memory measured again. `npm run bench -- memory --profile` also
 * prints where a waiting call's heap was allocated, by package and by frame, beside the floor's.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { buildPublished, fixed, markdownTable, type Report, startEmulator, textTable, thousands } from "./common.js"
import { packageOf } from "./profile.js"

const mb = (bytes: number) => bytes / (1024 * 1024)
const childLimitMs = 180_000
const profile = process.argv.includes("--profile")

/** Live heap allocated by one frame, per fiber: `[functionName, url, line, bytes]`. */
type HeapFrame = readonly [string, string, string, number]

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
  readonly profile?: {
    readonly count: number
    readonly waiting: ReadonlyArray<HeapFrame>
    readonly floor: ReadonlyArray<HeapFrame>
  }
}

/** Bytes per fiber by package, for the frames of one measurement. */
const byPackage = (frames: ReadonlyArray<HeapFrame>): Map<string, number> => {
  const packages = new Map<string, number>()
  for (const [name, url, , bytes] of frames) {
    const pkg = packageOf(url, name)
    packages.set(pkg, (packages.get(pkg) ?? 0) + bytes)
  }
  return packages
}

/**
 * Where a waiting call's live heap was allocated, by package beside the floor's (rows, with the totals), and its
 * top frames (printed).
 */
const heapProfile = ({ count, floor, waiting }: NonNullable<Figures["profile"]>) => {
  const ours = byPackage(waiting)
  const theirs = byPackage(floor)
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0)
  const bytes = (n: number | undefined) => fixed(n ?? 0, 0)
  const packages = [...new Set([...ours.keys(), ...theirs.keys()])]
    .sort((a, b) => (ours.get(b) ?? 0) - (ours.get(a) ?? 0))
    .map((pkg) => [pkg, bytes(ours.get(pkg)), bytes(theirs.get(pkg))])
    .concat([["total", bytes(total(ours)), bytes(total(theirs))]])
  const headers = ["package", "waiting `Chat.create` B", "floor B"]
  console.log(`\n-- live heap per suspended fiber by the package that allocated it (${thousands(count)} fibers) --`)
  console.log(textTable(headers, packages))
  const top = [...waiting].sort((a, b) => b[3] - a[3]).slice(0, 25).map(([name, url, line, n]) => [
    packageOf(url, name),
    `${name || "(anonymous)"} ${url.split("/").pop() ?? ""}:${line}`,
    bytes(n)
  ])
  console.log("\n-- a waiting Chat.create's live heap by the frame that allocated it --")
  console.log(textTable(["package", "frame", "B"], top))
  return { headers, packages }
}

/** Runs bench/memory-client.mjs against the emulator; its figures from the JSON line it prints. */
const measure = (root: string, emulator: { baseUrl: string; key: string }) =>
  new Promise<Figures>((resolve, reject) => {
    // profiled: no inlining, so that what a function allocates is not put down to its caller
    const flags = profile ? ["--expose-gc", "--no-turbo-inlining"] : ["--expose-gc"]
    const child = spawn(process.execPath, [...flags, "bench/memory-client.mjs"], {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
      env: {
        ...process.env,
        BENCH_BASE_URL: emulator.baseUrl,
        BENCH_KEY: emulator.key,
        ...(profile ? { BENCH_MEMORY_PROFILE: "1" } : {})
      }
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
    const profiled = result.profile === undefined ? undefined : heapProfile(result.profile)
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
        `(bench/memory-client.mjs, plain \`node --expose-gc\`; with \`--profile\`, also \`--no-turbo-inlining\`), the emulator in another (\`aifs emulator --port 0\`). A limiter with a one-hour window on the basic tier (20 requests per window): ${
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
        "(`RateLimiter.acquireWith`: the operation's, exchange's and reader's closures) and its node in the line.",
        ...(profiled === undefined ? [] : [
          "Where the live heap of a suspended fiber was allocated, by package (`--profile`: V8's sampling heap " +
          "profiler, a sample every 64 bytes, 2,000 more waiting calls and 2,000 floor fibers after the run above, " +
          "without inlining so that what a function allocates is put down to it; `bench` is the benchmark's own " +
          "fork and parameters, `node` the encoded body and the profiler's session):\n\n" +
          markdownTable(profiled.headers, profiled.packages)
        ])
      ]
    }
  } finally {
    emulator.stop()
  }
}
