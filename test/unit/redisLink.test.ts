/**
 * The Redis store's link helpers on their own (internal/redisLink.ts): an operation's time limit (on fake timers), and
 * the first connection and event listeners on a client that is an event emitter with a status (as ioredis's are).
 * The store itself, on a real server, is test/integration/redisStore.test.ts.
 */
import { afterEach, assert, beforeEach, describe, it, vi } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import { EventEmitter } from "node:events"
import * as Link from "../../src/internal/redisLink.js"

/** A client as the link sees one: events, a status, and a connect that moves it on. */
class FakeClient extends EventEmitter {
  connects = 0
  constructor(public status: string) {
    super()
  }
  connect() {
    this.connects++
    this.status = "connecting"
    return Promise.resolve()
  }
}

const asClient = (fake: FakeClient) => fake as unknown as Link.Client

describe("an operation's time limit (within)", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate"] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it("gives the answer, and leaves no timer behind", async () => {
    const answer = Link.within(Promise.resolve("OK"), 250)
    assert.strictEqual(await answer, "OK")
    assert.strictEqual(vi.getTimerCount(), 0)
  })

  it("gives the operation's own failure as it is, and leaves no timer behind", async () => {
    const failure = new Error("NOSCRIPT")
    const answer = Link.within(Promise.reject(failure), 250)
    const caught = await answer.catch((e: unknown) => e)
    assert.strictEqual(caught, failure)
    assert.strictEqual(vi.getTimerCount(), 0)
  })

  it("fails with TimedOut once its time has passed without an answer, not before", async () => {
    let outcome: unknown = "pending"
    Link.within(new Promise<never>(() => {}), 250).then((a) => (outcome = a), (e: unknown) => (outcome = e))
    await vi.advanceTimersByTimeAsync(249)
    assert.strictEqual(outcome, "pending")
    // the timer, then the next turn of the loop
    await vi.runAllTimersAsync()
    assert.instanceOf(outcome, Link.TimedOut)
    assert.strictEqual((outcome as Link.TimedOut).ms, 250)
    assert.strictEqual((outcome as Link.TimedOut).message, "no answer within 250ms")
  })
})

describe("the client's events", () => {
  it.effect("listeners are called on each event while their scope is open, and removed when it closes", () =>
    Effect.gen(function*() {
      const client = new FakeClient("ready")
      let calls = 0
      const scope = yield* Scope.make()
      yield* Scope.extend(Link.listen(asClient(client), ["ready", "close"], () => calls++), scope)
      client.emit("ready")
      client.emit("close")
      assert.strictEqual(calls, 2)
      yield* Scope.close(scope, Exit.void)
      client.emit("ready")
      assert.strictEqual(calls, 2)
      assert.strictEqual(client.listenerCount("ready") + client.listenerCount("close"), 0)
    }))

  it.effect("the first connection: a lazy client is connected and awaited until ready, its listeners then removed", () =>
    Effect.gen(function*() {
      const client = new FakeClient("wait")
      const first = yield* Effect.fork(Link.firstConnection(asClient(client), 5_000))
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(client.connects, 1)
      assert.isTrue(Option.isNone(yield* Fiber.poll(first)), "waits while connecting")
      client.status = "ready"
      client.emit("ready")
      yield* TestClock.adjust("1 millis")
      assert.isTrue(Option.isSome(yield* Fiber.poll(first)), "ready: the wait is over")
      assert.strictEqual(client.listenerCount("ready") + client.listenerCount("error"), 0)
      // a client that is ready (or failed for good) is not waited for
      yield* Link.firstConnection(asClient(new FakeClient("ready")), 5_000)
      yield* Link.firstConnection(asClient(new FakeClient("end")), 5_000)
    }))

  it.effect("a first connection that fails ends the wait at once", () =>
    Effect.gen(function*() {
      const client = new FakeClient("connecting")
      const first = yield* Effect.fork(Link.firstConnection(asClient(client), 5_000))
      yield* TestClock.adjust("1 millis")
      client.emit("error", new Error("ECONNREFUSED"))
      yield* TestClock.adjust("1 millis")
      assert.isTrue(Option.isSome(yield* Fiber.poll(first)))
      assert.strictEqual(client.connects, 0, "a client connecting already is not connected again")
    }))
})
