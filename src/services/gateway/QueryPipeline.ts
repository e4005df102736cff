/**
 * Query pipeline: `POST /<path>/api/v1/chat` asks a question in a session. The service path is
 * configurable: `query-pipeline` (API reference, the default) or `query-pipelines` (the guides).
 *
 * @example
 * ```ts
 * import { QueryPipeline, Rag, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const session = yield* Rag.openSession({ global: true })
 *   const pipeline = yield* QueryPipeline.QueryPipeline
 *   const answer = yield* pipeline.chat({ sessionId: session.sessionId, userPrompt: "What are the opening hours?" })
 *   return `${answer.text} [${answer.sources?.length ?? 0} source(s)]`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ApiError } from "../../schemas/Errors.js"
import { type ChatAnswer, ChatAnswerFromWire, type ChatParams } from "../../schemas/Gateway.js"
import { Gateway } from "./Gateway.js"

/**
 * The query pipeline.
 *
 * @example
 * ```ts
 * import { QueryPipeline, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // the service path in use: `query-pipeline` (API reference) unless configured otherwise
 * const program = Effect.map(QueryPipeline.QueryPipeline, (pipeline) => pipeline.path)
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * // => query-pipeline
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class QueryPipeline
  extends Context.Tag("effect-aifs/gateway/QueryPipeline")<QueryPipeline, QueryPipeline.Service>()
{}

/**
 * The types of the `QueryPipeline` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace QueryPipeline {
  /**
   * What `QueryPipeline` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** The service path in use. */
    readonly path: string
    /** Asks a question in a session; the answer names the passages it used when the server says so. */
    readonly chat: (params: ChatParams) => Effect.Effect<ChatAnswer, ApiError>
  }
}

/**
 * Settings of the service.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Service path (default `query-pipeline`; the guides' `query-pipelines` is accepted). */
  readonly path?: string | undefined
}

/**
 * Builds the service on the `Gateway` client.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): Effect.Effect<QueryPipeline.Service, never, Gateway> =>
  Effect.gen(function*() {
    const gateway = yield* Gateway
    const path = (options.path ?? "query-pipeline").replace(/^\/+|\/+$/g, "")
    // the request's span is the transport's
    const chat = Effect.fnUntraced(function*(params: ChatParams) {
      const request = HttpClientRequest.post(`/${path}/api/v1/chat`).pipe(HttpClientRequest.bodyUnsafeJson(params))
      // a chat turn is appended to the session's history: not sent twice
      return (yield* gateway.send(request, ChatAnswerFromWire, {
        retry: false,
        span: { name: "QueryPipeline.chat", attributes: { "aifs.gateway.session": params.sessionId } }
      }))
        .value
    })
    return { path, chat }
  })

/**
 * The service, on a `Gateway` client.
 *
 * @example
 * ```ts
 * import { QueryPipeline, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Layer from "effect/Layer"
 *
 * // a deployment that follows the guides' `query-pipelines` path
 * const QueryPipelineLive = QueryPipeline.layer({ path: "query-pipelines" }).pipe(
 *   Layer.provide(Testing.layerGatewayEmulator())
 * )
 *
 * Effect.runPromise(Effect.map(QueryPipeline.QueryPipeline, (pipeline) => pipeline.path).pipe(
 *   Effect.provide(QueryPipelineLive)
 * )).then(console.log)
 * // => query-pipelines
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<QueryPipeline, never, Gateway> =>
  Layer.effect(QueryPipeline, make(options))
