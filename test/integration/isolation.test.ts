/**
 * Isolation and token checks on the wire: one key never reaches another key's files, fine-tuning jobs or
 * vector stores (every route answers 404 as if they did not exist, lists leave them out), one gateway user
 * never reaches another's files, ingestion tasks or sessions, and a gateway token that was tampered with,
 * signed elsewhere or has expired is refused with 401. Raw requests over loopback.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as Emulator from "../../src/emulator/Emulator.js"
import { detailOf, type RawReply, send } from "../helpers/rawHttp.js"

const jsonHeaders = { "content-type": "application/json" }

const training = JSON.stringify({
  messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }]
})

const form = (
  fields: Record<string, string>,
  file: { readonly field: string; readonly name: string; readonly content: string }
) =>
  Buffer.from(
    Object.entries(fields).map(([name, value]) =>
      `--XX\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
    ).join("") +
      `--XX\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.name}"\r\n` +
      `Content-Type: text/plain\r\n\r\n${file.content}\r\n--XX--\r\n`
  )

const multipartHeaders = { "content-type": "multipart/form-data; boundary=XX" }

const body = (reply: RawReply) => JSON.parse(reply.text) as Record<string, unknown>

/** A client of one credential: JSON in, checked status out. */
const clientOf = (origin: string, credential: string) => {
  const request = (method: string, path: string, payload?: unknown) =>
    send(origin, {
      method,
      path,
      headers: { authorization: `Bearer ${credential}`, ...(payload === undefined ? {} : jsonHeaders) },
      body: payload === undefined ? undefined : JSON.stringify(payload)
    })
  /** The request must answer `status` (with a `detail` when it is an error); gives the body. */
  const expect = (status: number, method: string, path: string, payload?: unknown) =>
    Effect.map(request(method, path, payload), (reply) => {
      assert.strictEqual(reply.status, status, `${method} ${path}: ${reply.text}`)
      if (status >= 400) assert.isDefined(detailOf(reply), `${method} ${path}: ${reply.text}`)
      return reply.text === "" ? {} : JSON.parse(reply.text) as unknown
    })
  const upload = (path: string, fields: Record<string, string>, file: Parameters<typeof form>[1]) =>
    Effect.map(
      send(origin, {
        method: "POST",
        path,
        headers: { authorization: `Bearer ${credential}`, ...multipartHeaders },
        body: form(fields, file)
      }),
      (reply) => {
        assert.strictEqual(reply.status, 200, `upload to ${path}: ${reply.text}`)
        return body(reply)
      }
    )
  return { expect, upload }
}

const ids = (list: unknown) => (list as { data: ReadonlyArray<{ id: string }> }).data.map((item) => item.id)

describe("per-key isolation", () => {
  it.effect("another key meets 404 on every route of a key's files, jobs and vector stores; its lists leave them out", () =>
    Effect.gen(function*() {
      const em = yield* Emulator.Emulator
      const a = clientOf(em.url, em.keyFor("standard4000")!)
      const b = clientOf(em.url, em.keyFor("basic")!)

      // key A: a fine-tune file, a visual-rag file, a job, a store holding a file
      const tuneFile = String(
        (yield* a.upload("/v2/files", { purpose: "fine-tune" }, {
          field: "file",
          name: "train.jsonl",
          content: training
        }))["id"]
      )
      const ragFile = String(
        (yield* a.upload("/v1/files", { purpose: "visual-rag" }, {
          field: "file",
          name: "notes.txt",
          content: "The archive code is 7319."
        }))["id"]
      )
      const job = String(
        ((yield* a.expect(200, "POST", "/v2/fine_tuning/jobs", {
          model: "Llama-3.3-70B-Instruct",
          training_file: tuneFile
        })) as { id: string }).id
      )
      const store = String(
        ((yield* a.expect(200, "POST", "/v1/vector_stores", { name: "private" })) as { id: string }).id
      )
      yield* a.expect(200, "POST", `/v1/vector_stores/${store}/files`, { file_id: ragFile })

      // key B sees none of it
      for (const [base, file] of [["/v2", tuneFile], ["/v1", ragFile]] as const) {
        yield* b.expect(404, "GET", `${base}/files/${file}`)
        yield* b.expect(404, "GET", `${base}/files/validate/${file}`)
        yield* b.expect(404, "DELETE", `${base}/files/${file}`)
        assert.deepStrictEqual(ids(yield* b.expect(200, "GET", `${base}/files`)), [])
      }
      yield* b.expect(404, "GET", `/v2/fine_tuning/jobs/${job}`)
      yield* b.expect(404, "GET", `/v2/fine_tuning/jobs/${job}/events`)
      yield* b.expect(404, "POST", `/v2/fine_tuning/jobs/${job}/cancel`)
      assert.deepStrictEqual(ids(yield* b.expect(200, "GET", "/v2/fine_tuning/jobs")), [])
      // nor can B train on A's file
      yield* b.expect(404, "POST", "/v2/fine_tuning/jobs", { model: "Llama-3.3-70B-Instruct", training_file: tuneFile })
      yield* b.expect(404, "GET", `/v1/vector_stores/${store}`)
      yield* b.expect(404, "DELETE", `/v1/vector_stores/${store}`)
      yield* b.expect(404, "GET", `/v1/vector_stores/${store}/files`)
      yield* b.expect(404, "GET", `/v1/vector_stores/${store}/files/${ragFile}`)
      yield* b.expect(404, "DELETE", `/v1/vector_stores/${store}/files/${ragFile}`)
      yield* b.expect(404, "POST", `/v1/vector_stores/${store}/files`, { file_id: ragFile })
      yield* b.expect(404, "POST", `/v1/vector_stores/${store}/search`, { query: "archive code" })
      assert.deepStrictEqual(ids(yield* b.expect(200, "GET", "/v1/vector_stores")), [])
      // B's own store with the same name is B's: names are unique per key, and A's file cannot go into it
      const own = String(
        ((yield* b.expect(200, "POST", "/v1/vector_stores", { name: "private" })) as { id: string }).id
      )
      yield* b.expect(404, "POST", `/v1/vector_stores/${own}/files`, { file_id: ragFile })

      // A still has all of it: the 404s were B's view, not a loss
      assert.deepStrictEqual(ids(yield* a.expect(200, "GET", "/v2/files")), [tuneFile])
      assert.deepStrictEqual(ids(yield* a.expect(200, "GET", "/v1/files")), [ragFile])
      assert.deepStrictEqual(ids(yield* a.expect(200, "GET", "/v2/fine_tuning/jobs")), [job])
      assert.deepStrictEqual(ids(yield* a.expect(200, "GET", "/v1/vector_stores")), [store])
      assert.deepStrictEqual(ids(yield* a.expect(200, "GET", `/v1/vector_stores/${store}/files`)), [ragFile])
      yield* a.expect(200, "POST", `/v1/vector_stores/${store}/search`, { query: "archive code" })
      yield* a.expect(200, "POST", `/v2/fine_tuning/jobs/${job}/cancel`)
      yield* a.expect(200, "DELETE", `/v1/vector_stores/${store}`)
    }).pipe(Effect.provide(Emulator.layer())))
})

const login = (origin: string, username: string, password: string) =>
  Effect.map(
    send(origin, {
      method: "POST",
      path: "/gateway/api/v1/auth/user",
      headers: jsonHeaders,
      body: JSON.stringify({ username, password })
    }),
    (reply) => {
      assert.strictEqual(reply.status, 200, reply.text)
      return String(body(reply)["access_token"])
    }
  )

describe("per-user isolation on the gateway", () => {
  it.effect("another user meets 404 or an empty list for a user's files, tasks, sessions and config", () =>
    Effect.gen(function*() {
      const em = yield* Emulator.Emulator
      const demo = clientOf(em.url, yield* login(em.url, "demo", "demo-password"))
      const other = clientOf(em.url, yield* login(em.url, "other", "other-password"))

      const [record] = (yield* demo.upload("/gateway/file-manager/api/v1/files/", {}, {
        field: "files",
        name: "secret.txt",
        content: "The archive code is 7319."
      })) as unknown as ReadonlyArray<{ fileId: string; fileUri: string }>
      const { fileId, fileUri } = record!
      yield* TestClock.adjust("2 seconds")
      const task = {
        filePath: fileUri,
        role: "CHAT_USER",
        metadata: { file_id: fileId, user_id: "user-0001", file_name: "secret.txt", file_uri: fileUri }
      }
      yield* demo.expect(200, "POST", "/gateway/ingest-master/api/v1/task", task)
      const session = String(
        ((yield* demo.expect(200, "POST", "/gateway/chat-session-manager/api/v1/sessions/", {
          title: "mine",
          config: { activeFiles: [fileId] }
        })) as { sessionId: string }).sessionId
      )
      const configs = (yield* demo.expect(200, "GET", "/gateway/config-manager/api/v1/user/configs")) as ReadonlyArray<
        { localKbConfigs: ReadonlyArray<{ id: string }> }
      >
      const demoConfig = configs[0]!.localKbConfigs[0]!.id

      const files = "/gateway/file-manager/api/v1/files/"
      assert.deepStrictEqual(yield* other.expect(200, "GET", `${files}?fileIds=${fileId}`), [])
      assert.deepStrictEqual(yield* other.expect(200, "GET", files), [])
      yield* other.expect(404, "POST", "/gateway/ingest-master/api/v1/task", task)
      const tasks = `/gateway/ingest-master/api/v1/tasks/file?file_path=${encodeURIComponent(fileUri)}`
      assert.deepStrictEqual(yield* other.expect(200, "POST", tasks), [])
      const sessions = "/gateway/chat-session-manager/api/v1/sessions/"
      assert.deepStrictEqual(yield* other.expect(200, "GET", sessions), [])
      yield* other.expect(404, "GET", `${sessions}${session}`)
      yield* other.expect(404, "DELETE", `${sessions}${session}`)
      yield* other.expect(404, "POST", sessions, { config: { activeFiles: [fileId] } })
      yield* other.expect(404, "POST", sessions, { config: { localConfigId: demoConfig } })
      for (const pipeline of ["query-pipeline", "query-pipelines"]) {
        yield* other.expect(404, "POST", `/gateway/${pipeline}/api/v1/chat`, {
          sessionId: session,
          userPrompt: "code?"
        })
      }

      // the owner still has all of it
      assert.lengthOf((yield* demo.expect(200, "GET", `${files}?fileIds=${fileId}`)) as ReadonlyArray<unknown>, 1)
      assert.lengthOf((yield* demo.expect(200, "POST", tasks)) as ReadonlyArray<unknown>, 1)
      yield* demo.expect(200, "GET", `${sessions}${session}`)
    }).pipe(Effect.provide(Emulator.layer())))
})

/** `token` with the character at `index` of part `part` (0 header, 1 claims, 2 signature) changed. */
const tamper = (token: string, part: number, index: number) => {
  const parts = token.split(".")
  const text = parts[part]!
  const at = index < 0 ? text.length + index : index
  parts[part] = text.slice(0, at) + (text[at] === "A" ? "B" : "A") + text.slice(at + 1)
  return parts.join(".")
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

describe("gateway tokens", () => {
  it.effect("a token changed in any part, re-assembled, unsigned or signed elsewhere is 401", () =>
    Effect.gen(function*() {
      const em = yield* Emulator.Emulator
      const token = yield* login(em.url, "demo", "demo-password")
      const otherToken = yield* login(em.url, "other", "other-password")
      const [header, claims, signature] = token.split(".") as [string, string, string]
      const decoded = JSON.parse(Buffer.from(claims, "base64url").toString("utf8")) as Record<string, unknown>
      const foreign = yield* Effect.provide(
        Effect.flatMap(Emulator.Emulator, (elsewhere) => login(elsewhere.url, "demo", "demo-password")),
        Emulator.layer()
      )
      const forged = [
        ...[0, 5, -1].map((i) => [`header char ${i}`, tamper(token, 0, i)] as const),
        ...[0, 10, 20, -2, -1].map((i) => [`claims char ${i}`, tamper(token, 1, i)] as const),
        ...[0, 10, -2, -1].map((i) => [`signature char ${i}`, tamper(token, 2, i)] as const),
        [
          "claims for another user",
          `${header}.${b64({ ...decoded, username: "other", sub: "user-0002" })}.${signature}`
        ],
        ["claims that never expire", `${header}.${b64({ ...decoded, exp: 4_102_444_800 })}.${signature}`],
        ["another user's signature", `${header}.${claims}.${otherToken.split(".")[2]}`],
        ["alg none, no signature", `${b64({ alg: "none", typ: "JWT" })}.${claims}.`],
        ["no signature part", `${header}.${claims}`],
        ["a signature only", signature],
        ["four parts", `${token}.x`],
        ["a token of another emulator", foreign],
        ["lower-case copy", token.toLowerCase()]
      ] as const
      const me = "/gateway/user-manager/api/v1/users/me"
      const ok = yield* send(em.url, { method: "GET", path: me, headers: { authorization: `Bearer ${token}` } })
      assert.strictEqual(ok.status, 200)
      for (const [what, credential] of forged) {
        assert.notStrictEqual(credential, token, what)
        const reply = yield* send(em.url, {
          method: "GET",
          path: me,
          headers: { authorization: `Bearer ${credential}` }
        })
        assert.strictEqual(reply.status, 401, `${what}: ${reply.text}`)
        assert.strictEqual(detailOf(reply), "Could not validate credentials", what)
      }
    }).pipe(Effect.provide(Emulator.layer())))

  it.effect("a token is accepted until its lifetime ends on the emulator's clock, then 401 'expired'", () =>
    Effect.gen(function*() {
      const em = yield* Emulator.Emulator
      const token = yield* login(em.url, "demo", "demo-password")
      const me = () =>
        send(em.url, {
          method: "GET",
          path: "/gateway/user-manager/api/v1/users/me",
          headers: { authorization: `Bearer ${token}` }
        })
      yield* TestClock.adjust("9 seconds")
      assert.strictEqual((yield* me()).status, 200)
      yield* TestClock.adjust("1 second")
      const expired = yield* me()
      assert.strictEqual(expired.status, 401)
      assert.strictEqual(detailOf(expired), "Token has expired")
      // a fresh login gives a working token again
      const fresh = yield* login(em.url, "demo", "demo-password")
      const again = yield* send(em.url, {
        method: "GET",
        path: "/gateway/user-manager/api/v1/users/me",
        headers: { authorization: `Bearer ${fresh}` }
      })
      assert.strictEqual(again.status, 200)
    }).pipe(Effect.provide(Emulator.layer({ gateway: { tokenLifetime: "10 seconds" } }))))
})
