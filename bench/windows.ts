/**
 * Per-window series for the charts: what an in-process emulator's windows admitted and refused, request by request,
 * and the binning of timed events into consecutive windows of a run.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import { SlidingWindow } from "../src/emulator/limits.js"
import { EmulatorState } from "../src/emulator/state.js"
import type { Amounts } from "../src/internal/budgets.js"
import { tagHeader } from "./common.js"

/** A request an emulator's window admitted (and counted) or refused: when, for which key and model, what it cost. */
export interface WindowEvent {
  readonly at: number
  readonly admitted: boolean
  readonly cost: Amounts
  readonly key: string
  readonly model: string
  /** The request's `x-bench-tag` header, which a benchmark's client may set to tell its senders apart. */
  readonly tag: string | undefined
}

/** The `x-bench-tag` of the request whose handler runs now: the emulator admits within the request's fiber. */
const currentTag = (): string | undefined =>
  Fiber.getCurrentFiber().pipe(
    Option.flatMap((fiber) => Context.getOption(fiber.currentContext, HttpServerRequest.HttpServerRequest)),
    Option.flatMap((request) => Option.fromNullable(request.headers[tagHeader])),
    Option.getOrUndefined
  )

/** Reports what `window` (the key's for `model`) admits and refuses to `events` while `on()`. */
const observe = (window: SlidingWindow, key: string, model: string, events: Array<WindowEvent>, on: () => boolean) => {
  const { check, record } = SlidingWindow.prototype
  window.check = (now, request, limits) => {
    const admission = check.call(window, now, request, limits)
    if (on() && admission._tag === "Wait") {
      events.push({ at: now, admitted: false, cost: request, key, model, tag: currentTag() })
    }
    return admission
  }
  window.record = (now, request) => {
    if (on()) events.push({ at: now, admitted: true, cost: request, key, model, tag: currentTag() })
    record.call(window, now, request)
  }
}

/**
 * Runs `effect` while the windows of every emulator in this process report to a log, tagged with their key and
 * model: each admission as it is counted (`SlidingWindow.record`) and each refusal as it is decided (`check`
 * answering a wait), at the emulator's own time. For benchmarks on the chat route, which refuses at once (a queued
 * request's waits would be logged as refusals). Each window is wrapped when its emulator first hands it out
 * (`EmulatorState.window`); that method is put back afterwards and the wrapped windows stop reporting.
 */
export const watchWindows = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<readonly [A, ReadonlyArray<WindowEvent>], E, R> =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const events: Array<WindowEvent> = []
      const original = EmulatorState.prototype.window
      const watched = new WeakSet<SlidingWindow>()
      let on = true
      EmulatorState.prototype.window = function(this: EmulatorState, key, model) {
        const window = original.call(this, key, model)
        if (!watched.has(window)) {
          watched.add(window)
          observe(window, key.key, model, events, () => on)
        }
        return window
      }
      return {
        events,
        restore: () => {
          on = false
          EmulatorState.prototype.window = original
        }
      }
    }),
    (watch) => Effect.map(effect, (a) => [a, watch.events] as const),
    (watch) => Effect.sync(watch.restore)
  )

/** Events in consecutive windows of `windowMs` from `start` (the first event's time by default). */
export const binned = <A extends { readonly at: number }>(
  events: ReadonlyArray<A>,
  windowMs: number,
  start = Math.min(...events.map((e) => e.at))
): Array<Array<A>> => {
  const bins: Array<Array<A>> = []
  for (const event of events) {
    const index = Math.max(0, Math.floor((event.at - start) / windowMs))
    while (bins.length <= index) bins.push([])
    bins[index]!.push(event)
  }
  return bins
}

/** The sum of `f` over `xs`. */
export const sumOf = <A>(xs: ReadonlyArray<A>, f: (x: A) => number): number => xs.reduce((sum, x) => sum + f(x), 0)

/** The series' colours: readable on white, told apart by colour-blind readers (Okabe and Ito's palette). */
export const colors = {
  admitted: "#0072B2",
  refused: "#D55E00",
  injected: "#E69F00",
  learnt: "#6A3D9A",
  learntLow: "#CC79A7",
  processes: ["#0072B2", "#009E73", "#CC79A7", "#56B4E9", "#F0E442", "#999999", "#882255", "#117733"]
} as const
