/**
 * The emulator's HTTP application: the routers of every endpoint group mounted at `/v2` and the queue
 * root, FastAPI-style 404/405 answers, a request id on every response, and never a 500 for a client mistake.
 *
 * @since 0.1.0
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Chaos from "./chaos.js"
import * as GatewayRoutes from "./gateway/routes.js"
import { detail } from "./http.js"
import * as Chat from "./routes/chat.js"
import * as Completions from "./routes/completions.js"
import * as Embeddings from "./routes/embeddings.js"
import * as Models from "./routes/models.js"
import * as Surface from "./routes/surface.js"
import type { EmulatorState } from "./state.js"

/** Paths that exist for some method: a request with another method gets 405, not 404. */
const knownPaths: ReadonlyArray<RegExp> = [
  /^\/(v2|queue)\/models(\/[^/]+)?\/?$/,
  /^\/(v2|queue)\/(chat\/completions|completions|embeddings)\/?$/,
  ...Surface.knownPaths,
  ...GatewayRoutes.knownPaths
]

/**
 * Paths the router cannot match name nothing: 404, never 405. Those are paths that do not percent-decode and
 * ids longer than the router's parameter limit (100 characters).
 */
const routable = (path: string) => {
  try {
    decodeURIComponent(path)
  } catch {
    return false
  }
  return path.split("/").every((segment) => segment.length <= 100)
}

/**
 * Every route of the emulator over one state: the inference routers at `/v2` (429 when over the limit) and the
 * queue root (waits), the surface at `/v1`, the gateway at `/gateway`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const router = (state: EmulatorState) => {
  const inference = (mode: "reject" | "wait") =>
    HttpRouter.concatAll(
      Models.router(state),
      Chat.router(state, mode),
      Completions.router(state, mode),
      Embeddings.router(state, mode)
    )
  return HttpRouter.empty.pipe(
    HttpRouter.mount("/v2", HttpRouter.concat(inference("reject"), Surface.v2(state))),
    HttpRouter.mount("/queue", HttpRouter.concat(inference("wait"), Surface.queue(state))),
    HttpRouter.mount("/v1", Surface.v1(state)),
    HttpRouter.mount("/gateway", GatewayRoutes.router(state.gateway))
  )
}

/**
 * Builds the application over one state.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (state: EmulatorState): HttpApp.Default<never, never> => {
  const app = router(state).pipe(
    Effect.catchTags({
      Reject: (reject) => Effect.succeed(reject.response),
      RouteNotFound: () =>
        Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
          const path = new URL(request.url, "http://emulator").pathname
          return knownPaths.some((p) => p.test(path)) && routable(path)
            ? detail(405, "Method Not Allowed")
            : detail(404, "Not Found")
        })
    }),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause)
        : Effect.as(
          Effect.logError("emulator: unexpected failure", cause),
          detail(500, "Internal Server Error")
        )
    )
  )
  return Effect.map(
    Chaos.middleware(state.chaos)(app),
    (response) =>
      HttpServerResponse.setHeader(response, "x-request-id", `req_${state.next().toString(36).padStart(8, "0")}`)
  )
}
