/**
 * Reading a response as a stream: the events of an event stream within the idle and total limits, and their
 * payloads decoded as JSON a network chunk at a time.
 * @internal
 */
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { type ApiError, DecodeError, Timeout, TransportError } from "../../schemas/Errors.js"
import type { ServerSentEvent } from "../../services/InferenceHttpClient.js"
import type { RequestOptions } from "../../services/InferenceHttpClient.js"
import { excerpt, fromHttpClientError, fromStreamError } from "../errors.js"
import { decodeEvents } from "../sse.js"
import { isModelOperation, ResponseSummary } from "../telemetry.js"
import { readBounded } from "../transport.js"
import type { Sent } from "./attempt.js"
import { decoder } from "./decode.js"
import { answered } from "./instruments.js"
import { reconcile, usageTotal } from "./permit.js"

/** A 200 that is not an event stream (an HTML page from a proxy, a JSON body): a contract break to show. */
export const expectEventStream = (redact: (text: string) => string) => (sent: Sent): Effect.Effect<Sent, ApiError> => {
  const type = sent.meta.headers["content-type"]
  if (type === undefined || type.toLowerCase().includes("text/event-stream")) return Effect.succeed(sent)
  return Effect.flatMap(Effect.orElseSucceed(readBounded(sent.response), () => ""), (text) =>
    Effect.fail(
      new DecodeError({
        message: `expected an event stream, got ${redact(type).slice(0, 100)}`,
        endpoint: sent.endpoint,
        status: sent.meta.status,
        ...(sent.meta.requestId === undefined ? {} : { requestId: sent.meta.requestId }),
        excerpt: excerpt(redact(text))
      })
    ))
}

/** The events of an opened stream: the idle limit between chunks, what is left of the total limit from sending. */
export const eventsOf = ({ endpoint, response, sentAt, timeouts }: Sent, idle: Duration.Duration) =>
  decodeEvents(
    response.stream.pipe(
      Stream.mapError((error) => fromHttpClientError(error, endpoint)),
      Stream.timeoutFail(
        () =>
          new Timeout({ message: `stream idle for ${Duration.format(idle)}`, endpoint, timeout: "idle", after: idle }),
        idle
      ),
      Stream.interruptWhen(
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.zipRight(
            Effect.sleep(Math.max(0, Duration.toMillis(timeouts.total) - (now - sentAt))),
            Effect.fail(
              new Timeout({
                message: `stream not finished within ${Duration.format(timeouts.total)}`,
                endpoint,
                timeout: "total",
                after: timeouts.total
              })
            )
          ))
      )
    ),
    endpoint
  )

/** Marks the end of a stream's values within a chunk. */
const stop: unique symbol = Symbol("effect-aifs/stream-stop")

const isErrorPayload = (data: unknown): boolean =>
  typeof data === "object" && data !== null && "error" in data && !("choices" in data) &&
  (data as { error: unknown }).error !== null

/**
 * The payloads of an opened stream's events, decoded with `schema` a network chunk at a time, synchronously (no
 * effect per event). The `terminator` (or an error event) ends the stream within its chunk, without waiting for
 * more bytes; a stream that ends without it fails. The usage it reports settles the permit however it ends; what it
 * reports (id, model, finish reasons, usage) is annotated on the operation's span when it has one.
 */
export const decodeJsonEvents = <A, I>(
  sent: Sent,
  events: Stream.Stream<ServerSentEvent, ApiError>,
  schema: Schema.Schema<A, I>,
  terminator: string | null,
  options: RequestOptions,
  redact: (text: string) => string
): Stream.Stream<A, ApiError> => {
  // what the events said, for a model operation's span and metrics
  const operation = options.span?.operation
  const answer = isModelOperation(operation) ? { operation, summary: new ResponseSummary() } : undefined
  const { endpoint, meta, permit } = sent
  const context = { endpoint, requestId: meta.requestId, rateLimit: meta.rateLimit }
  const decode = decoder(schema, endpoint, redact)
  let ended = false
  let failure: ApiError | undefined
  let usage: A | undefined
  /** The payload of an error event, redacted (the server may echo the key), as JSON when it is JSON. */
  const errorOf = (data: string): ApiError => {
    let payload: unknown
    try {
      payload = JSON.parse(redact(data))
    } catch {
      payload = { error: { message: redact(data) } }
    }
    return fromStreamError(payload, context)
  }
  /** One event to its value, or the error that ends the stream. */
  const decodeEvent = (event: ServerSentEvent): Either.Either<A, ApiError> => {
    if (event.event === "error") return Either.left(errorOf(event.data))
    const data = decode.parse(event.data, meta)
    if (Either.isLeft(data)) return Either.left(data.left)
    if (isErrorPayload(data.right)) return Either.left(errorOf(event.data))
    return decode.value(data.right, event.data, meta)
  }
  const valuesOf = (chunk: Chunk.Chunk<ServerSentEvent>) => {
    const values: Array<A | typeof stop> = []
    for (const event of chunk) {
      const data = event.data.trim()
      if (data === "") continue
      if (data === terminator) {
        ended = true
        values.push(stop)
        break
      }
      const value = decodeEvent(event)
      if (Either.isLeft(value)) {
        failure = value.left
        values.push(stop)
        break
      }
      if (usageTotal(value.right) !== undefined) usage = value.right
      answer?.summary.observe(value.right)
      values.push(value.right)
    }
    return Chunk.unsafeFromArray(values)
  }
  const body = events.pipe(
    Stream.mapChunks(valuesOf),
    Stream.takeWhile((value): value is A => value !== stop),
    // however the stream ends (done, failed, interrupted, or its consumer stopped early), the usage it saw settles
    // the reservation
    Stream.ensuring(Effect.suspend(() => reconcile(permit, usage)))
  )
  return Stream.concat(
    body,
    Stream.suspend(() => {
      const end = failure !== undefined
        ? Stream.fail(failure)
        : terminator !== null && !ended
        ? Stream.fail(new TransportError({ message: `stream ended before ${terminator}`, endpoint }))
        : Stream.empty
      // the operation's span shows what the stream reported (this runs within it, a finalizer not)
      return answer === undefined
        ? end
        : Stream.concat(
          Stream.drain(Stream.fromEffect(answered(answer.operation, options.model, answer.summary))),
          end
        )
    })
  )
}
