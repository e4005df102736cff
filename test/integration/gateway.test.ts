/**
 * The retrieval gateway against the emulator over loopback: the whole ingest -> session -> chat workflow,
 * per-user isolation, tokens that expire mid-workflow, roles, upload statuses, the generated OpenAPI
 * documents. Time (uploads, ingestion, token lifetime) runs on the TestClock.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as TestServices from "effect/TestServices"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as Node from "../../src/layers/Node.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Auth from "../../src/services/gateway/Auth.js"
import * as ChatSessions from "../../src/services/gateway/ChatSessions.js"
import * as FileManager from "../../src/services/gateway/FileManager.js"
import * as Gateway from "../../src/services/gateway/Gateway.js"
import { GatewayHttpClient } from "../../src/services/gateway/GatewayHttpClient.js"
import * as QueryPipeline from "../../src/services/gateway/QueryPipeline.js"
import * as Rag from "../../src/services/gateway/Rag.js"
import * as UserManager from "../../src/services/gateway/UserManager.js"

const handbook = {
  name: "falkenstein-handbook.txt",
  content: [
    "Welcome to the Falkenstein site. Visitors sign in at the front desk and wear a badge at all times.",
    "The access code for the Falkenstein archive room is 7319-KESTREL. Do not share it by e-mail.",
    "The canteen opens at 11:30 and closes at 14:00 on weekdays."
  ].join("\n\n")
}

const question = "What is the access code for the Falkenstein archive room?"

/**
 * Runs `effect` in a fiber while moving the TestClock forward one `step` at a time (with a short live pause
 * for the sockets): at most `steps` steps and 10 s of wall time.
 */
const withClock = <A, E, R>(effect: Effect.Effect<A, E, R>, step: Duration.DurationInput = "1 second", steps = 300) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(effect)
    const started = yield* TestServices.provideLive(Clock.currentTimeMillis)
    for (let i = 0; i < steps; i++) {
      if (Option.isSome(yield* Fiber.poll(fiber))) break
      if ((yield* TestServices.provideLive(Clock.currentTimeMillis)) - started > 10_000) break
      yield* TestServices.provideLive(Effect.sleep("10 millis"))
      yield* TestClock.adjust(step)
    }
    const done = yield* Fiber.poll(fiber)
    if (Option.isNone(done)) {
      yield* Fiber.interrupt(fiber)
      return yield* Effect.dieMessage("the workflow did not finish within the bounded clock steps")
    }
    return yield* Fiber.join(fiber)
  })

const fast = { gateway: { uploadDelay: "1 second", ingestDuration: "6 seconds" } } as const

describe("retrieval gateway (emulator)", () => {
  it.effect("ingest -> session -> chat answers from an uploaded file, naming it; a failed file does not fail the others", () =>
    Effect.gen(function*() {
      const events: Array<Rag.Progress> = []
      const outcomes = yield* withClock(Rag.ingest([
        handbook,
        { name: "tool.exe", content: "MZ binary" }
      ], { onProgress: (event) => Effect.sync(() => events.push(event)), interval: "1 second" }))
      assert.strictEqual(outcomes.length, 2)
      assert.isTrue(outcomes[0]!.ok, JSON.stringify(outcomes[0]))
      assert.strictEqual(outcomes[0]!.status, "ingested")
      assert.isFalse(outcomes[1]!.ok)
      assert.strictEqual(outcomes[1]!.stage, "upload")
      assert.strictEqual(outcomes[1]!.status, "file_type_not_supported")
      const statuses = events.filter((e) => e._tag === "UploadStatus" && e.name === handbook.name).map((e) =>
        e._tag === "UploadStatus" ? e.status : ""
      )
      assert.deepStrictEqual(statuses, ["pending", "uploaded"])
      const ingestStatuses = events.flatMap((e) => e._tag === "IngestStatus" ? [e.status] : [])
      assert.include(ingestStatuses, "ingesting")
      assert.strictEqual(ingestStatuses[ingestStatuses.length - 1], "ingested")
      assert.strictEqual(events.filter((e) => e._tag === "Finished").length, 2)

      const session = yield* Rag.openSession({ files: outcomes, title: "handbook" })
      assert.deepStrictEqual(session.config?.activeFiles, [outcomes[0]!.fileId!])
      const answer = yield* Rag.ask(session, question)
      assert.include(answer.text, "7319-KESTREL")
      assert.strictEqual(answer.sources?.[0]?.fileName, handbook.name)
      assert.include(answer.sources?.[0]?.passage ?? "", "7319-KESTREL")

      // a session over the global knowledge base does not see the user's file
      const global = yield* Rag.openSession({ global: true })
      const elsewhere = yield* Rag.ask(global, question)
      assert.notInclude(elsewhere.text, "7319-KESTREL")

      const history = yield* Effect.flatMap(ChatSessions.ChatSessions, (s) => s.get(session.sessionId))
      assert.deepStrictEqual(history.messages?.map((m) => m.role), ["user", "assistant"])
    }).pipe(Effect.provide(Testing.layerGatewayEmulator(fast))))

  it.effect("another user sees neither the file nor the session", () =>
    Effect.gen(function*() {
      const outcomes = yield* withClock(Rag.ingest([handbook], { interval: "1 second" }))
      const fileId = outcomes[0]!.fileId!
      const session = yield* Rag.openSession({ files: [fileId] })
      const emulator = yield* Emulator.Emulator
      const other = Node.layerGateway({ url: emulator.gatewayUrl, username: "other", password: "other-password" })
      yield* Effect.gen(function*() {
        const files = yield* FileManager.FileManager
        assert.deepStrictEqual(yield* files.list([fileId]), [])
        const sessions = yield* ChatSessions.ChatSessions
        assert.isFalse((yield* sessions.list()).some((s) => s.sessionId === session.sessionId))
        assert.strictEqual((yield* Effect.flip(sessions.get(session.sessionId)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(sessions.delete(session.sessionId)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(Rag.ask(session.sessionId, question)))._tag, "NotFound")
        assert.strictEqual((yield* Effect.flip(Rag.openSession({ files: [fileId] })))._tag, "NotFound")
        // the other user's own session over all of their (no) files knows nothing of it
        const own = yield* Rag.openSession({})
        assert.notInclude((yield* Rag.ask(own, question)).text, "7319-KESTREL")
      }).pipe(Effect.provide(other))
      // the owner still has both
      assert.strictEqual((yield* Effect.flatMap(FileManager.FileManager, (f) => f.list([fileId]))).length, 1)
      assert.include((yield* Rag.ask(session, question)).text, "7319-KESTREL")
    }).pipe(Effect.provide(Testing.layerGatewayEmulator(fast))))

  it.effect("tokens that expire mid-workflow are replaced transparently", () =>
    Effect.gen(function*() {
      const auth = yield* Auth.Auth
      // 5 s tokens, a workflow of about 30 s on the clock
      const outcomes = yield* withClock(Rag.ingest([handbook], { interval: "2 seconds" }))
      assert.isTrue(outcomes[0]!.ok)
      const stale = yield* auth.token()
      yield* TestClock.adjust("6 seconds")
      // the server refuses the stale token ...
      const http = yield* GatewayHttpClient
      const refused = yield* Effect.flip(
        http.json(HttpClientRequest.get("/config-manager/api/v1/user/configs"), Schema.Unknown, { token: stale })
      )
      assert.strictEqual(refused._tag, "Unauthorized")
      assert.include(refused.message, "expired")
      // ... while the client, asked again, logs in anew and goes on
      const session = yield* Rag.openSession({ files: outcomes })
      assert.include((yield* Rag.ask(session, question)).text, "7319-KESTREL")
      assert.isAtLeast(yield* auth.logins, 6, "the 30 s workflow needed several 5 s tokens")
    }).pipe(Effect.provide(Testing.layerGatewayEmulator({
      gateway: { tokenLifetime: "5 seconds", uploadDelay: "3 seconds", ingestDuration: "24 seconds" }
    }))))

  it.effect("a user without CHAT_USER logs in but gets Forbidden; a wrong password is Unauthorized", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const viewer = Node.layerGateway({ url: emulator.gatewayUrl, username: "viewer", password: "viewer-password" })
      const me = Effect.flatMap(UserManager.UserManager, (u) => u.me())
      assert.strictEqual((yield* Effect.flip(me.pipe(Effect.provide(viewer))))._tag, "Forbidden")
      const wrong = Node.layerGateway({ url: emulator.gatewayUrl, username: "demo", password: "nope" })
      const error = yield* Effect.flip(me.pipe(Effect.provide(wrong)))
      assert.strictEqual(error._tag, "Unauthorized")
      const demo = yield* me
      assert.strictEqual(demo.username, "demo")
      assert.deepStrictEqual(demo.roles, ["CHAT_USER"])
    }).pipe(Effect.provide(Testing.layerGatewayEmulator(fast))))

  it.effect("upload statuses: duplicated, file_too_large, file_type_not_supported", () =>
    Effect.gen(function*() {
      const files = yield* FileManager.FileManager
      const first = yield* files.upload([{ name: "a.txt", content: "alpha beta gamma" }])
      const second = yield* files.upload([
        { name: "a-copy.txt", content: "alpha beta gamma" },
        { name: "big.txt", content: "x".repeat(200) },
        { name: "image.png", content: "png" }
      ])
      assert.strictEqual(first[0]!.status, "pending")
      const done = yield* withClock(files.waitForUploads([first[0]!, ...second].map((f) => f.fileId), {
        interval: "500 millis"
      }))
      assert.deepStrictEqual(done.map((f) => f.status), [
        "uploaded",
        "duplicated",
        "file_too_large",
        "file_type_not_supported"
      ])
      assert.strictEqual(done[1]!.fileUri, done[0]!.fileUri)
    }).pipe(Effect.provide(Testing.layerGatewayEmulator({ gateway: { maxFileBytes: 100 } }))))

  it.effect("the guides' query-pipelines path is accepted; the escape hatch reaches any route", () =>
    Effect.gen(function*() {
      const pipeline = yield* QueryPipeline.QueryPipeline
      assert.strictEqual(pipeline.path, "query-pipelines")
      const session = yield* Rag.openSession({ global: true })
      const answer = yield* Rag.ask(session, "Where does AI Foundation Services host models?")
      assert.include(answer.text, "Germany")
      const user = yield* Gateway.request("user-manager", "GET", "/api/v1/users/me", {
        response: Schema.Struct({ username: Schema.String })
      })
      assert.strictEqual(user.username, "demo")
      const missing = yield* Effect.flip(
        Gateway.request("user-manager", "GET", "/api/v1/nothing-here", { response: Schema.Unknown })
      )
      assert.strictEqual(missing._tag, "NotFound")
    }).pipe(Effect.provide(Testing.layerGatewayEmulator({ client: { queryPipelinePath: "query-pipelines" } }))))

  it.effect("each service serves redoc and an OpenAPI document generated from the served routes", () =>
    Effect.gen(function*() {
      const emulator = yield* Emulator.Emulator
      const get = (path: string) =>
        Effect.promise(() =>
          fetch(`${emulator.gatewayUrl}${path}`).then(async (r) => ({ status: r.status, text: await r.text() }))
        )
      const services = [
        "config-manager",
        "user-manager",
        "file-manager",
        "ingest-master",
        "chat-session-manager",
        "query-pipeline"
      ]
      for (const service of services) {
        const redoc = yield* get(`/${service}/redoc`)
        assert.strictEqual(redoc.status, 200)
        assert.include(redoc.text, "openapi.json")
        const doc = JSON.parse((yield* get(`/${service}/openapi.json`)).text) as {
          openapi: string
          paths: Record<string, Record<string, { "x-documented": boolean }>>
        }
        assert.strictEqual(doc.openapi, "3.1.0")
        // every documented operation is served: a request without a token meets 401, not 404
        for (const [path, operations] of Object.entries(doc.paths)) {
          for (const method of Object.keys(operations)) {
            const url = `${emulator.gatewayUrl}/${service}${path.replace(/\{[^}]+\}/g, "x")}`
            const status = yield* Effect.promise(() =>
              fetch(url, { method: method.toUpperCase() }).then((r) => r.status)
            )
            assert.strictEqual(status, 401, `${method} ${service}${path}`)
          }
        }
      }
      const files = JSON.parse((yield* get("/file-manager/openapi.json")).text) as {
        paths: Record<string, Record<string, unknown>>
      }
      assert.deepStrictEqual(Object.keys(files.paths["/api/v1/files/"]!).sort(), ["get", "post"])
      const root = JSON.parse((yield* get("/openapi.json")).text) as { paths: Record<string, unknown> }
      assert.deepStrictEqual(Object.keys(root.paths), ["/api/v1/auth/user"])
    }).pipe(Effect.provide(Testing.layerGatewayEmulator())))
})
