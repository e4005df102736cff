/**
 * Gateway logins (src/services/gateway/Auth.ts) against tokens of every lifetime form: a JWT with `exp`, an
 * `expires_in`, neither, and one already expired when it arrives (a JWT `exp` in the past: the gateway's clock and
 * ours disagree; an `expires_in` of 0 or less). Rounds of concurrent calls, the clock moved between them on the
 * `TestClock`: exactly one login per lifetime, shared by every call of a round, whatever the number of callers.
 * A token of known lifetime is replaced `min(60 s, a fifth of its lifetime)` ahead of its expiry; a token without one,
 * or whose expiry has passed on arrival, is kept until the gateway refuses it (no login per call).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import * as Testing from "../../src/layers/Testing.js"
import * as UserManager from "../../src/services/gateway/UserManager.js"

type Form = "jwt" | "expires_in" | "none" | "expired jwt" | "expired expires_in"

interface Scenario {
  readonly form: Form
  /** The token's lifetime in seconds (the forms with a future expiry). */
  readonly lifetime: number
  /** Rounds of concurrent calls, and how far the clock moves after each (ms). */
  readonly rounds: ReadonlyArray<{ readonly callers: number; readonly then: number }>
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

/** A JWT whose `exp` is `exp` (epoch seconds; any number). */
const jwt = (exp: number, n: number) => `${base64url({ alg: "HS256" })}.${base64url({ sub: `user-${n}`, exp })}.sig${n}`

/** The login's answer for token number `n`, issued at `now` (ms). */
const answer = (scenario: Scenario, now: number, n: number) => {
  switch (scenario.form) {
    case "jwt":
      return { access_token: jwt(now / 1000 + scenario.lifetime, n) }
    case "expires_in":
      return { access_token: `token-${n}`, expires_in: scenario.lifetime }
    case "none":
      return { access_token: `token-${n}` }
    case "expired jwt":
      return { access_token: jwt(now / 1000 - scenario.lifetime, n), expires_in: scenario.lifetime }
    case "expired expires_in":
      return { access_token: `token-${n}`, expires_in: n % 2 === 0 ? 0 : -scenario.lifetime }
  }
}

/** The logins the scenario should cost, and after which round each happens. */
const expectedLogins = (scenario: Scenario): ReadonlyArray<number> => {
  const logins: Array<number> = []
  let now = 0
  let refreshAt: number | undefined = undefined
  const lifetime = scenario.lifetime * 1000
  for (const [i, round] of scenario.rounds.entries()) {
    if (logins.length === 0 || (refreshAt !== undefined && now >= refreshAt)) {
      logins.push(i)
      refreshAt = scenario.form === "jwt" || scenario.form === "expires_in"
        ? now + lifetime - Math.min(60_000, lifetime / 5)
        : undefined
    }
    now += round.then
  }
  return logins
}

const scenario: FastCheck.Arbitrary<Scenario> = FastCheck.record({
  form: FastCheck.constantFrom<Form>("jwt", "expires_in", "none", "expired jwt", "expired expires_in"),
  lifetime: FastCheck.integer({ min: 1, max: 7_200 })
}).chain(({ form, lifetime }) =>
  FastCheck.array(
    FastCheck.record({
      callers: FastCheck.integer({ min: 1, max: 8 }),
      // within the lifetime, around its refresh moment, or far beyond it
      then: FastCheck.oneof(
        FastCheck.integer({ min: 0, max: lifetime * 1000 }),
        FastCheck.integer({ min: 0, max: 3 * lifetime * 1000 }),
        FastCheck.constantFrom(0, 1, 59_999, 60_000)
      )
    }),
    { minLength: 1, maxLength: 6 }
  ).map((rounds) => ({ form, lifetime, rounds }))
)

/** Runs the scenario on a fresh client: the logins sent (after which round), and the token each call carried. */
const run = (s: Scenario) => {
  const logins: Array<number> = []
  const used: Array<ReadonlyArray<string>> = []
  let round = 0
  const gateway = Testing.layerGatewayHttp((request) =>
    request.path === "/api/v1/auth/user"
      ? Effect.gen(function*() {
        logins.push(round)
        // a login takes a moment: the round's other callers are waiting for it by then
        for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
        return { body: answer(s, yield* Clock.currentTimeMillis, logins.length) }
      })
      : Effect.sync(() => {
        used[round] = [...(used[round] ?? []), request.headers["authorization"] ?? ""]
        return { body: { username: "test-user", roles: ["CHAT_USER"] } }
      })
  )
  return Effect.gen(function*() {
    const users = yield* UserManager.UserManager
    for (const [i, { callers, then }] of s.rounds.entries()) {
      round = i
      yield* Effect.all(Array.from({ length: callers }, () => users.me()), { concurrency: "unbounded" })
      yield* TestClock.adjust(then)
    }
    return { logins, used }
  }).pipe(Effect.provide(gateway), Effect.provide(TestContext.TestContext))
}

describe("gateway tokens of every lifetime form", () => {
  it.effect("one login per lifetime, shared by concurrent callers; a token without a future expiry is kept", () =>
    Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(scenario, async (s) => {
          const { logins, used } = await Effect.runPromise(run(s))
          const story = JSON.stringify(s)
          assert.deepStrictEqual(logins, expectedLogins(s), story)
          // every call of a round carried the one token of its lifetime
          for (const [i, tokens] of used.entries()) {
            assert.strictEqual(tokens.length, s.rounds[i]!.callers, story)
            assert.strictEqual(new Set(tokens).size, 1, `round ${i}: ${story}`)
          }
        }),
        { numRuns: 40 }
      )
    ))
})
