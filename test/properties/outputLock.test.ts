/**
 * The batch output lock (src/cli/outputLock.ts) under the races it exists for, staged deterministically: runs of
 * `aifs batch` on one output, each with a pid of its own, where a run starts between any two file operations of
 * another (the whole of it, nested there: a run that takes over a dead lock between another run's read and its
 * guard, two takeovers at once, a third inside the second). Whatever the schedule, exactly one run holds the lock
 * (none while a live run outside holds it), the lock names it, and nothing else is left beside it.
 *
 * The runs share this process: each is given its pid (that of a live child process) while it runs, and every call
 * the lock makes to `node:fs` first passes a hook that starts the runs scheduled at that step.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Scope from "effect/Scope"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, vi } from "vitest"
import { lockOutput } from "../../src/cli/outputLock.js"

/** Called before each file operation the lock makes while a staged schedule runs, with the operation and its path. */
let onStep: ((operation: string, target: unknown) => void) | undefined = undefined

vi.mock("node:fs", async (importOriginal) => {
  const actual = await importOriginal<typeof fs>()
  const hooked = <F extends (...args: Array<never>) => unknown>(operation: string, f: F): F =>
    ((...args: Parameters<F>) => {
      // a link's target is its second path
      onStep?.(operation, operation === "linkSync" ? args[1] : args[0])
      return f(...args)
    }) as F
  const fsWithHooks = {
    ...actual,
    writeFileSync: hooked("writeFileSync", actual.writeFileSync),
    linkSync: hooked("linkSync", actual.linkSync),
    rmSync: hooked("rmSync", actual.rmSync),
    readFileSync: hooked("readFileSync", actual.readFileSync),
    existsSync: hooked("existsSync", actual.existsSync)
  }
  return { ...fsWithHooks, default: fsWithHooks }
})

/** Live processes whose pids the runs take (a run's holder must be alive to the others), and one dead pid. */
let children: Array<ChildProcess> = []
let livePids: Array<number> = []
let deadPid = 0

beforeAll(() => {
  children = Array.from({ length: 4 }, () => spawn(process.execPath, ["-e", "setTimeout(() => {}, 120000)"]))
  livePids = children.map((child) => child.pid!)
  deadPid = Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString())
})

afterAll(() => {
  for (const child of children) child.kill("SIGKILL")
})

const realPid = process.pid

/** Runs `f` as the process `pid`. */
const asPid = <A>(pid: number, f: () => A): A => {
  const before = process.pid
  Object.defineProperty(process, "pid", { value: pid, configurable: true, enumerable: true, writable: false })
  try {
    return f()
  } finally {
    Object.defineProperty(process, "pid", { value: before, configurable: true, enumerable: true, writable: false })
  }
}

/** What is on disk before the runs. */
type Start = "none" | "dead" | "dead with its guard" | "live"

/** A run after the first: it starts nested in run `parent` (an earlier one) before that run's `step`-th operation. */
interface Entry {
  readonly parent: number
  readonly step: number
}

interface Outcome {
  readonly pid: number
  /** True when the run got the lock; else how it was refused. */
  readonly result: true | string
}

/** A refusal as `name: message`; a defect as its pretty cause. */
const failureOf = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  return failure._tag === "Some" && failure.value instanceof Error
    ? `${failure.value.name}: ${failure.value.message}`
    : Cause.pretty(cause)
}

const holder = (pid: number) => JSON.stringify({ pid, host: os.hostname(), started: "earlier" })

/** Stages `entries` on a fresh output: run 0 at the top, each other nested where it is scheduled. */
const stage = (dir: string, start: Start, entries: ReadonlyArray<Entry>) => {
  const output = path.join(dir, "out.jsonl")
  const lock = `${output}.lock`
  if (start !== "none") fs.writeFileSync(lock, holder(start === "live" ? livePids[3]! : deadPid))
  if (start === "dead with its guard") fs.writeFileSync(`${lock}.takeover`, holder(deadPid))
  const runs = entries.length + 1
  const steps = Array.from({ length: runs }, () => 0)
  const started = Array.from({ length: runs }, () => false)
  const outcomes: Array<Outcome> = []
  const scopes: Array<Scope.CloseableScope> = []
  /** The run being executed (innermost). */
  const stack: Array<number> = []

  const run = (index: number) => {
    started[index] = true
    stack.push(index)
    const scope = Effect.runSync(Scope.make())
    scopes.push(scope)
    const exit = asPid(livePids[index]!, () => Effect.runSyncExit(Scope.extend(lockOutput(output), scope)))
    stack.pop()
    outcomes.push({
      pid: livePids[index]!,
      result: Exit.isSuccess(exit) ? true : failureOf(exit.cause)
    })
  }

  onStep = () => {
    const current = stack[stack.length - 1]
    if (current === undefined) return
    const step = steps[current]!++
    entries.forEach((entry, i) => {
      const index = i + 1
      if (!started[index] && entry.parent === current && entry.step === step) run(index)
    })
  }
  try {
    run(0)
    // a run whose moment never came (its parent took fewer steps) starts afterwards
    for (let index = 1; index < runs; index++) if (!started[index]) run(index)
  } finally {
    onStep = undefined
  }
  const left = fs.readdirSync(dir).sort()
  const lockHolder = fs.existsSync(lock) ? (JSON.parse(fs.readFileSync(lock, "utf8")) as { pid: number }).pid : 0
  for (const scope of scopes) Effect.runSync(Scope.close(scope, Exit.void))
  return { outcomes, left, lockHolder, afterwards: fs.readdirSync(dir) }
}

const entries = (runs: number) =>
  FastCheck.array(FastCheck.tuple(FastCheck.nat(), FastCheck.nat(14)), { minLength: runs - 1, maxLength: runs - 1 })
    .map((picks) => picks.map(([parent, step], i): Entry => ({ parent: parent % (i + 1), step })))

const schedule = FastCheck.record({
  start: FastCheck.constantFrom<Start>("none", "dead", "dead with its guard", "live"),
  entries: FastCheck.integer({ min: 2, max: 3 }).chain(entries)
})

describe("the batch output lock, raced", () => {
  it.scoped("whatever run starts between any two file operations of another, exactly one run writes", () =>
    Effect.gen(function*() {
      const base = fs.mkdtempSync(path.join(os.tmpdir(), "aifs-lock-race-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(base, { recursive: true, force: true })))
      let round = 0
      FastCheck.assert(
        FastCheck.property(schedule, ({ entries, start }) => {
          const dir = path.join(base, String(round++))
          fs.mkdirSync(dir)
          const { afterwards, left, lockHolder, outcomes } = stage(dir, start, entries)
          const winners = outcomes.filter((o) => o.result === true)
          const story = `${start}: ${JSON.stringify(entries)} -> ${JSON.stringify(outcomes)}`
          // a refused run is told so, never a defect
          for (const o of outcomes) {
            if (o.result !== true) assert.match(o.result, /^UsageError: .*(being written by|keep taking it)/, story)
          }
          if (start === "live") {
            assert.strictEqual(winners.length, 0, story)
            assert.strictEqual(lockHolder, livePids[3], story)
          } else {
            assert.strictEqual(winners.length, 1, story)
            assert.strictEqual(lockHolder, winners[0]!.pid, story)
          }
          // no guard, no file written aside, no second lock
          assert.deepStrictEqual(left, ["out.jsonl.lock"], story)
          // each run removes only its own lock when it ends
          assert.deepStrictEqual(afterwards, start === "live" ? ["out.jsonl.lock"] : [], story)
          assert.strictEqual(process.pid, realPid)
        }),
        { numRuns: 200 }
      )
    }))

  it("the schedules reach the races named: a takeover between another's read and its guard, two at once", () => {
    const base = fs.mkdtempSync(path.join(os.tmpdir(), "aifs-lock-race-"))
    try {
      // run 0 reads the dead holder (its 4th operation: write aside, link, remove aside, read), run 1 takes over
      // before run 0 writes its guard; run 0 finds the lock no longer the dead one's and is refused
      const between = stage(fs.mkdtempSync(path.join(base, "a-")), "dead", [{ parent: 0, step: 4 }])
      assert.deepStrictEqual(between.outcomes.map((o) => o.result === true), [true, false])
      assert.strictEqual(between.lockHolder, livePids[1])
      // run 1 starts while run 0 holds the guard: it cannot take over and gives up; run 0 takes the lock
      const underGuard = stage(fs.mkdtempSync(path.join(base, "b-")), "dead", [{ parent: 0, step: 7 }])
      assert.deepStrictEqual(underGuard.outcomes.map((o) => o.result === true), [false, true])
      assert.include(String(underGuard.outcomes[0]!.result), "keep taking it")
      assert.strictEqual(underGuard.lockHolder, livePids[0])
    } finally {
      fs.rmSync(base, { recursive: true, force: true })
    }
  })
})

describe("the batch output lock, when a lock vanishes", () => {
  /** Locks `output` as a live run, `onStep` set to `hook` meanwhile: the holder, or the refusal's message. */
  const lockWith = (output: string, hook: (operation: string, target: unknown) => void) => {
    onStep = hook
    try {
      const scope = Effect.runSync(Scope.make())
      const exit = asPid(livePids[0]!, () => Effect.runSyncExit(Scope.extend(lockOutput(output), scope)))
      const holder = fs.existsSync(`${output}.lock`)
        ? (JSON.parse(fs.readFileSync(`${output}.lock`, "utf8")) as { pid: number }).pid
        : 0
      Effect.runSync(Scope.close(scope, Exit.void))
      return Exit.isSuccess(exit) ? holder : failureOf(exit.cause)
    } finally {
      onStep = undefined
    }
  }

  it.scoped("under the takeover guard, a dead run's lock since removed is taken; one another machine took is left", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "aifs-lock-gone-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const output = path.join(dir, "out.jsonl")
      fs.writeFileSync(`${output}.lock`, holder(deadPid))
      let reads = 0
      // the first read finds the dead holder; before the second, under the guard, the lock is gone
      const taken = lockWith(output, (operation, target) => {
        if (operation === "readFileSync" && target === `${output}.lock` && ++reads === 2) fs.rmSync(target)
      })
      assert.strictEqual(taken, livePids[0])
      assert.deepStrictEqual(fs.readdirSync(dir), [])
      // taken meanwhile by a run on another machine that has the dead one's pid: not the dead holder's, left to it
      const elsewhere = JSON.stringify({ pid: deadPid, host: "elsewhere", started: "now" })
      fs.writeFileSync(`${output}.lock`, holder(deadPid))
      reads = 0
      const refused = lockWith(output, (operation, target) => {
        if (operation === "readFileSync" && target === `${output}.lock` && ++reads === 2) {
          fs.writeFileSync(target, elsewhere)
        }
      })
      assert.match(
        String(refused),
        new RegExp(`^UsageError: .* another run \\(pid ${deadPid} on elsewhere, started now\\)`)
      )
      assert.strictEqual(fs.readFileSync(`${output}.lock`, "utf8"), elsewhere)
    }))

  it.scoped("a lock gone when read is looked for again; one that keeps coming and going is refused in 20 rounds", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "aifs-lock-gone-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const output = path.join(dir, "out.jsonl")
      const lock = `${output}.lock`
      // another run's lock is there when this one links, and gone when it reads it: `rounds` times
      const comingAndGoing = (rounds: number) => {
        let links = 0
        return (operation: string, target: unknown) => {
          if (operation === "linkSync" && target === lock && ++links <= rounds) fs.writeFileSync(lock, holder(1))
          if (operation === "readFileSync" && target === lock && links <= rounds) fs.rmSync(lock, { force: true })
        }
      }
      assert.strictEqual(lockWith(output, comingAndGoing(1)), livePids[0])
      assert.strictEqual(lockWith(output, comingAndGoing(19)), livePids[0])
      assert.match(
        String(lockWith(output, comingAndGoing(20))),
        /^UsageError: .* another run \(its lock file is unreadable\)/
      )
      assert.deepStrictEqual(fs.readdirSync(dir), [])
    }))
})
