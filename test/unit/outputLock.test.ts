/**
 * The output lock of `aifs batch` (src/cli/outputLock.ts): one run at a time per output, the holder named to the
 * one refused, a dead holder's lock taken over, a live one's never, the lock gone when the run ends.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { lockOutput } from "../../src/cli/outputLock.js"
import { tempDir } from "../helpers/tempDir.js"

/** The pid of a process that has just exited (so certainly not alive, and not reused this soon). */
const deadPid = (): number =>
  Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString())

const holderOf = (lock: string) =>
  JSON.parse(fs.readFileSync(lock, "utf8")) as { pid: number; host: string; started: string }

describe("the batch output lock", () => {
  it.scoped("is held for the run and removed when it ends, failed or not", () =>
    Effect.gen(function*() {
      const output = path.join(yield* tempDir("aifs-lock-"), "out.jsonl")
      yield* Effect.scoped(Effect.gen(function*() {
        yield* lockOutput(output)
        assert.deepInclude(holderOf(`${output}.lock`), { pid: process.pid, host: os.hostname() })
      }))
      assert.isFalse(fs.existsSync(`${output}.lock`))
      const failed = yield* Effect.exit(Effect.scoped(Effect.zipRight(lockOutput(output), Effect.fail("boom"))))
      assert.isTrue(Exit.isFailure(failed))
      assert.isFalse(fs.existsSync(`${output}.lock`))
    }))

  it.scoped("a second run on the same output is refused at once, naming the holder, and takes nothing", () =>
    Effect.gen(function*() {
      const output = path.join(yield* tempDir("aifs-lock-"), "out.jsonl")
      yield* lockOutput(output)
      const second = yield* Effect.flip(Effect.scoped(lockOutput(output)))
      assert.strictEqual(second.name, "UsageError")
      assert.include(second.message, `pid ${process.pid} on ${os.hostname()}`)
      assert.include(second.message, output)
      assert.notInclude(second.message, "\n")
      // the first run's lock is untouched
      assert.strictEqual(holderOf(`${output}.lock`).pid, process.pid)
    }))

  it.scoped("a lock left by a run that died (kill -9) is taken over", () =>
    Effect.gen(function*() {
      const output = path.join(yield* tempDir("aifs-lock-"), "out.jsonl")
      const dead = deadPid()
      fs.writeFileSync(`${output}.lock`, JSON.stringify({ pid: dead, host: os.hostname(), started: "earlier" }))
      yield* lockOutput(output)
      assert.strictEqual(holderOf(`${output}.lock`).pid, process.pid)
      assert.isFalse(fs.existsSync(`${output}.lock.takeover`))
    }))

  it.scoped("a takeover guard left by a dead run is cleared; a lock from another machine is never taken", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-lock-")
      const output = path.join(dir, "out.jsonl")
      const dead = deadPid()
      fs.writeFileSync(`${output}.lock`, JSON.stringify({ pid: dead, host: os.hostname(), started: "earlier" }))
      fs.writeFileSync(`${output}.lock.takeover`, JSON.stringify({ pid: dead, host: os.hostname(), started: "" }))
      yield* lockOutput(output)
      assert.strictEqual(holderOf(`${output}.lock`).pid, process.pid)

      const other = path.join(dir, "other.jsonl")
      fs.writeFileSync(`${other}.lock`, JSON.stringify({ pid: dead, host: "elsewhere", started: "earlier" }))
      const refused = yield* Effect.flip(Effect.scoped(lockOutput(other)))
      assert.include(refused.message, "on elsewhere")
      assert.strictEqual(holderOf(`${other}.lock`).host, "elsewhere")
      // no file of the lock's own making is left beside it
      assert.sameMembers(fs.readdirSync(dir), ["out.jsonl.lock", "other.jsonl.lock"])
    }))

  it.scoped("a lock naming this very process, which it does not hold, is left by an earlier one with its pid: taken", () =>
    Effect.gen(function*() {
      // a container restarted: its program has pid 1 again, on the same hostname
      const output = path.join(yield* tempDir("aifs-lock-"), "out.jsonl")
      fs.writeFileSync(`${output}.lock`, JSON.stringify({ pid: process.pid, host: os.hostname(), started: "earlier" }))
      yield* lockOutput(output)
      assert.notStrictEqual(holderOf(`${output}.lock`).started, "earlier")
    }))

  it.scoped("a process that exits at once while it holds the lock (a second Ctrl-C) leaves no lock behind", () =>
    Effect.gen(function*() {
      const output = path.join(yield* tempDir("aifs-lock-"), "out.jsonl")
      const module = path.resolve("src/cli/outputLock.ts")
      const program = [
        `import * as Effect from "effect/Effect"`,
        `import { lockOutput } from ${JSON.stringify(module)}`,
        `import * as fs from "node:fs"`,
        `Effect.runPromise(Effect.scoped(Effect.zipRight(lockOutput(${JSON.stringify(output)}), Effect.sync(() => {`,
        `  if (!fs.existsSync(${JSON.stringify(`${output}.lock`)})) process.exit(3)`,
        `  process.exit(130)`,
        `}))))`
      ].join("\n")
      const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", program], {
        timeout: 30_000
      })
      assert.strictEqual(child.status, 130, child.stderr.toString())
      assert.isFalse(fs.existsSync(`${output}.lock`))
    }))

  /** A live process other than this one, for the test's scope. */
  const liveProcess = Effect.acquireRelease(
    Effect.sync(() => spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" })),
    (child) => Effect.sync(() => child.kill("SIGKILL"))
  )

  it.scoped("a lock held by another live process is never taken: refused with the holder, its start and the way out", () =>
    Effect.gen(function*() {
      const output = path.join(yield* tempDir("aifs-lock-"), "out.jsonl")
      const other = yield* liveProcess
      fs.writeFileSync(`${output}.lock`, JSON.stringify({ pid: other.pid, host: os.hostname(), started: "09:00" }))
      const refused = yield* Effect.flip(Effect.scoped(lockOutput(output)))
      assert.strictEqual(
        refused.message,
        `${output} is being written by another run (pid ${other.pid} on ${os.hostname()}, started 09:00): wait for ` +
          `it to end, or stop it (a lock whose run died is taken over; remove ${output}.lock if it is left from ` +
          "another machine)"
      )
      assert.strictEqual(holderOf(`${output}.lock`).pid, other.pid)
    }))

  it.scoped("a lock file that names no run (not JSON, no pid, no host) is refused as unreadable, never taken", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-lock-")
      for (
        const [i, text] of [
          "{}",
          "not json",
          "null",
          JSON.stringify({ pid: "1", host: "h" }),
          JSON.stringify({ pid: 1 })
        ].entries()
      ) {
        const output = path.join(dir, `out${i}.jsonl`)
        fs.writeFileSync(`${output}.lock`, text)
        const refused = yield* Effect.flip(Effect.scoped(lockOutput(output)))
        assert.include(refused.message, "another run (its lock file is unreadable)", text)
        assert.strictEqual(fs.readFileSync(`${output}.lock`, "utf8"), text)
      }
    }))

  it.scoped("ending, a run removes only its own lock: one another run took since is left to it", () =>
    Effect.gen(function*() {
      const output = path.join(yield* tempDir("aifs-lock-"), "out.jsonl")
      const other = JSON.stringify({ pid: process.pid + 1, host: os.hostname(), started: "later" })
      yield* Effect.scoped(Effect.gen(function*() {
        yield* lockOutput(output)
        fs.writeFileSync(`${output}.lock`, other)
      }))
      assert.strictEqual(fs.readFileSync(`${output}.lock`, "utf8"), other)
      const elsewhere = JSON.stringify({ pid: process.pid, host: "elsewhere", started: "later" })
      fs.rmSync(`${output}.lock`)
      yield* Effect.scoped(Effect.gen(function*() {
        yield* lockOutput(output)
        fs.writeFileSync(`${output}.lock`, elsewhere)
      }))
      assert.strictEqual(fs.readFileSync(`${output}.lock`, "utf8"), elsewhere)
    }))

  it.scoped("an output whose folder does not exist cannot be locked: one line naming it", () =>
    Effect.gen(function*() {
      const output = path.join(yield* tempDir("aifs-lock-"), "missing", "out.jsonl")
      const error = yield* Effect.flip(Effect.scoped(lockOutput(output)))
      assert.strictEqual(error.name, "UsageError")
      assert.match(error.message, new RegExp(`^cannot lock ${output.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: ENOENT`))
    }))

  it.scoped("a dead run's lock under the takeover guard of a live one is not taken: after a bounded wait, refused", () =>
    Effect.gen(function*() {
      const output = path.join(yield* tempDir("aifs-lock-"), "out.jsonl")
      const other = yield* liveProcess
      fs.writeFileSync(`${output}.lock`, JSON.stringify({ pid: deadPid(), host: os.hostname(), started: "earlier" }))
      fs.writeFileSync(`${output}.lock.takeover`, JSON.stringify({ pid: other.pid, host: os.hostname(), started: "" }))
      const error = yield* Effect.flip(Effect.scoped(lockOutput(output)))
      assert.strictEqual(error.message, `${output}: could not take its lock ${output}.lock: other runs keep taking it`)
      assert.isTrue(fs.existsSync(`${output}.lock.takeover`), "the live run's guard is left")
    }))
})
