/**
 * Bytes of a response body to server-sent events, through `@effect/experimental`'s `Sse` parser.
 * @internal
 */
import * as Sse from "@effect/experimental/Sse"
import * as Cause from "effect/Cause"
import * as Stream from "effect/Stream"
import { DecodeError } from "../schemas/Errors.js"

/** The largest event accepted (1 MiB): a bigger one means a broken or hostile server. */
export const maxEventSize = 1024 * 1024

/** Decodes a body into events. An oversized event fails with `DecodeError`, never a defect. */
export const decodeEvents = <E>(
  body: Stream.Stream<Uint8Array, E>,
  endpoint: string
): Stream.Stream<Sse.Event, E | DecodeError> =>
  // whole lines into the parser: it rescans its buffer from the start for each line, which is quadratic in
  // the size of a network chunk carrying many events
  Stream.pipeThroughChannel(
    Stream.map(Stream.splitLines(Stream.decodeText(body)), (line) => `${line}\n`),
    Sse.makeChannel<E, unknown>({ maxEventSize })
  ).pipe(
    Stream.catchAllCause((cause): Stream.Stream<never, E | DecodeError> => {
      const defect = Cause.dieOption(cause)
      if (defect._tag === "Some" && defect.value instanceof Sse.SseError) {
        return Stream.fail(
          new DecodeError({ message: `server-sent event too large: ${defect.value.message}`, endpoint, excerpt: "" })
        )
      }
      return Stream.failCause(cause)
    })
  )
