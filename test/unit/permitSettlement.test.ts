/**
 * What each way a request can end leaves in the rate limiter's budgets (requests, input, output, combined tokens),
 * by the settlement table (`src/internal/limiter/settlement.ts`): an answer counts its request and its tokens from
 * the answer; an error answer keeps the request and gives the tokens back; a request the server never counted (a
 * connection never made, a 429, a spent budget) gives everything back; a request cut off or timed out after it was
 * sent stays counted, tokens included; a request interrupted before it was sent leaves nothing behind. A 429 is
 * weighed: at a limit it closes the bucket and widens the margin, under every limit it is noise. A spent budget stops
 * every bucket of its key. The table's functions are tested as plain functions, then through the limiter, then
 * through the transport.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Budgets from "../../src/internal/budgets.js"
import * as Settlement from "../../src/internal/limiter/settlement.js"
import type { Usage } from "../../src/internal/limiter/types.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import {
  ApiError,
  QuotaExceeded,
  RateLimited,
  RequestTooLarge,
  ServerError,
  Timeout,
  TransportError
} from "../../src/schemas/Errors.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"
import { InferenceHttpClient, type RequestOptions } from "../../src/services/InferenceHttpClient.js"
import { limiterOn, memoryStoreWith } from "../helpers/stores.js"
import { chat, chatBody, stack, type StackOptions } from "./transportStack.js"

const outcomes: ReadonlyArray<RateLimiter.Outcome> = [
  "unsent",
  "succeeded",
  "failed",
  "unanswered",
  "throttled",
  "spent"
]

/** A 429 on the window, asking for `retryAfter` (none when undefined). */
const rateLimited = (retryAfter?: Duration.DurationInput) =>
  new RateLimited({
    message: "Rate limit reached",
    status: 429,
    ...(retryAfter === undefined ? {} : { retryAfter: Duration.decode(retryAfter) })
  })

/** The key's monthly budget is spent. */
const quotaExceeded = new QuotaExceeded({ message: "You exceeded your current quota", status: 429 })

/** The error a request that ended with `outcome` failed with, as the transport hands it to `settle`. */
const errorOf = (outcome: RateLimiter.Outcome): ApiError | undefined => {
  switch (outcome) {
    case "throttled":
      return rateLimited()
    case "spent":
      return quotaExceeded
    case "failed":
      return new ServerError({ message: "no", status: 500 })
    case "unanswered":
      return new Timeout({ message: "no answer", timeout: "total", after: Duration.seconds(5) })
    case "unsent":
      return new TransportError({ message: "ECONNREFUSED", connected: false })
    case "succeeded":
      return undefined
  }
}

/** A fresh limiter with no margin. */
const limiterWith = (options: RateLimiter.Options) =>
  Effect.provide(RateLimiter.RateLimiter, RateLimiter.layer({ margin: 0, ...options }))

/** Every budget known, none near binding for the requests of these tests. */
const roomy = { rpm: 1000, itpm: 1_000_000, otpm: 1_000_000, tpm: 2_000_000 }

/** A request on `key` and `model` reserving `input` and `output` tokens. */
const ticketOf = (input: number, output: number, model = "m", key = "key#1"): RateLimiter.Ticket => ({
  key,
  model,
  input,
  output
})

/** The state of a bucket now. */
const stateOf = (limiter: RateLimiter.RateLimiter.Service, model = "m", key = "key#1") =>
  Effect.map(limiter.snapshot, (states) => states.find((s) => s.model === model && s.key === key))

/**
 * What a bucket's window counts now, budget by budget (nothing when it has no bucket). `wouldWait` asks the store for
 * the bucket's usage first (unless its key is spent): `snapshot` alone shows the usage of the last store operation (a
 * known bug, see rateLimiter.test.ts), and these tests are about what settlements leave, not about `snapshot`.
 */
const usedOf = (limiter: RateLimiter.RateLimiter.Service, model = "m", key = "key#1") =>
  Effect.map(
    Effect.zipRight(limiter.wouldWait(ticketOf(0, 0, model, key)), stateOf(limiter, model, key)),
    (state): Budgets.Amounts => ({
      requests: state?.budgets.requests.used ?? 0,
      input: state?.budgets.input.used ?? 0,
      output: state?.budgets.output.used ?? 0,
      tokens: state?.budgets.tokens.used ?? 0
    })
  )

/** What an outcome's effects, as the table gives them, leave of a request costing `cost` in the window. */
const leftBy = (effects: Settlement.Effects, cost: Budgets.Amounts): Budgets.Amounts =>
  effects.entry === "remove"
    ? Budgets.none
    : effects.tokens === "kept"
    ? cost
    : { ...Budgets.none, requests: cost.requests }

/** The request only, its tokens given back. */
const requestOnly: Budgets.Amounts = { ...Budgets.none, requests: 1 }

/** How an acquisition ended: the error it failed with, or "admitted" (an interruption fails the test). */
const endOf = <E>(exit: Exit.Exit<unknown, E>): E | "admitted" => {
  if (Exit.isSuccess(exit)) return "admitted"
  const failure = Cause.failureOption(exit.cause)
  assert.isTrue(Option.isSome(failure), `not a failure: ${Cause.pretty(exit.cause)}`)
  return Option.getOrThrow(failure)
}

describe("the settlement table", () => {
  it("effectsOf: what each outcome does to its entry, its tokens, what it teaches, and the key", () => {
    const expected: Record<RateLimiter.Outcome, Settlement.Effects> = {
      // never reached the server: nothing stays
      unsent: { entry: "remove", tokens: "kept", evidence: "none", stopsKey: false },
      // counted from the answer, tokens as reserved; the window held it
      succeeded: { entry: "restamp", tokens: "kept", evidence: "held", stopsKey: false },
      // an error answer: the server counted the request, generated nothing
      failed: { entry: "restamp", tokens: "refunded", evidence: "none", stopsKey: false },
      // sent, no answer: the server may hold all of it
      unanswered: { entry: "restamp", tokens: "kept", evidence: "none", stopsKey: false },
      // refused on the window: not counted, and the refusal is weighed
      throttled: { entry: "remove", tokens: "kept", evidence: "refusal", stopsKey: false },
      // refused for a spent budget: not counted, and the key stops
      spent: { entry: "remove", tokens: "kept", evidence: "none", stopsKey: true }
    }
    for (const outcome of outcomes) assert.deepStrictEqual(Settlement.effectsOf(outcome), expected[outcome], outcome)
  })

  it("outcomeOf: an error that never reached the server is unsent, one with no answer unanswered, examples", () => {
    const cases: ReadonlyArray<readonly [ApiError, RateLimiter.Outcome]> = [
      [new TransportError({ message: "refused", connected: false }), "unsent"],
      [new TransportError({ message: "reset", connected: true }), "unanswered"],
      [new TransportError({ message: "closed" }), "unanswered"],
      [new Timeout({ message: "t", timeout: "connect", after: Duration.seconds(1) }), "unsent"],
      [new Timeout({ message: "t", timeout: "firstByte", after: Duration.seconds(1) }), "unanswered"],
      [new Timeout({ message: "t", timeout: "idle", after: Duration.seconds(1) }), "unanswered"],
      [new Timeout({ message: "t", timeout: "total", after: Duration.seconds(1) }), "unanswered"],
      [rateLimited("3 seconds"), "throttled"],
      [quotaExceeded, "spent"],
      // the server's "Request too large" is an answer: it counts the request, its tokens come back
      [new RequestTooLarge({ message: "Request too large", status: 429 }), "failed"],
      [new ServerError({ message: "down", status: 503 }), "failed"]
    ]
    for (const [error, outcome] of cases) {
      assert.strictEqual(Settlement.outcomeOf(error), outcome, JSON.stringify(error))
    }
  })

  it("outcomeOf, for any ApiError: unsent exactly when no connection was made, throttled for a 429, spent for a spent budget", () => {
    const neverSent = (e: ApiError) =>
      (e._tag === "TransportError" && e.connected === false) || (e._tag === "Timeout" && e.timeout === "connect")
    const noAnswer = (e: ApiError) => e._tag === "TransportError" || e._tag === "Timeout"
    FastCheck.assert(
      FastCheck.property(Arbitrary.make(ApiError), (error) => {
        const outcome = Settlement.outcomeOf(error)
        assert.strictEqual(outcome === "unsent", neverSent(error))
        assert.strictEqual(outcome === "unanswered", noAnswer(error) && !neverSent(error))
        assert.strictEqual(outcome === "throttled", error._tag === "RateLimited")
        assert.strictEqual(outcome === "spent", error._tag === "QuotaExceeded")
        // every other error is an answer: failed
        if (!noAnswer(error) && error._tag !== "RateLimited" && error._tag !== "QuotaExceeded") {
          assert.strictEqual(outcome, "failed")
        }
      }),
      { numRuns: 500 }
    )
  })

  describe("usageOf", () => {
    it("reads prompt_tokens (else input_tokens) in, completion_tokens (else output_tokens, else total less input) out", () => {
      assert.deepStrictEqual(Settlement.usageOf({ usage: { prompt_tokens: 3, completion_tokens: 4 } }), {
        input: 3,
        output: 4
      })
      // the Responses API's names
      assert.deepStrictEqual(Settlement.usageOf({ usage: { input_tokens: 5, output_tokens: 6, total_tokens: 11 } }), {
        input: 5,
        output: 6
      })
      // embeddings: a prompt and a total, no completion
      assert.deepStrictEqual(Settlement.usageOf({ usage: { prompt_tokens: 8, total_tokens: 8 } }), {
        input: 8,
        output: 0
      })
      assert.deepStrictEqual(Settlement.usageOf({ usage: { prompt_tokens: 8, total_tokens: 20 } }), {
        input: 8,
        output: 12
      })
      // a total below its prompt leaves no output, never a negative one
      assert.deepStrictEqual(Settlement.usageOf({ usage: { prompt_tokens: 8, total_tokens: 5 } }), {
        input: 8,
        output: 0
      })
    })

    it("reads the cached input: the details' cached_tokens (Chat, Responses), else cache_read_input_tokens", () => {
      const usage = (fields: Record<string, unknown>) => Settlement.usageOf({ usage: { prompt_tokens: 10, ...fields } })
      assert.deepStrictEqual(usage({ completion_tokens: 5, prompt_tokens_details: { cached_tokens: 4 } }), {
        input: 10,
        output: 5,
        cached: 4
      })
      assert.deepStrictEqual(usage({ input_tokens_details: { cached_tokens: 3 } }), { input: 10, output: 0, cached: 3 })
      assert.deepStrictEqual(usage({ cache_read_input_tokens: 7 }), { input: 10, output: 0, cached: 7 })
      // details that hold no count, or are no object: the proxy's field, if any
      assert.deepStrictEqual(usage({ prompt_tokens_details: null, cache_read_input_tokens: 2 }), {
        input: 10,
        output: 0,
        cached: 2
      })
      assert.deepStrictEqual(usage({ prompt_tokens_details: "4", cache_read_input_tokens: 2 }), {
        input: 10,
        output: 0,
        cached: 2
      })
      assert.deepStrictEqual(usage({ prompt_tokens_details: { cached_tokens: -1 } }), { input: 10, output: 0 })
      // an output alone, with a cache count: the input is 0, as without one
      assert.deepStrictEqual(
        Settlement.usageOf({ usage: { completion_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } } }),
        { input: 0, output: 5, cached: 0 }
      )
    })

    it("reads the input written to the cache: the details' cache_write_tokens, else cache_creation_input_tokens", () => {
      const usage = (fields: Record<string, unknown>) => Settlement.usageOf({ usage: { prompt_tokens: 10, ...fields } })
      assert.deepStrictEqual(usage({ prompt_tokens_details: { cached_tokens: 2, cache_write_tokens: 5 } }), {
        input: 10,
        output: 0,
        cached: 2,
        written: 5
      })
      assert.deepStrictEqual(usage({ input_tokens_details: { cache_write_tokens: 4 } }), {
        input: 10,
        output: 0,
        written: 4
      })
      assert.deepStrictEqual(usage({ cache_creation_input_tokens: 6, cache_read_input_tokens: 1 }), {
        input: 10,
        output: 0,
        cached: 1,
        written: 6
      })
      // the details' count first; what is no count, the proxy's field
      assert.deepStrictEqual(
        usage({ prompt_tokens_details: { cache_write_tokens: 3 }, cache_creation_input_tokens: 9 }),
        { input: 10, output: 0, written: 3 }
      )
      assert.deepStrictEqual(
        usage({ prompt_tokens_details: { cache_write_tokens: "3" }, cache_creation_input_tokens: 9 }),
        { input: 10, output: 0, written: 9 }
      )
      assert.deepStrictEqual(usage({ cache_creation_input_tokens: -1 }), { input: 10, output: 0 })
    })

    it("reports nothing for what is no count: no usage, zero, negative, not finite, not a number, a total alone", () => {
      for (
        const value of [
          undefined,
          null,
          7,
          "usage",
          {},
          { usage: null },
          { usage: 12 },
          { usage: {} },
          { usage: { total_tokens: 0 } },
          { usage: { total_tokens: 12 } },
          { usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } },
          { usage: { prompt_tokens: -5, completion_tokens: -1 } },
          { usage: { prompt_tokens: Number.NaN, completion_tokens: Number.POSITIVE_INFINITY } },
          { usage: { prompt_tokens: "12", completion_tokens: "3" } }
        ]
      ) {
        assert.isUndefined(Settlement.usageOf(value), JSON.stringify(value))
      }
    })

    /** A field as a server might send it: a count, or something that is none. */
    const field = FastCheck.oneof(
      { weight: 3, arbitrary: FastCheck.nat(1_000_000) },
      { weight: 1, arbitrary: FastCheck.double({ min: 0, max: 1e6, noNaN: true }) },
      {
        weight: 2,
        arbitrary: FastCheck.constantFrom<unknown>(-1, -0.5, Number.NaN, Infinity, -Infinity, "7", null, true, {})
      }
    )
    const isCount = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0
    const names = ["prompt_tokens", "input_tokens", "completion_tokens", "output_tokens", "total_tokens"] as const

    it("for any fields: the first count of each side, the output from the total only with an input; never negative", () => {
      FastCheck.assert(
        FastCheck.property(
          FastCheck.record(Object.fromEntries(names.map((n) => [n, field])), { requiredKeys: [] }),
          (usage: Partial<Record<(typeof names)[number], unknown>>) => {
            const got = Settlement.usageOf({ usage })
            const input = [usage.prompt_tokens, usage.input_tokens].find(isCount)
            const total = isCount(usage.total_tokens) ? usage.total_tokens : undefined
            const output = [usage.completion_tokens, usage.output_tokens].find(isCount) ??
              (total !== undefined && input !== undefined ? Math.max(0, total - input) : undefined)
            if ((input ?? 0) + (output ?? 0) === 0) {
              assert.isUndefined(got)
              return
            }
            assert.deepStrictEqual(got, { input: input ?? 0, output: output ?? 0 })
          }
        ),
        { numRuns: 1000 }
      )
    })
  })

  describe("reconcile and atLimit", () => {
    it.effect("hands a permit the usage a body reports, and does nothing without a permit or a usage", () =>
      Effect.gen(function*() {
        const told: Array<Usage> = []
        const permit = {
          cost: Budgets.cost(1, 1),
          settle: () => Effect.succeed(false),
          reconcile: (usage: Usage) => Effect.sync(() => void told.push(usage))
        }
        const body = { usage: { prompt_tokens: 3, completion_tokens: 4 } }
        yield* Settlement.reconcile(undefined, body)
        yield* Settlement.reconcile(permit, { id: "no usage" })
        assert.deepStrictEqual(told, [])
        yield* Settlement.reconcile(permit, body)
        assert.deepStrictEqual(told, [{ input: 3, output: 4 }])
      }))

    it("is at a limit when the window, with the request, held more than nine tenths of a known limit it uses", () => {
      const limits = { ...Budgets.noLimits, requests: { value: 10, source: "plan" as const } }
      const held = (requests: number, output = 0) => ({ requests, input: 0, output, tokens: output })
      assert.isFalse(Settlement.atLimit(limits, held(8), held(1)))
      assert.isTrue(Settlement.atLimit(limits, held(9), held(1)))
      // a request that uses none of a budget is not at its limit; an unknown limit is none
      assert.isFalse(Settlement.atLimit(limits, held(9), held(0, 5)))
      assert.isFalse(Settlement.atLimit(Budgets.noLimits, held(1_000, 1_000), held(1, 1)))
    })
  })

  describe("reconciled", () => {
    const reservation = FastCheck.tuple(FastCheck.nat(10_000), FastCheck.nat(10_000)).map(([i, o]) =>
      Budgets.cost(i, o)
    )
    const usage = FastCheck.record({ input: FastCheck.nat(20_000), output: FastCheck.nat(20_000) })

    it("keep: input and output each raised to their usage where it is above, the combined their sum; nothing lowered", () => {
      FastCheck.assert(
        FastCheck.property(reservation, usage, (reserved, used) => {
          const got = Settlement.reconciled(reserved, used, "keep")
          const input = Math.max(reserved.input, used.input)
          const output = Math.max(reserved.output, used.output)
          const raised = { requests: reserved.requests, input, output, tokens: input + output }
          if (Budgets.dimensions.every((d) => raised[d] === reserved[d])) assert.isUndefined(got)
          else assert.deepStrictEqual(got, { amounts: raised, lowered: false })
        }),
        { numRuns: 1000 }
      )
    })

    it("actual: the token budgets become the usage, lowered when any is below; the request stays counted", () => {
      FastCheck.assert(
        FastCheck.property(reservation, usage, (reserved, used) => {
          const got = Settlement.reconciled(reserved, used, "actual")
          const actual = { ...Budgets.cost(used.input, used.output), requests: reserved.requests }
          if (Budgets.dimensions.every((d) => actual[d] === reserved[d])) {
            assert.isUndefined(got)
            return
          }
          assert.deepStrictEqual(got?.amounts, actual)
          assert.strictEqual(got?.lowered, used.input < reserved.input || used.output < reserved.output)
        }),
        { numRuns: 1000 }
      )
    })

    it("raises input and output separately, and the combined budget is always their sum", () => {
      const reserved = Budgets.cost(100, 100)
      const keep = (input: number, output: number) =>
        Settlement.reconciled(reserved, { input, output }, "keep")?.amounts
      // more input: input raised, the output reservation kept (a server that charges the cap at admission counts
      // it), the combined what both now hold
      assert.deepStrictEqual(keep(150, 10), { requests: 1, input: 150, output: 100, tokens: 250 })
      assert.deepStrictEqual(keep(10, 150), { requests: 1, input: 100, output: 150, tokens: 250 })
      assert.deepStrictEqual(keep(250, 10), { requests: 1, input: 250, output: 100, tokens: 350 })
      assert.deepStrictEqual(keep(10, 250), { requests: 1, input: 100, output: 250, tokens: 350 })
      assert.deepStrictEqual(keep(150, 150), { requests: 1, input: 150, output: 150, tokens: 300 })
      // all within: nothing changes
      assert.isUndefined(keep(100, 100))
      assert.isUndefined(keep(0, 0))
    })
  })

  describe("atLimit", () => {
    /** Limits with these values (configured), the others unknown. */
    const limitsOf = (values: Partial<Record<Budgets.Dimension, number | undefined>>): Budgets.Limits => ({
      requests: limitOf(values.requests),
      input: limitOf(values.input),
      output: limitOf(values.output),
      tokens: limitOf(values.tokens)
    })
    const limitOf = (value: number | undefined): Budgets.Limit =>
      value === undefined ? Budgets.unknown : { value, source: "configured" }
    const held = (values: Partial<Budgets.Amounts>): Budgets.Amounts => ({ ...Budgets.none, ...values })

    it("at a limit once the window, with the refused request, holds more than nine tenths of it, in each budget", () => {
      const request = Budgets.cost(10, 10)
      // requests: 100 a window; with the refused one 90 is not beyond nine tenths, 91 is
      assert.isFalse(Settlement.atLimit(limitsOf({ requests: 100 }), held({ requests: 89 }), request))
      assert.isTrue(Settlement.atLimit(limitsOf({ requests: 100 }), held({ requests: 90 }), request))
      for (const d of Budgets.tokenDimensions) {
        // 1,000 a window: with the refused request's own (10 in, 10 out, 20 combined), 900 is not beyond, 901 is
        assert.isFalse(Settlement.atLimit(limitsOf({ [d]: 1000 }), held({ [d]: 900 - request[d] }), request), d)
        assert.isTrue(Settlement.atLimit(limitsOf({ [d]: 1000 }), held({ [d]: 901 - request[d] }), request), d)
        // the other budgets' limits are not this one's
        const others = Object.fromEntries(Budgets.dimensions.filter((o) => o !== d).map((o) => [o, 1000]))
        assert.isFalse(Settlement.atLimit(limitsOf(others), held({ [d]: 5000 }), request), `not ${d}'s`)
      }
    })

    it("a budget the request does not use, or whose limit is unknown or shared, never makes a refusal a limit's", () => {
      const full = held({ requests: 0, input: 10_000, output: 10_000, tokens: 20_000 })
      // an embedding reserves no output: a full output window did not refuse it
      assert.isFalse(Settlement.atLimit(limitsOf({ output: 100 }), full, Budgets.cost(5, 0)))
      assert.isFalse(Settlement.atLimit(Budgets.noLimits, full, Budgets.cost(5, 5)))
      const shared = { ...Budgets.noLimits, requests: Budgets.shared, input: Budgets.shared }
      assert.isFalse(Settlement.atLimit(shared, { ...full, requests: 1000 }, Budgets.cost(5, 5)))
    })

    const limit = FastCheck.option(FastCheck.integer({ min: 1, max: 10_000 }), { nil: undefined })
    const limitsArb = FastCheck.record({ requests: limit, input: limit, output: limit, tokens: limit }).map(limitsOf)
    const countArb = FastCheck.record({
      requests: FastCheck.nat(200),
      input: FastCheck.nat(20_000),
      output: FastCheck.nat(20_000),
      tokens: FastCheck.nat(40_000)
    })
    const requestArb = FastCheck.tuple(FastCheck.nat(2_000), FastCheck.nat(2_000)).map(([i, o]) => Budgets.cost(i, o))

    it("for any limits, window and request: more in the window never turns a limit's refusal into noise", () => {
      FastCheck.assert(
        FastCheck.property(limitsArb, countArb, countArb, requestArb, (limits, count, extra, request) => {
          if (Settlement.atLimit(limits, count, request)) {
            assert.isTrue(Settlement.atLimit(limits, Budgets.add(count, extra), request))
          }
        }),
        { numRuns: 1000 }
      )
    })

    it("for any limits, window and request: at a limit exactly when some known budget it uses is beyond nine tenths", () => {
      FastCheck.assert(
        FastCheck.property(limitsArb, countArb, requestArb, (limits, count, request) => {
          const beyond = Budgets.dimensions.filter((d) => {
            const value = limits[d].value
            return value !== undefined && request[d] > 0 && (count[d] + request[d]) * 10 > value * 9
          })
          assert.strictEqual(Settlement.atLimit(limits, count, request), beyond.length > 0)
        }),
        { numRuns: 2000 }
      )
    })
  })
})

describe("each outcome through the limiter: what it leaves in every budget", () => {
  it.effect("every outcome leaves what its effects say, in requests, input, output and combined tokens", () =>
    Effect.gen(function*() {
      for (const outcome of outcomes) {
        const limiter = yield* limiterWith({ limits: { m: roomy }, window: "10 seconds" })
        const permit = yield* limiter.acquire(ticketOf(300, 200))
        assert.deepStrictEqual(permit.cost, { requests: 1, input: 300, output: 200, tokens: 500 })
        assert.deepStrictEqual(yield* usedOf(limiter), permit.cost, `${outcome}: reserved`)
        yield* permit.settle(outcome, errorOf(outcome))
        assert.deepStrictEqual(
          yield* usedOf(limiter),
          leftBy(Settlement.effectsOf(outcome), permit.cost),
          `${outcome}: settled`
        )
      }
    }))

  it.effect("the budgets each outcome leaves, spelled out", () =>
    Effect.gen(function*() {
      const cost = Budgets.cost(300, 200)
      const expected: Record<RateLimiter.Outcome, Budgets.Amounts> = {
        unsent: Budgets.none,
        succeeded: cost,
        failed: requestOnly,
        unanswered: cost,
        throttled: Budgets.none,
        spent: Budgets.none
      }
      for (const outcome of outcomes) {
        const limiter = yield* limiterWith({ limits: { m: roomy }, window: "10 seconds" })
        const permit = yield* limiter.acquire(ticketOf(300, 200))
        yield* permit.settle(outcome, errorOf(outcome))
        assert.deepStrictEqual(yield* usedOf(limiter), expected[outcome], outcome)
      }
    }))

  it.effect("for any cost, outcome and time of settling: an entry kept counts from the settlement for one window", () =>
    Effect.gen(function*() {
      const cases = FastCheck.sample(
        FastCheck.record({
          input: FastCheck.nat(5_000),
          output: FastCheck.nat(5_000),
          outcome: FastCheck.constantFrom(...outcomes),
          // settled within the window of its admission (an entry already out of the window has nothing to restamp)
          settleAfterMs: FastCheck.nat(9_999),
          others: FastCheck.nat(3)
        }),
        60
      )
      for (const { input, others, outcome, output, settleAfterMs } of cases) {
        const at = `${outcome} of ${input} in, ${output} out after ${settleAfterMs} ms, ${others} others`
        const limiter = yield* limiterWith({ limits: { m: roomy }, window: "10 seconds" })
        // other requests in the window, answered at once: what they count is not the settled one's to change
        for (let i = 0; i < others; i++) {
          yield* Effect.flatMap(limiter.acquire(ticketOf(7, 3)), (p) => p.settle("succeeded"))
        }
        const othersLeft = Budgets.map(Budgets.cost(7, 3), (v) => v * others)
        const permit = yield* limiter.acquire(ticketOf(input, output))
        yield* TestClock.adjust(settleAfterMs)
        yield* permit.settle(outcome, errorOf(outcome))
        const effects = Settlement.effectsOf(outcome)
        const left = leftBy(effects, permit.cost)
        assert.deepStrictEqual(yield* usedOf(limiter), Budgets.add(othersLeft, left), at)
        if (effects.entry === "remove") continue
        // a restamped entry leaves the window a window after the settlement, not after its admission; the others,
        // answered at once, a window after 0
        yield* TestClock.adjust(9_999)
        const stillThere = Budgets.add(settleAfterMs + 9_999 < 10_000 ? othersLeft : Budgets.none, left)
        assert.deepStrictEqual(yield* usedOf(limiter), stillThere, `${at}: a window later less 1 ms`)
        yield* TestClock.adjust(1)
        assert.deepStrictEqual(yield* usedOf(limiter), Budgets.none, `${at}: a window later`)
      }
    }))

  it.effect("a permit settles once: whatever comes after the first settlement changes nothing", () =>
    Effect.gen(function*() {
      for (const first of outcomes) {
        for (const second of outcomes) {
          if (first === second) continue
          const limiter = yield* limiterWith({ limits: { m: { ...roomy, rpm: 1 } }, window: "10 seconds" })
          const permit = yield* limiter.acquire(ticketOf(300, 200))
          yield* permit.settle(first, errorOf(first))
          const marks = Effect.map(stateOf(limiter), (s) => [s?.blockedMs, s?.marginMs, s?.spent])
          const after = yield* usedOf(limiter)
          const before = yield* marks
          assert.isFalse(yield* permit.settle(second, errorOf(second)), `${first} then ${second}`)
          assert.deepStrictEqual(yield* usedOf(limiter), after, `${first} then ${second}`)
          // a second settlement as throttled (at this limit of 1 request) or spent would close the bucket or the key
          assert.deepStrictEqual(yield* marks, before, `${first} then ${second}`)
        }
      }
    }))
})

describe("reconciling a permit with the usage its answer reports, through the limiter", () => {
  it.effect("keep: input and output are each raised on their own, the combined is their sum, never lowered", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [Usage, Budgets.Amounts]> = [
        [{ input: 150, output: 10 }, { requests: 1, input: 150, output: 100, tokens: 250 }],
        [{ input: 10, output: 150 }, { requests: 1, input: 100, output: 150, tokens: 250 }],
        [{ input: 250, output: 10 }, { requests: 1, input: 250, output: 100, tokens: 350 }],
        [{ input: 10, output: 250 }, { requests: 1, input: 100, output: 250, tokens: 350 }],
        [{ input: 150, output: 150 }, { requests: 1, input: 150, output: 150, tokens: 300 }],
        [{ input: 10, output: 10 }, { requests: 1, input: 100, output: 100, tokens: 200 }]
      ]
      for (const [usage, expected] of cases) {
        const limiter = yield* limiterWith({ limits: { m: roomy } })
        const permit = yield* limiter.acquire(ticketOf(100, 100))
        yield* permit.reconcile(usage)
        assert.deepStrictEqual(yield* usedOf(limiter), expected, JSON.stringify(usage))
      }
    }))

  it.effect("actual: the token budgets become the usage, and a lowered reservation lets a waiting caller go", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { ...roomy, otpm: 150 } }, reconcile: "actual" })
      const permit = yield* limiter.acquire(ticketOf(100, 100))
      const waiting = yield* Effect.fork(limiter.acquire(ticketOf(10, 100)))
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(waiting)))
      // more input than reserved, less output: input raised, output and the combined budget lowered
      yield* permit.reconcile({ input: 150, output: 10 })
      const admitted = yield* Fiber.join(waiting)
      assert.deepStrictEqual(admitted.cost, Budgets.cost(10, 100))
      assert.deepStrictEqual(yield* usedOf(limiter), { requests: 2, input: 160, output: 110, tokens: 270 })
      assert.strictEqual(yield* Clock.currentTimeMillis, 0)
    }))
})

describe("a 429 weighed: at a limit it closes the bucket, under every limit it is noise", () => {
  /** Per budget: limits where only that budget can bind (at 1,000 a window, 10 for requests) and a request of it. */
  const scenarios = [
    { budget: "requests", quota: { ...roomy, rpm: 10 }, cost: [1, 1] },
    { budget: "input", quota: { ...roomy, itpm: 1000 }, cost: [100, 1] },
    { budget: "output", quota: { ...roomy, otpm: 1000 }, cost: [1, 100] },
    { budget: "tokens", quota: { ...roomy, tpm: 1000 }, cost: [50, 50] }
  ] as const

  /** A limiter whose window holds `count` requests of `cost`, the last of them refused with `error`. */
  const refusedAfter = (
    quota: RateLimiter.Quota,
    cost: readonly [number, number],
    count: number,
    error: ApiError | undefined
  ) =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: quota }, margin: "100 millis", window: "1 minute" })
      const permits = yield* Effect.forEach(
        Array.from({ length: count }, () => ticketOf(...cost)),
        (t) => limiter.acquire(t)
      )
      const paced = yield* permits[count - 1]!.settle("throttled", error)
      return { limiter, paced, state: yield* stateOf(limiter) }
    })

  it.effect("at the limit of any budget: closed for the 429's retryAfter, the margin widened by a step", () =>
    Effect.gen(function*() {
      for (const { budget, cost, quota } of scenarios) {
        // the window holds 10 of 10 requests' worth when the last is refused
        const { limiter, paced, state } = yield* refusedAfter(quota, cost, 10, rateLimited("3 seconds"))
        assert.deepInclude(state, { blockedMs: 3000, marginMs: 350 }, budget)
        // a bucket whose limits are known does not pace the retry itself
        assert.isFalse(paced, budget)
        // the refused request was given back, yet nothing is admitted until the bucket opens
        assert.strictEqual(state?.budgets.requests.used, 9, budget)
        const next = yield* Effect.fork(limiter.acquire(ticketOf(1, 1)))
        yield* TestClock.adjust("2999 millis")
        assert.isTrue(Option.isNone(yield* Fiber.poll(next)), budget)
        yield* TestClock.adjust("1 millis")
        yield* Fiber.join(next)
      }
    }))

  it.effect("at a limit, a 429 that asks for no time closes the bucket for a second", () =>
    Effect.gen(function*() {
      for (const error of [rateLimited(), undefined]) {
        const { state } = yield* refusedAfter({ ...roomy, rpm: 10 }, [1, 1], 10, error)
        assert.deepInclude(state, { blockedMs: 1000, marginMs: 350 }, error === undefined ? "no error" : "no time")
      }
    }))

  it.effect("well under every limit (noise): neither closed nor widened, and the next request goes at once", () =>
    Effect.gen(function*() {
      for (const { budget, cost, quota } of scenarios) {
        // 2 of 10 requests' worth in the window
        const { limiter, paced, state } = yield* refusedAfter(quota, cost, 2, rateLimited("30 seconds"))
        assert.deepInclude(state, { blockedMs: 0, marginMs: 100 }, budget)
        assert.isFalse(paced, budget)
        assert.strictEqual(state?.budgets.requests.used, 1, budget)
        const next = yield* Effect.fork(limiter.acquire(ticketOf(cost[0], cost[1])))
        yield* Fiber.join(next)
        assert.strictEqual(yield* Clock.currentTimeMillis, 0, budget)
      }
    }))

  it.effect("for any request limit and window: closed exactly when the window held more than nine tenths of it", () =>
    Effect.gen(function*() {
      const cases = FastCheck.sample(
        FastCheck.integer({ min: 1, max: 40 }).chain((rpm) =>
          FastCheck.record({ rpm: FastCheck.constant(rpm), count: FastCheck.integer({ min: 1, max: rpm }) })
        ),
        40
      )
      for (const { count, rpm } of cases) {
        const { state } = yield* refusedAfter({ ...roomy, rpm }, [1, 1], count, rateLimited("5 seconds"))
        const atLimit = count * 10 > rpm * 9
        assert.strictEqual(state?.blockedMs, atLimit ? 5000 : 0, `${count} of ${rpm}`)
        assert.strictEqual(state?.marginMs, atLimit ? 350 : 100, `${count} of ${rpm}`)
      }
    }))

  it.effect("the headers of a 429 teach limits, they neither close the bucket nor widen the margin", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits: { m: { ...roomy, rpm: 1 } }, margin: "100 millis" })
      const permit = yield* limiter.acquire(ticketOf(1, 1))
      yield* limiter.learn("key#1", "m", new RateLimitInfo({ retryAfter: Duration.seconds(3), observedAt: 0 }), 429)
      assert.deepInclude(yield* stateOf(limiter), { blockedMs: 0, marginMs: 100 })
      // the permit's settlement is what weighs the refusal
      yield* permit.settle("throttled", rateLimited("3 seconds"))
      assert.deepInclude(yield* stateOf(limiter), { blockedMs: 3000, marginMs: 350 })
    }))
})

describe("a spent budget stops its key", () => {
  const limits = { "*": { rpm: 1, tpm: 1_000_000 } }

  it.effect("every bucket of the key fails with the same QuotaExceeded, waiting callers too; another key goes on", () =>
    Effect.gen(function*() {
      const limiter = yield* limiterWith({ limits, window: "10 seconds" })
      const spending = yield* limiter.acquire(ticketOf(10, 10, "m"))
      yield* limiter.acquire(ticketOf(10, 10, "n"))
      // a caller waits in each line: m's window and n's are full
      const waitingM = yield* Effect.fork(Effect.exit(limiter.acquire(ticketOf(10, 10, "m"))))
      const waitingN = yield* Effect.fork(Effect.exit(limiter.acquire(ticketOf(10, 10, "n"))))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(waitingM)))
      assert.isTrue(Option.isNone(yield* Fiber.poll(waitingN)))
      // the spending request is given back (m's window has room again), and the key stops
      assert.isFalse(yield* spending.settle("spent", quotaExceeded))
      assert.strictEqual(endOf(yield* Fiber.join(waitingM)), quotaExceeded)
      assert.strictEqual(endOf(yield* Fiber.join(waitingN)), quotaExceeded)
      assert.strictEqual(yield* Clock.currentTimeMillis, 0)
      // new callers of the key, on its models and on a model it never used, fail at once with the same error
      for (const model of ["m", "n", "never-used"]) {
        assert.strictEqual(endOf(yield* Effect.exit(limiter.acquire(ticketOf(1, 1, model)))), quotaExceeded, model)
      }
      assert.deepStrictEqual(yield* usedOf(limiter, "m"), Budgets.none)
      // another key's buckets are its own
      for (const model of ["m", "n"]) {
        assert.strictEqual(endOf(yield* Effect.exit(limiter.acquire(ticketOf(1, 1, model, "key#2")))), "admitted")
      }
      const states = yield* limiter.snapshot
      for (const state of states) {
        assert.strictEqual(
          state.spent,
          state.key === "key#1" ? quotaExceeded.message : undefined,
          `${state.key} ${state.model}`
        )
      }
    }))

  // KNOWN BUG (reported, src/internal/limiter/permits.ts `settle`): a spent settlement removes the entry from the
  // store first and stops the key only once the store has answered; while a store with I/O (Redis) is removing it,
  // the key admits. Remove `.fails` once the key stops before the store is asked.
  it.effect("the key stops at once, even while the store is still removing the spending request's entry", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      let holdRemove = false
      const slowRemove = memoryStoreWith((inner) => ({
        remove: (...args) => Effect.zipRight(holdRemove ? Deferred.await(gate) : Effect.void, inner.remove(...args))
      }))
      const limiter = yield* Effect.provide(
        RateLimiter.RateLimiter,
        limiterOn(slowRemove, { margin: 0, limits: { "*": roomy } })
      )
      const spending = yield* limiter.acquire(ticketOf(1, 1, "m"))
      holdRemove = true
      const settling = yield* Effect.fork(spending.settle("spent", quotaExceeded))
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
      const during = endOf(yield* Effect.exit(limiter.acquire(ticketOf(1, 1, "n"))))
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(settling)
      assert.strictEqual(during, quotaExceeded)
    }))

  it.effect("until the first of the next calendar month", () =>
    Effect.gen(function*() {
      // the 15th of March at noon: the budget comes back on the 1st of April, 00:00 UTC
      yield* TestClock.setTime(Date.UTC(2026, 2, 15, 12))
      const limiter = yield* limiterWith({ limits, window: "10 seconds" })
      const permit = yield* limiter.acquire(ticketOf(1, 1))
      yield* permit.settle("spent", quotaExceeded)
      yield* TestClock.setTime(Date.UTC(2026, 3, 1) - 1)
      assert.strictEqual(endOf(yield* Effect.exit(limiter.acquire(ticketOf(1, 1)))), quotaExceeded)
      yield* TestClock.setTime(Date.UTC(2026, 3, 1))
      assert.strictEqual(endOf(yield* Effect.exit(limiter.acquire(ticketOf(1, 1)))), "admitted")
      assert.strictEqual((yield* stateOf(limiter))?.spent, undefined)
    }))
})

/** The options a chat operation sends its request with: the model, and the parameters the limiter estimates. */
const chatOptions = (model = "m"): RequestOptions => ({
  model,
  span: { name: "Chat.create", operation: "chat", params: { ...chatBody, model } }
})

/** A chat request for `model`. */
const chatFor = (model: string) =>
  HttpClientRequest.post("/chat/completions").pipe(HttpClientRequest.bodyUnsafeJson({ ...chatBody, model }))

/** What the limiter counts for model `m` now, callers waiting in its line, and what one chat request reserves. */
const counted = Effect.gen(function*() {
  const limiter = yield* RateLimiter.RateLimiter
  const state = (yield* limiter.snapshot).find((s) => s.model === "m")
  const cost = limiter.cost("/chat/completions", chatBody)
  return {
    held: {
      requests: state?.budgets.requests.used ?? 0,
      input: state?.budgets.input.used ?? 0,
      output: state?.budgets.output.used ?? 0,
      tokens: state?.budgets.tokens.used ?? 0
    },
    waiting: state?.waiting ?? 0,
    reserved: Budgets.cost(cost.input, cost.output)
  }
})

/** One chat request through a fresh stack on `client`: how it ended and what the limiter counts after. */
const oneRequest = (client: HttpClient.HttpClient, options: StackOptions = {}) =>
  Effect.gen(function*() {
    const http = yield* InferenceHttpClient
    const exit = yield* Effect.exit(http.json(chat(), Schema.Unknown, chatOptions()))
    return { exit, ...(yield* counted) }
  }).pipe(Effect.provide(stack(client, options)))

/** A platform client whose every request fails before any answer, with `cause` as the platform reports it. */
const failing = (cause: unknown, reason: "Transport" | "InvalidUrl" = "Transport") =>
  HttpClient.make((request) => Effect.fail(new HttpClientError.RequestError({ request, reason, cause })))

/** An error as Node reports a failed socket operation: a `code`, wrapped `depth` times (as undici does). */
const systemError = (code: string, depth: number): Error => {
  let error: Error = Object.assign(new Error(`${code} 127.0.0.1:443`), { code })
  for (let i = 0; i < depth; i++) error = new Error("fetch failed", { cause: error })
  return error
}

/** The error a request failed with (the test fails when it did not). */
const failureOf = (exit: Exit.Exit<unknown, ApiError>): ApiError => {
  const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
  assert.isDefined(failure, "the request should have failed with an ApiError")
  return failure!
}

describe("what an answered request leaves in the limiter", () => {
  it.effect("a chat request reserves one request, its prompt in, its max_tokens out, and their sum combined", () =>
    Effect.gen(function*() {
      const { reserved } = yield* Effect.provide(counted, stack(Testing.httpClient(() => ({ body: {} }))))
      // "hello there": 3 priming + 3 for the message + 2 + 2; max_tokens 100
      assert.deepStrictEqual(reserved, { requests: 1, input: 10, output: 100, tokens: 110 })
    }))

  it.effect("a success counts its request and the tokens reserved for it", () =>
    Effect.gen(function*() {
      const after = yield* oneRequest(Testing.httpClient(() => ({ body: { id: "x" } })))
      assert.isTrue(Exit.isSuccess(after.exit))
      assert.deepStrictEqual(after.held, after.reserved)
    }))

  it.effect("after an error answer (4xx, 5xx; not 408 or 429) the limiter holds the request but none of its tokens", () =>
    Effect.gen(function*() {
      const statuses = FastCheck.sample(
        FastCheck.integer({ min: 400, max: 599 }).filter((status) => status !== 408 && status !== 429),
        25
      )
      for (const status of [400, 401, 402, 404, 422, 500, 503, ...statuses]) {
        const after = yield* oneRequest(
          Testing.httpClient(() => ({ status, body: { error: { message: "no" } } }))
        )
        assert.isTrue(Exit.isFailure(after.exit), `status ${status}`)
        // a 402 says the budget is spent: nothing stays (see below); any other keeps the request
        assert.deepStrictEqual(after.held, status === 402 ? Budgets.none : requestOnly, `status ${status}`)
      }
    }))

  it.effect("a 429 that says the request is too large was answered: the request stays, its tokens come back", () =>
    Effect.gen(function*() {
      const after = yield* oneRequest(
        Testing.httpClient(() => ({ status: 429, body: { error: { message: "Request too large" } } }))
      )
      assert.strictEqual(failureOf(after.exit)._tag, "RequestTooLarge")
      assert.deepStrictEqual(after.held, requestOnly)
    }))

  it.effect("a 429 or 402 that says the budget is spent gives everything back and stops the key on every model", () =>
    Effect.gen(function*() {
      for (
        const answer of [
          { status: 429, body: { error: { message: "You exceeded your current quota, please check your plan" } } },
          { status: 429, body: { error: { message: "no", type: "insufficient_quota" } } },
          { status: 402, body: { error: { message: "Payment required" } } }
        ]
      ) {
        let sent = 0
        const client = Testing.httpClient(() => {
          sent++
          return answer
        })
        const after = yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          const first = yield* Effect.exit(http.json(chat(), Schema.Unknown, chatOptions()))
          // the next request, on another model of the same key, is refused without being sent
          const next = yield* Effect.exit(http.json(chatFor("n"), Schema.Unknown, chatOptions("n")))
          return { first, next, ...(yield* counted) }
        }).pipe(Effect.provide(stack(client, { limiter: { limits: { "*": { rpm: 1000, tpm: 1_000_000 } } } })))
        const what = JSON.stringify(answer)
        const error = failureOf(after.first)
        assert.strictEqual(error._tag, "QuotaExceeded", what)
        assert.deepStrictEqual(after.held, Budgets.none, what)
        assert.strictEqual(sent, 1, what)
        const refused = failureOf(after.next)
        assert.strictEqual(refused._tag, "QuotaExceeded", what)
        assert.strictEqual(refused.message, error.message, what)
      }
    }))

  it.effect("a request refused with 429 by the server gives its request and its tokens back", () =>
    Effect.gen(function*() {
      for (const headers of [{}, { "retry-after": "3" }, { "x-ratelimit-reset-requests": "1m0s" }]) {
        const after = yield* oneRequest(
          Testing.httpClient(() => ({ status: 429, headers, body: { error: { message: "Rate limit reached" } } }))
        )
        assert.strictEqual(failureOf(after.exit)._tag, "RateLimited")
        assert.deepStrictEqual(after.held, Budgets.none, JSON.stringify(headers))
      }
    }))

  it.effect("a 429 at a limit closes the model's bucket for the server's time; one under every limit, or another answer, does not", () =>
    Effect.gen(function*() {
      const blocked = (answer: Testing.ScriptedResponse, rpm: number) =>
        Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          yield* Effect.exit(http.json(chat(), Schema.Unknown, chatOptions()))
          const limiter = yield* RateLimiter.RateLimiter
          return (yield* limiter.snapshot).find((s) => s.model === "m")?.blockedMs
        }).pipe(Effect.provide(stack(Testing.httpClient(() => answer), {
          limiter: { limits: { m: { rpm, tpm: 1_000_000 } } }
        })))
      const refused = { status: 429, headers: { "retry-after": "7" }, body: {} }
      // 1 request a window: the refused one was at the limit
      assert.strictEqual(yield* blocked(refused, 1), 7_000)
      // 1 of 1,000: noise, only its own retry would wait
      assert.strictEqual(yield* blocked(refused, 1000), 0)
      assert.strictEqual(yield* blocked({ status: 503, headers: { "retry-after": "7" }, body: {} }, 1), 0)
      assert.strictEqual(yield* blocked({ status: 200, headers: { "retry-after": "7" }, body: {} }, 1), 0)
    }))

  it.effect("the limits in the headers of any answer, error or success, are learnt for the request's model", () =>
    Effect.gen(function*() {
      for (const status of [200, 500, 429]) {
        const limits = yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          yield* Effect.exit(http.json(chat(), Schema.Unknown, chatOptions()))
          const limiter = yield* RateLimiter.RateLimiter
          const state = (yield* limiter.snapshot).find((s) => s.model === "m")
          return [state?.budgets.requests, state?.budgets.tokens].map((b) => [b?.limit, b?.source])
        }).pipe(Effect.provide(stack(Testing.httpClient(() => ({
          status,
          headers: { "x-ratelimit-limit-requests": "77", "x-ratelimit-limit-tokens": "77000" },
          body: {}
        })))))
        assert.deepStrictEqual(limits, [[77, "header"], [77_000, "header"]], `status ${status}`)
      }
    }))

  it.effect("a request without a model (GET /models) holds no permit and opens no bucket, whatever its headers", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      yield* http.json(HttpClientRequest.get("/models"), Schema.Unknown)
      yield* Effect.exit(http.json(HttpClientRequest.get("/models"), Schema.Unknown))
      const limiter = yield* RateLimiter.RateLimiter
      assert.deepStrictEqual(yield* limiter.snapshot, [])
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({
      headers: { "x-ratelimit-limit-requests": "5", "x-ratelimit-remaining-requests": "0" },
      body: { object: "list", data: [] }
    }))))))

  it.effect("a 200 whose body does not decode was still answered: request and tokens stay counted", () =>
    Effect.gen(function*() {
      const after = yield* Effect.gen(function*() {
        const http = yield* InferenceHttpClient
        const exit = yield* Effect.exit(http.json(chat(), Schema.Struct({ id: Schema.String }), chatOptions()))
        return { exit, ...(yield* counted) }
      }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: "<html>not json</html>" })))))
      assert.strictEqual(failureOf(after.exit)._tag, "DecodeError")
      assert.deepStrictEqual(after.held, after.reserved)
    }))

  it.effect("retried: a 500 then a success counts two requests and one reservation; a 429 then a success one request", () =>
    Effect.gen(function*() {
      for (const [status, requests] of [[500, 2], [429, 1]] as const) {
        let calls = 0
        const client = Testing.httpClient(() =>
          ++calls === 1 ? { status, headers: { "retry-after": "0" }, body: { detail: "no" } } : { body: {} }
        )
        const after = yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          const fiber = yield* Effect.fork(http.json(chat(), Schema.Unknown, chatOptions()))
          yield* TestClock.adjust("1 second")
          const exit = yield* Fiber.await(fiber)
          return { exit, ...(yield* counted) }
        }).pipe(Effect.provide(stack(client, { retries: 1, limiter: { window: "1 hour" } })))
        assert.isTrue(Exit.isSuccess(after.exit), `status ${status}`)
        assert.strictEqual(calls, 2)
        assert.deepStrictEqual(after.held, { ...after.reserved, requests }, `status ${status}`)
      }
    }))
})

describe("reconciling the reservation with the usage the server reports, through the transport", () => {
  const withUsage = (usage: unknown, reconcile: "keep" | "actual") =>
    oneRequest(Testing.httpClient(() => ({ body: { id: "x", usage } })), { limiter: { reconcile } })

  it.effect("a usage above the reservation raises each budget to it, in either mode", () =>
    Effect.gen(function*() {
      for (const reconcile of ["keep", "actual"] as const) {
        const reserved = (yield* withUsage(undefined, reconcile)).reserved
        const extras = FastCheck.sample(
          FastCheck.tuple(FastCheck.nat(100_000), FastCheck.nat(100_000)).filter(([a, b]) => a + b > 0),
          10
        )
        for (const [moreIn, moreOut] of extras) {
          const usage = { prompt_tokens: reserved.input + moreIn, completion_tokens: reserved.output + moreOut }
          const after = yield* withUsage(usage, reconcile)
          assert.deepStrictEqual(
            after.held,
            Budgets.cost(usage.prompt_tokens, usage.completion_tokens),
            `${reconcile}, ${moreIn} in and ${moreOut} out above`
          )
        }
      }
    }))

  it.effect("a usage below the reservation lowers it only with reconcile: actual", () =>
    Effect.gen(function*() {
      const reserved = (yield* withUsage(undefined, "keep")).reserved
      const usages = FastCheck.sample(
        FastCheck.tuple(FastCheck.nat(reserved.input), FastCheck.nat(reserved.output)).filter(([i, o]) =>
          i + o > 0 && i + o < reserved.tokens
        ),
        10
      )
      for (const [input, output] of usages) {
        const usage = { prompt_tokens: input, completion_tokens: output }
        assert.deepStrictEqual((yield* withUsage(usage, "keep")).held, reserved, `keep ${input}/${output}`)
        assert.deepStrictEqual(
          (yield* withUsage(usage, "actual")).held,
          Budgets.cost(input, output),
          `actual ${input}/${output}`
        )
      }
    }))

  it.effect("a usage that is no count (zero, negative, not a number, a total alone, missing) leaves the reservation", () =>
    Effect.gen(function*() {
      for (
        const usage of [
          { total_tokens: 0 },
          { total_tokens: -5 },
          { total_tokens: "12" },
          // a total alone cannot be split into input and output
          { total_tokens: 12 },
          { prompt_tokens: 0, completion_tokens: 0 },
          { prompt_tokens: -3, completion_tokens: "4" },
          null,
          7
        ]
      ) {
        const after = yield* withUsage(usage, "actual")
        assert.isTrue(Exit.isSuccess(after.exit))
        assert.deepStrictEqual(after.held, after.reserved, JSON.stringify(usage))
      }
    }))

  it.effect("a stream's usage, reported in its last chunk, settles the reservation when the stream ends", () =>
    Effect.gen(function*() {
      for (const reconcile of ["keep", "actual"] as const) {
        const after = yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          const values = yield* Stream.runCollect(http.jsonStream(chat(), Schema.Unknown, chatOptions()))
          return { values: values.length, ...(yield* counted) }
        }).pipe(Effect.provide(stack(
          Testing.httpClient(() => ({
            sse: [{ id: "a" }, { id: "b", usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 } }]
          })),
          { limiter: { reconcile } }
        )))
        assert.strictEqual(after.values, 2)
        assert.deepStrictEqual(after.held, reconcile === "actual" ? Budgets.cost(2, 3) : after.reserved, reconcile)
      }
    }))
})

describe("what a request that never got an answer leaves in the limiter", () => {
  const notConnected = ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"]

  it.effect("a connection never made (refused, unresolvable, unreachable) gives request and tokens back", () =>
    Effect.gen(function*() {
      // undici reports the socket's error as the cause of its own, sometimes more than once removed
      for (const code of notConnected) {
        for (const depth of [0, 1, 2, 3]) {
          const after = yield* oneRequest(failing(systemError(code, depth)))
          const error = failureOf(after.exit)
          assert.strictEqual(error._tag, "TransportError", `${code} at depth ${depth}`)
          assert.strictEqual(error._tag === "TransportError" && error.connected, false, `${code} at depth ${depth}`)
          assert.deepStrictEqual(after.held, Budgets.none, `${code} at depth ${depth}`)
        }
      }
    }))

  it.effect("a connection dropped after sending stays counted, tokens included (the server may hold it)", () =>
    Effect.gen(function*() {
      for (
        const cause of [systemError("ECONNRESET", 1), systemError("EPIPE", 0), new Error("other side closed"), "x"]
      ) {
        const after = yield* oneRequest(failing(cause))
        const error = failureOf(after.exit)
        assert.strictEqual(error._tag, "TransportError")
        assert.notStrictEqual(error._tag === "TransportError" && error.connected, false)
        assert.deepStrictEqual(after.held, after.reserved, String(cause))
      }
    }))

  it.effect("a connect timeout is Timeout(connect) naming the configured limit, and gives request and tokens back", () =>
    Effect.gen(function*() {
      const after = yield* oneRequest(failing(systemError("UND_ERR_CONNECT_TIMEOUT", 1)), {
        config: { connectTimeout: "1500 millis" }
      })
      const error = failureOf(after.exit)
      assert.strictEqual(error._tag, "Timeout")
      if (error._tag === "Timeout") {
        assert.strictEqual(error.timeout, "connect")
        assert.strictEqual(error.message, "no connection within 1s 500ms")
        assert.strictEqual(Duration.toMillis(error.after), 1_500)
      }
      assert.deepStrictEqual(after.held, Budgets.none)
    }))

  it.effect("no status line within the first-byte limit, or no whole body within the total one: counted, tokens included", () =>
    Effect.gen(function*() {
      const hanging = Testing.httpClient(() => Effect.as(Effect.never, { body: {} }))
      for (
        const [config, which] of [[{ firstByteTimeout: "5 seconds" }, "firstByte"], [
          { timeout: "5 seconds" },
          "total"
        ]] as const
      ) {
        const after = yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          const fiber = yield* Effect.fork(http.json(chat(), Schema.Unknown, chatOptions()))
          yield* TestClock.adjust("5 seconds")
          const exit = yield* Fiber.await(fiber)
          return { exit, ...(yield* counted) }
        }).pipe(Effect.provide(stack(hanging, { config })))
        const error = failureOf(after.exit)
        assert.strictEqual(error._tag === "Timeout" && error.timeout, which)
        assert.deepStrictEqual(after.held, after.reserved, which)
      }
    }))

  it.effect("a request the server times out (408) was received: counted, tokens included", () =>
    Effect.gen(function*() {
      const after = yield* oneRequest(Testing.httpClient(() => ({ status: 408, body: { detail: "too slow" } })))
      assert.strictEqual(failureOf(after.exit)._tag, "Timeout")
      assert.deepStrictEqual(after.held, after.reserved)
    }))
})

describe("interrupted requests and the limiter", () => {
  it.effect("a caller interrupted while waiting in the limiter's line leaves no place and no count behind", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      yield* http.json(chat(), Schema.Unknown, chatOptions())
      const waiting = yield* Effect.fork(http.json(chat(), Schema.Unknown, chatOptions()))
      yield* TestClock.adjust("1 second")
      const before = yield* counted
      assert.deepStrictEqual([before.held.requests, before.waiting], [1, 1])
      yield* Fiber.interrupt(waiting)
      const after = yield* counted
      assert.strictEqual(after.waiting, 0)
      assert.deepStrictEqual(after.held, after.reserved)
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: {} })), {
      limiter: { limits: { m: { rpm: 1, tpm: 1_000_000 } }, window: "1 minute" }
    }))))

  it.effect("a request interrupted on the wire stays counted, tokens included", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const fiber = yield* Effect.fork(http.json(chat(), Schema.Unknown, chatOptions()))
      yield* TestClock.adjust("1 second")
      yield* Fiber.interrupt(fiber)
      const after = yield* counted
      assert.deepStrictEqual(after.held, after.reserved)
    }).pipe(Effect.provide(stack(Testing.httpClient(() => Effect.as(Effect.never, { body: {} }))))))

  it.effect("an interruption that lands as the limiter grants the permit (a store doing I/O) gives it back", () => {
    // the store has counted the request and takes its time to say so (its I/O)
    type Hold = { readonly reserved: Deferred.Deferred<void>; readonly gate: Deferred.Deferred<void> }
    let hold: Hold | undefined
    const slowAfterReserve = memoryStoreWith((inner) => ({
      reserve: (...args) =>
        Effect.tap(inner.reserve(...args), () => {
          const held = hold
          hold = undefined
          return held === undefined
            ? Effect.void
            : Effect.zipRight(Deferred.succeed(held.reserved, undefined), Deferred.await(held.gate))
        })
    }))
    let sent = 0
    return Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      for (const kind of ["json", "stream"]) {
        const held: Hold = { reserved: yield* Deferred.make<void>(), gate: yield* Deferred.make<void>() }
        hold = held
        const fiber = yield* Effect.fork(
          kind === "json"
            ? http.json(chat(), Schema.Unknown, chatOptions())
            : Stream.runDrain(http.sse(chat(), chatOptions()))
        )
        yield* Deferred.await(held.reserved)
        // the interruption reaches the caller while the limiter is still granting
        const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
        for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
        yield* Deferred.succeed(held.gate, undefined)
        yield* Fiber.join(interrupting)
        assert.isTrue(Exit.isInterrupted(yield* Fiber.await(fiber)), kind)
        assert.strictEqual(sent, 0, kind)
        const after = yield* counted
        assert.strictEqual(after.waiting, 0, kind)
        assert.deepStrictEqual(after.held, Budgets.none, kind)
      }
    }).pipe(Effect.provide(stack(
      Testing.httpClient(() => {
        sent++
        return { body: {} }
      }),
      { store: slowAfterReserve }
    )))
  })
})

/**
 * A clock that holds the fiber reading it at its `stopAt`-th read until `release` completes: a place where an
 * interruption can arrive while the request is between two steps (the TestClock keeps the time).
 */
const pausingClock = (
  base: Clock.Clock,
  stopAt: number,
  reached: Deferred.Deferred<void>,
  release: Deferred.Deferred<void>
): Clock.Clock => {
  let reads = 0
  const read = <A>(effect: Effect.Effect<A>) =>
    Effect.suspend(() =>
      ++reads === stopAt
        ? Effect.zipRight(Effect.zipRight(Deferred.succeed(reached, undefined), Deferred.await(release)), effect)
        : effect
    )
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    currentTimeMillis: read(base.currentTimeMillis),
    currentTimeNanos: read(base.currentTimeNanos),
    unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis(),
    unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos(),
    sleep: (duration) => base.sleep(duration)
  }
}

describe("an interruption at any moment of a request", () => {
  const scenarios = [
    { kind: "json", status: 200 },
    { kind: "json", status: 500 },
    { kind: "json", status: 429 },
    { kind: "stream", status: 200 },
    { kind: "stream, first event only", status: 200 }
  ] as const

  for (const { kind, status } of scenarios) {
    it.effect(`${kind}, status ${status}: counts what reached the server, never what did not reach the client`, () => {
      // handed: attempts the transport gave to the HTTP client; sent: attempts the server received
      let handed = 0
      let sent = 0
      const server = Testing.httpClient(() => {
        sent++
        return status === 200
          ? { sse: [{ a: 1 }, { a: 2 }], body: {} }
          : { status, headers: { "retry-after": "0" }, body: { error: { message: "no" } } }
      })
      const client = HttpClient.tapRequest(server, () => Effect.sync(() => handed++))
      return Effect.gen(function*() {
        const http = yield* InferenceHttpClient
        const base = yield* Effect.clock
        const run = kind === "json"
          ? http.json(chat(), Schema.Unknown, chatOptions())
          : kind === "stream"
          ? Stream.runDrain(http.sse(chat(), chatOptions()))
          : Stream.runDrain(Stream.take(http.sse(chat(), chatOptions()), 1))
        let reads = 0
        // the n-th time the request reads the clock, it is interrupted; until it finishes before its n-th read
        for (let stopAt = 1; stopAt <= 200; stopAt++) {
          const before = yield* counted
          handed = 0
          sent = 0
          const reached = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const fiber = yield* Effect.fork(Effect.withClock(run, pausingClock(base, stopAt, reached, release)))
          const paused = yield* Effect.raceFirst(
            Effect.as(Deferred.await(reached), true),
            Effect.as(Fiber.await(fiber), false)
          )
          if (!paused) break
          reads = stopAt
          const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
          for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(interrupting)
          const after = yield* counted
          const delta = after.held.requests - before.held.requests
          const at = `interrupted at clock read ${stopAt} (handed ${handed}, sent ${sent}, counted ${delta})`
          assert.strictEqual(after.waiting, 0, at)
          // never more than was handed to the client; at least what the server answered, but a 429 it did not count
          assert.isAtMost(delta, handed, at)
          if (status !== 429) assert.isAtLeast(delta, sent, at)
          assert.isBelow(stopAt, 200, "the request should end within 200 clock reads")
        }
        // the request reads the clock: it was interrupted at some of its steps, or the test proved nothing
        assert.isAtLeast(reads, 1)
      }).pipe(Effect.provide(stack(client, { retries: 1 })))
    })
  }
})

describe("an interruption between any two operations of a request", () => {
  // A fiber gives way to others every so many operations (2,048 by default), so an interruption can arrive between
  // any two of them. Here the request gives way every few operations, and the test interrupts it after 0, 1, 2, ...
  // turns until it finishes on its own.
  const scenarios = [
    { kind: "json", every: 16 },
    { kind: "stream, first event only", every: 64 }
  ] as const

  for (const { every, kind } of scenarios) {
    it.effect(`${kind}: counts what reached the server, never what did not reach the client`, () => {
      let handed = 0
      let sent = 0
      let counts = 0
      const server = Testing.httpClient(() => {
        sent++
        return { sse: [{ a: 1 }, { a: 2 }], body: {} }
      })
      const client = HttpClient.tapRequest(server, () => Effect.sync(() => handed++))
      return Effect.gen(function*() {
        const http = yield* InferenceHttpClient
        const run = kind === "json"
          ? http.json(chat(), Schema.Unknown, chatOptions())
          : Stream.runDrain(Stream.take(http.sse(chat(), chatOptions()), 1))
        let finished = false
        for (let turns = 0; turns <= 1_000 && !finished; turns++) {
          const before = yield* counted
          handed = 0
          sent = 0
          const fiber = yield* Effect.fork(Effect.withMaxOpsBeforeYield(run, every))
          for (let i = 0; i < turns; i++) yield* Effect.yieldNow()
          finished = Option.isSome(yield* Fiber.poll(fiber))
          yield* Fiber.interrupt(fiber)
          const after = yield* counted
          const delta = after.held.requests - before.held.requests
          counts += delta
          const at = `interrupted after ${turns} turns (handed ${handed}, sent ${sent}, counted ${delta})`
          assert.strictEqual(after.waiting, 0, at)
          assert.isAtMost(delta, handed, at)
          assert.isAtLeast(delta, sent, at)
        }
        assert.isTrue(finished, "the request should finish within 1,000 turns")
        // the requests were counted at all (a request the limiter never saw would pass the bounds above)
        assert.isAtLeast(counts, 1)
      }).pipe(Effect.provide(stack(client)))
    })
  }
})
