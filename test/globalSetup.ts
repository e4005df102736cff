/**
 * One `redis-server` for the whole run (test/helpers/redisServer.ts), its URL given to the tests as
 * `inject("redisUrl")`. Without `redis-server` on PATH the Redis tests are skipped with a message, except in CI
 * (`CI` set), where its absence fails the run: `.ci/run` installs it.
 */
import type { TestProject } from "vitest/node"
import { redisAvailable, type RedisServer, startRedis } from "./helpers/redisServer.js"

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string | undefined
  }
}

let server: RedisServer | undefined

export const setup = async (project: TestProject) => {
  if (!redisAvailable()) {
    if (process.env.CI) throw new Error("redis-server is not on PATH: install it (apt-get install -y redis-server)")
    console.warn("redis-server is not on PATH: the tests of the Redis limiter store are skipped")
    project.provide("redisUrl", undefined)
    return
  }
  server = await startRedis()
  project.provide("redisUrl", server.url)
}

export const teardown = async () => {
  await server?.stop()
}
