/**
 * Bytes of a response body to server-sent events, with `@effect/experimental`'s SSE parser driven chunk by
 * chunk (no fiber or mailbox per event).
 * @internal
 */
import * as Sse from "@effect/experimental/Sse"
import * as Chunk from "effect/Chunk"
import * as Stream from "effect/Stream"
import { DecodeError } from "../schemas/Errors.js"

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
    const events = Stream.splitLines(Stream.decodeText(body)).pipe(
      Stream.takeWhile(() => failure === undefined),
      // whole lines into the parser: it rescans its buffer from the start on each feed, which is quadratic in
      // the size of a network chunk carrying many events
      Stream.mapChunks((lines) => {
        for (const line of lines) {
          const error = parser.feed(`${line}\n`)
          if (error !== undefined) {
            failure = new DecodeError({
              message: `server-sent event too large: ${error.message}`,
              endpoint,
              excerpt: ""
            })
            break
          }
        }
        const out = parsed
        parsed = []
        return Chunk.unsafeFromArray(out)
      })
    )
    return Stream.concat(events, Stream.suspend(() => failure === undefined ? Stream.empty : Stream.fail(failure)))
  })
