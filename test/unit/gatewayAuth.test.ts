/**
 * Gateway authentication on the scripted transport and the TestClock: token reuse, refresh ahead of expiry,
 * one login for many concurrent callers, one re-login after a 401, wrong credentials failing at once.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import type * as Tracer from "effect/Tracer"
import * as Testing from "../../src/layers/Testing.js"
import * as Auth from "../../src/services/gateway/Auth.js"
import * as ConfigManager from "../../src/services/gateway/ConfigManager.js"
import { capturesStackTrace, recording } from "../helpers/spans.js"

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

/** An unsigned JWT with `exp` (the client only reads it). */
const jwt = (sub: string, expSeconds: number) =>
  `${base64url({ alg: "HS256", typ: "JWT" })}.${base64url({ sub, exp: expSeconds })}.c2lnbmF0dXJl`

const configsBody = [{ userGroupId: "group-1", localKbConfigs: [{ id: "kb-1", allowed_llms: [{ name: "gpt-4o" }] }] }]

interface Server {
  readonly handler: Testing.Handler
  readonly logins: Effect.Effect<number>
  readonly calls: Effect.Effect<number>
  readonly tokensSeen: Effect.Effect<ReadonlyArray<string>>
}

/**
 * A gateway that issues `tokenFor(n, nowMillis)` on the n-th login and accepts the tokens `accepts` allows.
 */
const server = (options: {
  readonly tokenFor: (n: number, now: number) => string
  readonly accepts?: (token: string) => boolean
  readonly login?: (body: unknown) => Testing.ScriptedResponse | undefined
}) =>
  Effect.gen(function*() {
    const logins = yield* Ref.make(0)
    const calls = yield* Ref.make(0)
    const seen = yield* Ref.make<ReadonlyArray<string>>([])
    const handler: Testing.Handler = (request) =>
      Effect.gen(function*() {
        if (request.path === "/api/v1/auth/user") {
          const n = yield* Ref.updateAndGet(logins, (c) => c + 1)
          const refused = options.login?.(request.body)
          if (refused !== undefined) return refused
          // let concurrent callers run while this login is in flight
          yield* Effect.yieldNow()
          return { body: { access_token: options.tokenFor(n, yield* Clock.currentTimeMillis), token_type: "bearer" } }
        }
        yield* Ref.update(calls, (c) => c + 1)
        const token = (request.headers["authorization"] ?? "").replace(/^Bearer /, "")
        yield* Ref.update(seen, (all) => [...all, token])
        if (options.accepts !== undefined && !options.accepts(token)) {
          return { status: 401, body: { detail: "Token expired" } }
        }
        return { body: configsBody }
      })
    return {
      handler,
      logins: Ref.get(logins),
      calls: Ref.get(calls),
      tokensSeen: Ref.get(seen)
    } satisfies Server
  })

const listConfigs = Effect.flatMap(ConfigManager.ConfigManager, (c) => c.list())

describe("gateway Auth", () => {
  it.effect("logs in once with the configured credentials and reuses the token", () =>
    Effect.gen(function*() {
      const bodies: Array<unknown> = []
      const s = yield* server({
        tokenFor: (n) => `opaque-token-${n}`,
        login: (body) => {
          bodies.push(body)
          return undefined
        }
      })
      const results = yield* Effect.all([listConfigs, listConfigs, listConfigs]).pipe(
        Effect.provide(Testing.layerGatewayHttp(s.handler, { config: { username: "alice", password: "s3cret" } }))
      )
      assert.strictEqual(results[2]![0]!.localKbConfigs![0]!.id, "kb-1")
      assert.strictEqual(yield* s.logins, 1)
      assert.strictEqual(yield* s.calls, 3)
      assert.deepStrictEqual(yield* s.tokensSeen, ["opaque-token-1", "opaque-token-1", "opaque-token-1"])
      assert.deepStrictEqual(bodies, [{ username: "alice", password: "s3cret" }])
    }))

  it.effect("reads a JWT's exp and replaces the token ahead of expiry, not before", () =>
    Effect.gen(function*() {
      // tokens live 600 s; refreshAhead 60 s: kept until 540 s, replaced from then on (before 600 s)
      const s = yield* server({ tokenFor: (n, now) => jwt(`alice-${n}`, now / 1000 + 600) })
      const layer = Testing.layerGatewayHttp(s.handler, { config: { refreshAhead: "60 seconds" } })
      yield* Effect.gen(function*() {
        const auth = yield* Auth.Auth
        yield* listConfigs
        const first = yield* auth.token()
        assert.strictEqual(Auth.jwtExpiry(Redacted.value(first)), 600_000)
        yield* TestClock.adjust("539999 millis")
        yield* listConfigs
        assert.strictEqual(yield* s.logins, 1, "still fresh 1 ms before 540 s")
        yield* TestClock.adjust("1 millis")
        yield* listConfigs
        assert.strictEqual(yield* s.logins, 2, "replaced at 540 s exactly, before its expiry at 600 s")
        const second = yield* auth.token()
        assert.strictEqual(Auth.jwtExpiry(Redacted.value(second)), 540_000 + 600_000)
        assert.strictEqual(yield* s.calls, 3)
      }).pipe(Effect.provide(layer))
    }))

  it.effect("a short-lived token is replaced a fifth of its lifetime ahead", () =>
    Effect.gen(function*() {
      const s = yield* server({ tokenFor: (n, now) => jwt(`alice-${n}`, now / 1000 + 10) })
      yield* Effect.gen(function*() {
        yield* listConfigs
        yield* TestClock.adjust("7900 millis")
        yield* listConfigs
        assert.strictEqual(yield* s.logins, 1)
        yield* TestClock.adjust("200 millis")
        yield* listConfigs
        assert.strictEqual(yield* s.logins, 2)
      }).pipe(Effect.provide(Testing.layerGatewayHttp(s.handler)))
    }))

  it.effect("50 concurrent calls with an expired token cause exactly one login", () =>
    Effect.gen(function*() {
      const s = yield* server({ tokenFor: (n, now) => jwt(`alice-${n}`, now / 1000 + 60) })
      yield* Effect.gen(function*() {
        yield* listConfigs
        assert.strictEqual(yield* s.logins, 1)
        yield* TestClock.adjust("2 minutes")
        const results = yield* Effect.all(Array.from({ length: 50 }, () => listConfigs), { concurrency: "unbounded" })
        assert.strictEqual(results.length, 50)
        assert.strictEqual(yield* s.logins, 2, "one login for all fifty")
        const seen = yield* s.tokensSeen
        assert.strictEqual(new Set(seen.slice(1)).size, 1, "all fifty used the same new token")
        assert.notStrictEqual(seen[1], seen[0])
      }).pipe(Effect.provide(Testing.layerGatewayHttp(s.handler)))
    }))

  it.effect("a 401 on a kept token logs in again once and repeats the call", () =>
    Effect.gen(function*() {
      // opaque tokens (no expiry known): the server revokes token 1
      const s = yield* server({ tokenFor: (n) => `opaque-${n}`, accepts: (token) => token !== "opaque-1" })
      const configs = yield* listConfigs.pipe(Effect.provide(Testing.layerGatewayHttp(s.handler)))
      assert.strictEqual(configs[0]!.userGroupId, "group-1")
      assert.strictEqual(yield* s.logins, 2)
      assert.deepStrictEqual(yield* s.tokensSeen, ["opaque-1", "opaque-2"])
    }))

  it.effect("a 401 on a token already replaced keeps its replacement: no second login", () =>
    Effect.gen(function*() {
      // two calls send token 1; the first is refused at once and logs in (token 2), the second is refused only once
      // token 2 has been used: its refusal of token 1 comes after the token was replaced
      const s = yield* server({ tokenFor: (n) => `opaque-${n}`, accepts: (token) => token !== "opaque-1" })
      const replaced = yield* Deferred.make<void>()
      let refusals = 0
      const handler: Testing.Handler = (request) =>
        Effect.gen(function*() {
          const sent = request.headers["authorization"] ?? ""
          if (sent === "Bearer opaque-1" && ++refusals === 2) yield* Deferred.await(replaced)
          const answer = s.handler(request)
          const response = Effect.isEffect(answer) ? yield* answer : answer
          if (sent === "Bearer opaque-2") yield* Deferred.succeed(replaced, undefined)
          return response
        })
      yield* Effect.all([listConfigs, listConfigs], { concurrency: "unbounded" }).pipe(
        Effect.provide(Testing.layerGatewayHttp(handler))
      )
      assert.strictEqual(yield* s.logins, 2)
      assert.deepStrictEqual([...(yield* s.tokensSeen)].sort(), ["opaque-1", "opaque-1", "opaque-2", "opaque-2"])
    }))

  it.effect("the login and a re-login after a 401 have their spans, with the user, no route and no stack trace", () =>
    Effect.gen(function*() {
      const spans: Array<Tracer.Span> = []
      const tracer = yield* recording(spans)
      const s = yield* server({ tokenFor: (n) => `opaque-${n}`, accepts: (token) => token !== "opaque-1" })
      yield* listConfigs.pipe(
        Effect.provide(Testing.layerGatewayHttp(s.handler, { config: { username: "alice" } })),
        Effect.withTracer(tracer)
      )
      const logins = spans.filter((span) => span.name === "Auth.login")
      assert.strictEqual(logins.length, 2)
      for (const login of logins) {
        assert.strictEqual(login.attributes.get("aifs.gateway.user"), "alice")
        assert.strictEqual(login.attributes.get("aifs.operation"), "Auth.login")
        assert.isFalse(capturesStackTrace(login))
        // the gateway has one route: no `aifs.route`, which names the inference transport's bases
        assert.isFalse(login.attributes.has("aifs.route"))
      }
      const again = spans.filter((span) => span.name === "Auth.reauthenticate")
      assert.strictEqual(again.length, 1)
      assert.strictEqual(again[0]!.attributes.get("aifs.operation"), "Auth.reauthenticate")
      assert.isFalse(capturesStackTrace(again[0]!))
    }))

  it.effect("concurrent 401s on the same token cause one re-login", () =>
    Effect.gen(function*() {
      const s = yield* server({ tokenFor: (n) => `opaque-${n}`, accepts: (token) => token !== "opaque-1" })
      yield* Effect.gen(function*() {
        const auth = yield* Auth.Auth
        yield* auth.token()
        yield* Effect.all(Array.from({ length: 20 }, () => listConfigs), { concurrency: "unbounded" })
        assert.strictEqual(yield* s.logins, 2)
      }).pipe(Effect.provide(Testing.layerGatewayHttp(s.handler)))
    }))

  it.effect("a server that refuses every token fails with Unauthorized after one re-login, not a loop", () =>
    Effect.gen(function*() {
      const s = yield* server({ tokenFor: (n) => `opaque-${n}`, accepts: () => false })
      const error = yield* Effect.flip(listConfigs.pipe(Effect.provide(Testing.layerGatewayHttp(s.handler))))
      assert.strictEqual(error._tag, "Unauthorized")
      assert.strictEqual(yield* s.logins, 2)
      assert.strictEqual(yield* s.calls, 2)
    }))

  it.effect("a wrong password is Unauthorized at once: one login, no call, no retry", () =>
    Effect.gen(function*() {
      const s = yield* server({
        tokenFor: () => "never",
        login: (body) =>
          (body as { password?: string }).password === "right"
            ? undefined
            : { status: 401, body: { detail: "Invalid username or password 'wrong-pass'" } }
      })
      const exit = yield* Effect.exit(
        listConfigs.pipe(Effect.provide(Testing.layerGatewayHttp(s.handler, { config: { password: "wrong-pass" } })))
      )
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(exit)
      assert.strictEqual(error._tag, "Unauthorized")
      assert.strictEqual(yield* s.logins, 1)
      assert.strictEqual(yield* s.calls, 0)
      // the password echoed by the server is scrubbed
      assert.notInclude(error.message, "wrong-pass")
      assert.strictEqual(error._tag === "Unauthorized" ? error.endpoint : "", "POST /api/v1/auth/user")
    }))

  it.effect("jwtExpiry reads exp and ignores opaque or malformed tokens", () =>
    Effect.sync(() => {
      assert.strictEqual(Auth.jwtExpiry(jwt("a", 1234)), 1_234_000)
      assert.isUndefined(Auth.jwtExpiry("opaque"))
      assert.isUndefined(Auth.jwtExpiry("a.b.c"))
      // a payload that is JSON but no claims, an exp that is no finite number, a payload that is no JSON
      for (const payload of ["null", "5", "\"text\"", "{\"exp\":\"1234\"}", "{\"exp\":1e999}", "{not json"]) {
        assert.isUndefined(Auth.jwtExpiry(`x.${Buffer.from(payload).toString("base64url")}.y`), payload)
      }
      assert.isUndefined(Auth.jwtExpiry(`x.${base64url({ sub: "no exp" })}.y`))
    }))
})
