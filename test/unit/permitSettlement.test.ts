/**
 * What each way a request can end leaves in the rate limiter (README, "The proactive rate limiter"): an answer
 * counts its slot and its tokens; an error answer keeps the slot and gives the tokens back; a request the server
 * never counted (a 429, a connection never made) gives both back; a request cut off or timed out after it was sent
 * stays counted, tokens included; a request interrupted before it was sent leaves nothing behind.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
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
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import * as Testing from "../../src/layers/Testing.js"
import type { ApiError } from "../../src/schemas/Errors.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { memoryStoreWith } from "../helpers/stores.js"
import { chat, counted, stack, type StackOptions } from "./transportStack.js"

/** One chat request through a fresh stack on `client`: how it ended and what the limiter counts after. */
const oneRequest = (client: HttpClient.HttpClient, options: StackOptions = {}) =>
  Effect.gen(function*() {
    const http = yield* InferenceHttpClient
    const exit = yield* Effect.exit(http.json(chat(), Schema.Unknown))
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
  it.effect("a success counts its request slot and the tokens reserved for it", () =>
    Effect.gen(function*() {
      const after = yield* oneRequest(Testing.httpClient(() => ({ body: { id: "x" } })))
      assert.isTrue(Exit.isSuccess(after.exit))
      assert.isAbove(after.reserved, 100)
      assert.deepInclude(after, { requests: 1, tokens: after.reserved })
    }))

  it.effect("after an error answer (4xx, 5xx; not 408 or 429) the limiter holds the request slot but not its tokens", () =>
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
        assert.deepInclude(after, { requests: 1, tokens: 0 }, `status ${status}`)
      }
    }))

  it.effect("a 429 whose body says the quota is spent, or that the request is too large, gives its tokens back", () =>
    Effect.gen(function*() {
      for (
        const message of ["You exceeded your current quota, please check your plan and billing", "Request too large"]
      ) {
        const after = yield* oneRequest(Testing.httpClient(() => ({ status: 429, body: { error: { message } } })))
        assert.isTrue(Exit.isFailure(after.exit), message)
        assert.strictEqual(after.tokens, 0, message)
      }
    }))

  it.effect("a request refused with 429 by the server gives its slot and its tokens back", () =>
    Effect.gen(function*() {
      for (const headers of [{}, { "retry-after": "3" }, { "x-ratelimit-reset-requests": "1m0s" }]) {
        const after = yield* oneRequest(
          Testing.httpClient(() => ({ status: 429, headers, body: { error: { message: "Rate limit reached" } } }))
        )
        assert.strictEqual(failureOf(after.exit)._tag, "RateLimited")
        assert.deepInclude(after, { requests: 0, tokens: 0 }, JSON.stringify(headers))
      }
    }))

  it.effect("a 429 closes the model's bucket until the server's reset; other answers leave it open", () =>
    Effect.gen(function*() {
      const blocked = (answer: Testing.ScriptedResponse) =>
        Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          yield* Effect.exit(http.json(chat(), Schema.Unknown))
          const limiter = yield* RateLimiter.RateLimiter
          return (yield* limiter.snapshot).find((s) => s.model === "m")?.blockedMs
        }).pipe(Effect.provide(stack(Testing.httpClient(() => answer))))
      assert.strictEqual(yield* blocked({ status: 429, headers: { "retry-after": "7" }, body: {} }), 7_000)
      assert.strictEqual(yield* blocked({ status: 503, headers: { "retry-after": "7" }, body: {} }), 0)
      assert.strictEqual(yield* blocked({ status: 200, headers: { "retry-after": "7" }, body: {} }), 0)
    }))

  it.effect("the limits in the headers of any answer, error or success, are learnt for the request's model", () =>
    Effect.gen(function*() {
      for (const status of [200, 500, 429]) {
        const limits = yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          yield* Effect.exit(http.json(chat(), Schema.Unknown))
          const limiter = yield* RateLimiter.RateLimiter
          const state = (yield* limiter.snapshot).find((s) => s.model === "m")
          return [state?.limitRequests, state?.limitTokens, state?.fromHeaders]
        }).pipe(Effect.provide(stack(Testing.httpClient(() => ({
          status,
          headers: { "x-ratelimit-limit-requests": "77", "x-ratelimit-limit-tokens": "77000" },
          body: {}
        })))))
        assert.deepStrictEqual(limits, [77, 77_000, true], `status ${status}`)
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

  it.effect("a 200 whose body does not decode was still answered: slot and tokens stay counted", () =>
    Effect.gen(function*() {
      const after = yield* Effect.gen(function*() {
        const http = yield* InferenceHttpClient
        const exit = yield* Effect.exit(http.json(chat(), Schema.Struct({ id: Schema.String })))
        return { exit, ...(yield* counted) }
      }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: "<html>not json</html>" })))))
      assert.strictEqual(failureOf(after.exit)._tag, "DecodeError")
      assert.deepInclude(after, { requests: 1, tokens: after.reserved })
    }))

  it.effect("retried: a 500 then a success counts two slots and one reservation; a 429 then a success one slot", () =>
    Effect.gen(function*() {
      for (const [status, slots] of [[500, 2], [429, 1]] as const) {
        let calls = 0
        const client = Testing.httpClient(() =>
          ++calls === 1 ? { status, headers: { "retry-after": "0" }, body: { detail: "no" } } : { body: {} }
        )
        const after = yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          const fiber = yield* Effect.fork(http.json(chat(), Schema.Unknown))
          yield* TestClock.adjust("1 second")
          const exit = yield* Fiber.await(fiber)
          return { exit, ...(yield* counted) }
        }).pipe(Effect.provide(stack(client, { retries: 1, limiter: { window: "1 hour" } })))
        assert.isTrue(Exit.isSuccess(after.exit), `status ${status}`)
        assert.strictEqual(calls, 2)
        assert.deepInclude(after, { requests: slots, tokens: after.reserved }, `status ${status}`)
      }
    }))
})

describe("reconciling the reservation with the usage the server reports", () => {
  const withUsage = (usage: unknown, reconcile: "keep" | "actual") =>
    oneRequest(Testing.httpClient(() => ({ body: { id: "x", usage } })), { limiter: { reconcile } })

  it.effect("a usage above the reservation raises the count to it, in either mode", () =>
    Effect.gen(function*() {
      for (const reconcile of ["keep", "actual"] as const) {
        const reserved = (yield* withUsage(undefined, reconcile)).reserved
        for (const extra of FastCheck.sample(FastCheck.integer({ min: 1, max: 100_000 }), 10)) {
          const after = yield* withUsage({ total_tokens: reserved + extra }, reconcile)
          assert.strictEqual(after.tokens, reserved + extra, `${reconcile}, ${extra} above`)
        }
      }
    }))

  it.effect("a usage below the reservation lowers it only with reconcile: actual", () =>
    Effect.gen(function*() {
      const reserved = (yield* withUsage(undefined, "keep")).reserved
      for (const total of FastCheck.sample(FastCheck.integer({ min: 1, max: reserved - 1 }), 10)) {
        assert.strictEqual((yield* withUsage({ total_tokens: total }, "keep")).tokens, reserved, `keep ${total}`)
        assert.strictEqual((yield* withUsage({ total_tokens: total }, "actual")).tokens, total, `actual ${total}`)
      }
    }))

  it.effect("a usage that is no count (zero, negative, not a number, missing) leaves the reservation as it was", () =>
    Effect.gen(function*() {
      for (
        const usage of [
          { total_tokens: 0 },
          { total_tokens: -5 },
          { total_tokens: "12" },
          { prompt_tokens: 3 },
          null,
          7
        ]
      ) {
        const after = yield* withUsage(usage, "actual")
        assert.isTrue(Exit.isSuccess(after.exit))
        assert.strictEqual(after.tokens, after.reserved, JSON.stringify(usage))
      }
    }))

  it.effect("a stream's usage, reported in its last chunk, settles the reservation when the stream ends", () =>
    Effect.gen(function*() {
      for (const reconcile of ["keep", "actual"] as const) {
        const after = yield* Effect.gen(function*() {
          const http = yield* InferenceHttpClient
          const values = yield* Stream.runCollect(http.jsonStream(chat(), Schema.Unknown))
          return { values: values.length, ...(yield* counted) }
        }).pipe(Effect.provide(stack(
          Testing.httpClient(() => ({ sse: [{ id: "a" }, { id: "b", usage: { total_tokens: 5 } }] })),
          { limiter: { reconcile } }
        )))
        assert.strictEqual(after.values, 2)
        assert.strictEqual(after.tokens, reconcile === "actual" ? 5 : after.reserved, reconcile)
      }
    }))
})

describe("what a request that never got an answer leaves in the limiter", () => {
  const notConnected = ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"]

  it.effect("a connection never made (refused, unresolvable, unreachable) gives slot and tokens back", () =>
    Effect.gen(function*() {
      // undici reports the socket's error as the cause of its own, sometimes more than once removed
      for (const code of notConnected) {
        for (const depth of [0, 1, 2, 3]) {
          const after = yield* oneRequest(failing(systemError(code, depth)))
          const error = failureOf(after.exit)
          assert.strictEqual(error._tag, "TransportError", `${code} at depth ${depth}`)
          assert.strictEqual(error._tag === "TransportError" && error.connected, false, `${code} at depth ${depth}`)
          assert.deepInclude(after, { requests: 0, tokens: 0 }, `${code} at depth ${depth}`)
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
        assert.deepInclude(after, { requests: 1, tokens: after.reserved })
      }
    }))

  it.effect("a connect timeout is Timeout(connect) naming the configured limit, and gives slot and tokens back", () =>
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
      assert.deepInclude(after, { requests: 0, tokens: 0 })
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
          const fiber = yield* Effect.fork(http.json(chat(), Schema.Unknown))
          yield* TestClock.adjust("5 seconds")
          const exit = yield* Fiber.await(fiber)
          return { exit, ...(yield* counted) }
        }).pipe(Effect.provide(stack(hanging, { config })))
        const error = failureOf(after.exit)
        assert.strictEqual(error._tag === "Timeout" && error.timeout, which)
        assert.deepInclude(after, { requests: 1, tokens: after.reserved }, which)
      }
    }))

  it.effect("a request the server times out (408) was received: counted, tokens included", () =>
    Effect.gen(function*() {
      const after = yield* oneRequest(Testing.httpClient(() => ({ status: 408, body: { detail: "too slow" } })))
      assert.strictEqual(failureOf(after.exit)._tag, "Timeout")
      assert.deepInclude(after, { requests: 1, tokens: after.reserved })
    }))
})

describe("interrupted requests and the limiter", () => {
  it.effect("a caller interrupted while waiting in the limiter's line leaves no place and no count behind", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      yield* http.json(chat(), Schema.Unknown)
      const waiting = yield* Effect.fork(http.json(chat(), Schema.Unknown))
      yield* TestClock.adjust("1 second")
      assert.deepInclude(yield* counted, { requests: 1, waiting: 1 })
      yield* Fiber.interrupt(waiting)
      const after = yield* counted
      assert.deepInclude(after, { requests: 1, waiting: 0, tokens: after.reserved })
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: {} })), {
      limiter: { limits: { m: { rpm: 1, tpm: 1_000_000 } }, window: "1 minute" }
    }))))

  it.effect("a request interrupted on the wire stays counted, tokens included", () =>
    Effect.gen(function*() {
      const http = yield* InferenceHttpClient
      const fiber = yield* Effect.fork(http.json(chat(), Schema.Unknown))
      yield* TestClock.adjust("1 second")
      yield* Fiber.interrupt(fiber)
      const after = yield* counted
      assert.deepInclude(after, { requests: 1, tokens: after.reserved })
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
          kind === "json" ? http.json(chat(), Schema.Unknown) : Stream.runDrain(http.sse(chat()))
        )
        yield* Deferred.await(held.reserved)
        // the interruption reaches the caller while the limiter is still granting
        const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
        for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
        yield* Deferred.succeed(held.gate, undefined)
        yield* Fiber.join(interrupting)
        assert.isTrue(Exit.isInterrupted(yield* Fiber.await(fiber)), kind)
        assert.strictEqual(sent, 0, kind)
        assert.deepInclude(yield* counted, { requests: 0, tokens: 0, waiting: 0 }, kind)
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
          ? http.json(chat(), Schema.Unknown)
          : kind === "stream"
          ? Stream.runDrain(http.sse(chat()))
          : Stream.runDrain(Stream.take(http.sse(chat()), 1))
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
          const interrupting = yield* Effect.fork(Fiber.interrupt(fiber))
          for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(interrupting)
          const after = yield* counted
          const delta = after.requests - before.requests
          const at = `interrupted at clock read ${stopAt} (handed ${handed}, sent ${sent}, counted ${delta})`
          assert.strictEqual(after.waiting, 0, at)
          // never more than was handed to the client; at least what the server answered, but a 429 it did not count
          assert.isAtMost(delta, handed, at)
          if (status !== 429) assert.isAtLeast(delta, sent, at)
          assert.isBelow(stopAt, 200, "the request should end within 200 clock reads")
        }
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
      const server = Testing.httpClient(() => {
        sent++
        return { sse: [{ a: 1 }, { a: 2 }], body: {} }
      })
      const client = HttpClient.tapRequest(server, () => Effect.sync(() => handed++))
      return Effect.gen(function*() {
        const http = yield* InferenceHttpClient
        const run = kind === "json"
          ? http.json(chat(), Schema.Unknown)
          : Stream.runDrain(Stream.take(http.sse(chat()), 1))
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
          const delta = after.requests - before.requests
          const at = `interrupted after ${turns} turns (handed ${handed}, sent ${sent}, counted ${delta})`
          assert.strictEqual(after.waiting, 0, at)
          assert.isAtMost(delta, handed, at)
          assert.isAtLeast(delta, sent, at)
        }
        assert.isTrue(finished, "the request should finish within 1,000 turns")
      }).pipe(Effect.provide(stack(client)))
    })
  }
})
