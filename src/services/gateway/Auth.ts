/**
 * Gateway authentication: logs in with `POST /api/v1/auth/user`, keeps the token, reads its expiry (JWT
 * `exp`, else `expires_in`), replaces it ahead of expiry, and makes concurrent callers share one login.
 * `authenticated` runs a call with the token and, on a 401, logs in again once and repeats the call.
 *
 * @example
 * ```ts
 * import { Auth, Testing, UserManager } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // concurrent callers share one login, and the token is kept until shortly before it expires
 * const program = Effect.gen(function*() {
 *   const users = yield* UserManager.UserManager
 *   yield* Effect.all([users.me(), users.me(), users.me()], { concurrency: "unbounded" })
 *   const auth = yield* Auth.Auth
 *   return `${yield* auth.logins} login(s)`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * // => 1 login(s)
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import type { ApiError } from "../../schemas/Errors.js"
import { AccessToken } from "../../schemas/Gateway.js"
import { GatewayHttpClient } from "./GatewayHttpClient.js"

/**
 * A token and when it stops being used.
 *
 * @since 0.1.0
 * @category models
 */
export interface Token {
  /** The bearer token. */
  readonly token: Redacted.Redacted<string>
  /** When it was obtained (epoch millis, from `Clock`). */
  readonly obtainedAt: number
  /** When it expires (epoch millis), if known; unknown expiry means "until a 401". */
  readonly expiresAt: number | undefined
  /** When it is replaced before use (epoch millis), if its expiry is known and was ahead when it arrived. */
  readonly refreshAt: number | undefined
}

/**
 * Gateway authentication.
 *
 * @example
 * ```ts
 * import { Auth, Testing } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * // when the token expires (JWT `exp`, else `expires_in`) and when it is replaced
 * const program = Effect.gen(function*() {
 *   const auth = yield* Auth.Auth
 *   const token = yield* auth.login()
 *   const minutes = (token.expiresAt ?? token.obtainedAt) - token.obtainedAt
 *   return `valid for ${Math.round(minutes / 60_000)} minutes, token ${token.token}`
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerGatewayEmulator()))).then(console.log)
 * // => valid for 60 minutes, token <redacted>
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class Auth extends Context.Tag("effect-aifs/gateway/Auth")<Auth, Auth.Service>() {}

/**
 * The types of the `Auth` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace Auth {
  /**
   * What `Auth` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Logs in now, replacing the kept token (shared with concurrent callers). */
    readonly login: () => Effect.Effect<Token, ApiError>
    /** The kept token while it is fresh, else one from a new login (one login for all concurrent callers). */
    readonly token: () => Effect.Effect<Redacted.Redacted<string>, ApiError>
    /** Forgets `token` if it is still the kept one (after the server refused it). */
    readonly invalidate: (token: Redacted.Redacted<string>) => Effect.Effect<void>
    /**
     * Runs `call` with a token; when the server answers 401, logs in again (once) and repeats it. A login
     * that fails is returned as is (wrong password: `Unauthorized`, at once).
     */
    readonly authenticated: <A>(
      call: (token: Redacted.Redacted<string>) => Effect.Effect<A, ApiError>
    ) => Effect.Effect<A, ApiError>
    /** How many logins were sent (for metrics and tests). */
    readonly logins: Effect.Effect<number>
  }
}

/**
 * Credentials and refresh settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** User name. */
  readonly username: string
  /** Password. */
  readonly password: Redacted.Redacted<string> | string
  /** How long before expiry to replace a token (default 60 s; at most a fifth of the token's lifetime). */
  readonly refreshAhead?: Duration.DurationInput | undefined
}

/** A JWT's payload, as far as its expiry: `exp`, seconds since the epoch; any other claim is left alone. */
const Claims = Schema.parseJson(Schema.Struct({ exp: Schema.Finite }))

/**
 * The `exp` claim of a JWT in epoch millis, if the token is a JWT that has one.
 *
 * @since 0.1.0
 * @category tokens
 */
export const jwtExpiry = (token: string): number | undefined => {
  const parts = token.split(".")
  if (parts.length !== 3) return undefined
  return Encoding.decodeBase64UrlString(parts[1]!).pipe(
    Either.flatMap(Schema.decodeUnknownEither(Claims)),
    Either.map((claims) => claims.exp * 1000),
    Either.getOrUndefined
  )
}

/**
 * Builds the service on the `GatewayHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): Effect.Effect<Auth.Service, never, GatewayHttpClient> =>
  Effect.gen(function*() {
    const http = yield* GatewayHttpClient
    const password = Redacted.isRedacted(options.password) ? options.password : Redacted.make(options.password)
    const refreshAhead = Duration.toMillis(Duration.decode(options.refreshAhead ?? Duration.seconds(60)))
    const current = yield* Ref.make<Option.Option<Token>>(Option.none())
    const count = yield* Ref.make(0)
    const lock = yield* Effect.makeSemaphore(1)

    const isFresh = (token: Token, now: number) => token.refreshAt === undefined || now < token.refreshAt

    // the login's span is the transport's
    const send = Effect.fnUntraced(function*() {
      yield* Ref.update(count, (n) => n + 1)
      const { value } = yield* http.json(
        HttpClientRequest.post("/api/v1/auth/user").pipe(
          HttpClientRequest.bodyUnsafeJson({ username: options.username, password: Redacted.value(password) })
        ),
        AccessToken,
        { span: { name: "Auth.login", attributes: { "aifs.gateway.user": options.username } } }
      )
      const now = yield* Clock.currentTimeMillis
      const expiresIn = value.expires_in ?? undefined
      const expiresAt = jwtExpiry(value.access_token) ?? (expiresIn === undefined ? undefined : now + expiresIn * 1000)
      // an expiry already past on arrival (the gateway's clock ahead of ours, `expires_in: 0`) cannot be told apart
      // from no expiry: the token is kept until the gateway refuses it, rather than replaced by a login per call
      const refreshAt = expiresAt === undefined || expiresAt <= now
        ? undefined
        : expiresAt - Math.min(refreshAhead, (expiresAt - now) / 5)
      const token: Token = { token: Redacted.make(value.access_token), obtainedAt: now, expiresAt, refreshAt }
      yield* Ref.set(current, Option.some(token))
      return token
    })

    const login = () => lock.withPermits(1)(send())

    const token = (): Effect.Effect<Redacted.Redacted<string>, ApiError> =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const kept = yield* Ref.get(current)
        if (Option.isSome(kept) && isFresh(kept.value, now)) return kept.value.token
        // single flight: whoever holds the lock logs in; the others find its token when they get the lock
        return yield* lock.withPermits(1)(Effect.gen(function*() {
          const again = yield* Ref.get(current)
          const later = yield* Clock.currentTimeMillis
          if (Option.isSome(again) && isFresh(again.value, later)) return again.value.token
          return (yield* send()).token
        }))
      })

    const invalidate = (token: Redacted.Redacted<string>) =>
      Ref.update(
        current,
        (kept) =>
          Option.isSome(kept) && Redacted.value(kept.value.token) === Redacted.value(token) ? Option.none() : kept
      )

    const authenticated = <A>(
      call: (token: Redacted.Redacted<string>) => Effect.Effect<A, ApiError>
    ): Effect.Effect<A, ApiError> =>
      Effect.flatMap(token(), (first) =>
        call(first).pipe(
          Effect.catchTag("Unauthorized", () =>
            invalidate(first).pipe(
              Effect.zipRight(token()),
              Effect.flatMap(call),
              // the login and the repeated call, under one span
              Effect.withSpan("Auth.reauthenticate", {
                captureStackTrace: false,
                attributes: { "aifs.operation": "Auth.reauthenticate" }
              })
            ))
        ))

    return { login, token, invalidate, authenticated, logins: Ref.get(count) }
  })

/**
 * The service from credentials, on a `GatewayHttpClient`.
 *
 * @example
 * ```ts
 * import { Auth, GatewayConfig, GatewayHttp, Node } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 * import * as Redacted from "effect/Redacted"
 *
 * // logins for one user, replacing the token two minutes before it expires
 * export const AuthLive: Layer.Layer<Auth.Auth> = Auth.layer({
 *   username: "me",
 *   password: Redacted.make("..."),
 *   refreshAhead: "2 minutes"
 * }).pipe(
 *   Layer.provide(GatewayHttp.layerDefaultRetry),
 *   Layer.provide(GatewayConfig.layer({ username: "me", password: "..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<Auth, never, GatewayHttpClient> =>
  Layer.effect(Auth, make(options))
