/**
 * A fair waiting line: callers take turns in arrival order; the caller whose turn it is runs its turn in its own
 * fiber, and everyone behind it is a node suspended in one `Effect.async` until the turn is handed on to it (a waiting
 * caller holds a node and its suspended fiber, nothing more: thousands may wait at once). A caller interrupted while
 * it waits gives up its place; a caller whose turn ends, however, hands it on.
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { Restore } from "./types.js"

/** A caller in line: waiting for its turn until it gets it or gives up its place. */
interface Node {
  waiting: boolean
  resume: ((effect: Effect.Effect<void>) => void) | undefined
}

/** A line. */
export interface Line {
  /** Whether a caller has its turn. */
  busy: boolean
  /** Callers in line, the one whose turn it is included. */
  size: number
  /**
   * Callers behind the one whose turn it is, in arrival order, from index `head` on (slots already handed on are
   * cleared; the front is dropped once it is most of the array, so that a hand-on is not an O(n) shift).
   */
  readonly nodes: Array<Node | undefined>
  head: number
}

/** An empty line. */
export const make = (): Line => ({ busy: false, size: 0, nodes: [], head: 0 })

/** The turn goes to the next caller still waiting; with none, the line is free. */
const handOn = (line: Line): void => {
  while (line.head < line.nodes.length) {
    const next = line.nodes[line.head]!
    line.nodes[line.head++] = undefined
    if (next.waiting) {
      next.waiting = false
      next.resume?.(Effect.void)
      next.resume = undefined
      if (line.head > 1024 && line.head * 2 > line.nodes.length) {
        line.nodes.splice(0, line.head)
        line.head = 0
      }
      return
    }
  }
  line.nodes.length = 0
  line.head = 0
  line.busy = false
}

/** The caller of `node` leaves: a waiting one gives up its place, the one whose turn it was hands it on. */
const leave = (line: Line, node: Node): void => {
  line.size--
  if (node.waiting) node.waiting = false
  else handOn(line)
  node.resume = undefined
}

/**
 * Waits for the turn in `line` (only the wait is interruptible, through `restore`), runs `turn`, leaves the line
 * (then `left` runs), and runs `then` on how the turn ended (interrupted while waiting: the interruption). Run inside
 * an uninterruptible region.
 */
export const join = <A, E, R, B, E2, R2>(
  line: Line,
  restore: Restore,
  turn: Effect.Effect<A, E, R>,
  left: () => Effect.Effect<void>,
  then: (exit: Exit.Exit<A, E>) => Effect.Effect<B, E2, R2>
): Effect.Effect<B, E2, R | R2> => {
  line.size++
  const node: Node = { waiting: false, resume: undefined }
  // built when the turn comes: a caller waiting in line holds no turn
  const run = () =>
    Effect.flatMap(
      Effect.exit(Effect.onExit(turn, () => Effect.suspend(() => (leave(line, node), left())))),
      then
    )
  if (!line.busy) {
    line.busy = true
    return run()
  }
  node.waiting = true
  line.nodes.push(node)
  return Effect.matchCauseEffect(
    restore(Effect.async<void>((resume) => {
      if (node.waiting) node.resume = resume
      else resume(Effect.void)
    })),
    {
      onFailure: (cause) =>
        Effect.suspend(() => (leave(line, node), Effect.zipRight(left(), then(Exit.failCause(cause))))),
      onSuccess: run
    }
  )
}
