/**
 * The state of the emulated retrieval gateway: users and roles, HMAC-signed tokens with a configurable
 * lifetime, per-user configs, files, ingestion tasks and sessions. Statuses that change over time are
 * computed from the Effect `Clock` at read time, so a `TestClock` drives uploads and ingestion.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { chunkText, type Passage } from "./retrieval.js"

/**
 * A gateway user the emulator accepts.
 *
 * @since 0.1.0
 * @category models
 */
export interface UserSpec {
  /** User name. */
  readonly username: string
  /** Password. */
  readonly password: string
  /** Roles (default `["CHAT_USER"]`; without it every service answers 403). */
  readonly roles?: ReadonlyArray<string> | undefined
}

/**
 * How the emulated gateway behaves.
 *
 * @since 0.1.0
 * @category models
 */
export interface GatewayOptions {
  /** Accepted users (default: `developmentUsers`). */
  readonly users?: ReadonlyArray<UserSpec> | undefined
  /** Lifetime of a token (default 1 hour; seconds in tests). */
  readonly tokenLifetime?: Duration.DurationInput | undefined
  /** How long an upload stays `pending` (default 1 s). */
  readonly uploadDelay?: Duration.DurationInput | undefined
  /** How long an ingestion task takes (default 4 s: `queued`, then `ingesting`, then `ingested`). */
  readonly ingestDuration?: Duration.DurationInput | undefined
  /** Largest file in bytes; bigger ones end `file_too_large` (default 10 MB). */
  readonly maxFileBytes?: number | undefined
  /** Largest upload request in bytes; a bigger one gets 413 (default 100 MB, at least `maxFileBytes`). */
  readonly maxRequestBytes?: number | undefined
  /** Key that signs tokens (default: random per instance). */
  readonly secret?: string | undefined
  /** LLMs every user's config allows. */
  readonly models?: ReadonlyArray<string> | undefined
}

/**
 * The default users (development credentials, not secrets): `demo` and `other` with `CHAT_USER`, `viewer`
 * without it.
 *
 * @since 0.1.0
 * @category users
 */
export const developmentUsers: ReadonlyArray<UserSpec> = [
  { username: "demo", password: "demo-password", roles: ["CHAT_USER"] },
  { username: "other", password: "other-password", roles: ["CHAT_USER"] },
  { username: "viewer", password: "viewer-password", roles: [] }
]

/**
 * File types the emulated file manager accepts.
 *
 * @since 0.1.0
 * @category files
 */
export const supportedExtensions: ReadonlyArray<string> = ["txt", "md", "csv", "json", "html", "pdf", "docx"]

/** A user with its id. */
export interface User {
  readonly userId: string
  readonly username: string
  readonly password: string
  readonly roles: ReadonlyArray<string>
  readonly userGroupId: string
  readonly configId: string
}

/** A stored file; its visible status is `pending` until `readyAt`. */
export interface StoredFile {
  readonly fileId: string
  readonly userId: string
  readonly fileName: string
  readonly fileUri: string
  readonly size: number
  readonly hash: string
  readonly text: string
  readonly finalStatus: string
  readonly readyAt: number
  readonly message: string | undefined
}

/** An ingestion task; it is `queued`, then `ingesting`, then final by the clock. */
export interface StoredTask {
  readonly taskId: string
  readonly userId: string
  readonly filePath: string
  readonly fileId: string
  readonly startedAt: number
  readonly doneAt: number
  readonly finalStatus: "ingested" | "ingestion_failed"
  readonly message: string | undefined
}

/** A chat session and its history. */
export interface StoredSession {
  readonly sessionId: string
  readonly userId: string
  readonly title: string
  readonly localConfigId: string | undefined
  readonly globalContext: boolean
  readonly activeFiles: ReadonlyArray<string>
  readonly chatModel: string | undefined
  readonly createdAt: number
  readonly messages: Array<{ readonly role: string; readonly content: string }>
}

/** The claims of an emulator token. */
export interface Claims {
  readonly sub: string
  readonly username: string
  readonly roles: ReadonlyArray<string>
  readonly iat: number
  readonly exp: number
}

const b64 = (data: string | Buffer) => Buffer.from(data).toString("base64url")

/**
 * The mutable state of one emulated gateway.
 *
 * @since 0.1.0
 * @category models
 */
export class GatewayState {
  readonly users: ReadonlyMap<string, User>
  readonly tokenLifetimeMs: number
  readonly uploadDelayMs: number
  readonly ingestDurationMs: number
  readonly maxFileBytes: number
  readonly maxRequestBytes: number
  readonly models: ReadonlyArray<string>
  readonly files = new Map<string, StoredFile>()
  readonly tasks: Array<StoredTask> = []
  readonly sessions = new Map<string, StoredSession>()
  /** Passages of ingested files, by file id (filled when a task is created, visible once it is done). */
  readonly passages = new Map<string, ReadonlyArray<Passage>>()
  private readonly secret: Buffer
  private counter = 0

  constructor(options: GatewayOptions = {}) {
    const users = options.users ?? developmentUsers
    this.users = new Map(users.map((u, i) => [u.username, {
      userId: `user-${String(i + 1).padStart(4, "0")}`,
      username: u.username,
      password: u.password,
      roles: u.roles ?? ["CHAT_USER"],
      userGroupId: `group-${u.username}`,
      configId: `kb-config-${u.username}`
    }]))
    this.tokenLifetimeMs = Duration.toMillis(Duration.decode(options.tokenLifetime ?? Duration.hours(1)))
    this.uploadDelayMs = Duration.toMillis(Duration.decode(options.uploadDelay ?? Duration.seconds(1)))
    this.ingestDurationMs = Duration.toMillis(Duration.decode(options.ingestDuration ?? Duration.seconds(4)))
    this.maxFileBytes = options.maxFileBytes ?? 10 * 1024 * 1024
    this.maxRequestBytes = options.maxRequestBytes ?? Math.max(100 * 1024 * 1024, this.maxFileBytes)
    this.models = options.models ?? ["Llama-3.3-70B-Instruct", "gpt-4o"]
    this.secret = options.secret === undefined ? randomBytes(32) : Buffer.from(options.secret)
  }

  /** A fresh id with a prefix. */
  id(prefix: string): string {
    return `${prefix}-${(++this.counter).toString(36).padStart(6, "0")}`
  }

  /** Signs an HS256 JWT for a user, valid from `now` for the configured lifetime. */
  issue(user: User, now: number): string {
    const claims: Claims = {
      sub: user.userId,
      username: user.username,
      roles: user.roles,
      iat: Math.floor(now / 1000),
      exp: Math.floor((now + this.tokenLifetimeMs) / 1000)
    }
    const unsigned = `${b64(JSON.stringify({ alg: "HS256", typ: "JWT" }))}.${b64(JSON.stringify(claims))}`
    return `${unsigned}.${this.sign(unsigned)}`
  }

  /** The user of a token, or why it is refused. */
  verify(token: string, now: number): User | "invalid" | "expired" {
    const parts = token.split(".")
    if (parts.length !== 3) return "invalid"
    const expected = Buffer.from(this.sign(`${parts[0]}.${parts[1]}`))
    const given = Buffer.from(parts[2]!)
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return "invalid"
    let claims: Claims
    try {
      claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString("utf8")) as Claims
    } catch {
      return "invalid"
    }
    if (typeof claims.exp !== "number" || now >= claims.exp * 1000) return "expired"
    const user = this.users.get(claims.username)
    return user === undefined || user.userId !== claims.sub ? "invalid" : user
  }

  /** Stores an uploaded file and decides how its upload will end. */
  addFile(user: User, name: string, bytes: Uint8Array, now: number): StoredFile {
    const hash = createHash("sha256").update(bytes).digest("hex")
    const fileId = this.id("file")
    const extension = name.includes(".") ? name.split(".").pop()!.toLowerCase() : ""
    const original = [...this.files.values()].find((f) =>
      f.userId === user.userId && f.hash === hash && (f.finalStatus === "uploaded")
    )
    const [finalStatus, message] = bytes.length > this.maxFileBytes
      ? ["file_too_large", `file is larger than ${this.maxFileBytes} bytes`]
      : !supportedExtensions.includes(extension)
      ? ["file_type_not_supported", `file type '.${extension}' is not supported`]
      : original !== undefined
      ? ["duplicated", `same content as ${original.fileId}`]
      : ["uploaded", undefined]
    const file: StoredFile = {
      fileId,
      userId: user.userId,
      fileName: name,
      fileUri: original?.fileUri ?? `local://${user.userId}/${fileId}/${encodeURIComponent(name)}`,
      size: bytes.length,
      hash,
      text: new TextDecoder().decode(bytes),
      finalStatus,
      readyAt: now + this.uploadDelayMs,
      message
    }
    this.files.set(fileId, file)
    return file
  }

  /** The status a file shows at `now`. */
  fileStatus(file: StoredFile, now: number): string {
    return now < file.readyAt ? "pending" : file.finalStatus
  }

  /** Starts ingesting a file of the user: fails for files not uploaded or without text. */
  addTask(user: User, file: StoredFile | undefined, filePath: string, now: number): StoredTask {
    const ready = file !== undefined && ["uploaded", "duplicated"].includes(this.fileStatus(file, now))
    const passages = ready ? chunkText(file.text) : []
    const task: StoredTask = {
      taskId: this.id("task"),
      userId: user.userId,
      filePath,
      fileId: file?.fileId ?? "",
      startedAt: now,
      doneAt: now + this.ingestDurationMs,
      finalStatus: passages.length > 0 ? "ingested" : "ingestion_failed",
      message: file === undefined
        ? "no uploaded file at this path"
        : !ready
        ? "the file is not uploaded"
        : passages.length === 0
        ? "the file has no text"
        : undefined
    }
    if (file !== undefined && passages.length > 0) this.passages.set(file.fileId, passages)
    this.tasks.push(task)
    return task
  }

  /** The status and progress a task shows at `now`. */
  taskStatus(task: StoredTask, now: number): { readonly status: string; readonly progress: number } {
    if (now >= task.doneAt) return { status: task.finalStatus, progress: 100 }
    const third = (task.doneAt - task.startedAt) / 3
    if (now < task.startedAt + third) return { status: "queued", progress: 0 }
    return {
      status: "ingesting",
      progress: Math.floor(((now - task.startedAt) / (task.doneAt - task.startedAt)) * 100)
    }
  }

  /** True when the file's latest task is ingested at `now`. */
  isIngested(fileId: string, now: number): boolean {
    const tasks = this.tasks.filter((t) => t.fileId === fileId)
    const last = tasks[tasks.length - 1]
    return last !== undefined && this.taskStatus(last, now).status === "ingested"
  }

  private sign(data: string): string {
    return createHmac("sha256", this.secret).update(data).digest("base64url")
  }
}
