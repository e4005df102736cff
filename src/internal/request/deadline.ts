/**
 * The time limits of attempts (and of a stream's reads) on one timer. An attempt runs in a fiber of its own, cut
 * when one of its limits passes; no attempt sleeps: while any limit is pending, one fiber per transport sleeps on
 * the `Clock` until the earliest, looking again every 2 seconds at most. (Effect's `timeoutFail` forks a second fiber
 * per attempt to sleep, and merges the attempt's fiber back into its caller's; `Stream.timeoutFail` does so per
 * network chunk.)
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
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

/**
 * The timer of one transport, stopped with `scope`, or at a look that finds no limit pending. Its pending moments
 * are kept by their limit's length: limits of one length end in the order they started (the clock does not go
 * back), so each group's first ends first.
 */
export const make: Effect.Effect<Deadlines, never, Scope.Scope> = Effect.gen(function*() {
  const runtime = yield* Effect.runtime<never>()
  // the clock the timer sleeps on: an attempt's limits count from a moment on it
  const clock = yield* Effect.clock
  const groups = new Map<number, Set<Entry>>()
  /** When the running timer wakes (Infinity: none runs), and which timer is the current one. */
  let target = Infinity
  let generation = 0
  let timer: Fiber.RuntimeFiber<void> | undefined

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
  /** One timer's loop: fires what is due, then sleeps until the next moment; stops when it is no longer current. */
  const tick = (own: number): Effect.Effect<void> =>
    Effect.clockWith((clock) =>
      Effect.suspend(() => {
        if (own !== generation) return Effect.void
        const now = clock.unsafeCurrentTimeMillis()
        fireDue(now)
        const next = earliest()
        if (next === Infinity) {
          target = Infinity
          timer = undefined
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
    timer?.unsafeInterruptAsFork(FiberId.none)
    timer = undefined
  }
  /** A timer that wakes at `at`, in place of the one running. */
  const restart = (at: number) => {
    stop()
    target = at
    timer = Runtime.runFork(runtime)(tick(generation))
  }
  const add = (length: number, at: number, fire: () => void): Entry => {
    const entry: Entry = { at, fire }
    let group = groups.get(length)
    if (group === undefined) {
      group = new Set()
      groups.set(length, group)
    }
    group.add(entry)
    if (at < target) restart(at)
    return entry
  }
  const remove = (length: number, entry: Entry) => {
    const group = groups.get(length)
    if (group?.delete(entry) === true && group.size === 0) groups.delete(length)
  }
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      groups.clear()
      stop()
    })
  )

  const within = <A, E, E2>(
    effect: Effect.Effect<A, E>,
    limits: ReadonlyArray<Limit<E2>>
  ): Effect.Effect<A, E | E2> =>
    Effect.withFiberRuntime((fiber, status) =>
      Effect.async<A, E | E2>((resume) => {
        // the attempt in a fiber of its own, with the caller's context, references and flags, as `forkDaemon` forks
        // it; forked here, nothing can interrupt the caller before it watches the attempt
        const runtime = Runtime.make({
          context: fiber.currentContext,
          // but one: its failure is its caller's, never a fiber's unhandled error (which Effect logs, with its
          // stack, at the level this reference says, debug by default)
          fiberRefs: FiberRefs.updateAs(fiber.getFiberRefs(), {
            fiberId: fiber.id(),
            fiberRef: FiberRef.unhandledErrorLogLevel,
            value: Option.none()
          }),
          runtimeFlags: status.runtimeFlags
        })
        const child = Runtime.runFork(runtime)(effect, { immediate: false })
        const start = clock.unsafeCurrentTimeMillis()
        let passed: Limit<E2> | undefined
        const pending: Array<readonly [number, Entry]> = []
        for (const limit of limits) {
          // an unbounded limit's moment never comes: it never wakes the timer
          const length = Duration.toMillis(limit.after)
          pending.push([
            length,
            add(length, start + length, () => {
              if (passed !== undefined || limit.holds?.() === false) return
              passed = limit
              child.unsafeInterruptAsFork(FiberId.none)
            })
          ])
        }
        const settle = () => {
          for (const [length, entry] of pending) remove(length, entry)
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

  return { within, timing: () => timer !== undefined }
})
