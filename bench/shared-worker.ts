/**
 * One process of the shared-budget benchmark (bench/shared.ts): the client as users compose it (`Node.httpClient`,
 * the limiter's defaults but the window), on the Redis store when `REDIS_URL` is set, else on its own memory. It
 * connects, says `ready`, waits for `go` on stdin, sends its `COUNT` chat requests all at once, and prints one JSON
 * line: successes, failures, and when it started and ended (epoch ms, one machine). Each request carries the process's
 * index in a header of the benchmark's (`x-bench-tag`), by which the emulator's windows tell the processes apart.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { createInterface } from "node:readline"
import * as ClientConfig from "../src/layers/ClientConfig.js"
import * as Inference from "../src/layers/Inference.js"
import * as LimiterStore from "../src/layers/LimiterStore.js"
import * as Node from "../src/layers/Node.js"
import * as RedisLimiterStore from "../src/redis.js"
import * as Chat from "../src/services/Chat.js"
import { tagHeader } from "./common.js"

const env = (name: string): string => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`${name} is not set`)
  return value
}

const count = Number(env("COUNT"))
const index = Number(env("INDEX"))
const redisUrl = process.env.REDIS_URL

/** `Node.httpClient`, each request tagged with this process's index (bench/windows.ts). */
const tagged = Layer.effect(
  HttpClient.HttpClient,
  Effect.map(HttpClient.HttpClient, HttpClient.mapRequest(HttpClientRequest.setHeader(tagHeader, String(index))))
).pipe(Layer.provide(Node.httpClient))

const ClientLive = Inference.layerHttpLimitedWith({ window: Duration.millis(Number(env("WINDOW_MS"))) }).pipe(
  Layer.provide(
    redisUrl === undefined ? LimiterStore.layerMemory : RedisLimiterStore.layer(redisUrl, { prefix: env("PREFIX") })
  ),
  Layer.provide(tagged),
  Layer.provide(ClientConfig.layer({ apiKey: env("KEY"), baseUrl: env("BASE_URL"), tier: "basic" }))
)

const go = Effect.async<void>((resume) => {
  const lines = createInterface({ input: process.stdin })
  lines.once("line", () => {
    lines.close()
    resume(Effect.void)
  })
})

const program = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  process.stdout.write("ready\n")
  yield* go
  const start = Date.now()
  const results = yield* Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) =>
      Effect.either(chat.create({
        model: "Llama-3.3-70B-Instruct",
        messages: [{ role: "user", content: `process ${index}, request ${i}` }],
        max_tokens: 50
      })),
    { concurrency: "unbounded" }
  )
  const end = Date.now()
  const ok = results.filter(Either.isRight).length
  process.stdout.write(`${JSON.stringify({ ok, failed: results.length - ok, start, end })}\n`)
})

Effect.runPromise(program.pipe(Effect.provide(ClientLive), Effect.scoped)).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`shared-worker ${index}: ${String(error)}\n`)
    process.exit(1)
  }
)
