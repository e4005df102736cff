/**
 * Bytes of a response body to server-sent events: a reader that takes network chunks synchronously (no fiber,
 * mailbox or stream stage per event), cuts them into lines and feeds `@effect/experimental`'s SSE parser a line
 * at a time.
 * @internal
 */
import * as Sse from "@effect/experimental/Sse"
import type * as Chunk from "effect/Chunk"
import * as Stream from "effect/Stream"
import { DecodeError } from "../schemas/Errors.js"
import { mapChunksUntil } from "./chunked.js"

/** The largest event accepted (1 MiB): a bigger one means a broken or hostile server. */
export const maxEventSize = 1024 * 1024

/**
 * Text cut into lines at `\r\n`, `\n` or `\r`, across the pieces it comes in (a `\r` that ends a piece and a `\n`
 * that starts the next are one break). Holds only the line begun.
 */
export class Lines {
  private begun = ""
  private afterCr = false

  /** The length of the line begun and not ended. */
  get pending(): number {
    return this.begun.length
  }

  /** The lines `piece` ends. */
  push(piece: string): Array<string> {
    const lines: Array<string> = []
    if (piece === "") return lines
    let from = this.afterCr && piece.charCodeAt(0) === 10 ? 1 : 0
    this.afterCr = false
    let lf = piece.indexOf("\n", from)
    let cr = piece.indexOf("\r", from)
    while (lf >= 0 || cr >= 0) {
      const at = lf < 0 || (cr >= 0 && cr < lf) ? cr : lf
      lines.push(this.begun + piece.slice(from, at))
      this.begun = ""
      // a \r last in the piece: a \n first in the next is part of its break
      this.afterCr = at === cr && at === piece.length - 1
      from = at === cr && lf === cr + 1 ? at + 2 : at + 1
      // a break not found stays not found: no scan to the end of the piece per line
      if (lf >= 0 && lf < from) lf = piece.indexOf("\n", from)
      if (cr >= 0 && cr < from) cr = piece.indexOf("\r", from)
    }
    this.begun += piece.slice(from)
    return lines
  }
}

/** Reads one event stream's bytes; `failure` is set once the stream is broken (it ends there: read no more). */
export interface EventReader {
  /** The events the chunk's bytes complete, up to a failure (a line begun when the bytes end completes none). */
  readonly read: (chunk: Chunk.Chunk<Uint8Array>) => Array<Sse.Event>
  readonly failure: () => DecodeError | undefined
}

/**
 * A reader of one event stream: its bytes cut into lines, each fed to the parser; the line begun is bounded while it
 * has not ended, so that a server sending bytes without a line break cannot fill the memory. A `retry:` field is
 * ignored: this client never reconnects.
 */
export const eventReader = (endpoint: string): EventReader => {
  const text = new TextDecoder()
  const lines = new Lines()
  let parsed: Array<Sse.Event> = []
  const parser = Sse.makeParser((event) => {
    if (event._tag === "Event") parsed.push(event)
  }, { maxEventSize })
  let failure: DecodeError | undefined
  const tooLarge = (detail: string) => {
    failure = new DecodeError({ message: `server-sent event too large: ${detail}`, endpoint, excerpt: "" })
  }
  // whole lines into the parser: it rescans its buffer from the start on each feed, which is quadratic in the
  // size of a piece carrying many lines
  const feed = (line: string) => {
    const error = parser.feed(`${line}\n`)
    if (error !== undefined) tooLarge(error.message)
  }
  const taken = () => {
    const events = parsed
    parsed = []
    return events
  }
  return {
    read: (chunk) => {
      for (const bytes of chunk) {
        for (const line of lines.push(text.decode(bytes, { stream: true }))) {
          feed(line)
          if (failure !== undefined) return taken()
        }
        if (lines.pending > maxEventSize) {
          tooLarge(`a line longer than ${maxEventSize} characters`)
          return taken()
        }
      }
      return taken()
    },
    failure: () => failure
  }
}

/**
 * Decodes a body into events. An oversized event fails with `DecodeError` after the events before it, never a
 * defect.
 */
export const decodeEvents = <E>(
  body: Stream.Stream<Uint8Array, E>,
  endpoint: string
): Stream.Stream<Sse.Event, E | DecodeError> =>
  Stream.suspend(() => {
    const reader = eventReader(endpoint)
    const events = mapChunksUntil(body, (chunk) => {
      const values = reader.read(chunk)
      return { values, done: reader.failure() !== undefined }
    })
    return Stream.concat(events, Stream.suspend(() => failedWith(reader.failure())))
  })

const failedWith = (failure: DecodeError | undefined) => failure === undefined ? Stream.empty : Stream.fail(failure)
