/**
 * `AIFS_TIER=auto` (the default) as users run it: `aifs batch` as a child process against an emulator whose key has
 * limits no preset matches and whose model sends no rate-limit headers. The first run learns the limit from a few
 * 429s, confirms it (a careful raise after three calm windows meets a 429 at the same count) and keeps it in the cache
 * directory; the next run starts from it and meets none; `aifs limits` shows it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Emulator from "../../src/emulator/Emulator.js"
import { aifs } from "../helpers/cli.js"
import { tempDir } from "../helpers/tempDir.js"

const key = Emulator.developmentKey("custom")
const model = "Llama-3.3-70B-Instruct"

const input = (dir: string, name: string, count: number) => {
  const file = path.join(dir, name)
  fs.writeFileSync(
    file,
    Array.from({ length: count }, (_, i) =>
      `${
        JSON.stringify({
          custom_id: `${name}-${i}`,
          method: "POST",
          url: "/v1/chat/completions",
          body: { model, messages: [{ role: "user", content: `question ${i}` }], max_tokens: 10 }
        })
      }\n`).join("")
  )
  return file
}

describe("aifs with limits nobody told it", { timeout: 90_000 }, () => {
  it.scopedLive("the first batch learns the key's limit and keeps it; the next starts from it, with no 429", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const dir = yield* tempDir("aifs-learn-")
      const cache = path.join(dir, "cache")
      const env = {
        AIFS_API_KEY: key,
        AIFS_BASE_URL: emulator.baseUrl,
        AIFS_LIMITER_WINDOW: "2s",
        AIFS_CACHE_DIR: cache
      }
      // six windows' worth: a limit measured once is not kept; the raise after three calm windows measures it again
      const first = yield* aifs(["batch", input(dir, "a.jsonl", 60), "--out", path.join(dir, "a.out")], env)
      assert.strictEqual(first.code, 0, first.stderr)
      assert.include(first.stderr, "60 succeeded, 0 failed")
      const refused = (yield* emulator.stats).rateLimited
      // those in flight when the first came (the probe's ceiling, 8), a correction or two, and the raise's one
      assert.isAbove(refused, 0)
      assert.isAtMost(refused, 12)
      const [file] = fs.readdirSync(cache).filter((name) => name.startsWith("limits-"))
      assert.deepInclude(JSON.parse(fs.readFileSync(path.join(cache, file!), "utf8")).models[model], { requests: 10 })

      // the next run, once the server's window no longer holds the first one's requests
      yield* Effect.sleep("2100 millis")
      const second = yield* aifs(["batch", input(dir, "b.jsonl", 24), "--out", path.join(dir, "b.out")], env)
      assert.strictEqual(second.code, 0, second.stderr)
      assert.strictEqual((yield* emulator.stats).rateLimited, refused)

      const limits = yield* aifs(["limits", "-m", model], env)
      assert.strictEqual(limits.code, 0, limits.stderr)
      assert.match(limits.stdout, /^tier auto, key key#[0-9a-f]{8}$/m)
      // small requests teach the request limit alone; tokens stay unknown
      assert.include(limits.stdout, "limits 10 requests (learnt, confirmed), tokens unknown")
    }).pipe(Effect.provide(Emulator.layer({
      port: 0,
      window: "2 seconds",
      tiers: { custom: { rpm: 10, tpm: 10_000_000 } },
      keys: [{ key, tier: "custom" }]
    }))))
})
