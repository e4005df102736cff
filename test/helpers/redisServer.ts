/**
 * A real `redis-server` from PATH for the tests: on a free loopback port, without persistence, in a directory of
 * its own that is removed as soon as the server runs (it writes nothing there). Started once for the whole run by test/globalSetup.ts; tests that stop
 * and restart a server (faults) start their own.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** Whether `redis-server` is on PATH. */
export const redisAvailable = (): boolean => spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0

/** A port free on 127.0.0.1 now (the kernel's choice for port 0). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))
      )
    })
  })

export interface RedisServer {
  readonly url: string
  readonly port: number
  /** Stops the server (its shell killed after 5 s) and removes its directory. */
  readonly stop: () => Promise<void>
}

/**
 * Runs redis-server with the script's arguments; a reader in the background stops it when stdin closes (this
 * process stopped it, or ended).
 */
// (stdin kept as fd 3: a background list's own stdin is /dev/null in a shell without job control)
const watchdog = "exec 3<&0; redis-server \"$@\" & pid=$!; { read _ignored <&3; kill $pid 2>/dev/null; } & wait $pid"

/** Starts a server on `port` (a free one by default) and resolves once it accepts connections (at most 10 s). */
export const startRedis = async (
  options: { readonly port?: number; readonly password?: string } = {}
): Promise<RedisServer> => {
  const port = options.port ?? await freePort()
  const dir = mkdtempSync(join(tmpdir(), "aifs-redis-"))
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir]
  if (options.password !== undefined) args.push("--requirepass", options.password)
  // under a shell that stops the server and removes its folder when its stdin closes: when this process ends,
  // even killed without a chance to stop it (a test runner killed by the mutation run), the server goes with it
  const child: ChildProcess = spawn("sh", ["-c", watchdog, "sh", ...args], { stdio: ["pipe", "pipe", "pipe"] })
  let output = ""
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`redis-server did not start within 10 s: ${output.slice(-500)}`)),
      10_000
    )
    const fail = (error: Error) => {
      clearTimeout(timer)
      child.stdin!.end()
      rmSync(dir, { recursive: true, force: true })
      reject(error)
    }
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes("Ready to accept connections")) {
        clearTimeout(timer)
        // the server runs in its folder and writes nothing there: removed now, nothing is left behind even when
        // this process is killed before it can stop the server (a test runner killed by the mutation run)
        rmSync(dir, { recursive: true, force: true })
        resolve()
      }
    })
    child.once("exit", (code) => fail(new Error(`redis-server exited with ${code}: ${output.slice(-500)}`)))
  })
  child.stdout!.resume()
  child.stderr!.resume()
  const auth = options.password === undefined ? "" : `:${options.password}@`
  return {
    url: `redis://${auth}127.0.0.1:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          resolve()
        }
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
        if (child.exitCode !== null || child.signalCode !== null) return done()
        child.removeAllListeners("exit")
        child.once("exit", done)
        child.stdin!.end()
      })
  }
}
