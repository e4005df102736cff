/**
 * Bytes of a response body to server-sent events, with `@effect/experimental`'s SSE parser driven chunk by
 * chunk (no fiber or mailbox per event).
 * @internal
 */
import * as Sse from "@effect/experimental/Sse"
import * as Chunk from "effect/Chunk"
import * as Stream from "effect/Stream"
import { DecodeError } from "../schemas/Errors.js"

const stop: unique symbol = Symbol("effect-aifs/sse-stop")

/** The largest event accepted (1 MiB): a bigger one means a broken or hostile server. */
export const maxEventSize = 1024 * 1024

/**
 * Decodes a body into events. An oversized event fails with `DecodeError` after the events before it, never a
 * defect. A `retry:` field is ignored: this client never reconnects.
 */
export const decodeEvents = <E>(
  body: Stream.Stream<Uint8Array, E>,
  endpoint: string
): Stream.Stream<Sse.Event, E | DecodeError> =>
  Stream.suspend(() => {
    let parsed: Array<Sse.Event> = []
    let failure: DecodeError | undefined
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") parsed.push(event)
    }, { maxEventSize })
    const tooLarge = (detail: string) =>
      new DecodeError({ message: `server-sent event too large: ${detail}`, endpoint, excerpt: "" })
    // a line is buffered whole before the parser sees it: bound it here, so that a server sending bytes without
    // a line break cannot fill the memory
    let lineLength = 0
    const text = Stream.decodeText(body).pipe(
      Stream.mapChunks((texts) => {
        const out: Array<string | typeof stop> = []
        for (const piece of texts) {
          const lastBreak = Math.max(piece.lastIndexOf("\n"), piece.lastIndexOf("\r"))
          lineLength = lastBreak < 0 ? lineLength + piece.length : piece.length - lastBreak - 1
          out.push(piece)
          if (lineLength > maxEventSize) {
            failure = tooLarge(`a line longer than ${maxEventSize} characters`)
            out.push(stop)
            break
          }
        }
        return Chunk.unsafeFromArray(out)
      }),
      Stream.takeWhile((piece): piece is string => piece !== stop)
    )
    const events = Stream.splitLines(text).pipe(
      // whole lines into the parser: it rescans its buffer from the start on each feed, which is quadratic in
      // the size of a network chunk carrying many events
      Stream.mapChunks((lines) => {
        let oversized = false
        for (const line of lines) {
          const error = parser.feed(`${line}\n`)
          if (error !== undefined) {
            failure = tooLarge(error.message)
            oversized = true
            break
          }
        }
        const out: Array<Sse.Event | typeof stop> = parsed
        parsed = []
        // the stream ends within this chunk, without waiting for more bytes
        if (oversized) out.push(stop)
        return Chunk.unsafeFromArray(out)
      }),
      Stream.takeWhile((event): event is Sse.Event => event !== stop)
    )
    return Stream.concat(events, Stream.suspend(() => failure === undefined ? Stream.empty : Stream.fail(failure)))
  })
