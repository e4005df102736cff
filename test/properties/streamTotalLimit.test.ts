/**
 * A stream's total time limit across pulls, where it lives (`timedBody` in src/internal/request/events.ts): the limit
 * counts from the moment the request was sent, not from each pull. Chunks keep coming, each within the idle limit, at
 * any pace; the stream ends in `Timeout(total)` exactly when the total limit after sending passes (not a millisecond
 * before, however long the answer took to start), every chunk that came before is read, and a consumer that pulls
 * after the limit passed gets no more bytes. On the `TestClock`. Until now only the transport's unit suite
 * (timeLimits.test.ts) saw it.
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import * as TestServices from "effect/TestServices"
import * as Deadlines from "../../src/internal/request/deadline.js"
import { timedBody } from "../../src/internal/request/events.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"
import { ResponseMetadata } from "../../src/services/InferenceHttpClient.js"

/** Lets the reader and the timer run, without moving the `TestClock`. */
const settle = Effect.zipRight(TestServices.provideLive(Effect.sleep("10 millis")), Effect.yieldNow())

const idle = 5_000

/** An opened response whose body the test writes, chunk by chunk; sent `waited` ms before now. */
const opened = (total: number, waited: number) =>
  Effect.gen(function*() {
    let controller: ReadableStreamDefaultController<Uint8Array> | undefined
    const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) })
    const now = yield* Clock.currentTimeMillis
    const sent = {
      response: HttpClientResponse.fromWeb(
        HttpClientRequest.post("http://aifs.test/v2/chat/completions"),
        new Response(body, { headers: { "content-type": "text/event-stream" } })
      ),
      meta: new ResponseMetadata({
        status: 200,
        requestId: undefined,
        rateLimit: RateLimitInfo.empty(0),
        headers: Headers.empty
      }),
      endpoint: "POST /v2/chat/completions",
      permit: undefined,
      timeouts: { firstByte: Duration.minutes(10), total: Duration.millis(total) },
      sentAt: now - waited
    }
    return { sent, write: (n: number) => controller!.enqueue(new Uint8Array([n])) }
  })

/** How the reading fiber stands: running, or how it ended. */
const state = (fiber: Fiber.RuntimeFiber<void, unknown>) =>
  Effect.map(Fiber.poll(fiber), (exit) => {
    if (Option.isNone(exit)) return "running"
    if (Exit.isSuccess(exit.value)) return "ended"
    const error = Option.getOrUndefined(Cause.failureOption(exit.value.cause)) as
      | { readonly _tag?: string; readonly timeout?: string; readonly message?: string }
      | undefined
    return error?._tag === "Timeout" ? `Timeout(${error.timeout}): ${error.message}` : Cause.pretty(exit.value.cause)
  })

const scenario = FastCheck.record({
  total: FastCheck.integer({ min: 1_000, max: 30_000 }),
  // how long the answer took to start, as a share of the total limit
  waitedShare: FastCheck.double({ min: 0, max: 0.9, noNaN: true }),
  // the time between chunks: each within the idle limit
  gaps: FastCheck.array(FastCheck.integer({ min: 1, max: idle - 1 }), { minLength: 1, maxLength: 40 })
})

describe("a stream's total time limit", () => {
  it.effect("counts from sending across every pull: Timeout(total) exactly then, every chunk before it read", () =>
    Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(scenario, ({ gaps, total, waitedShare }) =>
          Effect.runPromise(Effect.scoped(
            Effect.gen(function*() {
              const waited = Math.floor(total * waitedShare)
              const deadlines = yield* Deadlines.make
              const { sent, write } = yield* opened(total, waited)
              const read: Array<number> = []
              const fiber = yield* Effect.fork(
                Stream.runForEach(
                  timedBody(sent, Duration.millis(idle), deadlines),
                  (chunk) => Effect.sync(() => read.push(...chunk))
                )
              )
              const story = JSON.stringify({ total, waited, gaps })
              let at = waited
              // the gaps given, then more just within the idle limit until the total one passes
              for (let i = 0;; i++) {
                const gap = gaps[i] ?? idle - 1
                write(i % 256)
                yield* settle
                assert.strictEqual(read.length, i + 1, story)
                if (at + gap < total) {
                  yield* TestClock.adjust(gap)
                  at += gap
                  yield* settle
                  assert.strictEqual(yield* state(fiber), "running", `${story} at ${at}`)
                  continue
                }
                // the limit passes within this gap: not a millisecond early, and exactly then
                yield* TestClock.adjust(total - 1 - at)
                yield* settle
                assert.strictEqual(yield* state(fiber), "running", `${story} at ${total - 1}`)
                yield* TestClock.adjust(1)
                yield* settle
                assert.match(
                  yield* state(fiber),
                  /^Timeout\(total\): stream not finished within/,
                  `${story} at ${total}`
                )
                return
              }
            }).pipe(Effect.provide(TestContext.TestContext))
          ))),
        { numRuns: 25 }
      )
    ))

  it.scoped("a consumer that pulls after the limit passed gets no more bytes, though they came", () =>
    Effect.gen(function*() {
      const deadlines = yield* Deadlines.make
      const { sent, write } = yield* opened(10_000, 4_000)
      const pull = yield* Stream.toPull(timedBody(sent, Duration.millis(idle), deadlines))
      write(0)
      assert.deepStrictEqual([...yield* pull].flatMap((chunk) => [...chunk]), [0])
      // the consumer is busy while the body goes on coming, past the limit (10 s after sending, 6 s from now)
      write(1)
      yield* settle
      yield* TestClock.adjust(6_000)
      const late = yield* Effect.flip(pull)
      assert.isTrue(Option.isSome(late))
      const error = Option.getOrThrow(late) as { readonly _tag: string; readonly timeout?: string }
      assert.deepStrictEqual([error._tag, error.timeout], ["Timeout", "total"])
    }))
})
