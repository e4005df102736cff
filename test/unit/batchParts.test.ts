/**
 * The parts of `aifs batch` one by one: the plan of the input's lines (pure), the graceful stop over a run's flights
 * (`Batch.Flights`, tested in batch.test.ts), and the texts the run says.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Plan from "../../src/cli/batch/plan.js"
import * as Report from "../../src/cli/batch/report.js"
import * as Stop from "../../src/cli/batch/stop.js"
import * as Batch from "../../src/services/Batch.js"

const chat = (customId: string) =>
  JSON.stringify({
    custom_id: customId,
    url: "/v1/chat/completions",
    body: { model: "m", messages: [{ role: "user", content: customId }] }
  })

const resume: Plan.Resume = { succeeded: new Set(["ok"]), failed: new Set(["no"]), keepFailed: false }

describe("the plan", () => {
  it("each line: blank, bad (counted unless its id is done), a duplicate id bad, done skipped, the rest run", () => {
    const none = new Set<string>()
    assert.deepStrictEqual(Plan.step(resume, none, "  ", 1), { _tag: "Blank" })
    assert.deepStrictEqual(Plan.step(resume, none, "{x", 2), {
      _tag: "Bad",
      line: 2,
      reason: "not JSON",
      counted: true
    })
    // a bad line whose id is done was never counted among those to run
    const badDone = JSON.stringify({ custom_id: "ok", url: "/v1/images" })
    assert.include(Plan.step(resume, none, badDone, 3), { _tag: "Bad", counted: false })
    assert.deepStrictEqual(Plan.step(resume, new Set(["a"]), chat("a"), 4), {
      _tag: "Bad",
      line: 4,
      reason: "duplicate custom_id \"a\"",
      counted: true
    })
    assert.deepStrictEqual(Plan.step(resume, none, chat("ok"), 5), { _tag: "Skip", id: "ok", keptFailed: false })
    assert.include(Plan.step(resume, none, chat("no"), 6), { _tag: "Run", retried: true })
    assert.include(Plan.step(resume, none, chat("new"), 7), { _tag: "Run", retried: false })
    const keeping = { ...resume, keepFailed: true }
    assert.deepStrictEqual(Plan.step(keeping, none, chat("no"), 8), { _tag: "Skip", id: "no", keptFailed: true })
  })

  it("what counts among the lines to run: not blank, not done", () => {
    assert.isFalse(Plan.counts(resume, " "))
    assert.isFalse(Plan.counts(resume, chat("ok")))
    assert.isTrue(Plan.counts(resume, chat("no")))
    assert.isFalse(Plan.counts({ ...resume, keepFailed: true }, chat("no")))
    assert.isTrue(Plan.counts(resume, "{x"))
  })

  it.effect("steps: a later line with an id run or skipped before is a duplicate; one after a bad line is not", () =>
    Effect.gen(function*() {
      const lines = [chat("a"), chat("ok"), chat("a"), chat("ok"), JSON.stringify({ custom_id: "b" }), chat("b")]
      const steps = yield* Stream.runCollect(
        Plan.steps(Stream.fromIterable(lines.map((text, i) => [text, i + 1] as const)), resume)
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(steps).map((step) => step._tag), [
        "Run",
        "Skip",
        "Bad",
        "Bad",
        "Bad",
        "Run"
      ])
    }))
})

/** A request that leaves the limiter's line when `sent` is done (its operation's span opens), then never ends. */
const request = (sent: Deferred.Deferred<void>) =>
  Effect.zipRight(Deferred.await(sent), Effect.withSpan(Effect.never, "Chat.create"))

describe("the graceful stop", () => {
  /** A stop of `flights` that records what it is told; `began` completes when the stop begins. */
  const recording = (flights: Batch.Flights, gate: { open: boolean }) =>
    Effect.map(Deferred.make<void>(), (began) => {
      const said: Array<string> = []
      const stop: Stop.Stop<void, never> = {
        flights,
        grace: Duration.seconds(5),
        gate: Option.some(gate),
        stopping: (count) =>
          Effect.zipRight(
            Effect.sync(() => void said.push(`stopping ${count.sent} ${count.waiting}`)),
            Deferred.succeed(began, undefined)
          ),
        stopped: (exit, cut) => Effect.sync(() => void said.push(`stopped ${exit._tag} ${cut}`))
      }
      return { said, stop, began: Deferred.await(began) }
    })

  it.effect("interrupted: closes the gate, stops the flights, waits the grace for those on the wire, then cuts them", () =>
    Effect.gen(function*() {
      const flights = yield* Batch.makeFlights
      const gate = { open: true }
      const { began, said, stop } = yield* recording(flights, gate)
      const sent = yield* Deferred.make<void>()
      yield* Deferred.succeed(sent, undefined)
      const work = Effect.asVoid(
        Effect.all([flights.fly(request(sent)), flights.fly(Effect.never)], { concurrency: 2 })
      )
      const fiber = yield* Effect.fork(Stop.graceful(work, stop))
      // both flights started (fibers only: a bounded number of turns)
      const started = Effect.map(flights.count, ({ sent, waiting }) => sent === 1 && waiting === 1)
      for (let i = 0; i < 100 && !(yield* started); i++) yield* Effect.yieldNow()
      const interrupter = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* began
      assert.isFalse(gate.open)
      assert.deepStrictEqual(said, ["stopping 1 1"])
      yield* TestClock.adjust("4999 millis")
      assert.isTrue(Option.isNone(yield* Fiber.poll(interrupter)))
      yield* TestClock.adjust("1 millis")
      assert.isTrue(Exit.isInterrupted(yield* Fiber.join(interrupter)))
      assert.deepStrictEqual(said, ["stopping 1 1", "stopped Success 1"])
    }))

  it.effect("not interrupted: the work's result, the gate left open, nothing said", () =>
    Effect.gen(function*() {
      const flights = yield* Batch.makeFlights
      const gate = { open: true }
      const { said, stop } = yield* recording(flights, gate)
      yield* Stop.graceful(Effect.void, stop)
      assert.isTrue(gate.open)
      assert.deepStrictEqual(said, [])
    }))
})

describe("what a run says", () => {
  it("the stop: those on the wire get the grace, those waiting are not sent; on a terminal, a line of its own", () => {
    const grace = Duration.seconds(5)
    assert.strictEqual(
      Report.stopping(false, { sent: 3, waiting: 0 }, grace),
      "aifs batch: stopping: no new requests; the 3 in flight get 5s (Ctrl-C again to quit now)\n"
    )
    assert.strictEqual(
      Report.stopping(false, { sent: 0, waiting: 10 }, grace),
      "aifs batch: stopping: no new requests; nothing in flight, the 10 waiting for the quota are not sent " +
        "(Ctrl-C again to quit now)\n"
    )
    assert.strictEqual(
      Report.stopping(true, { sent: 1, waiting: 2 }, Duration.seconds(2)),
      "\naifs batch: stopping: no new requests; the 1 in flight get 2s, the 2 waiting for the quota are not sent " +
        "(Ctrl-C again to quit now)\n"
    )
  })

  it("the end of a stop, a spent budget, a bad line", () => {
    assert.strictEqual(
      Report.stopped(0, "aifs batch in"),
      "aifs batch: stopped; the rest is left for a rerun: aifs batch in"
    )
    assert.strictEqual(
      Report.stopped(2, "aifs batch in"),
      "aifs batch: stopped; 2 requests in flight cut at the end of the grace; the rest is left for a rerun: aifs batch in"
    )
    assert.strictEqual(
      Report.spent("spent", 4, "aifs batch in"),
      "aifs batch: stopped: the key's monthly budget is spent (spent); 4 lines are left for a rerun once it is raised: " +
        "aifs batch in"
    )
    assert.strictEqual(Report.badLine(false, 3, "not JSON"), "aifs batch: line 3: not JSON\n")
    assert.strictEqual(Report.badLine(true, 3, "not JSON"), "\r\u001b[Kaifs batch: line 3: not JSON\n")
  })

  it("the summary: counts, failures run again, failures kept, tokens and time", () => {
    const progress = { total: 5, done: 3, failed: 1, tokens: 57, requestMs: 0, started: 0, concurrency: 1 }
    const tally: Report.Tally = { bad: 2, skipped: 4, keptFailed: 1, retried: 2, spent: undefined }
    assert.strictEqual(
      Report.summary(progress, tally, "out.jsonl", 61.2),
      "aifs batch: 3 succeeded, 1 failed, 2 of them failed before (error lines in out.jsonl), 4 already done (1 failed, " +
        "kept by --keep-failed), 2 bad input lines; 57 tokens in 1:02"
    )
    // no failure: no error lines to point at
    const clean: Report.Tally = { bad: 0, skipped: 0, keptFailed: 0, retried: 0, spent: undefined }
    assert.strictEqual(
      Report.summary({ ...progress, failed: 0 }, clean, "out.jsonl", 2),
      "aifs batch: 3 succeeded, 0 failed, 0 already done, 0 bad input lines; 57 tokens in 0:02"
    )
  })
})
