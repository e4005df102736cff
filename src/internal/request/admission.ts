/**
 * The rate limiter's admission of a request's attempts: the wait in its line (or the route to the queue when
 * configured), kept interruptible while a permit granted as an interruption lands is never lost.
 * @internal
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { ApiError } from "../../schemas/Errors.js"
import type { Service as Limiter } from "../limiter/types.js"
import type { Permit, Refusal, Restore, Ticket } from "../limiter/types.js"
import type { RequestOptions } from "./types.js"

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

/** The routes the queue root mirrors: a request to one of these may be routed there. */
const queueable = new Set([
  "/chat/completions",
  "/completions",
  "/embeddings",
  "/audio/transcriptions",
  "/audio/translations",
  "/images/generations"
])

/**
 * What `limiter` counts for a request, from the parameters it was made of (the operation's, as its span holds them:
 * never the serialised body parsed back), under `key`: none when it names no model. An upload (audio) counts as a
 * request.
 */
const ticketOf = (
  limiter: Limiter,
  key: string,
  request: HttpClientRequest.HttpClientRequest,
  options: RequestOptions
): Ticket | undefined => {
  const params = options.span?.params
  const cost = params === undefined ? undefined : limiter.cost(request.url, params)
  const model = options.model ?? cost?.model
  if (model === undefined) return undefined
  return { key, model, input: cost?.input ?? 0, output: cost?.output ?? 0, cap: cost?.cap }
}

/**
 * `acquire`, unless the request may go to the queue and `limiter` would make it wait: then `queued` with its admission
 * there (the caller's limits were meant for /v2: the queue waits for capacity, so it gets the queue's).
 */
const routed = <A, E, R>(
  limiter: Limiter,
  line: { readonly open: boolean },
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
 * The admissions of one key's requests by `limiter` (`keyId`: the key's fingerprint now, renewed or not) while `line`
 * is open; once it is closed, no request leaves the line. A request whose model's context window the limiter lacks
 * waits for `windows` (internal/request/windows.ts) first.
 */
export const make = (
  limiter: Limiter,
  keyId: () => string,
  line: { readonly open: boolean },
  windows?: (key: string, model: string) => Effect.Effect<void>
) => {
  /**
   * Waits for the limiter's capacity for one attempt (or routes it to the queue when configured), then runs `then`
   * with its admission from inside an uninterruptible region (`restore` makes what it runs interruptible again).
   * The limiter hands the permit over in its own step, so no interruption can land between the grant and `then`;
   * `refused` sees a refusal by the limiter (larger than the whole quota).
   */
  const admit = <B, E, R>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    refused: (failed: Effect.Effect<never, Refusal>, options: RequestOptions) => Effect.Effect<never, ApiError>,
    then: (admission: Admission, restore: Restore) => Effect.Effect<B, E, R>
  ): Effect.Effect<B, ApiError | E, R> => {
    const ticket = ticketOf(limiter, keyId(), request, options)
    const now = (admission: Admission) => Effect.uninterruptibleMask((restore) => then(admission, restore))
    if (ticket === undefined) return now({ permit: undefined, options, model: undefined })
    // a caller waiting in line holds its place and `then`, not the attempt's machinery
    const acquire = () =>
      limiter.acquireWith(ticket, (acquired, restore): Effect.Effect<B, ApiError | E, R> => {
        if (Exit.isFailure(acquired)) {
          return Cause.isInterrupted(acquired.cause)
            ? Effect.failCause(acquired.cause)
            : refused(Effect.failCause(acquired.cause), options)
        }
        // granted after the line closed: the place goes back at once (another process may use it), and the caller
        // waits until it is interrupted
        if (!line.open) return Effect.zipRight(acquired.value.settle("unsent"), restore(Effect.never))
        return then({ permit: acquired.value, options, model: ticket.model, key: ticket.key }, restore)
      })
    // the limiter reads the model's window when asked: after the listing
    return windows !== undefined && limiter.needsWindow(ticket)
      ? Effect.zipRight(
        windows(ticket.key, ticket.model),
        Effect.suspend(() => routed(limiter, line, request, options, ticket, now, acquire()))
      )
      : routed(limiter, line, request, options, ticket, now, acquire())
  }

  /**
   * Waits for the first admission of a request, interruptibly, and runs `use` with it and how long the caller
   * waited; `use` must take `first.admission` (an attempt does) or it goes back when `use` ends. `refused` sees
   * a refusal, to show it in the operation's span.
   */
  const first = <B, E2, R2>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    refused: (failed: Effect.Effect<never, Refusal>, options: RequestOptions) => Effect.Effect<never, ApiError>,
    use: (first: FirstAdmission, waitedMs: number) => Effect.Effect<B, E2, R2>
  ): Effect.Effect<B, ApiError | E2, R2> =>
    // the clock read in this step: a caller waiting in line holds this one closure, not `clockWith`'s three
    Effect.withFiberRuntime((fiber) => {
      const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
      const arrived = clock.unsafeCurrentTimeMillis()
      return admit(request, options, refused, (admission, restore) => {
        const first: FirstAdmission = { admission }
        // an admission `use` did not take goes back, however `use` ends (`then` runs uninterruptibly: `ensuring`
        // in fewer steps)
        const givenBack = <X, EX>(end: Effect.Effect<X, EX>) => {
          const permit = first.admission?.permit
          return permit === undefined ? end : Effect.zipRight(permit.settle("unsent"), end)
        }
        return Effect.matchCauseEffect(
          restore(Effect.suspend(() => use(first, clock.unsafeCurrentTimeMillis() - arrived))),
          {
            onFailure: (cause) => givenBack(Effect.failCause(cause)),
            onSuccess: (value) => givenBack(Effect.succeed(value))
          }
        )
      })
    })

  return { admit, first }
}

/** The admissions of one key: what `make` returns. */
export type Admissions = ReturnType<typeof make>
