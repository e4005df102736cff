/**
 * The limiter's fair waiting line (internal/limiter/line.ts) on its own: turns in arrival order, a caller interrupted
 * while it waits gives up its place and the others keep theirs, the line free again when the last turn ends, and the
 * front of a long line dropped as it is handed on (a line of thousands does not keep every slot it ever held).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Line from "../../src/internal/limiter/line.js"

/** Joins `line` as a caller would (the wait interruptible, the rest not), counting who left. */
const joinLine = <A>(line: Line.Line, turn: Effect.Effect<A>, left: Array<number>, id: number) =>
  Effect.uninterruptibleMask((restore) =>
    Line.join(line, restore, turn, () => Effect.sync(() => void left.push(id)), (exit) => Effect.succeed(exit))
  )

describe("the limiter's line", () => {
  it("starts empty and free", () => {
    assert.deepStrictEqual(Line.make(), { busy: false, size: 0, nodes: [], head: 0 })
  })

  it.effect("gives turns in arrival order, one at a time, and is free again after the last", () =>
    Effect.gen(function*() {
      const line = Line.make()
      const order: Array<number> = []
      const left: Array<number> = []
      let inTurn = 0
      const turn = (id: number) =>
        Effect.gen(function*() {
          inTurn++
          assert.strictEqual(inTurn, 1, "one turn at a time")
          yield* Effect.yieldNow()
          order.push(id)
          inTurn--
          return id
        })
      const fibers = yield* Effect.forEach(
        Array.from({ length: 50 }, (_, id) => id),
        (id) => Effect.fork(joinLine(line, turn(id), left, id))
      )
      const exits = yield* Fiber.joinAll(fibers).pipe(Effect.zipRight(Effect.forEach(fibers, Fiber.join)))
      assert.deepStrictEqual(order, Array.from({ length: 50 }, (_, id) => id))
      assert.deepStrictEqual(left, order, "each caller leaves when its turn ends")
      assert.deepStrictEqual(exits.map(Exit.getOrElse(() => -1)), order, "`then` sees how each turn ended")
      assert.deepInclude(line, { busy: false, size: 0, head: 0 })
      assert.lengthOf(line.nodes, 0)
    }))

  it.effect("a caller interrupted while it waits gives up its place: the turn passes over it, in order", () =>
    Effect.gen(function*() {
      const line = Line.make()
      const order: Array<number> = []
      const left: Array<number> = []
      const gate = yield* Deferred.make<void>()
      const first = yield* Effect.fork(joinLine(line, Deferred.await(gate), left, 0))
      const waiting = yield* Effect.forEach(
        [1, 2, 3],
        (id) => Effect.fork(joinLine(line, Effect.sync(() => void order.push(id)), left, id))
      )
      yield* Effect.yieldNow()
      assert.strictEqual(line.size, 4)
      const exit = yield* Fiber.interrupt(waiting[1]!)
      // opened before the checks: the first turn, uninterruptible, must end for the test to end
      yield* Deferred.succeed(gate, void 0)
      assert.isTrue(Exit.isInterrupted(exit))
      assert.deepStrictEqual(left, [2], "the interrupted caller left the line at once")
      assert.deepStrictEqual(order, [], "leaving while waiting hands on no turn")
      yield* Fiber.join(first)
      yield* Fiber.joinAll([waiting[0]!, waiting[2]!])
      assert.deepStrictEqual(order, [1, 3])
      assert.deepStrictEqual(left, [2, 0, 1, 3])
      assert.deepInclude(line, { busy: false, size: 0 })
    }))

  it.effect("drops the front of a long line as turns are handed on", () =>
    Effect.gen(function*() {
      const line = Line.make()
      const callers = 4_000
      const slots: Array<number> = []
      const gate = yield* Deferred.make<void>()
      const turn = (id: number) =>
        Effect.zipRight(
          id === 0 ? Deferred.await(gate) : Effect.void,
          Effect.sync(() => {
            // the slots the line holds now, against the callers still behind this one
            if (id % 500 === 0) slots.push(line.nodes.length - line.head, line.nodes.length)
          })
        )
      const left: Array<number> = []
      const fibers = yield* Effect.forEach(
        Array.from({ length: callers }, (_, id) => id),
        (id) => Effect.fork(joinLine(line, turn(id), left, id))
      )
      // every caller in line before the first turn ends
      for (let i = 0; i < 100_000 && line.size < callers; i++) yield* Effect.yieldNow()
      yield* Deferred.succeed(gate, void 0)
      yield* Fiber.joinAll(fibers)
      assert.lengthOf(left, callers)
      // [waiting behind, slots held] at turns 0, 500, ..., 3500
      const behind = slots.filter((_, i) => i % 2 === 0)
      const held = slots.filter((_, i) => i % 2 === 1)
      assert.deepStrictEqual(behind, Array.from({ length: 8 }, (_, i) => callers - 1 - 500 * i))
      assert.strictEqual(held[0], callers - 1)
      assert.isBelow(held[5]!, callers - 1, "by turn 2,500 the handed-on front is dropped")
      assert.isAtMost(Math.max(...held.slice(5)), 2 * 1_025 + behind[5]!, "no more than twice the threshold kept")
    }))
})
