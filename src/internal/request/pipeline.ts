/**
 * A request's steps, in the order a reader meets them (docs/architecture.md's glossary names each):
 *
 * 1. the **operation** (`operation.ts`): the request's span and metrics, opened once its first attempt is admitted;
 * 2. the key's **renewal** (`credentials.ts`): after a 401, the key read again from its source and the retries below
 *    run once more;
 * 3. the **retries** (`retry.ts`): the policy's schedule over the attempts, unless the request says not to;
 * 4. each **attempt** (`attempt.ts`): its **admission** by the rate limiter (`admission.ts`), the exchange within its
 *    time limits (`deadline.ts`), its **settlement** with the limiter, and the reading of the answer.
 *
 * Both transports run every request through it: the inference transport with its limiter and its key's source, the
 * gateway's with neither (each step without its part is the identity).
 * @internal
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { ApiError } from "../../schemas/Errors.js"
import type { FirstAdmission } from "./admission.js"
import type { Attempt, Read } from "./attempt.js"
import type { Operations } from "./operation.js"
import { type Policy, retrying } from "./retry.js"
import type { RequestOptions } from "./types.js"

/** What a transport's pipeline is made of. */
export interface Steps {
  /** The operations of its requests (`Operation.make`). */
  readonly operations: Operations
  /** The retry policy. */
  readonly policy: Policy
  /** The attempt (`Attempt.make`). */
  readonly attempt: Attempt
  /** Renews a refused key and sends once more (`Credentials.renewing`); none: no key to renew. */
  readonly renewing?: <A>(effect: Effect.Effect<A, ApiError>, repeat?: boolean) => Effect.Effect<A, ApiError>
}

/** The pipeline of a transport's requests, from its steps. */
export const make = ({ attempt, operations, policy, renewing }: Steps) => {
  /** The attempts of one request, `first` admitted already: retried, renewed, each read with `read`. */
  const attempts = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    accept: string,
    read: Read<A>,
    first: FirstAdmission
  ): Effect.Effect<A, ApiError> => {
    const retried = retrying(policy, request, attempt(request, options, accept, read, first), options)
    return renewing === undefined ? retried : renewing(retried, options.retry)
  }

  /** One request, from its operation to the reading of its answer. */
  const run = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    accept: string,
    read: Read<A>
  ): Effect.Effect<A, ApiError> =>
    operations.operation(request, options, (first) => attempts(request, options, accept, read, first))

  /**
   * One request whose answer is a stream: `open` makes its attempts (with `attempts`, which end at the status line)
   * and the stream of what they opened, read past the attempts' end: the operation's span covers it to its end.
   */
  const stream = <A>(
    request: HttpClientRequest.HttpClientRequest,
    options: RequestOptions,
    open: (first: FirstAdmission) => Stream.Stream<A, ApiError>
  ): Stream.Stream<A, ApiError> => operations.operationStream(request, options, open)

  return { run, stream, attempts }
}

/** A transport's pipeline: what `make` returns. */
export type Pipeline = ReturnType<typeof make>
