/**
 * What an answer's `x-ratelimit-*` headers teach a bucket: the limits they give (requests, and combined tokens), and
 * what the server counts beyond this limiter's count (another process on the key, requests it received late), added
 * to the window dated by the server's resets so that it leaves when the server says its count drops.
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { RateLimitInfo } from "../../schemas/RateLimit.js"
import * as Bucket from "./bucket.js"
import * as Core from "./core.js"

/** The server's count from a response's limits and remaining figures, dated by its resets. */
export const serverCount = (info: RateLimitInfo, windowMs: number) => {
  const used = (limit: number | undefined, remaining: number | undefined) =>
    limit !== undefined && remaining !== undefined ? limit - remaining : 0
  const ageOf = (reset: Duration.Duration | undefined) =>
    Math.max(0, windowMs - (reset === undefined ? windowMs : Duration.toMillis(reset)))
  return {
    requests: used(info.limitRequests, info.remainingRequests),
    requestsAgeMs: ageOf(info.resetRequests),
    tokens: used(info.limitTokens, info.remainingTokens),
    tokensAgeMs: ageOf(info.resetTokens)
  }
}

/** Whether an answer's headers carry limits at all (most answers of open-source models carry none). */
export const carriesLimits = (info: RateLimitInfo): boolean =>
  info.limitRequests !== undefined || info.limitTokens !== undefined

/** Learns from the headers of an answer in `bucket`. */
export const learn = (core: Core.Core, bucket: Bucket.Bucket, info: RateLimitInfo) =>
  Effect.suspend(() => {
    const changed = Bucket.applyHeaders(bucket, info)
    const count = serverCount(info, core.windowMs)
    const topUp = count.requests > 0 || count.tokens > 0
      ? Core.settle(bucket, core.store.topUp(bucket.id, count, Core.windowOf(core, bucket)))
      : Effect.void
    // new limits may let the head of the line go sooner (or show it can never fit)
    return Effect.zipRight(topUp, changed ? Core.released(core, bucket) : Core.publish(core, bucket))
  })
