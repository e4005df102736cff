/**
 * The time limits of attempts (and of a stream's reads) on one timer. An attempt runs in a fiber of its own, cut
 * when one of its limits passes; no attempt sleeps: while any limit is pending, one fiber per transport sleeps on
 * the `Clock` until the earliest, looking again every 2 seconds at most. (Effect's `timeoutFail` forks a second fiber
 * per attempt to sleep, and merges the attempt's fiber back into its caller's; `Stream.timeoutFail` does so per
 * network chunk.)
 * @internal
 */
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import type * as RuntimeFlags from "effect/RuntimeFlags"
import type * as Scope from "effect/Scope"

/** The longest the timer sleeps before it looks again. */
const lookAgainMs = 2_000

/** A time limit of an attempt, from its start. */
export interface Limit<E> {
  readonly after: Duration.Duration
  /** The failure when it passes. */
  readonly error: () => E
  /** Whether it still holds when it passes (a first-byte limit does not once the answer began); default: it does. */
  readonly holds?: (() => boolean) | undefined
}

interface Entry {
  readonly at: number
  readonly fire: () => void
}

/** Runs effects within time limits, on one timer. */
export interface Deadlines {
  readonly within: <A, E, E2>(effect: Effect.Effect<A, E>, limits: ReadonlyArray<Limit<E2>>) => Effect.Effect<A, E | E2>
  /** Whether the timer runs (it does while a limit is pending, until its next look after, and its scope is open). */
  readonly timing: () => boolean
}

/** The pending moments of one transport's limits, and the one fiber that sleeps until the earliest. */
interface Timer {
  /** Adds a moment of a limit `length` ms long, at `at`: `fire` runs when it comes. */
  readonly add: (length: number, at: number, fire: () => void) => Entry
  /** Removes a moment that has not come (its attempt ended first). */
  readonly remove: (length: number, entry: Entry) => void
  /** Drops every moment and stops the fiber. */
  readonly close: () => void
  readonly timing: () => boolean
}

/**
 * A timer that runs its fiber in `runtime`. Its pending moments are kept by their limit's length: limits of one length
 * end in the order they started (the clock does not go back), so each group's first ends first.
 */
const makeTimer = (runtime: Runtime.Runtime<never>): Timer => {
  const groups = new Map<number, Set<Entry>>()
  /** When the running fiber wakes (Infinity: none runs), and which fiber is the current one. */
  let target = Infinity
  let generation = 0
  let fiber: Fiber.RuntimeFiber<void> | undefined

  const earliest = (): number => {
    let at = Infinity
    for (const group of groups.values()) {
      const first = group.values().next()
      if (!first.done && first.value.at < at) at = first.value.at
    }
    return at
  }
  const fireDue = (now: number) => {
    for (const [length, group] of groups) {
      for (const entry of group) {
        if (entry.at > now) break
        group.delete(entry)
        entry.fire()
      }
      if (group.size === 0) groups.delete(length)
    }
  }
  /** One fiber's loop: fires what is due, then sleeps until the next moment; stops when it is no longer current. */
  const tick = (own: number): Effect.Effect<void> =>
    Effect.clockWith((clock) =>
      Effect.suspend(() => {
        if (own !== generation) return Effect.void
        const now = clock.unsafeCurrentTimeMillis()
        fireDue(now)
        const next = earliest()
        if (next === Infinity) {
          target = Infinity
          fiber = undefined
          return Effect.void
        }
        // it looks again every 2 s at most and ends when nothing is pending: no timer keeps the process alive for long
        // after the last attempt, and one timer serves attempts one after another
        target = Math.min(next, now + lookAgainMs)
        return Effect.zipRight(Effect.sleep(Duration.millis(target - now)), tick(own))
      })
    )
  const stop = () => {
    generation++
    target = Infinity
    fiber?.unsafeInterruptAsFork(FiberId.none)
    fiber = undefined
  }
  return {
    add: (length, at, fire) => {
      const entry: Entry = { at, fire }
      let group = groups.get(length)
      if (group === undefined) {
        group = new Set()
        groups.set(length, group)
      }
      group.add(entry)
      // a moment before the running fiber wakes: a fiber that wakes at it, in place of the one running
      if (at < target) {
        stop()
        target = at
        fiber = Runtime.runFork(runtime)(tick(generation))
      }
      return entry
    },
    remove: (length, entry) => {
      const group = groups.get(length)
      if (group?.delete(entry) === true && group.size === 0) groups.delete(length)
    },
    close: () => {
      groups.clear()
      stop()
    },
    timing: () => fiber !== undefined
  }
}

/**
 * `effect` in a fiber of its own, with the caller's context, references and flags, as `forkDaemon` forks it, but one:
 * its failure is its caller's, never a fiber's unhandled error (which Effect logs, with its stack, at the level this
 * reference says, debug by default).
 */
const forkAsCaller = <A, E>(
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  runtimeFlags: RuntimeFlags.RuntimeFlags,
  effect: Effect.Effect<A, E>
): Fiber.RuntimeFiber<A, E> => {
  const runtime = Runtime.make({
    context: fiber.currentContext,
    fiberRefs: FiberRefs.updateAs(fiber.getFiberRefs(), {
      fiberId: fiber.id(),
      fiberRef: FiberRef.unhandledErrorLogLevel,
      value: Option.none()
    }),
    runtimeFlags
  })
  return Runtime.runFork(runtime)(effect, { immediate: false })
}

/** `within` on `timer`, its limits counted on `clock`. */
const withinOn = (timer: Timer, clock: Clock.Clock): Deadlines["within"] => (effect, limits) =>
  Effect.withFiberRuntime((fiber, status) =>
    Effect.async((resume) => {
      // forked here, nothing can interrupt the caller before it watches the attempt
      const child = forkAsCaller(fiber, status.runtimeFlags, effect)
      const start = clock.unsafeCurrentTimeMillis()
      let passed: (typeof limits)[number] | undefined
      const pending = limits.map((limit) => {
        // an unbounded limit's moment never comes: it never wakes the timer
        const length = Duration.toMillis(limit.after)
        const entry = timer.add(length, start + length, () => {
          if (passed !== undefined || limit.holds?.() === false) return
          passed = limit
          child.unsafeInterruptAsFork(FiberId.none)
        })
        return [length, entry] as const
      })
      const settle = () => {
        for (const [length, entry] of pending) timer.remove(length, entry)
      }
      child.addObserver((exit) => {
        settle()
        resume(passed !== undefined && Exit.isInterrupted(exit) ? Effect.fail(passed.error()) : exit)
      })
      // the caller interrupted: the attempt's fiber ends, its finalizers run, before the caller goes on
      return Effect.suspend(() => {
        settle()
        return Fiber.interrupt(child)
      })
    })
  )

/** The timer of one transport, stopped with `scope`, or at a look that finds no limit pending. */
export const make: Effect.Effect<Deadlines, never, Scope.Scope> = Effect.gen(function*() {
  const timer = makeTimer(yield* Effect.runtime<never>())
  yield* Effect.addFinalizer(() => Effect.sync(timer.close))
  // the clock the timer sleeps on: an attempt's limits count from a moment on it
  return { within: withinOn(timer, yield* Effect.clock), timing: timer.timing }
})
