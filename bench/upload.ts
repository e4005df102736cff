/**
 * Upload memory: a 50 MB file (generated into a temporary file) uploaded with `Files.upload` from its path to
 * the emulator, which runs in a child process so that only the client is measured. The client's resident
 * memory is sampled every 20 ms; the target is growth below the file's size (the file is streamed from disk,
 * never read whole).
 */
import * as Effect from "effect/Effect"
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Node from "../src/layers/Node.js"
import * as Files from "../src/services/Files.js"
import { fixed, type Report, sampleRss, startEmulator } from "./common.js"

const sizeMb = Number(process.env.BENCH_UPLOAD_MB ?? 50)
const mb = (bytes: number) => bytes / (1024 * 1024)

/** A file of `size` MB of JSON lines, written a megabyte at a time. */
const makeFile = (size: number): { path: string; bytes: number; remove: () => void } => {
  const dir = mkdtempSync(join(tmpdir(), "aifs-bench-upload-"))
  const path = join(dir, "upload.jsonl")
  const line = `${JSON.stringify({ messages: [{ role: "user", content: "x".repeat(990) }] })}\n`
  const block = Buffer.from(line.repeat(Math.floor((1024 * 1024) / line.length)))
  const fd = openSync(path, "w")
  let bytes = 0
  while (bytes < size * 1024 * 1024) bytes += writeSync(fd, block)
  closeSync(fd)
  return { path, bytes, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

export const run = async (): Promise<Report> => {
  const file = makeFile(sizeMb)
  const emulator = await startEmulator("standard4000")
  const rss = sampleRss(20)
  try {
    const result = await Effect.runPromise(
      Effect.gen(function*() {
        const files = yield* Files.Files
        // warm: layers, the connection, the multipart path
        yield* files.upload({ file: Files.fromBytes("{}\n", "warm.jsonl"), purpose: "fine-tune" })
        ;(globalThis as { gc?: () => void }).gc?.()
        const baseline = process.memoryUsage().rss
        rss.restart()
        const started = performance.now()
        const uploaded = yield* files.upload({ file: Files.fromPath(file.path), purpose: "fine-tune" })
        const seconds = (performance.now() - started) / 1000
        return { baseline, uploaded, seconds }
      }).pipe(Effect.provide(Node.layer({ apiKey: emulator.key, baseUrl: emulator.baseUrl, timeout: "5 minutes" })))
    )
    const peak = rss.peak()
    const growth = peak - result.baseline
    const met = result.uploaded.bytes === file.bytes && growth < file.bytes
    return {
      name: "upload",
      title: "Upload memory: a 50 MB file from its path",
      headers: ["file", "uploaded", "time", "throughput", "RSS before", "peak RSS", "growth", "growth / file"],
      rows: [[
        `${fixed(mb(file.bytes), 1)} MB`,
        `${fixed(mb(result.uploaded.bytes ?? 0), 1)} MB`,
        `${fixed(result.seconds)} s`,
        `${fixed(mb(file.bytes) / result.seconds, 1)} MB/s`,
        `${fixed(mb(result.baseline), 1)} MB`,
        `${fixed(mb(peak), 1)} MB`,
        `${fixed(mb(growth), 1)} MB`,
        `${fixed((growth / file.bytes) * 100, 1)} %`
      ]],
      targets: [{
        target: "the client's resident memory grows by less than the file's size",
        met,
        detail: `grew ${fixed(mb(growth), 1)} MB for a ${fixed(mb(file.bytes), 1)} MB file`
      }],
      how:
        "`Files.upload({ file: Files.fromPath(path), purpose: \"fine-tune\" })` through the Node layer (undici) to the " +
        "emulator started as `aifs emulator --port 0` in a child process; RSS of the client process sampled every " +
        "20 ms from just before the upload (after a warm-up upload) to its answer.",
      notes: [
        "RSS growth includes chunks already sent but not yet collected (V8 frees them lazily); it does not scale " +
        "with the file: `BENCH_UPLOAD_MB=95 npm run bench -- upload` shows the growth for a file twice as large."
      ]
    }
  } finally {
    rss.stop()
    emulator.stop()
    file.remove()
  }
}
