/**
 * The gateway services on the scripted transport: URLs, query parameters, multipart bodies, the
 * query-pipeline path, tolerant answers, and the separation of gateway token and inference key.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as Testing from "../../src/layers/Testing.js"
import * as Chat from "../../src/services/Chat.js"
import * as FileManager from "../../src/services/gateway/FileManager.js"
import * as Gateway from "../../src/services/gateway/Gateway.js"
import { GatewayHttpClient } from "../../src/services/gateway/GatewayHttpClient.js"
import * as IngestMaster from "../../src/services/gateway/IngestMaster.js"
import * as QueryPipeline from "../../src/services/gateway/QueryPipeline.js"
import { chatCompletionBody, defaultChatParams } from "./helpers.js"

interface Seen {
  readonly method: string
  readonly url: URL
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

/** A gateway and an inference host behind one scripted transport that records every request. */
const world = (answer: (request: Testing.ScriptedRequest) => unknown) => {
  const seen: Array<Seen> = []
  const handler: Testing.Handler = (request) => {
    seen.push({ method: request.method, url: request.url, headers: request.headers, body: request.body })
    if (request.path === "/api/v1/auth/user") return { body: { access_token: "gateway-token-abc" } }
    if (request.url.host === "aifs.test") return { body: chatCompletionBody }
    return { body: answer(request) }
  }
  return { seen, handler }
}

describe("gateway services (scripted transport)", () => {
  it.effect("the gateway token never reaches the inference host, the inference key never reaches the gateway", () =>
    Effect.gen(function*() {
      const { handler, seen } = world(() => [])
      const layer = Layer.merge(
        Testing.layerGatewayHttp(handler, { config: { url: "https://gateway.test" } }),
        Testing.layerHttp(handler, { config: { apiKey: "inference-key-xyz" } })
      )
      yield* Effect.gen(function*() {
        yield* Effect.flatMap(FileManager.FileManager, (f) => f.list(["a"]))
        yield* Effect.flatMap(Chat.Chat, (c) => c.create(defaultChatParams))
        yield* Effect.flatMap(FileManager.FileManager, (f) => f.list(["b"]))
      }).pipe(Effect.provide(layer))
      const toGateway = seen.filter((r) => r.url.host === "gateway.test")
      const toInference = seen.filter((r) => r.url.host === "aifs.test")
      assert.strictEqual(toGateway.length, 3)
      assert.strictEqual(toInference.length, 1)
      for (const r of toGateway) assert.notInclude(JSON.stringify(r), "inference-key-xyz")
      for (const r of toInference) assert.notInclude(JSON.stringify(r), "gateway-token-abc")
      assert.strictEqual(toGateway[2]!.headers["authorization"], "Bearer gateway-token-abc")
      assert.strictEqual(toInference[0]!.headers["authorization"], "Bearer inference-key-xyz")
    }))

  it.effect("absolute URLs are refused instead of sent with the token", () =>
    Effect.gen(function*() {
      const { handler, seen } = world(() => ({}))
      const error = yield* Effect.flip(
        Effect.flatMap(Gateway.Gateway, (g) =>
          g.send(HttpClientRequest.get("https://elsewhere.example/steal"), Schema.Unknown)).pipe(
            Effect.provide(Testing.layerGatewayHttp(handler))
          )
      )
      assert.strictEqual(error._tag, "TransportError")
      assert.isFalse(seen.some((r) =>
        r.url.host === "elsewhere.example"
      ))
    }))

  it.effect("upload: one multipart request with a repeated files field and kb=local; polling repeats fileIds", () =>
    Effect.gen(function*() {
      const { handler, seen } = world((request) =>
        request.method === "POST"
          ? [{ fileId: "f1", status: "pending" }, { fileId: "f2", status: "pending" }]
          : [{ fileId: "f1", status: "uploaded", fileUri: "u1", extra: 1 }, { fileId: "f2", status: "new_status" }]
      )
      const [uploaded, listed] = yield* Effect.flatMap(FileManager.FileManager, (files) =>
        Effect.all([
          files.upload([{ name: "a.txt", content: "alpha" }, {
            name: "b.md",
            content: new TextEncoder().encode("beta")
          }]),
          files.list(["f1", "f2"])
        ])).pipe(Effect.provide(Testing.layerGatewayHttp(handler)))
      assert.deepStrictEqual(uploaded.map((f) => f.fileId), ["f1", "f2"])
      assert.isTrue(listed[0]!.isDone)
      assert.isFalse(listed[1]!.isDone || listed[1]!.isFailed, "an unknown status decodes and is neither")
      const post = seen.find((r) => r.method === "POST" && r.url.pathname === "/file-manager/api/v1/files/")!
      assert.strictEqual(post.url.search, "?kb=local")
      assert.match(post.headers["content-type"] ?? "", /^multipart\/form-data; boundary=/)
      const body = String(post.body)
      assert.strictEqual(body.split("name=\"files\"").length - 1, 2)
      assert.include(body, "filename=\"a.txt\"\r\ncontent-type: text/plain\r\n\r\nalpha\r\n")
      assert.include(body, "filename=\"b.md\"\r\ncontent-type: text/markdown\r\n\r\nbeta\r\n")
      const get = seen.find((r) => r.method === "GET")!
      assert.strictEqual(get.url.search, "?kb=local&fileIds=f1&fileIds=f2")
    }))

  it.effect("ingestion: the task body and the tasks query as documented", () =>
    Effect.gen(function*() {
      const { handler, seen } = world((request) =>
        request.path.endsWith("/task") ? { taskId: "t1" } : [{ status: "queued" }, { status: "ingested" }]
      )
      const [task, tasks] = yield* Effect.flatMap(IngestMaster.IngestMaster, (ingest) =>
        Effect.all([
          ingest.createTask({
            filePath: "local://u/f1/a.txt",
            role: "user",
            metadata: { file_id: "f1", user_id: "u", file_name: "a.txt", file_uri: "local://u/f1/a.txt" }
          }),
          ingest.tasksForFile("local://u/f1/a.txt")
        ])).pipe(Effect.provide(Testing.layerGatewayHttp(handler)))
      assert.strictEqual(task.status, "queued", "a task without status is queued")
      assert.isTrue(tasks[tasks.length - 1]!.isDone)
      const query = seen.find((r) => r.url.pathname === "/ingest-master/api/v1/tasks/file")!
      assert.strictEqual(query.method, "POST")
      assert.strictEqual(query.url.searchParams.get("file_path"), "local://u/f1/a.txt")
      assert.strictEqual(query.url.searchParams.get("role"), "user")
    }))

  it.effect("the query-pipeline path is configurable and a bare-string answer decodes", () =>
    Effect.gen(function*() {
      const { handler, seen } = world(() => JSON.stringify("The answer is 42."))
      const answer = yield* Effect.flatMap(QueryPipeline.QueryPipeline, (q) =>
        q.chat({ sessionId: "s1", userPrompt: "?" })).pipe(
          Effect.provide(Testing.layerGatewayHttp(handler, { config: { queryPipelinePath: "/query-pipelines/" } }))
        )
      assert.strictEqual(answer.text, "The answer is 42.")
      const chat = seen.find((r) =>
        r.method === "POST" && r.url.pathname.endsWith("/chat")
      )!
      assert.strictEqual(chat.url.pathname, "/query-pipelines/api/v1/chat")
      assert.deepStrictEqual(chat.body, { sessionId: "s1", userPrompt: "?" })
    }))

  it.effect("the escape hatch: service, route, repeated query, JSON body, typed answer", () =>
    Effect.gen(function*() {
      const { handler, seen } = world(() => ({ ok: true, n: 3 }))
      const value = yield* Gateway.request("user-manager", "POST", "/api/v1/anything", {
        body: { a: 1 },
        query: { ids: ["x", "y"], flag: true, skip: undefined },
        response: Schema.Struct({ n: Schema.Number })
      }).pipe(Effect.provide(Testing.layerGatewayHttp(handler)))
      assert.deepStrictEqual(value, { n: 3 })
      const sent = seen.find((r) => r.url.pathname === "/user-manager/api/v1/anything")!
      assert.strictEqual(sent.url.search, "?ids=x&ids=y&flag=true")
      assert.deepStrictEqual(sent.body, { a: 1 })
      assert.strictEqual(sent.headers["authorization"], "Bearer gateway-token-abc")
      const http = yield* Effect.provide(GatewayHttpClient, Testing.layerGatewayHttp(handler))
      assert.strictEqual(http.url, "http://gateway.test")
    }))

  it.effect("waitForIngestion polls the tasks until the last one is done, and gives up with Timeout", () =>
    Effect.gen(function*() {
      let polls = 0
      const { handler } = world((request) => {
        if (request.path !== "/ingest-master/api/v1/tasks/file") return []
        polls++
        const done = request.url.searchParams.get("file_path") === "local://done" && polls >= 3
        return [{ status: "queued" }, { status: done ? "ingested" : "ingesting" }]
      })
      yield* Effect.gen(function*() {
        const ingest = yield* IngestMaster.IngestMaster
        const fiber = yield* Effect.fork(ingest.waitForIngestion("local://done", { interval: "2 seconds" }))
        yield* TestClock.adjust("4 seconds")
        const task = yield* Fiber.join(fiber)
        assert.strictEqual(task.status, "ingested")
        assert.strictEqual(polls, 3, "polled at 0, 2 and 4 seconds")
        const late = yield* Effect.fork(
          Effect.flip(ingest.waitForIngestion("local://never", { interval: "2 seconds", timeout: "5 seconds" }))
        )
        yield* TestClock.adjust("5 seconds")
        const error = yield* Fiber.join(late)
        assert.strictEqual(error._tag, "Timeout")
        assert.match(error.message, /ingestion of local:\/\/never not finished within 5s/)
      }).pipe(Effect.provide(Testing.layerGatewayHttp(handler)))
    }))
})
