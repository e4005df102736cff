/**
 * The rate limiter's admission of a request's attempts: the wait in its line (or the route to the queue when
 * configured), kept interruptible while a permit granted as an interruption lands is never lost.
 * @internal
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { identity } from "effect/Function"
import type { Permit, RateLimiter, Restore } from "../../layers/RateLimiter.js"
import type { ApiError, LimiterUnavailable, RequestTooLarge } from "../../schemas/Errors.js"
import type { RequestOptions } from "../../services/InferenceHttpClient.js"

/** What an attempt goes out with: the limiter's permit, its options (maybe routed to the queue) and its model. */
export interface Admission {
  readonly permit: Permit | undefined
  readonly options: RequestOptions
  readonly model: string | undefined
  /** The key's fingerprint when it was admitted: what its answer teaches goes to that key's bucket. */
  readonly key?: string | undefined
}

/** The admission of a request's first attempt, until the attempt takes it. */
export interface FirstAdmission {
  admission: Admission | undefined
}

/** What the limiter counts for a request. */
interface Ticket {
  readonly key: string
  readonly model: string
  readonly tokens: number
}

/** The routes the queue root mirrors: a request to one of these may be routed there. */
const queueable = new Set([
  "/chat/completions",
  "/completions",
  "/embeddings",
  "/audio/transcriptions",
  "/audio/translations",
  "/images/generations"
])

const decoder = new TextDecoder()

/** The parsed JSON body of a request, when it has one (the limiter estimates its cost). */
const jsonBody = (request: HttpClientRequest.HttpClientRequest): unknown => {
  const body = request.body
  if (body._tag !== "Uint8Array" || !body.contentType.includes("json")) return undefined
  try {
    return JSON.parse(decoder.decode(body.body))
  } catch {
    return undefined
  }
}

/**
 * The admissions of one key's requests by `limiter` (`keyId`: the key's fingerprint now, renewed or not) while `line`
 * is open; once it is closed, no request leaves the line.
 */
export const make = (limiter: RateLimiter.Service, keyId: () => string, line: { readonly open: boolean }) => {
  /** What the limiter counts for a request: none when it names no model (the body is parsed only for this). */
  const ticketOf = (request: HttpClientRequest.HttpClientRequest): Ticket | undefined => {
    const body = jsonBody(request)
    const cost = body === undefined ? undefined : limiter.cost(request.url, body)
    const model = cost?.model
    return cost === undefined || model === undefined ? undefined : { key: keyId(), model, tokens: cost.tokens }
  }

  /**
   * `acquire`, unless the request may go to the queue and the limiter would make it wait: then `queued` with its
   * admission there (the caller's limits were meant for /v2: the queue waits for capacity, so it gets the queue's).
   */
  const routed = <A, E, R>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    ticket: Ticket,
    queued: (admission: Admission) => Effect.Effect<A, E, R>,
    acquire: Effect.Effect<A, E, R>
  ): Effect.Effect<A, E, R> => {
    if (!limiter.queueRouting || (options.base ?? "v2") !== "v2" || !queueable.has(request.url)) return acquire
    return Effect.flatMap(limiter.wouldWait(ticket), (wait) =>
      wait && line.open
        ? queued({
          permit: undefined,
          options: { ...options, base: "queue", timeout: undefined, firstByteTimeout: undefined },
          model: ticket.model,
          key: ticket.key
        })
        : acquire)
  }

  /**
   * Waits for the limiter's capacity for one attempt (or routes it to the queue when configured); `onGranted`
   * sees the permit as the limiter grants it. Use through `guarded`.
   */
  const admit = (
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    onGranted: (permit: Permit) => void
  ): Effect.Effect<Admission, RequestTooLarge | LimiterUnavailable> => {
    const ticket = ticketOf(request)
    if (ticket === undefined) return Effect.succeed({ permit: undefined, options, model: undefined })
    // granted after the line closed: the place goes back at once (another process may use it), and the caller
    // waits until it is interrupted (`guarded`'s second cancel of the permit finds nothing to remove)
    const acquire = Effect.flatMap(
      limiter.acquire(ticket, onGranted),
      (permit): Effect.Effect<Admission> =>
        line.open
          ? Effect.succeed({ permit, options, model: ticket.model, key: ticket.key })
          : Effect.zipRight(permit.cancel, Effect.never)
    )
    return routed(request, options, ticket, Effect.succeed, acquire)
  }

  /**
   * What a failed admission ends in: a permit granted just as the failure (an interruption) landed is given back,
   * not lost between the limiter and this caller; `refused` sees a refusal by the limiter.
   */
  const failedWith = (
    cause: Cause.Cause<RequestTooLarge | LimiterUnavailable>,
    granted: Permit | undefined,
    refused: (failed: Effect.Effect<never, RequestTooLarge | LimiterUnavailable>) => Effect.Effect<never, ApiError>
  ): Effect.Effect<never, ApiError> => {
    const failed = granted === undefined
      ? Effect.failCause(cause)
      : Effect.zipRight(granted.cancel, Effect.failCause(cause))
    return Cause.isInterrupted(cause) ? failed : refused(failed)
  }

  /**
   * `admit`, from inside an uninterruptible region (`restore` makes the wait interruptible), its permit never
   * lost to an interruption (`failedWith`).
   */
  const guarded = (
    restore: Restore,
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions
  ): Effect.Effect<Admission, ApiError> => {
    let granted: Permit | undefined
    return Effect.catchAllCause(
      restore(admit(request, options, (permit) => {
        granted = permit
      })),
      (cause) => failedWith(cause, granted, identity)
    )
  }

  /**
   * Waits for the first admission of a request, interruptibly, and runs `use` with it and how long the caller
   * waited; `use` must take `first.admission` (an attempt does) or it goes back when `use` ends. `refused` sees
   * a refusal, to show it in the operation's span.
   */
  const first = <B, E2, R2>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    refused: (failed: Effect.Effect<never, RequestTooLarge | LimiterUnavailable>) => Effect.Effect<never, ApiError>,
    use: (first: FirstAdmission, waitedMs: number) => Effect.Effect<B, E2, R2>
  ): Effect.Effect<B, ApiError | E2, R2> =>
    Effect.clockWith((clock) => {
      const arrived = clock.unsafeCurrentTimeMillis()
      const used = (first: FirstAdmission) => use(first, clock.unsafeCurrentTimeMillis() - arrived)
      const ticket = ticketOf(request)
      if (ticket === undefined) return used({ admission: { permit: undefined, options, model: undefined } })
      // the permit goes to `use` in the limiter's own step: nothing can come between, and a caller waiting in
      // line holds its place and this, not the operation's machinery
      const acquire = limiter.acquireWith(ticket, (acquired, restore): Effect.Effect<B, ApiError | E2, R2> => {
        if (Exit.isFailure(acquired)) return failedWith(acquired.cause, undefined, refused)
        const permit = acquired.value
        // granted after the line closed: the place goes back at once, the caller waits until it is interrupted
        if (!line.open) return Effect.zipRight(permit.cancel, restore(Effect.never))
        const first: FirstAdmission = { admission: { permit, options, model: ticket.model, key: ticket.key } }
        return Effect.ensuring(
          restore(Effect.suspend(() => used(first))),
          Effect.suspend(() => first.admission?.permit?.cancel ?? Effect.void)
        )
      })
      return routed(request, options, ticket, (admission) => used({ admission }), acquire)
    })

  return { guarded, first }
}

/** The admissions of one key: what `make` returns. */
export type Admissions = ReturnType<typeof make>
