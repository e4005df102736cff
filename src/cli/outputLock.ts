/**
 * One `aifs batch` at a time per output file: `OUT.lock` names the run that writes it (pid, host, start). A second
 * run on the same output refuses at once, naming the holder; a lock whose holder died (even by `kill -9`) is taken
 * over. Every step is an atomic file operation: the lock appears whole (a `link` of a file already written), and a
 * takeover is itself guarded by `OUT.lock.takeover`, so two runs that find the same dead holder never both win.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import { messageOf } from "./batchOutput.js"
import { UsageError } from "./output.js"

interface Holder {
  readonly pid: number
  readonly host: string
  readonly started: string
}

const me = (): Holder => ({ pid: process.pid, host: os.hostname(), started: new Date().toISOString() })

const readHolder = (path: string): Holder | undefined => {
  try {
    const holder = JSON.parse(fs.readFileSync(path, "utf8")) as Partial<Holder> | null
    return typeof holder?.pid === "number" && typeof holder.host === "string"
      ? { pid: holder.pid, host: holder.host, started: String(holder.started ?? "") }
      : undefined
  } catch {
    return undefined
  }
}

/** The locks this process holds now. */
const held = new Set<string>()

/**
 * Whether the holder of `lock` is a live process (on another host it cannot be known: it counts as alive). A lock
 * naming this very process that it does not hold is left from an earlier process with the same pid (a container
 * restarted, its program pid 1 again).
 */
const alive = (holder: Holder, lock: string): boolean => {
  if (holder.host !== os.hostname()) return true
  if (holder.pid === process.pid) return held.has(lock)
  try {
    process.kill(holder.pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists, under another user
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Creates `path` holding `holder`, whole, unless it exists: a file written aside, then hard-linked into place. */
const create = (path: string, holder: Holder): boolean => {
  const aside = `${path}.${holder.pid}.${Math.random().toString(36).slice(2)}`
  fs.writeFileSync(aside, JSON.stringify(holder))
  try {
    fs.linkSync(aside, path)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false
    throw error
  } finally {
    fs.rmSync(aside, { force: true })
  }
}

/** Removes `path` if it still names `holder` (never a lock someone else took since). */
const removeIf = (path: string, holder: Holder): void => {
  const current = readHolder(path)
  if (current !== undefined && current.pid === holder.pid && current.host === holder.host) {
    fs.rmSync(path, { force: true })
  }
}

/**
 * Takes the lock of a dead holder: under the takeover guard, if the lock still names the same dead holder, it is
 * replaced by ours. False when another run took it first.
 */
const takeOver = (lock: string, dead: Holder, mine: Holder): boolean => {
  const guard = `${lock}.takeover`
  if (!create(guard, mine)) {
    // a guard whose holder died within its few microseconds of work: cleared, and the caller tries again
    const holder = readHolder(guard)
    if (holder !== undefined && !alive(holder, guard)) removeIf(guard, holder)
    return false
  }
  try {
    const current = readHolder(lock)
    if (current !== undefined && (current.pid !== dead.pid || current.host !== dead.host)) return false
    fs.rmSync(lock, { force: true })
    return create(lock, mine)
  } finally {
    removeIf(guard, mine)
  }
}

const describeHolder = (holder: Holder | undefined): string =>
  holder === undefined
    ? "another run (its lock file is unreadable)"
    : `another run (pid ${holder.pid} on ${holder.host}, started ${holder.started})`

const acquire = (output: string): Holder => {
  const lock = `${output}.lock`
  const mine = me()
  // bounded: each round either takes the lock, refuses, or found a holder gone between two reads
  for (let round = 0; round < 20; round++) {
    if (create(lock, mine)) return mine
    const holder = readHolder(lock)
    if (holder === undefined || alive(holder, lock)) {
      // an unreadable lock may be one being removed right now: look again before refusing
      if (holder === undefined && round < 19 && !fs.existsSync(lock)) continue
      throw new UsageError(
        `${output} is being written by ${describeHolder(holder)}: wait for it to end, or stop it ` +
          `(a lock whose run died is taken over; remove ${lock} if it is left from another machine)`
      )
    }
    if (takeOver(lock, holder, mine)) return mine
  }
  throw new UsageError(`${output}: could not take its lock ${lock}: other runs keep taking it`)
}

/**
 * Holds the output's lock for the scope: refuses with a `UsageError` naming the run that holds it.
 *
 * @since 0.2.0
 * @category locking
 */
export const lockOutput = (output: string): Effect.Effect<void, UsageError, Scope.Scope> =>
  Effect.asVoid(Effect.acquireRelease(
    Effect.try({
      try: () => {
        const holder = acquire(output)
        held.add(`${output}.lock`)
        // a process that exits at once (a second Ctrl-C) runs no finalizer: the lock goes with it all the same
        const onExit = () => removeIf(`${output}.lock`, holder)
        process.once("exit", onExit)
        return { holder, onExit }
      },
      catch: (error) =>
        error instanceof UsageError
          ? error
          : new UsageError(`cannot lock ${output}: ${messageOf(error)}`)
    }),
    ({ holder, onExit }) =>
      Effect.sync(() => {
        process.off("exit", onExit)
        held.delete(`${output}.lock`)
        removeIf(`${output}.lock`, holder)
      })
  ))
