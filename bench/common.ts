/**
 * Shared pieces of the benchmarks: the report shape, percentiles, formatting, a bounded local server, the client as published.
 */
import { execFileSync, spawn } from "node:child_process"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import type * as NodeModule from "../src/layers/Node.js"
import type * as OtelModule from "../src/otel.js"
import type * as ChatModule from "../src/services/Chat.js"

/** One target of the issue and whether this run met it. */
export interface Target {
  readonly target: string
  readonly met: boolean
  readonly detail: string
}

/** What a benchmark hands back to `bench/index.ts`. */
export interface Report {
  /** The name on the command line (`npm run bench -- goodput`). */
  readonly name: string
  readonly title: string
  readonly headers: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
  readonly targets: ReadonlyArray<Target>
  /** How it was measured, for BENCHMARKS.md. */
  readonly how: string
  /** Anything worth saying about this run. */
  readonly notes?: ReadonlyArray<string> | undefined
  /** Charts of the run (bench/chart.ts), written to docs/charts/<name>.svg and shown in its section. */
  readonly charts?: ReadonlyArray<Chart> | undefined
}

/** One chart of a report: its file name (without `.svg`), the image's alternative text, the SVG. */
export interface Chart {
  readonly name: string
  readonly alt: string
  readonly svg: string
}

/** The header a benchmark's client may set to name the sender of a request (bench/windows.ts reads it). */
export const tagHeader = "x-bench-tag"

let built = false

/** Builds the client as published (`dist/`), once per run. */
export const buildPublished = (): void => {
  if (built) return
  execFileSync("npm", ["run", "--silent", "build"], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    stdio: "inherit"
  })
  built = true
}

/**
 * The client as users run it: compiled (`dist/`, built first), not through the TypeScript loader the benchmarks run
 * under (tsx compiles with esbuild's `keepNames`, which names every function a request makes: a cost no user pays).
 */
export const published = async (checkout?: string) => {
  if (checkout === undefined) buildPublished()
  const root = checkout === undefined
    ? new URL("..", import.meta.url)
    : new URL(`file://${checkout.replace(/\/?$/, "/")}`)
  const load = <M>(path: string) => import(new URL(`dist/esm/${path}`, root).href) as Promise<M>
  const [Node, Chat, AifsOtel] = await Promise.all([
    load<typeof NodeModule>("layers/Node.js"),
    load<typeof ChatModule>("services/Chat.js"),
    // a baseline checkout may predate `effect-aifs/otel`: only this one's is measured
    checkout === undefined ? load<typeof OtelModule>("otel.js") : undefined
  ])
  return { Node, Chat, AifsOtel }
}

/** Whether the process runs with `--expose-gc` (as `npm run bench` does), so that `collect` collects. */
export const canCollect = (): boolean => (globalThis as { gc?: () => void }).gc !== undefined

/** A full garbage collection (twice: finalisers free more), when the process allows it. */
export const collect = (): void => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc !== undefined) {
    gc()
    gc()
  }
}

/** The `p`th percentile (0..100) of samples, nearest rank. */
export const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]!
}

export const fixed = (n: number, digits = 2): string => Number.isFinite(n) ? n.toFixed(digits) : "n/a"

export const thousands = (n: number): string =>
  Number.isFinite(n) ? Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",") : "n/a"

/** A plain-text table for the console. */
export const textTable = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ")
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n")
}

/** A Markdown table. */
export const markdownTable = (headers: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string =>
  [
    `| ${headers.join(" | ")} |`,
    `| ${headers.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`)
  ].join("\n")

/** A local server on 127.0.0.1, any free port; `close` ends open connections too. */
export interface LocalServer {
  readonly url: string
  readonly close: () => Promise<void>
}

export const listen = async (
  handler: (request: IncomingMessage, response: ServerResponse) => void
): Promise<LocalServer> => {
  const server: Server = createServer(handler)
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Reads and drops a request body, then calls `then`. */
export const drain = (request: IncomingMessage, then: () => void): void => {
  request.on("data", () => {})
  request.on("end", then)
}

/** Fails with a message if `promise` takes longer than `ms`: every benchmark step is bounded in time. */
export const within = <A>(ms: number, what: string, promise: Promise<A>): Promise<A> => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: still running after ${ms} ms`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}

/** A p-limit stand-in (there is no `p-limit` in the dependencies): at most `n` calls of the returned function run at once. */
export const limitConcurrency = (n: number) => {
  let active = 0
  const queue: Array<() => void> = []
  const next = () => {
    if (active < n && queue.length > 0) {
      active++
      queue.shift()!()
    }
  }
  return <A>(task: () => Promise<A>): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      queue.push(() => task().then(resolve, reject).finally(() => (active--, next())))
      next()
    })
}

/**
 * The emulator in a child process (`aifs emulator --port 0`), so that a benchmark measures the client's memory
 * alone; resolves with its base URL and the key of `tier` once it listens.
 */
export const startEmulator = (tier: "basic" | "standard4000") =>
  new Promise<{ baseUrl: string; key: string; stop: () => void }>((resolve, reject) => {
    const root = fileURLToPath(new URL("..", import.meta.url))
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli/bin.ts", "emulator", "--port", "0"], {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, AIFS_API_KEY: "" }
    })
    let output = ""
    const timer = setTimeout(() => {
      child.kill("SIGTERM")
      reject(new Error(`emulator did not start: ${output}`))
    }, 30_000)
    child.once("error", reject)
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1]
      const key = new RegExp(`${tier}\\s+(gen-\\S+)`).exec(output)?.[1]
      if (url !== undefined && key !== undefined) {
        clearTimeout(timer)
        resolve({ baseUrl: `${url}/v2`, key, stop: () => child.kill("SIGTERM") })
      }
    })
  })

/**
 * The process's peak resident memory, sampled every `intervalMs` from now until `stop`; `restart` takes the
 * peak from the current figure again (after a warm-up, say).
 */
export const sampleRss = (intervalMs: number) => {
  let peak = process.memoryUsage().rss
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage().rss)
  }
  const timer = setInterval(sample, intervalMs)
  return {
    peak: (): number => {
      sample()
      return peak
    },
    restart: (): void => {
      peak = process.memoryUsage().rss
    },
    stop: (): void => clearInterval(timer)
  }
}
