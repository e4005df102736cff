/**
 * The rate limiter's state as a stream: a burst of 25 requests on a basic-tier key (20 requests, 13,800 input and
 * 5,000 output tokens per window for this model) while `limiter.changes` prints how many callers wait and how full
 * each budget of the window is. The last five wait on the client until the window frees up, instead of meeting 429s.
 *
 *   npx tsx examples/limiter-state.ts         (the emulator, with a 5-second window; with AIFS_API_KEY set,
 *                                              the real service and its 1-minute window, tier from AIFS_TIER)
 */
import { Chat, ClientMetrics, RateLimiter } from "effect-aifs"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { inference, isMain, run } from "./run.js"

const model = "Llama-3.3-70B-Instruct"
const burst = 25

/** A budget's use of its limit in the window: `12/20` (`-` while no limit is known). */
const used = (budget: RateLimiter.BudgetState) => `${budget.used}/${budget.limit ?? "-"}`

export const program = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  const limiter = yield* RateLimiter.RateLimiter
  const met429Before = (yield* Metric.value(ClientMetrics.rateLimited)).count
  const start = yield* Clock.currentTimeMillis

  // watch the model's bucket: every change is recorded, the settled ones are printed (not each admission)
  const seen: Array<RateLimiter.BucketState> = []
  const subscribed = yield* Deferred.make<void>()
  const burstDone = yield* Deferred.make<void>()
  const watcher = yield* limiter.changes.pipe(
    Stream.tap(() => Deferred.succeed(subscribed, undefined)),
    Stream.filterMap((buckets) => Option.fromNullable(buckets.find((b) => b.model === model))),
    Stream.interruptWhen(Deferred.await(burstDone)),
    Stream.debounce("100 millis"),
    Stream.runForEach((bucket) =>
      Effect.gen(function*() {
        seen.push(bucket)
        const at = ((yield* Clock.currentTimeMillis) - start) / 1000
        const { input, output, requests } = bucket.budgets
        yield* Console.log(
          `${at.toFixed(1).padStart(5)} s  waiting: ${String(bucket.waiting).padStart(2)}  window: ` +
            `${used(requests)} requests, ${used(input)} input and ${used(output)} output tokens, ` +
            `next slot in ${(bucket.nextResetMs / 1000).toFixed(1)} s`
        )
      })
    ),
    Effect.fork
  )
  yield* Deferred.await(subscribed) // no change of the burst is missed

  yield* Console.log(`A burst of ${burst} requests to ${model}:`)
  const answers = yield* Effect.forEach(
    Array.from({ length: burst }, (_, i) => i + 1),
    (i) => chat.create({ model, messages: [{ role: "user", content: `Request ${i}: one word.` }], max_tokens: 8 }),
    { concurrency: "unbounded" }
  )
  yield* Deferred.succeed(burstDone, undefined)
  yield* Fiber.join(watcher) // prints the last settled state, then ends

  const final = (yield* limiter.snapshot).find((b) => b.model === model)
  const met429 = (yield* Metric.value(ClientMetrics.rateLimited)).count - met429Before
  const seconds = ((yield* Clock.currentTimeMillis) - start) / 1000
  yield* Console.log(
    `\n${answers.length}/${burst} answered in ${seconds.toFixed(1)} s, 429s met: ${met429}, ` +
      `most callers waiting at once: ${Math.max(0, ...seen.map((b) => b.waiting))}, waiting now: ${final?.waiting}`
  )
  return { answers, seen, final, met429 }
})

if (isMain(import.meta.url)) run(program, inference({ tier: "basic", window: "5 seconds" }))
