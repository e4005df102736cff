/**
 * Reading a response as a stream: its bytes within the idle and total limits, and the payloads of its events
 * decoded as JSON a network chunk at a time, in one stage.
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { type ApiError, DecodeError, Timeout, TransportError } from "../../schemas/Errors.js"
import { mapChunksUntil, type Stepped } from "../chunked.js"
import { excerpt, fromHttpClientError, fromStreamError } from "../errors.js"
import { reconcile, usageOf } from "../limiter/settlement.js"
import { eventReader } from "../sse.js"
import { isModelOperation, ResponseSummary } from "../telemetry.js"
import { readBounded } from "../transport.js"
import type { Sent } from "./attempt.js"
import type { Deadlines, Limit } from "./deadline.js"
import { decoder } from "./decode.js"
import { recordAnswer } from "./instruments.js"
import type { RequestOptions, ServerSentEvent } from "./types.js"

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

/**
 * The bytes of an opened stream, each pull within the idle limit and what is left of the total limit from sending,
 * on the transport's timer (no fiber sleeps per pull, and none races the stream).
 */
export const timedBody = (
  { endpoint, response, sentAt, timeouts }: Sent,
  idle: Duration.Duration,
  deadlines: Deadlines
) => {
  const idleLimit: Limit<Option.Option<Timeout>> = {
    after: idle,
    error: () =>
      Option.some(
        new Timeout({ message: `stream idle for ${Duration.format(idle)}`, endpoint, timeout: "idle", after: idle })
      )
  }
  const totalMs = Duration.toMillis(timeouts.total)
  const totalError = () =>
    Option.some(
      new Timeout({
        message: `stream not finished within ${Duration.format(timeouts.total)}`,
        endpoint,
        timeout: "total",
        after: timeouts.total
      })
    )
  const body = Stream.mapError(response.stream, (error) => fromHttpClientError(error, endpoint))
  return Stream.fromPull(Effect.map(Stream.toPull(body), (pull) =>
    Effect.clockWith((clock) => {
      const left = totalMs - (clock.unsafeCurrentTimeMillis() - sentAt)
      // a consumer that pulls after the total limit passed gets no more bytes
      return left <= 0
        ? Effect.fail(totalError())
        : deadlines.within(pull, [idleLimit, { after: Duration.millis(left), error: totalError }])
    })))
}

const isErrorPayload = (data: unknown): boolean =>
  typeof data === "object" && data !== null && "error" in data && !("choices" in data) &&
  (data as { error: unknown }).error !== null

/** The payload of an error event, redacted (the server may echo the key), as JSON when it is JSON. */
const streamErrorOf = (
  data: string,
  redact: (text: string) => string,
  context: Parameters<typeof fromStreamError>[1]
): ApiError => {
  let payload: unknown
  try {
    payload = JSON.parse(redact(data))
  } catch {
    payload = { error: { message: redact(data) } }
  }
  return fromStreamError(payload, context)
}

/**
 * The payloads of an opened stream's events, decoded with `schema` a network chunk at a time, synchronously (no
 * effect per event). The `terminator` (or an error event) ends the stream within its chunk, without waiting for
 * more bytes; a stream that ends without it fails. The usage it reports settles the permit however it ends; what it
 * reports (id, model, finish reasons, usage) is annotated on the operation's span when it has one.
 */
export const decodeJsonEvents = <A, I>(
  sent: Sent,
  body: Stream.Stream<Uint8Array, ApiError>,
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
  const reader = eventReader(endpoint)
  let ended = false
  let failure: ApiError | undefined
  let usage: A | undefined
  const errorOf = (data: string) => streamErrorOf(data, redact, context)
  /** One event to its value, or the error that ends the stream. */
  const decodeEvent = (event: ServerSentEvent): Either.Either<A, ApiError> => {
    if (event.event === "error") return Either.left(errorOf(event.data))
    const data = decode.parse(event.data, meta)
    if (Either.isLeft(data)) return Either.left(data.left)
    if (isErrorPayload(data.right)) return Either.left(errorOf(event.data))
    return decode.value(data.right, event.data, meta)
  }
  /** The values of one chunk of bytes: its events decoded, up to the terminator or a failure. */
  const valuesOf = (events: ReadonlyArray<ServerSentEvent>): Stepped<A> => {
    const values: Array<A> = []
    for (const event of events) {
      const data = event.data.trim()
      if (data === "") continue
      if (data === terminator) {
        ended = true
        break
      }
      const value = decodeEvent(event)
      if (Either.isLeft(value)) {
        failure = value.left
        break
      }
      if (usageOf(value.right) !== undefined) usage = value.right
      answer?.summary.observe(value.right)
      values.push(value.right)
    }
    if (!ended) failure ??= reader.failure()
    return { values, done: ended || failure !== undefined }
  }
  const values = mapChunksUntil(body, (chunk) => valuesOf(reader.read(chunk))).pipe(
    // however the stream ends (done, failed, interrupted, or its consumer stopped early), the usage it saw settles
    // the reservation
    Stream.ensuring(Effect.suspend(() => reconcile(permit, usage)))
  )
  return Stream.concat(
    values,
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
          Stream.drain(Stream.fromEffect(recordAnswer(answer.operation, options.model, answer.summary))),
          end
        )
    })
  )
}
