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

/** Reads one event stream's bytes; `failure` is set once the stream is broken, and nothing is read after it. */
export interface EventReader {
  /** The events the chunk's bytes complete, up to a failure. */
  readonly read: (chunk: Chunk.Chunk<Uint8Array>) => Array<Sse.Event>
  /** At the end of the bytes: the line begun and not ended is a line (it cannot complete an event). */
  readonly end: () => Array<Sse.Event>
  readonly failure: () => DecodeError | undefined
}

/**
 * A reader of one event stream. Lines end at `\r\n`, `\n` or `\r`, also across chunks; the line begun is bounded
 * while it has not ended, so that a server sending bytes without a line break cannot fill the memory. A `retry:`
 * field is ignored: this client never reconnects.
 */
export const eventReader = (endpoint: string): EventReader => {
  const text = new TextDecoder()
  let parsed: Array<Sse.Event> = []
  const parser = Sse.makeParser((event) => {
    if (event._tag === "Event") parsed.push(event)
  }, { maxEventSize })
  let failure: DecodeError | undefined
  /** The line begun in an earlier chunk, and whether that chunk ended in `\r` (a `\n` first in the next is its). */
  let begun = ""
  let afterCr = false
  const tooLarge = (detail: string) => {
    failure = new DecodeError({ message: `server-sent event too large: ${detail}`, endpoint, excerpt: "" })
  }
  // whole lines into the parser: it rescans its buffer from the start on each feed, which is quadratic in the
  // size of a piece carrying many lines
  const line = (content: string) => {
    const error = parser.feed(`${content}\n`)
    if (error !== undefined) tooLarge(error.message)
  }
  const lines = (piece: string) => {
    if (piece === "") return
    let from = afterCr && piece.charCodeAt(0) === 10 ? 1 : 0
    afterCr = false
    let lf = piece.indexOf("\n", from)
    let cr = piece.indexOf("\r", from)
    while ((lf >= 0 || cr >= 0) && failure === undefined) {
      const at = cr < 0 || (lf >= 0 && lf < cr) ? lf : cr
      line(begun === "" ? piece.slice(from, at) : begun + piece.slice(from, at))
      begun = ""
      from = at === cr && lf === cr + 1 ? at + 2 : at + 1
      if (at === cr && from === piece.length) afterCr = true
      // a break not found stays not found: no rescan to the end per line
      if (lf >= 0 && lf < from) lf = piece.indexOf("\n", from)
      if (cr >= 0 && cr < from) cr = piece.indexOf("\r", from)
    }
    if (failure !== undefined) return
    begun = begun + piece.slice(from)
    if (begun.length > maxEventSize) tooLarge(`a line longer than ${maxEventSize} characters`)
  }
  const taken = () => {
    const events = parsed
    parsed = []
    return events
  }
  return {
    read: (chunk) => {
      for (const bytes of chunk) {
        if (failure !== undefined) break
        lines(text.decode(bytes, { stream: true }))
      }
      return taken()
    },
    end: () => {
      if (begun !== "" && failure === undefined) line(begun)
      begun = ""
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
    const events = mapChunksUntil(
      body,
      (chunk) => {
        const values = reader.read(chunk)
        return { values, done: reader.failure() !== undefined }
      },
      reader.end
    )
    return Stream.concat(events, Stream.suspend(() => failedWith(reader.failure())))
  })

const failedWith = (failure: DecodeError | undefined) => failure === undefined ? Stream.empty : Stream.fail(failure)
