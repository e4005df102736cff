/**
 * The CLI as users run it: `aifs ...` as a child process (node with tsx's loader, one process, so that a signal
 * reaches the process that works), with an environment of the test's own (no inherited `AIFS_*`).
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const bin = path.resolve("src/cli/bin.ts")

/** What a finished run printed, and how it ended. */
export interface Run {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** The environment of a child CLI: this process's, without any `AIFS_*`, plus `env` (`undefined`: unset). */
export const cliEnv = (env: Record<string, string | undefined>): NodeJS.ProcessEnv =>
  Object.fromEntries(
    Object.entries({
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AIFS_"))),
      // limits learnt (AIFS_TIER=auto, the default) and spend are not kept in the user's cache directory by tests
      AIFS_CACHE_DIR: "",
      ...env
    }).filter(([, value]) => value !== undefined)
  )

/** Runs `aifs ...` to its end, killed (and failed) after `timeoutMs`, or when the calling fiber is interrupted. */
export const aifs = (
  args: ReadonlyArray<string>,
  env: Record<string, string | undefined> = {},
  options: {
    readonly timeoutMs?: number
    readonly input?: string
    /** More of node's own arguments (e.g. `--import` of a hook), after tsx's. */
    readonly node?: ReadonlyArray<string>
  } = {}
): Effect.Effect<Run, Error> =>
  Effect.async<Run, Error>((resume) => {
    const timeoutMs = options.timeoutMs ?? 45_000
    const child = spawn(process.execPath, ["--import", "tsx", ...(options.node ?? []), bin, ...args], {
      env: cliEnv(env),
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"]
    })
    if (options.input !== undefined) child.stdin?.end(options.input)
    let stdout = ""
    let stderr = ""
    child.stdout?.on("data", (data: Buffer) => {
      stdout += data.toString("utf8")
    })
    child.stderr?.on("data", (data: Buffer) => {
      stderr += data.toString("utf8")
    })
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      resume(Effect.fail(new Error(`aifs ${args.join(" ")} did not exit within ${timeoutMs} ms: ${stderr}`)))
    }, timeoutMs)
    child.once("close", (code, signal) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, signal, stdout, stderr }))
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      child.kill("SIGKILL")
    })
  })

/**
 * `aifs ...` started as a child process that the test drives while it runs: its stderr as printed so far, and its
 * exit code (failed after `timeout`). Killed with the test's scope if it is still running then.
 */
export const aifsRunning = (
  args: ReadonlyArray<string>,
  env: Record<string, string | undefined>,
  timeout: Duration.DurationInput = "60 seconds"
) =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => spawn(process.execPath, ["--import", "tsx", bin, ...args], { env: cliEnv(env) })),
      (child) => Effect.sync(() => child.exitCode === null && child.kill("SIGKILL"))
    ),
    (child) => {
      let stderr = ""
      child.stderr.on("data", (chunk: Buffer) => stderr += chunk.toString())
      const exit = Effect.async<number | null>((resume) => {
        child.once("close", (code) => resume(Effect.succeed(code)))
      }).pipe(Effect.timeoutFail({ duration: timeout, onTimeout: () => new Error(`no exit: ${stderr}`) }))
      return { child, stderr: () => stderr, exit }
    }
  )

/**
 * 200 chat requests reserving 340 output tokens each: 147 fit the embedded emulator's first minute (its standard4000
 * key's Llama row allows 50,000 output tokens a minute; requests and input tokens have room), the rest wait.
 */
export const quotaBoundInput = (input: string) =>
  fs.writeFileSync(
    input,
    Array.from({ length: 200 }, (_, i) =>
      JSON.stringify({
        custom_id: `r${i}`,
        url: "/v1/chat/completions",
        body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: `q${i}` }], max_tokens: 340 }
      })).join("\n") + "\n"
  )
