/**
 * The memory store with its cache directory (`LimiterStore.layerMemoryCached`), on real files: what a key's spend file
 * and limits file give a new store (a new run), what they skip and warn about once, when kept limits are too old, and
 * what a file that cannot be read costs; and `RateLimiter.layerDisabled`, the limiter that limits nothing.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Spend from "../../src/internal/spend.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as RateLimiter from "../../src/layers/RateLimiter.js"
import { tempDir } from "../helpers/tempDir.js"

const month = "2026-11"
/** A spend line as versions before cache writes were counted wrote it: no `written`. */
const line = (model: string, requests: number, input: number, output: number, cached: number, cost: number) =>
  JSON.stringify({ model, requests, input, output, cached, cost })

/** A new store on `directory` (as a new run makes it), and the warnings it logs. */
const storeOn = (directory: string) =>
  Effect.gen(function*() {
    const warnings: Array<string> = []
    const store = yield* LimiterStore.LimiterStore.pipe(
      Effect.provide(
        LimiterStore.layerMemoryCached(directory).pipe(
          Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer))
        )
      )
    )
    const logged = <A, E>(effect: Effect.Effect<A, E>) =>
      effect.pipe(Effect.provide(Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ message }) => warnings.push(String(message)))
      )))
    return { store, warnings, logged }
  })

describe("the cache directory's spend files", () => {
  it.scoped("a month's file adds its lines once (one without cache writes has none); blank lines pass, a line that is no spend is skipped with one warning", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-cache-")
      const file = path.join(dir, `spend-key1-${month}.jsonl`)
      fs.writeFileSync(
        file,
        [line("m", 1, 10, 5, 2, 0.5), "", "   ", "{broken", line("m", 1, 1, 1, 0, 0.25), line("n", 2, 4, 4, 0, 1), "[]"]
          .join("\n") + "\n"
      )
      const { logged, store, warnings } = yield* storeOn(dir)
      const spent = yield* logged(store.spendOf("key1", month))
      assert.deepStrictEqual(spent, {
        m: { requests: 2, input: 11, output: 6, cached: 2, written: 0, cost: 0.75 },
        n: { requests: 2, input: 4, output: 4, cached: 0, written: 0, cost: 1 }
      })
      assert.deepStrictEqual(warnings, [`aifs: spend: skipping a line of ${file} that is no spend`])
      // read once: what the file gains later is this store's own doing
      fs.appendFileSync(file, `${line("m", 5, 5, 5, 0, 5)}\n`)
      assert.deepStrictEqual(yield* logged(store.spendOf("key1", month)), spent)
      assert.strictEqual(warnings.length, 1)
    }))

  it.scoped("a missing file is nothing spent, said by no one; one that cannot be read is nothing spent, with a warning", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-cache-")
      const { logged, store, warnings } = yield* storeOn(dir)
      assert.deepStrictEqual(yield* logged(store.spendOf("key1", month)), {})
      assert.deepStrictEqual(warnings, [])
      // a directory where the file would be
      const file = path.join(dir, `spend-key2-${month}.jsonl`)
      fs.mkdirSync(file)
      assert.deepStrictEqual(yield* logged(store.spendOf("key2", month)), {})
      assert.strictEqual(warnings.length, 1)
      assert.match(warnings[0]!, new RegExp(`^aifs: spend: cannot read ${file}: `))
    }))

  it.scoped("what a run adds is appended to its key's month file, named by the key's letters only; a new run adds to it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-cache-")
      const first = yield* storeOn(dir)
      const tally: Spend.Tally = { requests: 1, input: 3, output: 2, cached: 1, written: 1, cost: 0.125 }
      yield* first.store.addSpend("key#ab/cd", month, "m", tally)
      yield* first.store.addSpend("key#ab/cd", month, "m", tally)
      assert.deepStrictEqual(fs.readdirSync(dir), [`spend-keyabcd-${month}.jsonl`])
      const second = yield* storeOn(dir)
      assert.deepStrictEqual(yield* second.store.spendOf("key#ab/cd", month), {
        m: { requests: 2, input: 6, output: 4, cached: 2, written: 2, cost: 0.25 }
      })
      assert.deepStrictEqual(yield* second.store.spendOf("key#ab/cd", "2026-12"), {})
    }))
})

describe("the cache directory's learnt limits", () => {
  const bucket = (key: string) => `${key}\u0000Llama`
  const limits = { requests: 9, input: 1_000 }

  it.scoped("kept limits are a new run's for 30 days after they were learnt, and no longer", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-cache-")
      yield* TestClock.setTime(1_000_000_000)
      yield* (yield* storeOn(dir)).store.keepLearnt(bucket("key1"), limits)
      assert.deepStrictEqual(fs.readdirSync(dir), ["limits-key1.json"])
      const lifetimeMs = LimiterStore.learntLifetimeSeconds * 1000
      yield* TestClock.adjust(lifetimeMs)
      assert.deepStrictEqual(yield* (yield* storeOn(dir)).store.learnt(bucket("key1")), limits)
      yield* TestClock.adjust(1)
      assert.isUndefined(yield* (yield* storeOn(dir)).store.learnt(bucket("key1")))
      // another model of the key, in the same file
      assert.isUndefined(yield* (yield* storeOn(dir)).store.learnt("key1\u0000other"))
    }))

  it.scoped("a missing file is nothing learnt, silently; one of an earlier version too; a broken one, with a warning", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-cache-")
      const { logged, store, warnings } = yield* storeOn(dir)
      assert.isUndefined(yield* logged(store.learnt(bucket("none"))))
      fs.writeFileSync(path.join(dir, "limits-old.json"), "{ \"version\": 1, \"models\": {} }")
      assert.isUndefined(yield* logged(store.learnt(bucket("old"))))
      assert.deepStrictEqual(warnings, [])
      const broken = path.join(dir, "limits-broken.json")
      fs.writeFileSync(broken, "{ not json")
      assert.isUndefined(yield* logged(store.learnt(bucket("broken"))))
      assert.deepStrictEqual(warnings, [`aifs: learnt limits: ignoring ${broken}: it is not a file of learnt limits`])
      const unreadable = path.join(dir, "limits-dir.json")
      fs.mkdirSync(unreadable)
      assert.isUndefined(yield* logged(store.learnt(bucket("dir"))))
      assert.strictEqual(warnings.length, 2)
      assert.match(warnings[1]!, new RegExp(`^aifs: learnt limits: cannot read ${unreadable}: `))
    }))
})

describe("RateLimiter.layerDisabled", () => {
  it.effect("limits nothing, learns nothing, and meters nothing: the month's spending is empty", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 10, 28))
      const limiter = yield* RateLimiter.RateLimiter
      assert.deepStrictEqual(yield* limiter.spending("key"), {
        month: "2026-11",
        models: {},
        total: Spend.empty,
        budget: undefined,
        currency: Spend.currency,
        unpriced: []
      })
      assert.isFalse(limiter.needsWindow({ key: "key", model: "Llama", input: 1_000_000, cap: 1_000_000 }))
      assert.isFalse(limiter.enabled)
      assert.deepStrictEqual(yield* limiter.snapshot, [])
      assert.deepStrictEqual([...yield* Stream.runCollect(limiter.changes)], [[]])
    }).pipe(Effect.provide(RateLimiter.layerDisabled)))
})
