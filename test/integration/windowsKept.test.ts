/**
 * A model's context window learnt once for every process of a key: the first process that needs a window the tables
 * lack lists the models (`GET /models`) and keeps what it gave in the limiter's store; a later process on the same
 * cache directory, or on the same Redis, refuses the same overflow with no listing and no request. Against a server of
 * the test's own on a loopback port (the emulator's models that the tables lack list no window).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodePath from "@effect/platform-node/NodePath"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, inject, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import { createServer } from "node:http"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as Inference from "../../src/layers/Inference.js"
import * as LimiterStore from "../../src/layers/LimiterStore.js"
import * as Node from "../../src/layers/Node.js"
import * as RedisLimiterStore from "../../src/redis.js"
import * as Chat from "../../src/services/Chat.js"
import { tempDir } from "../helpers/tempDir.js"

const redisUrl = inject("redisUrl")

/** A model the plans' tables do not know, and the window the server lists for it. */
const unlisted = "private-model"
const window = 8_192

/** The server: what it answered, by kind, and where it listens. */
class Server extends Context.Tag("test/WindowsServer")<Server, {
  readonly baseUrl: string
  readonly served: { listings: number; chats: number }
}>() {}

const server = Layer.scoped(
  Server,
  Effect.gen(function*() {
    const served = { listings: 0, chats: 0 }
    const listing = Effect.sync(() => {
      served.listings++
      return HttpServerResponse.unsafeJson({
        object: "list",
        data: [{
          id: unlisted,
          object: "model",
          created: 0,
          owned_by: "test",
          meta_data: { max_sequence_length: window }
        }]
      })
    })
    const chat = Effect.sync(() => {
      served.chats++
      return HttpServerResponse.unsafeJson({
        id: `chatcmpl-${served.chats}`,
        object: "chat.completion",
        created: 0,
        model: unlisted,
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 }
      })
    })
    yield* HttpServer.serveEffect(
      HttpRouter.empty.pipe(HttpRouter.get("/v2/models", listing), HttpRouter.post("/v2/chat/completions", chat))
    )
    const address = yield* HttpServer.addressWith((address) => Effect.succeed(address))
    const port = address._tag === "TcpAddress" ? address.port : 0
    return { baseUrl: `http://127.0.0.1:${port}/v2`, served }
  })
).pipe(Layer.provide(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" })))

/** A process of the key on `store`: its own limiter and transport. */
const processOn = <E>(store: Layer.Layer<LimiterStore.LimiterStore, E>, baseUrl: string) =>
  Inference.layerHttpLimitedWith({ tier: "auto" }).pipe(
    Layer.provide(store),
    Layer.provide(Node.httpClient),
    Layer.provide(ClientConfig.layer({ apiKey: "windows-test-key", baseUrl, maxRetries: 0 }))
  )

/** A request whose prompt and `max_tokens` cannot fit the window: what it failed with. */
const overflow = Effect.flatMap(
  Chat.Chat,
  (chat) =>
    Effect.flip(chat.create({ model: unlisted, messages: [{ role: "user", content: "Hi" }], max_tokens: window }))
)

/** Two processes one after the other on `store`: the first lists, the second recalls. */
const twoProcesses = <E>(store: Layer.Layer<LimiterStore.LimiterStore, E>) =>
  Effect.gen(function*() {
    const { baseUrl, served } = yield* Server
    const first = yield* overflow.pipe(Effect.provide(processOn(store, baseUrl)))
    assert.deepInclude(first, { _tag: "ContextLengthExceeded", window })
    assert.deepStrictEqual(served, { listings: 1, chats: 0 })
    const second = yield* overflow.pipe(Effect.provide(processOn(store, baseUrl)))
    assert.deepInclude(second, { _tag: "ContextLengthExceeded", window })
    assert.deepStrictEqual(served, { listings: 1, chats: 0 }, "no listing, no request")
  })

describe("a context window learnt once for every process of a key", () => {
  it.scoped("on a cache directory: the second process lists nothing and sends nothing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("aifs-windows-")
      yield* twoProcesses(
        LimiterStore.layerMemoryCached(dir).pipe(Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer)))
      )
      const [file] = fs.readdirSync(dir).filter((name) => name.startsWith("windows-"))
      assert.isDefined(file)
      assert.notInclude(fs.readFileSync(`${dir}/${file}`, "utf8"), "windows-test-key")
    }).pipe(Effect.provide(server)))

  it.scoped("on the memory store: each process lists for itself", () =>
    Effect.gen(function*() {
      const { baseUrl, served } = yield* Server
      for (let i = 0; i < 2; i++) yield* overflow.pipe(Effect.provide(processOn(LimiterStore.layerMemory, baseUrl)))
      assert.deepStrictEqual(served, { listings: 2, chats: 0 })
    }).pipe(Effect.provide(server)))

  it.scoped.skipIf(redisUrl === undefined)(
    "on Redis: the second process lists nothing and sends nothing",
    () =>
      twoProcesses(RedisLimiterStore.layer(redisUrl!, { prefix: `windows-${crypto.randomUUID()}` })).pipe(
        Effect.provide(server)
      )
  )
})
