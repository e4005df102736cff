/**
 * Context windows kept between processes and runs: what a key's `/models` listing gave is kept in the limiter's store
 * (`keepWindows`), and a limiter that finds it there (`recallWindows`) needs no listing of its own. On the memory store
 * with its cache directory (real files): the key's file, its lifetime, what it skips and warns about; on stores that
 * keep none, fail, or cannot write.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Windows from "../../src/internal/request/windows.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import { LimiterUnavailable } from "../../src/schemas/Errors.js"
import { ModelList } from "../../src/schemas/Models.js"
import { limiterOn, memoryStoreWith } from "../helpers/stores.js"
import { tempDir } from "../helpers/tempDir.js"

/** A catalogue as `GET /models` sends it. */
const listing = (entries: ReadonlyArray<{ id: string; meta_data?: unknown }>) =>
  Schema.decodeUnknownSync(ModelList)({
    object: "list",
    data: entries.map((e) => ({ object: "model", created: 0, owned_by: "x", ...e }))
  })

const models = listing([
  { id: "private", meta_data: { max_sequence_length: 5_000 } },
  { id: "unknown", meta_data: { max_sequence_length: 0 } },
  // no count of tokens: not learnt, not kept
  { id: "fractional", meta_data: { max_sequence_length: 4_500.5 } },
  { id: "bare" }
])

/** A request of `model` too large for the smallest window the tables know: it needs the model's window. */
const large = (model: string) => ({ key: "key#ab/cd", model, input: 4_990, cap: 11 })

/** The store on `directory` (as a new process makes it), and the warnings it logs. */
const cachedOn = (directory: string) =>
  LimiterStore.layerMemoryCached(directory).pipe(Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer)))

/** A limiter on `store` (a new process's), the warnings logged while `use` runs kept in `warnings`. */
const withLimiter = <A, E, R>(
  store: Layer.Layer<LimiterStore.LimiterStore>,
  warnings: Array<string>,
  use: (limiter: RateLimiter.RateLimiter.Service) => Effect.Effect<A, E, R>
) =>
  Effect.flatMap(RateLimiter.RateLimiter, use).pipe(
    Effect.provide(limiterOn(store, { margin: 0 })),
    Effect.provide(Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => warnings.push(String(message)))))
  )

describe("context windows kept in the cache directory", () => {
  it.scoped("a listing's windows are kept in the key's file; a new process recalls them and needs no listing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-windows-")
      const warnings: Array<string> = []
      yield* withLimiter(cachedOn(dir), warnings, (limiter) =>
        Effect.gen(function*() {
          assert.isFalse(yield* limiter.recallWindows!("key#ab/cd", "private"), "nothing kept yet")
          assert.isTrue(limiter.needsWindow(large("private")))
          yield* limiter.learnWindows(models, "key#ab/cd")
          assert.isFalse(limiter.needsWindow(large("private")))
        }))
      // named by the key's letters only; a model with no window is not kept
      assert.deepStrictEqual(fs.readdirSync(dir), ["windows-keyabcd.json"])
      const kept = JSON.parse(fs.readFileSync(path.join(dir, "windows-keyabcd.json"), "utf8"))
      assert.deepStrictEqual(kept, { version: 1, keptAt: 0, models: { private: 5_000 } })
      yield* withLimiter(cachedOn(dir), warnings, (limiter) =>
        Effect.gen(function*() {
          assert.isTrue(limiter.needsWindow(large("private")), "not read before it is asked for")
          assert.isTrue(yield* limiter.recallWindows!("key#ab/cd", "private"))
          assert.isFalse(limiter.needsWindow(large("private")))
          const refused = yield* Effect.flip(limiter.acquire({ ...large("private"), cap: 12 }))
          assert.deepInclude(refused, { _tag: "ContextLengthExceeded", window: 5_000, requested: 5_002 })
          // another key's listing is its own
          assert.isFalse(yield* limiter.recallWindows!("key#other", "private"))
        }))
      assert.deepStrictEqual(warnings, [])
    }))

  it.scoped("kept windows that lack the model: those kept are learnt, and the recall says list (a model listed since)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-windows-")
      const warnings: Array<string> = []
      yield* withLimiter(cachedOn(dir), warnings, (limiter) => limiter.learnWindows(models, "key1"))
      yield* withLimiter(cachedOn(dir), warnings, (limiter) =>
        Effect.gen(function*() {
          assert.isFalse(yield* limiter.recallWindows!("key1", "newer"))
          assert.isFalse(limiter.needsWindow(large("private")), "learnt all the same")
          assert.isTrue(limiter.needsWindow(large("newer")))
        }))
      // a listing that gave no window is kept as such: nothing to recall for any model
      yield* withLimiter(cachedOn(dir), warnings, (limiter) => limiter.learnWindows(listing([{ id: "bare" }]), "key2"))
      assert.isFalse(yield* withLimiter(cachedOn(dir), warnings, (limiter) => limiter.recallWindows!("key2", "bare")))
      assert.deepStrictEqual(
        JSON.parse(fs.readFileSync(path.join(dir, "windows-key2.json"), "utf8")).models,
        {}
      )
      assert.deepStrictEqual(warnings, [])
    }))

  it.scoped("kept windows are recalled for 30 days after they were kept, and no longer", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-windows-")
      const warnings: Array<string> = []
      yield* TestClock.setTime(1_000_000_000)
      yield* withLimiter(cachedOn(dir), warnings, (limiter) => limiter.learnWindows(models, "key1"))
      yield* TestClock.adjust(LimiterStore.learntLifetimeSeconds * 1000)
      assert.isTrue(yield* withLimiter(cachedOn(dir), warnings, (limiter) => limiter.recallWindows!("key1", "private")))
      yield* TestClock.adjust(1)
      yield* withLimiter(cachedOn(dir), warnings, (limiter) =>
        Effect.gen(function*() {
          assert.isFalse(yield* limiter.recallWindows!("key1", "private"))
          assert.isTrue(limiter.needsWindow(large("private")))
        }))
    }))

  it.scoped("a file that is no such windows is ignored with one warning; one that cannot be read too", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-windows-")
      const warnings: Array<string> = []
      const broken = path.join(dir, "windows-key1.json")
      for (
        const text of [
          "{ not json",
          JSON.stringify({ version: 2, keptAt: 0, models: {} }),
          JSON.stringify({ version: 1, keptAt: 0, models: { private: 0 } }),
          JSON.stringify({ version: 1, keptAt: 0, models: { private: 1.5 } })
        ]
      ) {
        fs.writeFileSync(broken, text)
        warnings.length = 0
        yield* withLimiter(cachedOn(dir), warnings, (limiter) =>
          Effect.gen(function*() {
            assert.isFalse(yield* limiter.recallWindows!("key1", "private"), text)
            assert.isFalse(yield* limiter.recallWindows!("key1", "private"), text)
          }))
        assert.deepStrictEqual(warnings, [
          `aifs: context windows: ignoring ${broken}: it is not a file of context windows`
        ])
      }
      // a new listing replaces it
      yield* withLimiter(cachedOn(dir), warnings, (limiter) => limiter.learnWindows(models, "key1"))
      assert.isTrue(yield* withLimiter(cachedOn(dir), warnings, (limiter) => limiter.recallWindows!("key1", "private")))
      const unreadable = path.join(dir, "windows-key2.json")
      fs.mkdirSync(unreadable)
      warnings.length = 0
      assert.isFalse(
        yield* withLimiter(cachedOn(dir), warnings, (limiter) => limiter.recallWindows!("key2", "private"))
      )
      assert.strictEqual(warnings.length, 1)
      assert.match(warnings[0]!, new RegExp(`^aifs: context windows: cannot read ${unreadable}: `))
    }))

  it.scoped("a directory that cannot be written: one warning, the windows learnt all the same", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-windows-")
      fs.writeFileSync(path.join(dir, "file"), "")
      const warnings: Array<string> = []
      yield* withLimiter(cachedOn(path.join(dir, "file", "cache")), warnings, (limiter) =>
        Effect.gen(function*() {
          yield* limiter.learnWindows(models, "key1")
          yield* limiter.learnWindows(models, "key1")
          assert.isFalse(limiter.needsWindow(large("private")))
        }))
      assert.strictEqual(warnings.length, 1)
      assert.match(warnings[0]!, /^aifs: context windows: cannot keep them in .*windows-key1\.json: /)
      assert.deepStrictEqual(fs.readdirSync(dir), ["file"])
    }))
})

describe("context windows on other stores", () => {
  it.effect("the memory store keeps none: each process lists for itself", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const store = LimiterStore.layerMemory
      yield* withLimiter(store, warnings, (limiter) => limiter.learnWindows(models, "key1"))
      yield* withLimiter(store, warnings, (limiter) =>
        Effect.gen(function*() {
          assert.isFalse(yield* limiter.recallWindows!("key1", "private"))
          assert.isTrue(limiter.needsWindow(large("private")))
        }))
    }))

  it.effect("a listing learnt without a key is not kept", () =>
    Effect.gen(function*() {
      const kept: Array<string> = []
      const store = memoryStoreWith(() => ({
        windowsOf: () => Effect.succeed(undefined),
        keepWindows: (key) => Effect.sync(() => void kept.push(key))
      }))
      yield* withLimiter(store, [], (limiter) =>
        Effect.gen(function*() {
          yield* limiter.learnWindows(models)
          assert.isFalse(limiter.needsWindow(large("private")))
          assert.deepStrictEqual(kept, [])
          yield* limiter.learnWindows(models, "key1")
          assert.deepStrictEqual(kept, ["key1"])
        }))
    }))

  it.effect("a store that cannot answer: a warning, nothing recalled (the caller lists), the listing still learnt", () =>
    Effect.gen(function*() {
      const warnings: Array<string> = []
      const down = new LimiterUnavailable({ message: "the store is down" })
      const store = memoryStoreWith(() => ({
        windowsOf: () => Effect.fail(down),
        keepWindows: () => Effect.fail(down)
      }))
      yield* withLimiter(store, warnings, (limiter) =>
        Effect.gen(function*() {
          assert.isFalse(yield* limiter.recallWindows!("key1", "private"))
          yield* limiter.learnWindows(models, "key1")
          assert.isFalse(limiter.needsWindow(large("private")))
        }))
      assert.deepStrictEqual(warnings, [
        "aifs: limiter store: the store is down",
        "aifs: limiter store: the store is down"
      ])
    }))

  it.effect("configured windows win over those recalled", () =>
    Effect.gen(function*() {
      const store = memoryStoreWith(() => ({ windowsOf: () => Effect.succeed({ private: 5_000, other: 7_000 }) }))
      const limiter = yield* RateLimiter.RateLimiter.pipe(
        Effect.provide(limiterOn(store, { margin: 0, contextWindows: { private: 9_000 } }))
      )
      assert.isTrue(yield* limiter.recallWindows!("key#ab/cd", "private"))
      assert.strictEqual((yield* limiter.acquire({ ...large("private"), input: 8_000 })).cost.input, 8_000)
      const refused = yield* Effect.flip(limiter.acquire({ ...large("other"), input: 7_000 }))
      assert.deepInclude(refused, { _tag: "ContextLengthExceeded", window: 7_000 })
    }))
})

describe("the listing of a key's windows (internal/request/windows.ts)", () => {
  /** `Windows.make` over `limiter`, its listing counted in `listed`. */
  const windowsOf = (limiter: RateLimiter.RateLimiter.Service, listed: { count: number }) =>
    Effect.map(Effect.scope, (scope) => Windows.make(limiter, Effect.sync(() => (listed.count++, models)), scope))

  it.scoped("recalled when kept with the model: no listing; lacking it: one listing, kept; then never again", () =>
    Effect.gen(function*() {
      const listed = { count: 0 }
      const dir = yield* tempDir("aifs-windows-")
      yield* withLimiter(cachedOn(dir), [], (limiter) => limiter.learnWindows(models, "key1"))
      yield* withLimiter(cachedOn(dir), [], (limiter) =>
        Effect.gen(function*() {
          const windows = yield* windowsOf(limiter, listed)
          yield* windows("key1", "private")
          assert.strictEqual(listed.count, 0)
          const other = yield* windowsOf(limiter, listed)
          yield* other("key1", "newer")
          yield* other("key1", "newer")
          assert.strictEqual(listed.count, 1)
        }))
    }))

  it.scoped("a limiter without recallWindows lists; a recall that dies or fails ends the wait, the request goes on", () =>
    Effect.gen(function*() {
      const listed = { count: 0 }
      yield* withLimiter(LimiterStore.layerMemory, [], (limiter) =>
        Effect.gen(function*() {
          const { recallWindows: _, ...without } = limiter
          yield* (yield* windowsOf(without, listed))("key1", "private")
          assert.strictEqual(listed.count, 1)
          for (const recall of [Effect.die("a defect"), Effect.fail("a failure")]) {
            const broken = { ...limiter, recallWindows: () => recall as unknown as Effect.Effect<boolean> }
            const windows = yield* windowsOf(broken, listed)
            const waits = yield* Effect.fork(Effect.all([windows("key2", "private"), windows("key2", "private")]))
            assert.isDefined(yield* Fiber.join(waits))
          }
          // nothing listed after a recall that broke: its wait ended with nothing learnt
          assert.strictEqual(listed.count, 1)
        }))
    }))
})
