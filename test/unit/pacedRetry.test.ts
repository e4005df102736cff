/**
 * A 429 the limiter learns from (`tier: "auto"`, no rate-limit headers): its retry asks the retry policy for no
 * wait (`pacedByLimiter`), because the limiter holds it until the window frees; a preset tier's 429 keeps the
 * policy's back-off. Scripted transport, `TestClock`, the retry logs read.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as TestClock from "effect/TestClock"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as InferenceHttp from "../../src/layers/InferenceHttp.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import * as TokenEstimator from "../../src/layers/TokenEstimator.js"
import * as Chat from "../../src/services/Chat.js"

const completion = {
  id: "c",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 }
}

/** A server that answers the `refused`-th request with a 429 (no headers, no wait), every other with a completion. */
const clientWith = (tier: RateLimiter.Options["tier"], refused: number, logs: Array<string>) => {
  let served = 0
  const http = Testing.httpClient(() => {
    served++
    return served === refused
      ? { status: 429, body: { error: { message: "Rate limit reached", type: "rate_limit" } } }
      : { body: completion }
  })
  return Chat.layer.pipe(
    Layer.provide(InferenceHttp.layer),
    Layer.provide(Layer.mergeAll(
      RateLimiter.layerWith({ tier, window: "10 seconds" }),
      // no jitter: a paced retry waits nothing; a back-off waits 2.5 s to 5 s
      RetryPolicy.layer({ maxRetries: 2, baseDelay: "5 seconds", rateLimitJitter: "0 millis" })
    )),
    Layer.provide(Layer.mergeAll(
      ClientConfig.layer({ apiKey: "gen-test", baseUrl: "http://aifs.test/v2" }),
      LimiterStore.layerMemory,
      TokenEstimator.layer,
      Layer.succeed(HttpClient.HttpClient, http)
    )),
    Layer.merge(Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => logs.push(String(message))))),
    // the library logs retries at debug
    Layer.merge(Logger.minimumLogLevel(LogLevel.Debug))
  )
}

const ask = Effect.flatMap(
  Chat.Chat,
  (chat) => chat.create({ model: "m", messages: [{ role: "user", content: "hi" }] })
)

describe("the retry of a 429 the limiter learns from", () => {
  it.effect("asks for no wait: the limiter holds it until the window frees", () => {
    const logs: Array<string> = []
    return Effect.gen(function*() {
      for (let i = 0; i < 3; i++) yield* ask
      const fourth = yield* Effect.fork(ask)
      yield* TestClock.adjust("1 millis")
      const retried = logs.filter((line) => line.includes("retry 1 of 2"))
      assert.lengthOf(retried, 1)
      assert.match(retried[0]!, /retry 1 of 2 in 0$/)
      // held by the limiter (the window holds the 3 it learnt) until the first of them leaves it
      yield* TestClock.adjust("9 seconds")
      assert.isNull(fourth.unsafePoll())
      yield* TestClock.adjust("2 seconds")
      assert.strictEqual((yield* Fiber.join(fourth)).choices[0]?.message.content, "ok")
    }).pipe(Effect.provide(clientWith("auto", 4, logs)))
  })

  it.effect("on a preset tier, the policy's back-off as before", () => {
    const logs: Array<string> = []
    return Effect.gen(function*() {
      const first = yield* Effect.fork(ask)
      yield* TestClock.adjust("1 millis")
      const retried = logs.filter((line) => line.includes("retry 1 of 2"))
      assert.lengthOf(retried, 1)
      assert.match(retried[0]!, /retry 1 of 2 in [2-5]s/)
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual((yield* Fiber.join(first)).choices[0]?.message.content, "ok")
    }).pipe(Effect.provide(clientWith("standard4000", 1, logs)))
  })
})
