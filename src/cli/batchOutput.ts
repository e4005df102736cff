/**
 * A batch's output file, as a log: each result is appended as one whole line with one `write`, and a later line
 * for a `custom_id` replaces the earlier ones (a rerun retries a failed request and appends its new result). So a
 * crash at any point (even `kill -9`) leaves a file a rerun can read: at most a torn last line, which the next run
 * cuts first. When a run ends, `compact` rewrites the file to one line per `custom_id`, the latest, into a side file
 * renamed over the output at once: a crash during it leaves the output as it was (and a side file the next
 * compaction replaces). Every pass streams the file: memory grows with the number of ids, never with the file.
 *
 * An output that is not a regular file (a pipe, `/dev/stdout`, a device) is only appended to: nothing to resume
 * from, nothing to compact.
 *
 * @since 0.2.0
 */
import * as Chunk from "effect/Chunk"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import { StringDecoder } from "node:string_decoder"

/**
 * The output could not be read or written (a full disk, a path that is not writable): the run ends at once, and
 * what was written before stays.
 *
 * @since 0.2.0
 * @category errors
 */
export class OutputError extends Data.TaggedError("OutputError")<{ readonly message: string }> {}

/**
 * The message of a failure from node:fs (Error objects; anything else as a string).
 *
 * @since 0.2.0
 * @category errors
 */
export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const failed = (what: string, path: string) => (error: unknown) =>
  new OutputError({ message: `cannot ${what} ${path}: ${messageOf(error)}` })

/**
 * What an output holds: the `custom_id`s whose latest line succeeded, those whose latest line failed, and how many
 * lines a later one replaces (what `compact` would drop).
 *
 * @since 0.2.0
 * @category models
 */
export interface Contents {
  readonly succeeded: ReadonlySet<string>
  readonly failed: ReadonlySet<string>
  readonly replaced: number
}

/** The `custom_id` of a line, "" when it has none (never a valid one: a batch line needs a non-empty id). */
export const customIdOf = (line: string): string => {
  try {
    const id = (JSON.parse(line) as { custom_id?: unknown } | null)?.custom_id
    return typeof id === "string" ? id : ""
  } catch {
    return ""
  }
}

/** A result line's `custom_id` ("" when it has none) and whether it is an error line (`error` not null). */
const resultOf = (line: string): { readonly id: string; readonly failed: boolean } => {
  try {
    const result = (JSON.parse(line) ?? {}) as { custom_id?: unknown; error?: unknown; response?: unknown }
    // a result line has a response or an error: a request line (an input given as the output) is not one
    const isResult = typeof result.custom_id === "string" && ("response" in result || "error" in result)
    return {
      id: isResult ? result.custom_id as string : "",
      failed: result.error !== null && result.error !== undefined
    }
  } catch {
    return { id: "", failed: false }
  }
}

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

/** Whether `path` is a regular file (a missing one is not). */
const isRegularFile = (path: string): boolean => {
  try {
    return fs.statSync(path).isFile()
  } catch {
    return false
  }
}

/** A line without the CR of its CRLF. */
const withoutCr = (line: string): string => (line.endsWith("\r") ? line.slice(0, -1) : line)

/**
 * The lines of a byte stream, broken at each LF only (a CRLF is one break): a lone CR is a character of its line, as
 * JSON Lines has it (JSON reads it as whitespace), so that line numbers are the file's. A last line without a break
 * is a line; an empty input has none. (node:readline also breaks at a lone CR.)
 *
 * @since 0.4.0
 * @category reading
 */
export async function* splitLines(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new StringDecoder("utf8")
  let rest = ""
  for await (const chunk of chunks) {
    rest += typeof chunk === "string" ? chunk : decoder.write(chunk)
    let start = 0
    for (let end = rest.indexOf("\n"); end !== -1; end = rest.indexOf("\n", start)) {
      yield withoutCr(rest.slice(start, end))
      start = end + 1
    }
    rest = rest.slice(start)
  }
  rest += decoder.end()
  if (rest !== "") yield withoutCr(rest)
}

/**
 * The lines of a file (see `splitLines`), streamed, with their 1-based numbers; the file is closed (its descriptor
 * released) when the stream ends, however it ends, before anything after it runs.
 *
 * @since 0.2.0
 * @category reading
 */
export const readLines = <E>(
  path: string,
  onError: (error: unknown) => E
): Stream.Stream<readonly [string, number], E> =>
  Stream.unwrapScoped(Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => fs.createReadStream(path)),
      (input) =>
        Effect.async<void>((resume) => {
          if (input.closed) return resume(Effect.void)
          input.once("close", () => resume(Effect.void))
          input.destroy()
        })
    ),
    (input) => Stream.fromAsyncIterable(splitLines(input), onError)
  )).pipe(Stream.zipWithIndex, Stream.map(([text, index]) => [text, index + 1] as const))

const linesOf = (path: string): Stream.Stream<readonly [string, number], OutputError> =>
  readLines(path, failed("read", path))

const chunkSize = 64 * 1024

/**
 * Cuts a torn last line (a crash in the middle of a write) at the byte after the last line break, found by reading
 * the file backwards: the text before it may hold characters of several bytes, or bytes that are not UTF-8.
 */
const cutTornLine = (path: string): void => {
  const fd = fs.openSync(path, "r+")
  try {
    const size = fs.fstatSync(fd).size
    const chunk = Buffer.alloc(chunkSize)
    let end = 0
    for (let start = size; start > 0 && end === 0;) {
      const from = Math.max(0, start - chunkSize)
      const read = fs.readSync(fd, chunk, 0, start - from, from)
      end = from + chunk.subarray(0, read).lastIndexOf(0x0a) + 1
      // no line break in this chunk: end is `from`, which is 0 only for the first chunk; go on before it
      if (end === from) end = 0
      start = from
    }
    if (end === size) return
    // a last line that is whole but for its line break (a file edited by hand) is kept: it gets its line break
    const tail = Buffer.alloc(size - end)
    fs.readSync(fd, tail, 0, tail.length, end)
    if (isJson(tail.toString("utf8"))) fs.writeSync(fd, "\n", size)
    else fs.ftruncateSync(fd, end)
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * Reads what an output holds, first cutting a torn last line. A missing output, or one that is not a regular file,
 * holds nothing. A whole but unreadable line cannot come from this tool: it is left in place and not counted.
 *
 * @since 0.2.0
 * @category resuming
 */
export const scan = (path: string): Effect.Effect<Contents, OutputError> =>
  Effect.suspend(() => {
    if (!isRegularFile(path)) return Effect.succeed({ succeeded: new Set(), failed: new Set(), replaced: 0 })
    return Effect.try({ try: () => cutTornLine(path), catch: failed("read", path) }).pipe(
      Effect.zipRight(Stream.runFold(
        linesOf(path),
        { succeeded: new Set<string>(), failed: new Set<string>(), replaced: 0 },
        (contents, [line]) => {
          const { failed, id } = resultOf(line)
          if (id === "") return contents
          if (contents.succeeded.delete(id) || contents.failed.delete(id)) contents.replaced++
          ;(failed ? contents.failed : contents.succeeded).add(id)
          return contents
        }
      ))
    )
  })

/** The number of the latest line of each `custom_id`, and how many lines have one. */
const latestLines = (path: string) =>
  Stream.runFold(linesOf(path), { latest: new Map<string, number>(), withId: 0 }, (acc, [line, number]) => {
    const { id } = resultOf(line)
    if (id === "") return acc
    acc.withId++
    acc.latest.set(id, number)
    return acc
  })

/** Writes all of `bytes` to `fd` (a write may take fewer bytes than it is given). */
export const writeAll = (fd: number, bytes: Uint8Array): void => {
  for (let written = 0; written < bytes.length;) {
    written += fs.writeSync(fd, bytes, written, bytes.length - written)
  }
}

/**
 * Rewrites an output to one line per `custom_id`, its latest, in the order of those lines (lines without an id
 * stay where they are), through a side file renamed over the output; returns how many lines it dropped. Nothing
 * to drop: the output is not touched.
 *
 * @since 0.2.0
 * @category resuming
 */
export const compact = (path: string): Effect.Effect<number, OutputError> =>
  Effect.gen(function*() {
    if (!isRegularFile(path)) return 0
    // the file itself, not a link to it (which would be replaced by the compacted file)
    const real = fs.realpathSync(path)
    // a torn last line (a write that failed, a crash) never becomes a whole line of the compacted file
    yield* Effect.try({ try: () => cutTornLine(real), catch: failed("read", path) })
    const { latest, withId } = yield* latestLines(real)
    // one line per id already
    if (withId === latest.size) return 0
    let dropped = 0
    const side = `${real}.compacting`
    const fd = yield* Effect.try({
      try: () => {
        const fd = fs.openSync(side, "w")
        // the output's own permissions, not the umask's
        fs.fchmodSync(fd, fs.statSync(real).mode)
        return fd
      },
      catch: failed("compact", path)
    })
    const write = (bytes: Buffer) => Effect.try({ try: () => writeAll(fd, bytes), catch: failed("compact", path) })
    const kept = yield* linesOf(real).pipe(
      Stream.filter(([line, number]) => {
        const { id } = resultOf(line)
        const keep = id === "" || latest.get(id) === number
        if (!keep) dropped++
        return keep
      }),
      // to the side file in writes of up to 256 lines
      Stream.grouped(256),
      Stream.runForEach((lines) => write(Buffer.from(Chunk.join(Chunk.map(lines, ([line]) => `${line}\n`), "")))),
      Effect.zipRight(Effect.try({ try: () => fs.fsyncSync(fd), catch: failed("compact", path) })),
      Effect.ensuring(Effect.sync(() => fs.closeSync(fd))),
      Effect.exit
    )
    if (kept._tag === "Failure") {
      fs.rmSync(side, { force: true })
      return yield* Effect.failCause(kept.cause)
    }
    yield* Effect.try({ try: () => fs.renameSync(side, real), catch: failed("compact", path) })
    return dropped
  })
