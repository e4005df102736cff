/**
 * A strict three-budget server of the tests' own, apart from the emulator: `POST /v2/chat/completions` only, metered
 * per key and model by requests, input tokens and output tokens over an exact sliding window, as an OpenAI-style
 * server charges them: the prompt (counted as the client's default estimator counts it) and the request's whole
 * `max_tokens` at admission, whatever the answer then uses. Over any budget it answers 429 with no headers (an
 * open-source model's way). Time from Effect's `Clock`, so a test's `TestClock` drives it.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer } from "node:http"
import * as Budgets from "../../src/internal/budgets.js"
import * as SlidingWindow from "../../src/internal/slidingWindow.js"
import { estimateBody } from "../../src/internal/tokens.js"

/** The budgets per window, and the window. */
export interface StrictLimits {
  readonly requests: number
  readonly input: number
  readonly output: number
  readonly windowMs: number
}

/** What the server saw. */
export interface StrictStats {
  answered: number
  refused: number
  /** The most any interval of the window's length held of each budget, counted at admission. */
  readonly peak: { requests: number; input: number; output: number }
}

/** The server, once it listens. */
export class StrictServer extends Context.Tag("test/StrictServer")<StrictServer, {
  readonly baseUrl: string
  readonly stats: StrictStats
}>() {}

/** The server on a free loopback port, for the scope of the layer. */
export const layer = (limits: StrictLimits): Layer.Layer<StrictServer, unknown> =>
  Layer.scoped(
    StrictServer,
    Effect.gen(function*() {
      const stats: StrictStats = { answered: 0, refused: 0, peak: { requests: 0, input: 0, output: 0 } }
      const windows = new Map<string, SlidingWindow.Log<SlidingWindow.Entry>>()
      const handler = Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const body = (yield* request.json) as { model: string; max_tokens?: number }
        const key = `${request.headers.authorization}\u0000${body.model}`
        const window = windows.get(key) ?? new SlidingWindow.Log()
        windows.set(key, window)
        const now = yield* Clock.currentTimeMillis
        const cost = Budgets.cost(estimateBody("/chat/completions", body).promptTokens, body.max_tokens ?? 1024)
        const limit = { ...Budgets.none, ...limits, tokens: Budgets.unlimited }
        window.prune(now, limits.windowMs)
        if (SlidingWindow.longest(window.waitFor(now, cost, limit, limits.windowMs)) > 0) {
          stats.refused++
          return HttpServerResponse.unsafeJson({ detail: "Rate limit exceeded" }, { status: 429 })
        }
        window.insert({ ...cost, at: now })
        for (const d of ["requests", "input", "output"] as const) {
          stats.peak[d] = Math.max(stats.peak[d], window.totals[d])
        }
        stats.answered++
        const completion = Math.ceil(cost.output / 2)
        return HttpServerResponse.unsafeJson({
          id: `chatcmpl-${stats.answered}`,
          object: "chat.completion",
          created: Math.floor(now / 1000),
          model: body.model,
          choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
          usage: { prompt_tokens: cost.input, completion_tokens: completion, total_tokens: cost.input + completion }
        })
      })
      yield* HttpServer.serveEffect(HttpRouter.empty.pipe(HttpRouter.post("/v2/chat/completions", handler)))
      const address = yield* HttpServer.addressWith((address) => Effect.succeed(address))
      const port = address._tag === "TcpAddress" ? address.port : 0
      return { baseUrl: `http://127.0.0.1:${port}/v2`, stats }
    })
  ).pipe(Layer.provide(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" })))
