/**
 * The emulated retrieval gateway as a table of routes ({service, method, path, request and response
 * schemas, handler}). The server's router and each service's OpenAPI document are both derived from this
 * table, so the documentation cannot drift from what is served. Each service also serves `redoc`.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as JSONSchema from "effect/JSONSchema"
import * as Schema from "effect/Schema"
import {
  AccessToken,
  ChatAnswer,
  ChatParams,
  ChatSession,
  ChatSessionList,
  CreateSessionParams,
  CreateTaskParams,
  Deleted,
  GatewayFile,
  GatewayFileList,
  GatewayUser,
  IngestTask,
  IngestTaskList,
  LoginParams,
  UserConfig,
  UserConfigList
} from "../../schemas/Gateway.js"
import { decodeBody, type Reject, reject } from "../http.js"
import { readUpload } from "../upload.js"
import { search } from "./retrieval.js"
import { GatewayState, type StoredFile, type StoredSession, type StoredTask, type User } from "./state.js"

type Requirements = HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext

/** What a handler gets. */
interface Context<B> {
  readonly user: User
  readonly body: B
  readonly now: number
  readonly query: URLSearchParams
  readonly params: Readonly<Record<string, string | undefined>>
}

/**
 * One route of the table.
 *
 * @since 0.1.0
 * @category models
 */
export interface RouteDef {
  /** Service path (`""` for the gateway root). */
  readonly service: string
  /** HTTP method. */
  readonly method: "GET" | "POST" | "DELETE"
  /** Path within the service, with `:params`. */
  readonly path: `/${string}`
  /** One line for the OpenAPI document. */
  readonly summary: string
  /** True when the public docs show this route; false for the emulator's own. */
  readonly documented: boolean
  /** Query parameters. */
  readonly query: ReadonlyArray<{ readonly name: string; readonly required: boolean; readonly repeated?: boolean }>
  /** Request body: a JSON schema, `multipart` (repeated `files` field), or none. */
  readonly body: Schema.Schema.AnyNoContext | "multipart" | undefined
  /** Response schema (the handler's value is encoded with it). */
  readonly response: Schema.Schema.AnyNoContext
  /** Whether a bearer token is required (everything but the login). */
  readonly auth: boolean
  /** The handler, given the decoded body. */
  readonly handle: (context: Context<unknown>) => Effect.Effect<unknown, Reject, Requirements>
}

const route = <B, BI, A, I>(def: {
  readonly service: string
  readonly method: "GET" | "POST" | "DELETE"
  readonly path: `/${string}`
  readonly summary: string
  readonly documented: boolean
  readonly query?: RouteDef["query"]
  readonly body?: Schema.Schema<B, BI> | "multipart"
  readonly response: Schema.Schema<A, I>
  readonly auth?: boolean
  readonly handle: (context: Context<B>) => Effect.Effect<A, Reject, Requirements>
}): RouteDef => ({
  ...def,
  query: def.query ?? [],
  body: def.body as Schema.Schema.AnyNoContext | "multipart" | undefined,
  auth: def.auth ?? true,
  handle: def.handle as RouteDef["handle"]
})

/** The parts of the repeated `files` field: 413 past the gateway's request limit, 400/422 when not multipart. */
const readFiles = (state: GatewayState) =>
  Effect.map(
    readUpload({ maxUploadBytes: state.maxRequestBytes }, { field: "files" }),
    (upload) => upload.parts.filter((part) => part.key === "files")
  )

const fileRecord = (state: GatewayState, file: StoredFile, now: number) =>
  new GatewayFile({
    fileId: file.fileId,
    status: state.fileStatus(file, now),
    userId: file.userId,
    fileName: file.fileName,
    fileUri: file.fileUri,
    size: file.size,
    message: state.fileStatus(file, now) === "pending" ? null : file.message ?? null
  })

const taskRecord = (state: GatewayState, task: StoredTask, now: number) => {
  const { progress, status } = state.taskStatus(task, now)
  return new IngestTask({
    taskId: task.taskId,
    status,
    filePath: task.filePath,
    progress,
    message: status === task.finalStatus ? task.message ?? null : null
  })
}

const sessionRecord = (session: StoredSession, withMessages: boolean) =>
  new ChatSession({
    sessionId: session.sessionId,
    title: session.title,
    config: {
      localConfigId: session.localConfigId ?? null,
      globalContext: session.globalContext,
      activeFiles: session.activeFiles,
      chatModel: session.chatModel ?? null
    },
    createdAt: new Date(session.createdAt).toISOString(),
    ...(withMessages ? { messages: session.messages.map((m) => ({ ...m })) } : {})
  })

/** Text of the global knowledge base, for sessions with `globalContext`. */
const globalKnowledge = [
  "AI Foundation Services is a platform of T-Systems that hosts language models in Germany.",
  "The retrieval gateway answers questions from documents that users upload and ingest."
].join("\n\n")

const ownSession = (state: GatewayState, user: User, sessionId: string | undefined) => {
  const session = sessionId === undefined ? undefined : state.sessions.get(sessionId)
  return session === undefined || session.userId !== user.userId
    ? reject(404, `Session '${sessionId ?? ""}' not found`)
    : Effect.succeed(session)
}

/** The query pipeline's chat route, under `service` (the gateway answers under two names). */
const chatRoute = (state: GatewayState, service: string): RouteDef =>
  route({
    service,
    method: "POST",
    path: "/api/v1/chat",
    summary: "Ask a question in a session; answers from the session's ingested files and names the passages used",
    documented: true,
    body: ChatParams,
    response: ChatAnswer,
    handle: ({ body, now, user }) =>
      Effect.gen(function*() {
        const session = yield* ownSession(state, user, body.sessionId)
        const own = [...state.files.values()].filter((f) =>
          f.userId === user.userId && state.isIngested(f.fileId, now) &&
          (session.activeFiles.length === 0 || session.activeFiles.includes(f.fileId))
        )
        const documents = session.globalContext && session.activeFiles.length === 0
          ? [{ fileId: "global", fileName: "global knowledge base", passages: [{ text: globalKnowledge, index: 0 }] }]
          : own.map((f) => ({ fileId: f.fileId, fileName: f.fileName, passages: state.passages.get(f.fileId) ?? [] }))
        const hits = search(body.userPrompt, documents)
        const answer = hits.length === 0
          ? "I could not find an answer to that in the documents of this session."
          : `According to ${hits[0]!.fileName}: ${hits[0]!.passage}`
        session.messages.push({ role: "user", content: body.userPrompt }, { role: "assistant", content: answer })
        return new ChatAnswer({ answer, sessionId: session.sessionId, sources: hits.map((h) => ({ ...h })) })
      })
  })

/** Logging in, the user's configs and the user. */
const accountRoutes = (state: GatewayState): ReadonlyArray<RouteDef> => [
  route({
    service: "",
    method: "POST",
    path: "/api/v1/auth/user",
    summary: "Log in; answers a bearer token (HS256 JWT with exp)",
    documented: true,
    auth: false,
    body: LoginParams,
    response: AccessToken,
    handle: ({ body, now }) => {
      const user = state.users.get(body.username)
      if (user === undefined || user.password !== body.password) {
        return reject(401, "Invalid username or password")
      }
      return Effect.succeed(
        new AccessToken({
          access_token: state.issue(user, now),
          token_type: "bearer",
          expires_in: Math.floor(state.tokenLifetimeMs / 1000)
        })
      )
    }
  }),
  route({
    service: "config-manager",
    method: "GET",
    path: "/api/v1/user/configs",
    summary: "The user's configs: group, local knowledge-base configs and their allowed LLMs",
    documented: true,
    response: UserConfigList,
    handle: ({ user }) =>
      Effect.succeed([
        new UserConfig({
          userGroupId: user.userGroupId,
          localKbConfigs: [{
            id: user.configId,
            name: `${user.username}'s documents`,
            allowed_llms: state.models.map((name) => ({ name }))
          }]
        })
      ])
  }),
  route({
    service: "user-manager",
    method: "GET",
    path: "/api/v1/users/me",
    summary: "The logged-in user (emulator route: the public docs show no user-manager route)",
    documented: false,
    response: GatewayUser,
    handle: ({ user }) =>
      Effect.succeed(
        new GatewayUser({
          userId: user.userId,
          username: user.username,
          roles: user.roles,
          userGroupId: user.userGroupId
        })
      )
  })
]

/** Uploading and listing files, and ingesting them. */
const fileRoutes = (state: GatewayState): ReadonlyArray<RouteDef> => [
  route({
    service: "file-manager",
    method: "POST",
    path: "/api/v1/files/",
    summary: "Upload files (multipart, repeated field 'files'); answers one pending record per file",
    documented: true,
    query: [{ name: "kb", required: false }],
    body: "multipart",
    response: GatewayFileList,
    handle: ({ now, user }) =>
      Effect.gen(function*() {
        const parts = yield* readFiles(state)
        if (parts.length === 0) return yield* reject(400, "No files in the request")
        return parts.map((part) => fileRecord(state, state.addFile(user, part.filename, part.content, now), now))
      })
  }),
  route({
    service: "file-manager",
    method: "GET",
    path: "/api/v1/files/",
    summary: "The user's files by id (repeat fileIds), or all of them",
    documented: true,
    query: [{ name: "kb", required: false }, { name: "fileIds", required: false, repeated: true }],
    response: GatewayFileList,
    handle: ({ now, query, user }) => {
      const ids = query.getAll("fileIds")
      const own = [...state.files.values()].filter((f) => f.userId === user.userId)
      return Effect.succeed(
        (ids.length === 0 ? own : own.filter((f) => ids.includes(f.fileId))).map((f) => fileRecord(state, f, now))
      )
    }
  }),
  route({
    service: "ingest-master",
    method: "POST",
    path: "/api/v1/task",
    summary: "Start ingesting an uploaded file (filePath = its fileUri)",
    documented: true,
    body: CreateTaskParams,
    response: IngestTask,
    handle: ({ body, now, user }) => {
      const file = [...state.files.values()].find((f) =>
        f.userId === user.userId && (f.fileId === body.metadata.file_id || f.fileUri === body.filePath) &&
        f.fileUri === body.filePath
      )
      if (file === undefined) return reject(404, `File '${body.filePath}' not found`)
      return Effect.succeed(taskRecord(state, state.addTask(user, file, body.filePath, now), now))
    }
  }),
  route({
    service: "ingest-master",
    method: "POST",
    path: "/api/v1/tasks/file",
    summary: "The ingestion tasks of a file, oldest first",
    documented: true,
    query: [{ name: "file_path", required: true }, { name: "role", required: false }],
    response: IngestTaskList,
    handle: ({ now, query, user }) => {
      const filePath = query.get("file_path")
      if (filePath === null) {
        return reject(422, [{ type: "missing", loc: ["query", "file_path"], msg: "Field required" }])
      }
      return Effect.succeed(
        state.tasks.filter((t) => t.userId === user.userId && t.filePath === filePath).map((t) =>
          taskRecord(state, t, now)
        )
      )
    }
  })
]

/** The chat sessions: listed, created, read and deleted. */
const sessionRoutes = (state: GatewayState): ReadonlyArray<RouteDef> => [
  route({
    service: "chat-session-manager",
    method: "GET",
    path: "/api/v1/sessions/",
    summary: "The user's sessions",
    documented: true,
    response: ChatSessionList,
    handle: ({ user }) =>
      Effect.succeed(
        [...state.sessions.values()].filter((s) => s.userId === user.userId).map((s) => sessionRecord(s, false))
      )
  }),
  route({
    service: "chat-session-manager",
    method: "POST",
    path: "/api/v1/sessions/",
    summary: "Create a session over files (activeFiles; empty: all local files) or the global knowledge base",
    documented: true,
    body: CreateSessionParams,
    response: ChatSession,
    handle: ({ body, now, user }) =>
      Effect.gen(function*() {
        const config = body.config
        if (config.localConfigId != null && config.localConfigId !== user.configId) {
          return yield* reject(404, `Config '${config.localConfigId}' not found`)
        }
        if (config.chatModel != null && !state.models.includes(config.chatModel)) {
          return yield* reject(400, `Model '${config.chatModel}' is not allowed for this config`)
        }
        for (const fileId of config.activeFiles ?? []) {
          const file = state.files.get(fileId)
          if (file === undefined || file.userId !== user.userId) {
            return yield* reject(404, `File '${fileId}' not found`)
          }
        }
        const session: StoredSession = {
          sessionId: state.id("session"),
          userId: user.userId,
          title: body.title ?? "New chat",
          localConfigId: config.localConfigId ?? undefined,
          globalContext: config.globalContext ?? false,
          activeFiles: config.activeFiles ?? [],
          chatModel: config.chatModel ?? undefined,
          createdAt: now,
          messages: []
        }
        state.sessions.set(session.sessionId, session)
        return sessionRecord(session, false)
      })
  }),
  route({
    service: "chat-session-manager",
    method: "GET",
    path: "/api/v1/sessions/:sessionId",
    summary: "One session with its history (emulator route)",
    documented: false,
    response: ChatSession,
    handle: ({ params, user }) =>
      Effect.map(ownSession(state, user, params.sessionId), (session) => sessionRecord(session, true))
  }),
  route({
    service: "chat-session-manager",
    method: "DELETE",
    path: "/api/v1/sessions/:sessionId",
    summary: "Delete a session (emulator route)",
    documented: false,
    response: Deleted,
    handle: ({ params, user }) =>
      Effect.map(ownSession(state, user, params.sessionId), (session) => {
        state.sessions.delete(session.sessionId)
        return new Deleted({ id: session.sessionId, deleted: true })
      })
  })
]

/**
 * The route table of the emulated gateway.
 *
 * @since 0.1.0
 * @category routes
 */
export const routes = (state: GatewayState): ReadonlyArray<RouteDef> => [
  ...accountRoutes(state),
  ...fileRoutes(state),
  ...sessionRoutes(state),
  chatRoute(state, "query-pipeline"),
  chatRoute(state, "query-pipelines")
]

const authenticate = (state: GatewayState, now: number) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const header = request.headers["authorization"]
    if (header === undefined || !/^bearer\s+/i.test(header)) return reject(401, "Not authenticated")
    const verdict = state.verify(header.replace(/^bearer\s+/i, "").trim(), now)
    if (verdict === "invalid") return reject(401, "Could not validate credentials")
    if (verdict === "expired") return reject(401, "Token has expired")
    if (!verdict.roles.includes("CHAT_USER")) return reject(403, "The user lacks the CHAT_USER role")
    return Effect.succeed(verdict)
  })

const handler = (state: GatewayState, def: RouteDef) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    // only the login route skips authentication, and it never reads `user`
    const user = def.auth ? yield* authenticate(state, now) : (undefined as unknown as User)
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = new URL(request.url, "http://emulator").searchParams
    for (const q of def.query) {
      if (q.required && !query.has(q.name)) {
        return yield* reject(422, [{ type: "missing", loc: ["query", q.name], msg: "Field required" }])
      }
    }
    const body = def.body === undefined || def.body === "multipart" ? undefined : yield* decodeBody(def.body)
    const params = yield* HttpRouter.params
    const value = yield* def.handle({ user, body, now, query, params })
    const encoded = yield* Schema.encodeUnknown(def.response)(value).pipe(Effect.orDie)
    return HttpServerResponse.unsafeJson(encoded)
  })

/**
 * The OpenAPI document of one service, generated from the route table.
 *
 * @since 0.1.0
 * @category documentation
 */
export const openApi = (table: ReadonlyArray<RouteDef>, service: string): unknown => {
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const schemaOf = (schema: Schema.Schema.AnyNoContext) =>
    JSONSchema.fromAST(Schema.encodedSchema(schema).ast, {
      definitions,
      definitionPath: "#/components/schemas/",
      target: "openApi3.1"
    })
  const paths: Record<string, Record<string, unknown>> = {}
  for (const def of table.filter((d) => d.service === service)) {
    const path = def.path.replace(/:([A-Za-z]+)/g, "{$1}")
    const pathParams = [...def.path.matchAll(/:([A-Za-z]+)/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" }
    }))
    const queryParams = def.query.map((q) => ({
      name: q.name,
      in: "query",
      required: q.required,
      schema: q.repeated ? { type: "array", items: { type: "string" } } : { type: "string" },
      ...(q.repeated ? { style: "form", explode: true } : {})
    }))
    const requestBody = def.body === undefined ? undefined : def.body === "multipart"
      ? {
        required: true,
        content: {
          "multipart/form-data": {
            schema: {
              type: "object",
              properties: { files: { type: "array", items: { type: "string", format: "binary" } } },
              required: ["files"]
            }
          }
        }
      }
      : { required: true, content: { "application/json": { schema: schemaOf(def.body) } } }
    paths[path] = {
      ...paths[path],
      [def.method.toLowerCase()]: {
        summary: def.summary,
        "x-documented": def.documented,
        ...(def.auth ? { security: [{ bearer: [] }] } : {}),
        parameters: [...pathParams, ...queryParams],
        ...(requestBody === undefined ? {} : { requestBody }),
        responses: {
          "200": { description: "OK", content: { "application/json": { schema: schemaOf(def.response) } } },
          ...(def.auth ? { "401": { description: "Missing, invalid or expired token" } } : {}),
          ...(def.auth ? { "403": { description: "The user lacks the CHAT_USER role" } } : {}),
          "422": { description: "Validation error (FastAPI-style detail list)" }
        }
      }
    }
  }
  return {
    openapi: "3.1.0",
    info: {
      title: service === "" ? "API gateway (emulator)" : `${service} (emulator)`,
      version: "0.1.0",
      description:
        "Generated from the emulator's route table; x-documented=false marks routes the public docs do not show."
    },
    servers: [{ url: service === "" ? "/gateway" : `/gateway/${service}` }],
    paths,
    components: {
      schemas: definitions,
      securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } }
    }
  }
}

const redocPage = (title: string) =>
  `<!DOCTYPE html>
<html><head><title>${title}</title><meta charset="utf-8"/></head>
<body><redoc spec-url="openapi.json"></redoc>
<script src="https://cdn.redoc.ly/redoc/latest/bundles/redoc.standalone.js"></script></body></html>`

/**
 * The full paths (under `/gateway`) of a route table and of each service's `redoc` and `openapi.json`, as
 * patterns: a request with another method gets 405, not 404.
 *
 * @since 0.1.0
 * @category routers
 */
export const pathPatterns = (table: ReadonlyArray<RouteDef>): ReadonlyArray<RegExp> => {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  const prefix = (service: string) => `/gateway${service === "" ? "" : `/${service}`}`
  const services = [...new Set(table.map((d) => d.service))]
  return [
    ...table.map((def) => {
      const path = escape(`${prefix(def.service)}${def.path}`.replace(/\/$/, "")).replace(/:[A-Za-z]+/g, "[^/]+")
      return new RegExp(`^${path}/?$`)
    }),
    ...services.map((service) => new RegExp(`^${escape(prefix(service))}/(redoc|openapi\\.json)/?$`))
  ]
}

/**
 * The gateway's paths (see `pathPatterns`).
 *
 * @since 0.1.0
 * @category routers
 */
export const knownPaths: ReadonlyArray<RegExp> = pathPatterns(routes(new GatewayState()))

/**
 * The gateway's router: every route of the table under its service path, and `redoc` and `openapi.json`
 * for each service (and for the gateway root).
 *
 * @since 0.1.0
 * @category routers
 */
export const router = (state: GatewayState) => {
  const table = routes(state)
  const services = [...new Set(table.map((d) => d.service))]
  let out: HttpRouter.HttpRouter<Reject> = HttpRouter.empty.pipe(
    HttpRouter.get("/redoc", Effect.succeed(HttpServerResponse.html(redocPage("API gateway")))),
    HttpRouter.get("/openapi.json", Effect.succeed(HttpServerResponse.unsafeJson(openApi(table, ""))))
  )
  for (const def of table.filter((d) => d.service === "")) {
    out = HttpRouter.route(def.method)(def.path, handler(state, def))(out)
  }
  for (const service of services.filter((s) => s !== "")) {
    let sub: HttpRouter.HttpRouter<Reject> = HttpRouter.empty.pipe(
      HttpRouter.get("/redoc", Effect.succeed(HttpServerResponse.html(redocPage(service)))),
      HttpRouter.get("/openapi.json", Effect.succeed(HttpServerResponse.unsafeJson(openApi(table, service))))
    )
    for (const def of table.filter((d) => d.service === service)) {
      sub = HttpRouter.route(def.method)(def.path, handler(state, def))(sub)
    }
    out = HttpRouter.mount(`/${service}`, sub)(out)
  }
  return out
}
