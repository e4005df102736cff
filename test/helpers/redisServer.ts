/**
 * A real `redis-server` from PATH for the tests: on a free loopback port, without persistence, in a directory of
 * its own that is removed when it stops. Started once for the whole run by test/globalSetup.ts; tests that stop
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
  /** Stops the server (SIGKILL after 5 s) and removes its directory. */
  readonly stop: () => Promise<void>
}

/** Starts a server on `port` (a free one by default) and resolves once it accepts connections (at most 10 s). */
export const startRedis = async (
  options: { readonly port?: number; readonly password?: string } = {}
): Promise<RedisServer> => {
  const port = options.port ?? await freePort()
  const dir = mkdtempSync(join(tmpdir(), "aifs-redis-"))
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir]
  if (options.password !== undefined) args.push("--requirepass", options.password)
  const child: ChildProcess = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`redis-server did not start within 10 s: ${output.slice(-500)}`)),
      10_000
    )
    const fail = (error: Error) => {
      clearTimeout(timer)
      child.kill("SIGKILL")
      rmSync(dir, { recursive: true, force: true })
      reject(error)
    }
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes("Ready to accept connections")) {
        clearTimeout(timer)
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
          rmSync(dir, { recursive: true, force: true })
          resolve()
        }
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
        if (child.exitCode !== null || child.signalCode !== null) return done()
        child.removeAllListeners("exit")
        child.once("exit", done)
        child.kill("SIGTERM")
      })
  }
}
