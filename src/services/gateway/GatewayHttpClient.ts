/**
 * The transport of the retrieval gateway: its own base URL, error mapping, retries and timeouts. It never
 * carries the inference API key; it attaches a gateway token only when a request asks for it, and only to
 * relative URLs on the gateway's host. `Auth` decides which token.
 *
 * @example
 * ```ts
 * import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
 * import { Auth, GatewayHttpClient, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 *
 * // the transport under `Gateway`: a relative URL, a token only when asked for
 * const program = Effect.gen(function*() {
 *   const http = yield* GatewayHttpClient.GatewayHttpClient
 *   const auth = yield* Auth.Auth
 *   const token = yield* auth.token()
 *   const { response, value } = yield* http.json(
 *     HttpClientRequest.get("/config-manager/api/v1/user/configs"),
 *     Schema.Array(Schema.Unknown),
 *     { token }
 *   )
 *   return `${value.length} config(s), HTTP ${response.status}`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import type * as Schema from "effect/Schema"
import type { ApiError } from "../../schemas/Errors.js"
import type { WithResponse } from "../InferenceHttpClient.js"

export type {
  /**
   * What a response said besides its body (see `InferenceHttpClient.ResponseMetadata`).
   *
   * @since 0.1.0
   * @category models
   */
  ResponseMetadata,
  /**
   * A decoded body together with its response metadata.
   *
   * @since 0.1.0
   * @category models
   */
  WithResponse
} from "../InferenceHttpClient.js"

/**
 * Per-request options.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestOptions {
  /** The gateway token to send as `Authorization: Bearer` (none for the login itself). */
  readonly token?: Redacted.Redacted<string> | undefined
  /** Set to `false` for requests that must not be sent twice. */
  readonly retry?: boolean | undefined
  /** Time limit of one attempt, overriding the configured one. */
  readonly timeout?: Duration.DurationInput | undefined
  /** The operation's span, named `name` (with `aifs.operation`), over the attempts and their HTTP spans. */
  readonly span?: {
    readonly name: string
    /** More attributes of the client's own (`aifs.*`), set when the span opens. */
    readonly attributes?: Readonly<Record<string, unknown>> | undefined
  } | undefined
}

/**
 * The gateway transport.
 *
 * @example
 * ```ts
 * import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
 * import { GatewayHttpClient, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Schema from "effect/Schema"
 *
 * // without a token the gateway refuses; absolute URLs are never sent (no credentials leave for another host)
 * const program = Effect.gen(function*() {
 *   const http = yield* GatewayHttpClient.GatewayHttpClient
 *   return yield* http.json(HttpClientRequest.get("https://example.com/steal"), Schema.Unknown)
 * }).pipe(Effect.catchTag("TransportError", (error) => Effect.succeed(error.message)))
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class GatewayHttpClient
  extends Context.Tag("effect-aifs/GatewayHttpClient")<GatewayHttpClient, GatewayHttpClient.Service>()
{}

/**
 * The types of the `GatewayHttpClient` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace GatewayHttpClient {
  /**
   * What `GatewayHttpClient` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** The gateway's base URL. */
    readonly url: string
    /**
     * Sends a request whose URL is relative to the gateway (`/file-manager/api/v1/files/`) and decodes its
     * JSON body, with retries.
     */
    readonly json: <A, I>(
      request: HttpClientRequest.HttpClientRequest,
      schema: Schema.Schema<A, I>,
      options?: RequestOptions
    ) => Effect.Effect<WithResponse<A>, ApiError>
  }
}
