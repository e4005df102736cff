/**
 * Client mistakes on the wire, route by route: every route of the emulator's route table meets wrong
 * methods, missing or wrong credentials, odd ids, malformed and mistyped JSON, oversized bodies, broken
 * multipart and bad query parameters, and answers the exact 4xx with a FastAPI `detail`, never a 500, never
 * a hang. Raw requests over loopback (`node:http`, so that paths go out byte for byte), not the typed client.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import { existsSync } from "node:fs"
import { connect } from "node:net"
import { resolve } from "node:path"
import * as App from "../../src/emulator/app.js"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as GatewayRoutes from "../../src/emulator/gateway/routes.js"
import { JsonBodyLimit } from "../../src/emulator/http.js"
import { EmulatorState } from "../../src/emulator/state.js"
import { abandon, detailOf, type RawReply, type RawRequest, send, stream } from "../helpers/rawHttp.js"

// ---------------------------------------------------------------------------------------------------------
// The route table, read from the router the application serves
// ---------------------------------------------------------------------------------------------------------

interface Route {
  readonly method: string
  readonly path: string
}

const tableState = new EmulatorState()

const routeTable: ReadonlyArray<Route> = Chunk.toReadonlyArray(App.router(tableState).routes).map((route) => ({
  method: route.method,
  path: route.path
}))

const gatewayDefs = GatewayRoutes.routes(tableState.gateway)

const gatewayDef = (route: Route) =>
  gatewayDefs.find((def) =>
    def.method === route.method && `/gateway${def.service === "" ? "" : `/${def.service}`}${def.path}` === route.path
  )

const isGateway = (route: Route) => route.path.startsWith("/gateway")

type BodyKind = "json" | "multipart" | "none"

/** The gateway's table says what each route reads; on the inference side uploads are the multipart routes. */
const bodyOf = (route: Route): BodyKind => {
  if (isGateway(route)) {
    const body = gatewayDef(route)?.body
    return body === undefined ? "none" : body === "multipart" ? "multipart" : "json"
  }
  if (route.method !== "POST") return "none"
  if (/^\/(v1|v2|queue)\/(files|audio\/transcriptions|audio\/translations|images\/edits)$/.test(route.path)) {
    return "multipart"
  }
  return route.path.endsWith("/cancel") ? "none" : "json"
}

/** Everything but the gateway's login and its documentation pages needs credentials. */
const needsAuth = (route: Route) => !isGateway(route) || (gatewayDef(route)?.auth ?? false)

const hasParams = (route: Route) => route.path.includes("/:")

const label = (route: Route) => `${route.method} ${route.path}`

// ---------------------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------------------

const uploadLimit = 10_000

/** A fresh emulator per test, with small upload limits so that 413s cost little. */
const emulator = () => Emulator.layer({ maxUploadBytes: uploadLimit, gateway: { maxRequestBytes: uploadLimit } })

const jsonHeaders = { "content-type": "application/json" }

const training = [
  { messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello" }] }
].map((line) => JSON.stringify(line)).join("\n")

interface FormPart {
  readonly name: string
  readonly filename?: string | undefined
  /** Raw `content-disposition` parameters instead of `filename`. */
  readonly disposition?: string | undefined
  readonly content: string | Uint8Array
}

/** A multipart body with boundary `XX`; `close: false` leaves out the closing delimiter. */
const form = (
  parts: ReadonlyArray<FormPart>,
  options: { readonly close?: boolean; readonly boundary?: string } = {}
) => {
  const boundary = options.boundary ?? "XX"
  const pieces: Array<Buffer> = []
  for (const part of parts) {
    const file = part.disposition ?? (part.filename === undefined ? "" : `; filename="${part.filename}"`)
    pieces.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"${file}\r\n`))
    if (part.filename !== undefined || part.disposition !== undefined) {
      pieces.push(Buffer.from("Content-Type: application/octet-stream\r\n"))
    }
    pieces.push(Buffer.from("\r\n"), Buffer.from(part.content), Buffer.from("\r\n"))
  }
  if (options.close !== false) pieces.push(Buffer.from(`--${boundary}--\r\n`))
  return Buffer.concat(pieces)
}

const multipartHeaders = { "content-type": "multipart/form-data; boundary=XX" }

interface Fixture {
  readonly origin: string
  readonly key: string
  readonly token: string
  readonly storeId: string
  readonly jobId: string
}

const json = (reply: RawReply) => JSON.parse(reply.text) as Record<string, unknown>

/** Credentials, a vector store and a fine-tuning job to aim the requests at. */
const fixture: Effect.Effect<Fixture, Error, Emulator.Emulator> = Effect.gen(function*() {
  const em = yield* Emulator.Emulator
  const key = em.keyFor("standard4000")!
  const auth = { authorization: `Bearer ${key}` }
  const login = yield* send(em.url, {
    method: "POST",
    path: "/gateway/api/v1/auth/user",
    headers: jsonHeaders,
    body: JSON.stringify({ username: "demo", password: "demo-password" })
  })
  const store = yield* send(em.url, {
    method: "POST",
    path: "/v1/vector_stores",
    headers: { ...auth, ...jsonHeaders },
    body: JSON.stringify({ name: "fixture" })
  })
  const file = yield* send(em.url, {
    method: "POST",
    path: "/v2/files",
    headers: { ...auth, ...multipartHeaders },
    body: form([{ name: "purpose", content: "fine-tune" }, {
      name: "file",
      filename: "train.jsonl",
      content: training
    }])
  })
  const job = yield* send(em.url, {
    method: "POST",
    path: "/v2/fine_tuning/jobs",
    headers: { ...auth, ...jsonHeaders },
    body: JSON.stringify({ model: "Llama-3.3-70B-Instruct", training_file: json(file)["id"] })
  })
  for (const reply of [login, store, file, job]) assert.strictEqual(reply.status, 200, reply.text)
  return {
    origin: em.url,
    key,
    token: String(json(login)["access_token"]),
    storeId: String(json(store)["id"]),
    jobId: String(json(job)["id"])
  }
})

const authOf = (fx: Fixture, route: Route): Record<string, string> =>
  !needsAuth(route) ? {} : { authorization: `Bearer ${isGateway(route) ? fx.token : fx.key}` }

/** The route's path with every parameter set to `value`. */
const fill = (route: Route, value: string) => route.path.replace(/:[A-Za-z_]+/g, value)

/** The route's path aimed at the fixture: the store and job ids, unknown ids elsewhere. */
const aimed = (fx: Fixture, route: Route) =>
  route.path
    .replace(/^\/v1\/vector_stores\/:id/, `/v1/vector_stores/${fx.storeId}`)
    .replace(/^\/v2\/fine_tuning\/jobs\/:id/, `/v2/fine_tuning/jobs/${fx.jobId}`)
    .replace(/:[A-Za-z_]+/g, "missing")

// ---------------------------------------------------------------------------------------------------------
// Running a table of cases
// ---------------------------------------------------------------------------------------------------------

interface Case {
  readonly name: string
  readonly request: RawRequest
  readonly status: number
}

/** What is wrong with a reply: not the expected status, or a 4xx without a `detail`. */
const problem = (kase: Case, reply: RawReply): string | undefined => {
  if (reply.status !== kase.status) {
    return `${kase.name}: expected ${kase.status}, got ${reply.status} ${reply.text.slice(0, 200)}`
  }
  if (reply.status >= 400 && detailOf(reply) === undefined) {
    return `${kase.name}: no detail in ${reply.text.slice(0, 200)}`
  }
  return undefined
}

/** Sends every case (one at a time) and lists the mismatches: the test expects none. */
const runCases = (origin: string, cases: ReadonlyArray<Case>) =>
  Effect.gen(function*() {
    const problems: Array<string> = []
    for (const kase of cases) {
      const reply = yield* send(origin, kase.request)
      const wrong = problem(kase, reply)
      if (wrong !== undefined) problems.push(wrong)
    }
    return problems
  })

const oddIds: ReadonlyArray<readonly [string, string]> = [
  ["an encoded traversal", "..%2F..%2Fetc%2Fpasswd"],
  ["an encoded dot-dot traversal", "%2e%2e%2F%2e%2e%2Fetc%2Fpasswd"],
  ["a dot-dot segment", ".."],
  ["a NUL byte", "file%00.txt"],
  ["a lone percent sign", "%"],
  ["invalid UTF-8", "%E0%A4"],
  ["an emoji", "%F0%9F%92%A9"],
  ["shell and SQL metacharacters", "%24(rm%20-rf)%27%20OR%201%3D1"],
  ["a 101-character id", "x".repeat(101)],
  ["a 4000-character id", "x".repeat(4000)]
]

describe("the route table", () => {
  it("covers every mount point and both body kinds", () => {
    for (const prefix of ["/v2/", "/queue/", "/v1/", "/gateway/"]) {
      assert.isTrue(routeTable.some((route) => route.path.startsWith(prefix)), prefix)
    }
    assert.isAbove(routeTable.filter((route) => bodyOf(route) === "json").length, 10)
    assert.isAbove(routeTable.filter((route) => bodyOf(route) === "multipart").length, 5)
  })

  it.effect("is what the emulator serves: every route answers its own method (401 without credentials)", () =>
    Effect.gen(function*() {
      const em = yield* Emulator.Emulator
      const cases = routeTable.map((route): Case => ({
        name: label(route),
        request: { method: route.method, path: fill(route, "x"), headers: jsonHeaders, body: "{}" },
        status: needsAuth(route) ? 401 : route.method === "POST" ? 422 : 200
      }))
      assert.deepStrictEqual(yield* runCases(em.url, cases), [])
    }).pipe(Effect.provide(emulator())))
})

describe("bad input on every route", () => {
  it.effect("a method the path does not serve is 405; an unknown path is 404", () =>
    Effect.gen(function*() {
      const em = yield* Emulator.Emulator
      const cases = routeTable.flatMap((route) => {
        const served = routeTable.filter((other) => other.path === route.path).map((other) => other.method)
        const wrong = ["PUT", "PATCH", "GET", "POST", "DELETE"].filter((method) => !served.includes(method))
        return wrong.map((method): Case => ({
          name: `${method} on ${label(route)}`,
          request: { method, path: fill(route, "x") },
          status: 405
        }))
      })
      const unknown = [
        "/",
        "/v1",
        "/v2",
        "/queue",
        "/gateway",
        "/v3/models",
        "/v2/nothing",
        "/v1/nothing",
        "/queue/nothing",
        "/queue/fine_tuning/jobs",
        "/gateway/nothing",
        "/gateway/file-manager/api/v1/nothing",
        "/v2/models/a/b",
        "/v2/%2e%2e/etc/passwd",
        "/v2/files/%"
      ].flatMap((path) =>
        ["GET", "POST"].map((method): Case => ({ name: `${method} ${path}`, request: { method, path }, status: 404 }))
      )
      assert.isAbove(cases.length, routeTable.length)
      assert.deepStrictEqual(yield* runCases(em.url, [...cases, ...unknown]), [])
    }).pipe(Effect.provide(emulator())))

  it.effect("what Node rejects before the app (headers over 16 KiB, a malformed request line) still gets a detail", () =>
    Effect.gen(function*() {
      const em = yield* Emulator.Emulator
      const long = yield* send(em.url, { method: "GET", path: `/v2/models?q=${"a".repeat(20_000)}` })
      assert.strictEqual(long.status, 431)
      assert.isString(detailOf(long))
      const { port } = new URL(em.url)
      const garbled = yield* Effect.async<string, Error>((resume) => {
        const socket = connect(Number(port), "127.0.0.1", () => socket.end("GARBAGE \x01 HTTP/9\r\n\r\n"))
        const chunks: Array<Buffer> = []
        socket.setTimeout(5_000, () => socket.destroy(new Error("no answer within 5 s")))
        socket.on("data", (chunk: Buffer) => chunks.push(chunk))
        socket.on("close", () => resume(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
        socket.on("error", (error) => resume(Effect.fail(error)))
        return Effect.sync(() => socket.destroy())
      })
      assert.match(garbled, /^HTTP\/1\.1 400 /)
      assert.include(garbled, "\"detail\"")
    }).pipe(Effect.provide(emulator())))

  it.effect("no credentials, an unknown key or a malformed token is 401", () =>
    Effect.gen(function*() {
      const em = yield* Emulator.Emulator
      const cases = routeTable.filter(needsAuth).flatMap((route): Array<Case> => {
        const request = (headers: Record<string, string>): RawRequest => ({
          method: route.method,
          path: fill(route, "x"),
          headers: { ...jsonHeaders, ...headers },
          body: "{}"
        })
        return [
          { name: `no credentials: ${label(route)}`, request: request({}), status: 401 },
          {
            name: `unknown credentials: ${label(route)}`,
            request: request({ authorization: isGateway(route) ? "Bearer a.b.c" : "Bearer gen-not-a-key" }),
            status: 401
          },
          {
            name: `not a bearer header: ${label(route)}`,
            request: request({ authorization: "Basic ZGVtbzpkZW1vLXBhc3N3b3Jk" }),
            status: 401
          }
        ]
      })
      assert.deepStrictEqual(yield* runCases(em.url, cases), [])
    }).pipe(Effect.provide(emulator())))

  it.effect("ids with traversals, NUL, bad encodings or 4000 characters are 404 (names only, nothing opened)", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      const cases = routeTable.filter(hasParams).flatMap((route) =>
        oddIds.map(([what, id]): Case => ({
          name: `${what} in ${label(route)}`,
          request: {
            method: route.method,
            path: fill(route, id),
            headers: { ...authOf(fx, route), ...jsonHeaders },
            body: route.method === "POST" ? "{}" : undefined
          },
          status: 404
        }))
      )
      assert.isAbove(cases.length, 100)
      assert.deepStrictEqual(yield* runCases(fx.origin, cases), [])
    }).pipe(Effect.provide(emulator())))

  it.effect("malformed JSON, JSON of the wrong type and missing or mistyped fields are 422", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      const every = (value: unknown) =>
        JSON.stringify(Object.fromEntries(
          [
            "model",
            "messages",
            "prompt",
            "input",
            "name",
            "file_id",
            "query",
            "training_file",
            "username",
            "password",
            "config",
            "filePath",
            "role",
            "metadata",
            "sessionId",
            "userPrompt",
            "title"
          ].map((field) => [field, value])
        ))
      const bodies: ReadonlyArray<readonly [string, string | Uint8Array]> = [
        ["an empty body", ""],
        ["truncated JSON", "{\"model\": \"Llama"],
        ["form encoding", "model=x&messages=y"],
        ["an array", "[]"],
        ["a string", "\"text\""],
        ["a number", "42"],
        ["null", "null"],
        ["a boolean", "true"],
        ["an empty object", "{}"],
        ["two documents", "{} {}"],
        ["invalid UTF-8", Uint8Array.of(0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d)],
        ["arrays nested 300 deep", "[".repeat(300) + "]".repeat(300)],
        ["objects nested 300 deep", "{\"a\":".repeat(300) + "1" + "}".repeat(300)],
        ["every field a number", every(5)],
        ["every field null", every(null)],
        ["every field an object", every({ nested: [1, 2] })]
      ]
      const routes = routeTable.filter((route) => bodyOf(route) === "json")
      const cases = routes.flatMap((route) =>
        bodies.map(([what, body]): Case => ({
          name: `${what} to ${label(route)}`,
          request: {
            method: route.method,
            path: aimed(fx, route),
            headers: { ...authOf(fx, route), ...jsonHeaders },
            body
          },
          status: 422
        }))
      )
      assert.deepStrictEqual(yield* runCases(fx.origin, cases), [])
    }).pipe(Effect.provide(emulator())))

  it.effect("specific wrong values: 400 or 422 with the field named, never a 200 or a 500", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      const chat = { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: "hi" }] }
      const inference = (path: string, body: unknown, status: number): Case => ({
        name: `${path} ${JSON.stringify(body).slice(0, 120)}`,
        request: {
          method: "POST",
          path,
          headers: { authorization: `Bearer ${fx.key}`, ...jsonHeaders },
          body: typeof body === "string" ? body : JSON.stringify(body)
        },
        status
      })
      // a JSON schema nested far deeper than any real one (it used to exhaust the stack of the tool-call planner)
      const deepSchema = "{\"type\":\"object\",\"properties\":{\"a\":".repeat(5000) + "{}" + "}}".repeat(5000)
      const cases = [
        inference(
          "/v2/chat/completions",
          `{"model":"Llama-3.3-70B-Instruct","messages":[{"role":"user","content":"call f"}],` +
            `"tools":[{"type":"function","function":{"name":"f","parameters":${deepSchema}}}],"tool_choice":"required"}`,
          422
        ),
        inference(
          "/v2/responses",
          `{"model":"gpt-4.1","input":"call f","tools":[{"type":"function","name":"f","parameters":${deepSchema}}],` +
            `"tool_choice":"required"}`,
          422
        ),
        inference("/v2/chat/completions", { ...chat, messages: "hi" }, 422),
        inference("/v2/chat/completions", { ...chat, messages: [] }, 400),
        inference("/v2/chat/completions", { ...chat, messages: [{ role: "wizard", content: "hi" }] }, 422),
        inference("/v2/chat/completions", { ...chat, messages: [{ role: "user" }] }, 422),
        inference("/v2/chat/completions", { ...chat, max_tokens: -5 }, 400),
        inference("/v2/chat/completions", { ...chat, max_tokens: 0 }, 400),
        inference("/v2/chat/completions", { ...chat, max_tokens: 1.5 }, 400),
        inference("/v2/chat/completions", { ...chat, max_tokens: "ten" }, 422),
        inference(
          "/v2/chat/completions",
          `{"model":"Llama-3.3-70B-Instruct","messages":[{"role":"user","content":"hi"}],"max_tokens":1e400}`,
          400
        ),
        inference("/v2/chat/completions", { ...chat, max_completion_tokens: 1e12 }, 400),
        inference("/v2/chat/completions", { ...chat, temperature: -1 }, 400),
        inference("/v2/chat/completions", { ...chat, temperature: 99 }, 400),
        inference("/v2/chat/completions", { ...chat, top_p: 2 }, 400),
        inference("/v2/chat/completions", { ...chat, n: 0 }, 400),
        inference("/v2/chat/completions", { ...chat, stream: "yes" }, 422),
        inference("/v2/chat/completions", { ...chat, tools: "none" }, 422),
        inference("/v2/chat/completions", { ...chat, model: "text-embedding-bge-m3" }, 400),
        inference("/v2/chat/completions", { ...chat, model: "no-such-model" }, 404),
        inference("/queue/chat/completions", { ...chat, max_tokens: -1 }, 400),
        inference("/v2/completions", { model: "Llama-3.3-70B-Instruct", prompt: 7 }, 422),
        inference("/v2/completions", { model: "Llama-3.3-70B-Instruct", prompt: [] }, 400),
        inference("/v2/completions", { model: "Llama-3.3-70B-Instruct", prompt: "hi", max_tokens: -1 }, 400),
        inference("/v2/embeddings", { model: "text-embedding-bge-m3", input: { text: "hi" } }, 422),
        inference("/v2/embeddings", { model: "text-embedding-bge-m3", input: [] }, 400),
        inference("/v2/embeddings", { model: "text-embedding-bge-m3", input: "hi", dimensions: -3 }, 400),
        inference("/v2/embeddings", { model: "text-embedding-bge-m3", input: "hi", encoding_format: "hex" }, 422),
        inference("/v2/images/generations", { model: "gpt-image-1", prompt: "cat", n: 1e9 }, 400),
        inference("/v2/images/generations", { model: "gpt-image-1", prompt: "" }, 400),
        inference("/v2/responses", { model: "gpt-4.1", input: [] }, 400),
        inference("/v2/responses", { model: "gpt-4.1", input: [{}] }, 422),
        inference("/v2/responses", { model: "gpt-4.1", input: "hi", max_output_tokens: -1 }, 400),
        inference("/v2/fine_tuning/jobs", { model: "Llama-3.3-70B-Instruct", training_file: "../../etc/passwd" }, 404),
        inference("/v1/vector_stores", { name: ["a"] }, 422),
        inference(`/v1/vector_stores/${fx.storeId}/search`, { query: "x", top_k_texts: -1 }, 400),
        inference(`/v1/vector_stores/${fx.storeId}/files`, { file_id: "../../etc/passwd" }, 404)
      ]
      assert.deepStrictEqual(yield* runCases(fx.origin, cases), [])
    }).pipe(Effect.provide(emulator())))

  it.effect("broken multipart: no boundary or a broken or truncated body is 400, not multipart or no file 422", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      const file = { name: "file", filename: "a.txt", content: "hello" }
      const fields = [
        { name: "purpose", content: "fine-tune" },
        { name: "model", content: "whisper-large-v3" },
        { name: "prompt", content: "a cat" }
      ]
      const bodies: ReadonlyArray<
        readonly [string, Record<string, string>, string | Uint8Array, (route: Route) => number]
      > = [
        ["a JSON body", jsonHeaders, "{}", () => 422],
        ["no content type", {}, "file=hello", () => 422],
        ["no boundary", { "content-type": "multipart/form-data" }, form([file]), () => 400],
        ["an empty boundary", { "content-type": "multipart/form-data; boundary=" }, form([file]), () => 400],
        ["a body without delimiters", multipartHeaders, "just some bytes", () => 400],
        ["another boundary in the body", multipartHeaders, form([file], { boundary: "YY" }), () => 400],
        ["a body cut off in a file", multipartHeaders, form([...fields, file], { close: false }), () => 400],
        ["an empty body", multipartHeaders, "", () => 400],
        [
          "a part without a name",
          multipartHeaders,
          "--XX\r\nContent-Disposition: form-data\r\n\r\nhello\r\n--XX--\r\n",
          () => 400
        ],
        ["a NUL in a file name", multipartHeaders, form([{ ...file, filename: "a\u0000b.txt" }]), () => 400],
        // part headers are limited to 16 KiB
        [
          "a 20 000-character file name",
          multipartHeaders,
          form([{ ...file, filename: "n".repeat(20_000) }]),
          () => 400
        ],
        [
          "a filename* that does not decode",
          multipartHeaders,
          form([{ name: "file", disposition: "; filename*=utf-8''%zz", content: "hello" }]),
          () => 400
        ],
        // the gateway's repeated `files` field: a form without it has no files (400), elsewhere a field is missing
        ["fields only", multipartHeaders, form(fields), (route) => isGateway(route) ? 400 : 422],
        [
          "a file over the limit",
          multipartHeaders,
          form([...fields, { name: "file", filename: "big.txt", content: "x".repeat(2 * uploadLimit) }, {
            name: "image",
            filename: "big.png",
            content: "x".repeat(2 * uploadLimit)
          }, { name: "files", filename: "big.txt", content: "x".repeat(2 * uploadLimit) }]),
          () => 413
        ]
      ]
      const routes = routeTable.filter((route) => bodyOf(route) === "multipart")
      const cases = routes.flatMap((route) =>
        bodies.map(([what, headers, body, status]): Case => ({
          name: `${what} to ${label(route)}`,
          request: { method: route.method, path: route.path, headers: { ...authOf(fx, route), ...headers }, body },
          status: status(route)
        }))
      )
      assert.deepStrictEqual(yield* runCases(fx.origin, cases), [])
    }).pipe(Effect.provide(emulator())))

  it.effect("bad pagination parameters are 422 on every list; a missing required query parameter is 422", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      const lists = routeTable.filter((route) =>
        route.method === "GET" && /\/(files|vector_stores|jobs|events)$/.test(route.path) && !isGateway(route)
      )
      assert.strictEqual(lists.length, 6, lists.map(label).join(", "))
      const limits = ["-1", "0", "1.5", "NaN", "abc", "", "1e400", "%00", "0x10"]
      const cases = lists.flatMap((route) => [
        ...limits.map((limit): Case => ({
          name: `limit=${limit} on ${label(route)}`,
          request: { method: "GET", path: `${aimed(fx, route)}?limit=${limit}`, headers: authOf(fx, route) },
          status: 422
        })),
        {
          name: `limit=1 on ${label(route)}`,
          request: { method: "GET", path: `${aimed(fx, route)}?limit=1`, headers: authOf(fx, route) },
          status: 200
        },
        ...(route.path.includes("fine_tuning") ? [] : [{
          name: `order=sideways on ${label(route)}`,
          request: { method: "GET", path: `${aimed(fx, route)}?order=sideways`, headers: authOf(fx, route) },
          status: 422
        }])
      ])
      const required = gatewayDefs.filter((def) => def.query.some((q) => q.required)).map((def): Case => ({
        name: `no required query parameter on ${def.method} ${def.service}${def.path}`,
        request: {
          method: def.method,
          path: `/gateway/${def.service}${def.path}`,
          headers: { authorization: `Bearer ${fx.token}` }
        },
        status: 422
      }))
      assert.isAbove(required.length, 0)
      assert.deepStrictEqual(yield* runCases(fx.origin, [...cases, ...required]), [])
    }).pipe(Effect.provide(emulator())))
})

describe("file names are only names", () => {
  it.effect("traversals, absolute and Windows paths are stored verbatim and open nothing on disk", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      const marker = `aifs-bad-input-${process.pid}`
      const names = [
        `../../${marker}`,
        `/tmp/${marker}`,
        `..\\..\\${marker}.txt`,
        `C:\\Windows\\${marker}.txt`,
        `a/b/../../${marker}.txt`,
        `${marker}-${"n".repeat(1000)}.txt`,
        `${marker}-r\u00e9sum\u00e9.txt`
      ]
      for (
        const [route, fields] of [
          ["/v2/files", [{ name: "purpose", content: "fine-tune" }]],
          ["/v1/files", [{ name: "purpose", content: "visual-rag" }]]
        ] as const
      ) {
        for (const name of names) {
          const reply = yield* send(fx.origin, {
            method: "POST",
            path: route,
            headers: { authorization: `Bearer ${fx.key}`, ...multipartHeaders },
            body: form([...fields, { name: "file", filename: name, content: "hello" }])
          })
          assert.strictEqual(reply.status, 200, `${route} ${name}: ${reply.text}`)
          const stored = json(reply)
          assert.strictEqual(stored["filename"], name)
          const again = yield* send(fx.origin, {
            method: "GET",
            path: `${route}/${encodeURIComponent(String(stored["id"]))}`,
            headers: { authorization: `Bearer ${fx.key}` }
          })
          assert.strictEqual(json(again)["filename"], name)
          assert.isFalse(existsSync(resolve(process.cwd(), name)), name)
        }
      }
      // RFC 5987 names decode to a name as well
      const encoded = yield* send(fx.origin, {
        method: "POST",
        path: "/v2/files",
        headers: { authorization: `Bearer ${fx.key}`, ...multipartHeaders },
        body: form([{ name: "purpose", content: "fine-tune" }, {
          name: "file",
          disposition: `; filename*=utf-8''..%2F..%2F${marker}`,
          content: "hello"
        }])
      })
      assert.strictEqual(json(encoded)["filename"], `../../${marker}`)
      const gateway = yield* send(fx.origin, {
        method: "POST",
        path: "/gateway/file-manager/api/v1/files/",
        headers: { authorization: `Bearer ${fx.token}`, ...multipartHeaders },
        body: form(names.map((name) => ({ name: "files", filename: `${name}.txt`, content: "hello" })))
      })
      assert.strictEqual(gateway.status, 200, gateway.text)
      const records = JSON.parse(gateway.text) as ReadonlyArray<{ fileName: string; fileUri: string }>
      assert.deepStrictEqual(records.map((r) => r.fileName), names.map((name) => `${name}.txt`))
      // the URI keeps the name as one encoded segment under the user's own prefix
      for (const record of records) assert.match(record.fileUri, /^local:\/\/user-0001\/file-[0-9a-z]+\/[^/]+$/)
    }).pipe(Effect.provide(emulator())))
})

describe("huge and abandoned bodies", () => {
  it.effect("JSON over the default 10 MiB limit is 413 while it streams in; the rest is discarded, not buffered", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      const headers = { authorization: `Bearer ${fx.key}`, ...jsonHeaders }
      const total = 40 * 1024 * 1024
      for (const announce of [false, true]) {
        for (const keepSending of [false, true]) {
          const reply = yield* stream(fx.origin, {
            method: "POST",
            path: "/v2/chat/completions",
            headers,
            totalBytes: total,
            announce,
            keepSending,
            then: { method: "GET", path: "/v2/models", headers }
          })
          const what = `announce=${announce} keepSending=${keepSending}`
          assert.strictEqual(reply.status, 413, `${what}: ${reply.text}`)
          assert.match(String(detailOf(reply)), /limit for JSON bodies is 10485760 bytes/)
          // answered as soon as the limit was passed: the client was still sending
          assert.isTrue(reply.answeredEarly, what)
          assert.isBelow(reply.sentBytes, total / 2, what)
          // a client that sends the whole body anyway is read to the end and can go on on the same connection
          if (keepSending) assert.strictEqual(reply.next?.status, 200, what)
        }
      }
      // a body just under the limit is read (and refused for its content, not its size)
      const under = yield* send(fx.origin, {
        method: "POST",
        path: "/v2/chat/completions",
        headers,
        body: JSON.stringify({ padding: "x".repeat(10 * 1024 * 1024 - 100) })
      })
      assert.strictEqual(under.status, 422)
    }).pipe(Effect.provide(emulator())))

  it.effect("the JSON limit is configurable; every JSON route applies it", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      const cases = routeTable.filter((route) => bodyOf(route) === "json").map((route): Case => ({
        name: `2 kB of JSON to ${label(route)}`,
        request: {
          method: route.method,
          path: aimed(fx, route),
          headers: { ...authOf(fx, route), ...jsonHeaders },
          body: JSON.stringify({ padding: "x".repeat(2048) })
        },
        status: 413
      }))
      assert.deepStrictEqual(yield* runCases(fx.origin, cases), [])
      const streamed = yield* stream(fx.origin, {
        method: "POST",
        path: "/gateway/api/v1/auth/user",
        headers: jsonHeaders,
        totalBytes: 4 * 1024 * 1024
      })
      assert.strictEqual(streamed.status, 413)
      assert.isTrue(streamed.answeredEarly)
    }).pipe(
      // the fixture's own requests are small enough
      Effect.provide(emulator().pipe(Layer.provide(Layer.succeed(JsonBodyLimit, 1024))))
    ))

  it.effect("an upload over the limit is 413 while it streams in, on every multipart route", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      for (const route of routeTable.filter((r) => bodyOf(r) === "multipart")) {
        for (const announce of [false, true]) {
          const headers = { ...authOf(fx, route), ...multipartHeaders }
          const reply = yield* stream(fx.origin, {
            method: route.method,
            path: route.path,
            headers,
            totalBytes: 4 * 1024 * 1024,
            announce,
            keepSending: true,
            then: { method: "GET", path: "/gateway/redoc" }
          })
          const what = `${label(route)} announce=${announce}`
          assert.strictEqual(reply.status, 413, `${what}: ${reply.text}`)
          assert.match(String(detailOf(reply)), /upload limit is 10000 bytes/)
          assert.isTrue(reply.answeredEarly, what)
          assert.strictEqual(reply.next?.status, 200, what)
        }
      }
    }).pipe(Effect.provide(emulator())))

  it.effect("a client that drops the connection mid-body breaks nothing", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      for (const route of routeTable.filter((r) => bodyOf(r) !== "none")) {
        yield* abandon(fx.origin, {
          method: route.method,
          path: aimed(fx, route),
          headers: {
            ...authOf(fx, route),
            ...(bodyOf(route) === "json" ? jsonHeaders : multipartHeaders)
          },
          announcedBytes: 5_000,
          sentBytes: 100
        })
      }
      const models = yield* send(fx.origin, {
        method: "GET",
        path: "/v2/models",
        headers: { authorization: `Bearer ${fx.key}` }
      })
      assert.strictEqual(models.status, 200)
    }).pipe(Effect.provide(emulator())))
})

// ---------------------------------------------------------------------------------------------------------
// Properties: arbitrary JSON never makes the emulator fail
// ---------------------------------------------------------------------------------------------------------

/** Under 500, and a 4xx explains itself (a `detail`; a proprietary model's 429 has the service's `error`). */
const acceptable = (reply: RawReply) => {
  if (reply.status >= 500 || reply.status === 0) return false
  if (reply.status < 400) return true
  if (detailOf(reply) !== undefined) return true
  return reply.status === 429 && reply.text.includes("\"error\"")
}

/** The main JSON endpoints with a valid body each (the queue root is left out: it waits instead of refusing). */
const endpoints = (fx: Fixture): ReadonlyArray<readonly [path: string, auth: string, valid: unknown]> => [
  ["/v2/chat/completions", fx.key, {
    model: "Llama-3.3-70B-Instruct",
    messages: [{ role: "system", content: "Be brief" }, { role: "user", content: [{ type: "text", text: "hi" }] }],
    tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } } }],
    max_tokens: 20,
    temperature: 0.5,
    stream_options: { include_usage: true }
  }],
  ["/v2/completions", fx.key, { model: "Llama-3.3-70B-Instruct", prompt: ["a", "b"], max_tokens: 5 }],
  ["/v2/embeddings", fx.key, { model: "text-embedding-bge-m3", input: ["a", "b"], encoding_format: "base64" }],
  ["/v2/images/generations", fx.key, { model: "gpt-image-1", prompt: "a cat", n: 1, size: "256x256" }],
  ["/v2/responses", fx.key, {
    model: "gpt-4.1",
    input: [{ role: "user", content: "hi" }],
    text: { format: { type: "json_schema", name: "x", schema: { type: "object", properties: { a: {} } } } }
  }],
  ["/v2/fine_tuning/jobs", fx.key, { model: "Llama-3.3-70B-Instruct", training_file: "file-x" }],
  ["/v1/vector_stores", fx.key, { name: "n", chunking_strategy: { text_embedding_model: "text-embedding-bge-m3" } }],
  [`/v1/vector_stores/${fx.storeId}/files`, fx.key, { file_id: "f", chunking_strategy: { chunk_size: 100 } }],
  [`/v1/vector_stores/${fx.storeId}/search`, fx.key, { query: "hi", top_k_texts: 2 }],
  ["/gateway/api/v1/auth/user", "", { username: "demo", password: "wrong" }],
  ["/gateway/chat-session-manager/api/v1/sessions/", fx.token, { title: "t", config: { globalContext: true } }],
  ["/gateway/ingest-master/api/v1/task", fx.token, { filePath: "local://x", role: "CHAT_USER", metadata: {} }],
  ["/gateway/query-pipeline/api/v1/chat", fx.token, { sessionId: "s", userPrompt: "hi" }]
]

const post = (fx: Fixture, path: string, auth: string, body: unknown) =>
  Effect.runPromise(send(fx.origin, {
    method: "POST",
    path,
    headers: { ...jsonHeaders, ...(auth === "" ? {} : { authorization: `Bearer ${auth}` }) },
    body: JSON.stringify(body)
  }))

/** `value` with the field at a path of indices (taken modulo what is there) replaced by `replacement`. */
const replaceAt = (value: unknown, path: ReadonlyArray<number>, replacement: unknown): unknown => {
  if (path.length === 0) return replacement
  const [head, ...rest] = path as [number, ...Array<number>]
  if (Array.isArray(value)) {
    if (value.length === 0) return [replacement]
    const copy = [...value]
    copy[head % copy.length] = replaceAt(copy[head % copy.length], rest, replacement)
    return copy
  }
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value)
    if (keys.length === 0) return { field: replacement }
    const key = keys[head % keys.length]!
    return { ...value, [key]: replaceAt((value as Record<string, unknown>)[key], rest, replacement) }
  }
  return replacement
}

const odd = FastCheck.oneof(
  FastCheck.jsonValue(),
  FastCheck.constantFrom(-1, 0, 0.5, 1e308, -1e308, 2 ** 53, "", [], {}, null, true, "\u0000", "../../etc/passwd")
)

describe("properties", () => {
  it.effect("any JSON value posted to a JSON endpoint is answered below 500, a 4xx with a detail", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      for (const [path, auth] of endpoints(fx)) {
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(FastCheck.jsonValue(), async (value) =>
              acceptable(await post(fx, path, auth, value))),
            { numRuns: 40 }
          )
        )
      }
    }).pipe(Effect.provide(emulator())))

  it.effect("a valid body with any one field replaced by any JSON value is answered below 500", () =>
    Effect.gen(function*() {
      const fx = yield* fixture
      for (const [path, auth, valid] of endpoints(fx)) {
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(
              FastCheck.array(FastCheck.nat(16), { minLength: 1, maxLength: 5 }),
              odd,
              async (at, value) => acceptable(await post(fx, path, auth, replaceAt(valid, at, value)))
            ),
            { numRuns: 40 }
          )
        )
      }
    }).pipe(Effect.provide(emulator())))
})
