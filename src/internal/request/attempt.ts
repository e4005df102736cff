/**
 * One attempt of a request: its admission, the exchange with its time limits, and what its outcome tells the rate
 * limiter (the permit settled however it ends, the limits the response's headers carry).
 * @internal
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { identity } from "effect/Function"
import type { ApiError, QuotaExceeded } from "../../schemas/Errors.js"
import type { RateLimitInfo } from "../../schemas/RateLimit.js"
import { pacedByLimiter } from "../errors.js"
import { outcomeOf as settlementOf } from "../limiter/settlement.js"
import type { Permit, Restore } from "../limiter/types.js"
import { firstByteTimedOut, totalTimedOut } from "../transport.js"
import type { Admission, Admissions, FirstAdmission } from "./admission.js"
import type { Deadlines } from "./deadline.js"
import type { RequestOptions, ResponseMetadata } from "./types.js"

/** The time limits of an attempt. */
export interface Timeouts {
  readonly firstByte: Duration.Duration
  readonly total: Duration.Duration
}

/** A response whose status line came back, handed to the reader of an attempt. */
export interface Sent {
  readonly response: HttpClientResponse.HttpClientResponse
  readonly meta: ResponseMetadata
  readonly endpoint: string
  readonly permit: Permit | undefined
  readonly timeouts: Timeouts
  /** When the request went out (the total limit counts from here). */
  readonly sentAt: number
}

/** What attempts are made with. */
export interface Deps {
  /** The limiter's admissions, when a limiter is on. */
  readonly admissions: Admissions | undefined
  /** Tells the limiter what a response said of a model's limits. */
  readonly learn: (key: string | undefined, model: string, info: RateLimitInfo, status: number) => Effect.Effect<void>
  /** Tells the limiter the key's budget is spent (for a request that held no permit: a permit settles it itself). */
  readonly spent: (key: string | undefined, error: QuotaExceeded) => Effect.Effect<void>
  /** The request as sent (base, key, accept): its endpoint as errors name it, its time limits. */
  readonly prepare: (request: HttpClientRequest.HttpClientRequest, options: RequestOptions, accept: string) => {
    readonly prepared: HttpClientRequest.HttpClientRequest
    readonly endpoint: string
    readonly timeouts: Timeouts
  }
  /** One exchange up to the status line; `responded` is told when the status line came back. */
  readonly send: (
    request: HttpClientRequest.HttpClientRequest,
    endpoint: string,
    responded?: () => void
  ) => Effect.Effect<readonly [HttpClientResponse.HttpClientResponse, ResponseMetadata], ApiError>
  /** The transport's time limits. */
  readonly deadlines: Deadlines
}

/** What an answer, or the error made of one, says to the limiter (other errors say nothing). */
interface Answer {
  readonly _tag?: string
  readonly status?: number | undefined
  readonly rateLimit?: RateLimitInfo | undefined
}

/** What the outcome of an attempt does: see `outcomeOf`. */
interface Outcome {
  /** Set as the request is handed to the HTTP client: from then on, the server may count it. */
  sending: boolean
  settled: boolean
  readonly succeeded: (meta: ResponseMetadata) => Effect.Effect<unknown>
  readonly failed: (error: ApiError) => Effect.Effect<ApiError>
  readonly unsettled: () => Effect.Effect<void>
}

/** The reader of an attempt's response. */
export type Read<A> = (sent: Sent) => Effect.Effect<A, ApiError>

/** Sends the prepared request and reads its answer, all within the total time limit from sending. */
const exchange = <A>(
  deps: Deps,
  request: HttpClientRequest.HttpClientRequest,
  options: RequestOptions,
  accept: string,
  permit: Permit | undefined,
  outcome: Outcome | undefined,
  read: Read<A>
) =>
  Effect.clockWith((clock) => {
    const { endpoint, prepared, timeouts } = deps.prepare(request, options, accept)
    const sentAt = clock.unsafeCurrentTimeMillis()
    // a first-byte limit no shorter than the total one could never pass first: one limit is enough
    const firstByte = Duration.lessThan(timeouts.firstByte, timeouts.total)
    let responded = false
    const sent = deps.send(prepared, endpoint, firstByte ? () => (responded = true) : undefined)
    const reading = ([response, meta]: readonly [HttpClientResponse.HttpClientResponse, ResponseMetadata]) =>
      read({ response, meta, endpoint, permit, timeouts, sentAt })
    // without a limiter, nothing to settle or learn: the answer goes straight to its reader
    const exchanged = outcome === undefined ? Effect.flatMap(sent, reading) : Effect.suspend(() => {
      outcome.sending = true
      return sent
    }).pipe(
      Effect.matchEffect({
        onFailure: (error) => Effect.flatMap(outcome.failed(error), Effect.fail),
        onSuccess: (exchange) => Effect.zipRight(outcome.succeeded(exchange[1]), reading(exchange))
      })
    )
    const total = { after: timeouts.total, error: () => totalTimedOut(timeouts.total, endpoint) }
    return deps.deadlines.within(
      exchanged,
      firstByte
        ? [total, {
          after: timeouts.firstByte,
          error: () => firstByteTimedOut(timeouts.firstByte, endpoint),
          holds: () => !responded
        }]
        : [total]
    )
  })

/** Makes the attempts of requests from `deps`. */
export const make = (deps: Deps) => {
  /** An attempt without a limiter: nothing to admit, settle or learn. */
  const plain = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    accept: string,
    read: Read<A>
  ) => exchange(deps, request, options, accept, undefined, undefined, read)

  /**
   * An attempt through the rate limiter: takes the first admission or waits for capacity, sends, learns from the
   * response's headers, settles the permit however the attempt ends, and reads the response with `read`.
   */
  const limited = <A>(
    admissions: Admissions,
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    accept: string,
    read: Read<A>,
    first: FirstAdmission
  ) =>
    Effect.suspend(() => {
      // from the limiter's grant until the exchange starts, uninterruptible: an interruption lands only inside
      // `restore`, where the permit is always accounted for
      const withAdmission = (admission: Admission, restore: Restore) => {
        first.admission = undefined
        const outcome = outcomeOf(admission, deps)
        // interrupted or timed out before the answer: once sent, the server may have counted the request, so it
        // stays counted from now (the limiter never gives back what the server may hold); not sent: it comes back
        // this runs uninterruptibly: what follows the exchange runs however it ends (`onExit` in fewer steps)
        return Effect.matchCauseEffect(
          restore(exchange(deps, request, admission.options, accept, admission.permit, outcome, read)),
          {
            onFailure: (cause) => Effect.zipRight(outcome.unsettled(), Effect.failCause(cause)),
            onSuccess: Effect.succeed
          }
        )
      }
      const taken = first.admission
      return taken === undefined
        ? admissions.admit(request, options, identity, withAdmission)
        : Effect.uninterruptibleMask((restore) => withAdmission(taken, restore))
    })

  /** One attempt: through the limiter when it is on. */
  const attempt = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    accept: string,
    read: Read<A>,
    first: FirstAdmission
  ): Effect.Effect<A, ApiError> =>
    deps.admissions === undefined
      ? plain(request, options, accept, read)
      : limited(deps.admissions, request, options, accept, read, first)
  return attempt
}

/** One attempt of a request: what `make` returns. */
export type Attempt = ReturnType<typeof make>

/**
 * What the outcome of an admitted attempt tells the limiter. `succeeded` takes the metadata of an answer with a 2xx
 * status; `failed` the exchange's error, and returns the error to fail with (a 429 the limiter paces comes back as
 * `pacedByLimiter`); `unsettled` settles a permit the exchange never reached (interrupted, timed out). Each marks
 * the permit settled and settles it in one piece: `unsettled` leaves a settled permit alone.
 */
const outcomeOf = ({ key, model, permit }: Admission, { learn, spent }: Deps): Outcome => {
  /** What an answer, or the error made of one, teaches the limiter (other errors teach nothing). */
  const learnt = (answer: Answer) =>
    model === undefined || answer.rateLimit === undefined
      ? Effect.void
      : learn(key, model, answer.rateLimit, answer.status ?? 0)
  /**
   * The permit's settlement of a failed exchange, and the error to fail with: a 429 the limiter then paces itself
   * (it waits until the window frees) need not wait for the server's time first.
   */
  const settlement = (permit: Permit, error: ApiError): Effect.Effect<ApiError> =>
    Effect.map(
      permit.settle(settlementOf(error), error),
      (paced) => paced && error._tag === "RateLimited" ? pacedByLimiter(error) : error
    )
  const state: Outcome = {
    sending: false,
    settled: false,
    succeeded: (meta) =>
      Effect.uninterruptible(Effect.suspend(() => {
        state.settled = true
        return permit === undefined ? Effect.void : permit.settle("succeeded")
      })).pipe(Effect.zipRight(learnt(meta))),
    failed: (error) =>
      Effect.uninterruptible(Effect.suspend(() => {
        state.settled = true
        if (permit !== undefined) return settlement(permit, error)
        return error._tag === "QuotaExceeded" ? Effect.as(spent(key, error), error) : Effect.succeed(error)
      })).pipe(Effect.zipLeft(learnt(error))),
    unsettled: () =>
      state.settled || permit === undefined
        ? Effect.void
        : Effect.asVoid(permit.settle(state.sending ? "unanswered" : "unsent"))
  }
  return state
}
