/**
 * The retry loop of a request: the policy's schedule, set up only after a first failure.
 * @internal
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import * as RetryPolicy from "../../layers/RetryPolicy.js"
import type { ApiError } from "../../schemas/Errors.js"
import type { RequestOptions } from "../../services/InferenceHttpClient.js"
import { endpointOf } from "../transport.js"

/**
 * `effect`, retried by the policy unless the request says not to. The schedule's machinery is set up only after
 * a first failure, which it then meets as its first input (most requests succeed at once, and `Effect.retry` would
 * build it for each).
 */
export const retrying = <A>(
  policy: RetryPolicy.RetryPolicy.Service,
  request: HttpClientRequest.HttpClientRequest,
  effect: Effect.Effect<A, ApiError>,
  options: RequestOptions
): Effect.Effect<A, ApiError> =>
  options.retry === false ? effect : Effect.catchAll(effect, (first) => {
    let replayed = false
    return Effect.retry(
      Effect.suspend(() => {
        if (replayed) return effect
        replayed = true
        return Effect.fail(first)
      }),
      RetryPolicy.reported(policy, endpointOf(request))
    )
  })
