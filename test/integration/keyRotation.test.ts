/**
 * Key rotation against the emulator: the emulator revokes a key and issues a new one; a client whose key comes
 * from an effect (or from `AIFS_API_KEY_FILE` with `Node.layerFromEnv`) reads it again on the 401 and goes on,
 * JSON and streams alike; a client with a fixed key gets `Unauthorized`, and no error shows either key.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as ClientMetrics from "../../src/layers/ClientMetrics.js"
import * as Node from "../../src/layers/Node.js"
import * as Chat from "../../src/services/Chat.js"
import * as Files from "../../src/services/Files.js"
import * as Models from "../../src/services/Models.js"
import { ask, count } from "../helpers/emulator.js"
import { tempDir } from "../helpers/tempDir.js"

const model = "Llama-3.3-70B-Instruct"
const hello = Effect.flatMap(Chat.Chat, (chat) => chat.create(ask(model, "Hello")))
const streamed = Effect.flatMap(Chat.Chat, (chat) => Stream.runCollect(chat.createStream(ask(model, "Hello"))))

/** What the client sees of `program` after the emulator rotated its key, with the client built by `client`. */
const afterRotation = <A, E>(
  client: (emulator: Emulator.Emulator["Type"], key: Ref.Ref<string>) => Layer.Layer<Node.Services, E>,
  program: Effect.Effect<A, unknown, Node.Services>,
  onRotated: (key: string) => Effect.Effect<void> = () => Effect.void
) =>
  Effect.gen(function*() {
    const emulator = yield* Emulator.Emulator
    const first = emulator.keyFor("standard4000")!
    const key = yield* Ref.make(first)
    return yield* Effect.gen(function*() {
      yield* hello
      const rotated = yield* emulator.rotateKey(first)
      yield* Ref.set(key, rotated)
      yield* onRotated(rotated)
      const exit = yield* Effect.exit(program)
      return { exit, first, rotated, emulator }
    }).pipe(Effect.provide(client(emulator, key)))
  })

describe("key rotation", () => {
  it.effect("the emulator revokes the key and issues another: same tier, the old one refused with 401", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const first = emulator.keyFor("basic")!
      const rotated = yield* emulator.rotateKey(first)
      assert.match(rotated, /^gen-[0-9a-f]{48}$/)
      assert.strictEqual(emulator.keyFor("basic"), rotated)
      assert.isFalse(emulator.keys.some((k) => k.key === first))
      const withKey = (apiKey: string) =>
        Effect.exit(
          Effect.flatMap(Models.Models, (models) => models.list()).pipe(
            Effect.provide(Node.layer({ apiKey, baseUrl: emulator.baseUrl, maxRetries: 0 }))
          )
        )
      const refused = yield* withKey(first)
      assert.isTrue(Exit.isFailure(refused) && JSON.stringify(refused.cause).includes("Unauthorized"))
      assert.isTrue(Exit.isSuccess(yield* withKey(rotated)))
    }).pipe(Effect.provide(Emulator.layer())))

  it.effect("the account's files go with the key: uploaded before the rotation, found with the new key", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const key = yield* Ref.make(emulator.keyFor("standard4000")!)
      yield* Effect.gen(function*() {
        const files = yield* Files.Files
        const uploaded = yield* files.upload({ file: Files.fromBytes("{}\n", "train.jsonl"), purpose: "fine-tune" })
        yield* Ref.set(key, yield* emulator.rotateKey(yield* Ref.get(key)))
        assert.strictEqual((yield* files.retrieve(uploaded.id)).id, uploaded.id)
      }).pipe(Effect.provide(Node.layer({ apiKey: Ref.get(key), baseUrl: emulator.baseUrl })))
    }).pipe(Effect.provide(Emulator.layer())))

  it.effect("a key from an effect: read again on the 401, JSON and streams go on with the new key, once", () =>
    Effect.gen(function*() {
      const reads = yield* Ref.make(0)
      const retriesBefore = yield* count(ClientMetrics.retries)
      const { exit } = yield* afterRotation(
        (emulator, key) =>
          Node.layer({
            apiKey: Effect.zipRight(Ref.update(reads, (n) => n + 1), Ref.get(key)),
            baseUrl: emulator.baseUrl,
            tier: "standard4000"
          }),
        Effect.all([hello, streamed, hello], { concurrency: "unbounded" })
      )
      assert.isTrue(Exit.isSuccess(exit), Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "")
      // read when the layer was built, then once for all three requests refused
      assert.strictEqual(yield* Ref.get(reads), 2)
      // a renewal is not a retry of the policy
      assert.strictEqual((yield* count(ClientMetrics.retries)) - retriesBefore, 0)
    }).pipe(Effect.provide(Emulator.layer())))

  it.effect("a fixed key: Unauthorized, sent once, and neither key in the error", () =>
    Effect.gen(function*() {
      const { exit, first, rotated } = yield* afterRotation(
        (emulator, key) => Node.layer({ apiKey: Effect.runSync(Ref.get(key)), baseUrl: emulator.baseUrl }),
        hello
      )
      assert.isTrue(Exit.isFailure(exit))
      const shown = String(exit)
      assert.include(shown, "Unauthorized")
      assert.notInclude(shown, first)
      assert.notInclude(shown, rotated)
    }).pipe(Effect.provide(Emulator.layer())))

  it.effect("a key from an effect that still gives the revoked key: Unauthorized, saying the key has not changed", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const first = emulator.keyFor("standard4000")!
      const stale = Node.layer({ apiKey: Effect.succeed(first), baseUrl: emulator.baseUrl })
      yield* emulator.rotateKey(first)
      const error = yield* Effect.flip(hello.pipe(Effect.provide(stale)))
      assert.strictEqual(error._tag, "Unauthorized")
      assert.include(error.message, "the key was read again and has not changed")
      assert.notInclude(error.message, first)
    }).pipe(Effect.provide(Emulator.layer())))

  it.scoped("Node.layerFromEnv with AIFS_API_KEY_FILE: the file written anew (a mounted secret) is read on the 401", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir("aifs-keyfile-"), "key")
      const { exit } = yield* afterRotation(
        (emulator, key) => {
          fs.writeFileSync(file, `${Effect.runSync(Ref.get(key))}\n`)
          return Node.layerFromEnv.pipe(
            Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
              new Map([["AIFS_API_KEY_FILE", file], ["AIFS_BASE_URL", emulator.baseUrl], ["AIFS_CACHE_DIR", ""]])
            ))),
            Layer.orDie
          )
        },
        hello,
        // as a secret mount swaps its file: a new file renamed over the old
        (rotated) =>
          Effect.sync(() => {
            fs.writeFileSync(`${file}.new`, rotated)
            fs.renameSync(`${file}.new`, file)
          })
      )
      assert.isTrue(Exit.isSuccess(exit), Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "")
    }).pipe(Effect.provide(Emulator.layer())))

  it.scoped("AIFS_API_KEY_FILE gone when the key is refused: Unauthorized, saying the file cannot be read", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const file = path.join(yield* tempDir("aifs-keyfile-"), "key")
      const first = emulator.keyFor("standard4000")!
      fs.writeFileSync(file, first)
      const client = Node.layerFromEnv.pipe(
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
          new Map([["AIFS_API_KEY_FILE", file], ["AIFS_BASE_URL", emulator.baseUrl], ["AIFS_CACHE_DIR", ""]])
        ))),
        Layer.orDie
      )
      const error = yield* Effect.gen(function*() {
        yield* emulator.rotateKey(first)
        fs.rmSync(file)
        return yield* Effect.flip(hello)
      }).pipe(Effect.provide(client))
      assert.strictEqual(error._tag, "Unauthorized")
      assert.include(error.message, `(the key could not be read again: cannot read ${file}`)
    }).pipe(Effect.provide(Emulator.layer())))

  it.scoped("AIFS_API_KEY_FILE that cannot be used, or set beside AIFS_API_KEY: a ConfigError naming it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-keyfile-")
      const empty = path.join(dir, "empty")
      fs.writeFileSync(empty, "\n")
      const errorOf = (env: ReadonlyArray<readonly [string, string]>) =>
        Effect.flip(
          Layer.build(Node.layerFromEnv).pipe(
            Effect.scoped,
            Effect.withConfigProvider(ConfigProvider.fromMap(new Map([...env, ["AIFS_CACHE_DIR", ""]])))
          )
        )
      const missing = yield* errorOf([["AIFS_API_KEY_FILE", path.join(dir, "absent")]])
      assert.include(String(missing), "AIFS_API_KEY_FILE")
      assert.include(String(missing), "cannot read")
      assert.include(String(yield* errorOf([["AIFS_API_KEY_FILE", empty]])), "holds no key")
      const both = yield* errorOf([["AIFS_API_KEY_FILE", empty], ["AIFS_API_KEY", "gen-x"]])
      assert.include(String(both), "AIFS_API_KEY and AIFS_API_KEY_FILE are both set")
    }))
})
