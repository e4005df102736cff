/**
 * Wire schemas of the retrieval gateway: login, user configs, files, ingestion tasks, chat sessions, the
 * query pipeline's answer and the (undocumented) user manager. Field names as on the wire (camelCase here,
 * with the snake_case of the ingestion metadata and the token).
 *
 * @example
 * ```ts
 * import * as GatewaySchema from "effect-aifs/schemas/Gateway"
 * import * as Schema from "effect/Schema"
 *
 * // the query pipeline's answer is not documented: a JSON object or a bare JSON string both decode
 * const decode = Schema.decodeUnknownSync(GatewaySchema.ChatAnswerFromWire)
 *
 * const fromObject = decode({ answer: "Open from 9 to 5.", sources: [{ fileName: "faq.md", score: 0.82 }] })
 * const fromString = decode("Open from 9 to 5.")
 *
 * console.log(fromObject.text, fromObject.sources?.[0]?.fileName, fromString.text)
 * // => Open from 9 to 5. faq.md Open from 9 to 5.
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Nullish, OpenEnum } from "./Shared.js"

/**
 * `POST /api/v1/auth/user` body.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LoginParams = Schema.Struct({
  /** The gateway user name. */
  username: Schema.String,
  /** The user's password. */
  password: Schema.String
}).annotations({ identifier: "GatewayLoginParams" })

/**
 * The type of `LoginParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type LoginParams = typeof LoginParams.Type

/**
 * The login answer: `access_token` is documented; the rest are accepted when a server sends them.
 *
 * @since 0.1.0
 * @category schemas
 */
export class AccessToken extends Schema.Class<AccessToken>("GatewayAccessToken")({
  /** The bearer token of later calls (a JWT on the emulator; its `exp` gives the expiry). */
  access_token: Schema.String,
  /** `bearer`, when sent. */
  token_type: Nullish(Schema.String),
  /** Lifetime in seconds, when sent. */
  expires_in: Nullish(Schema.Number),
  /** A refresh token, when sent (not used: the client logs in again). */
  refresh_token: Nullish(Schema.String)
}) {}

/**
 * An LLM a knowledge-base config allows.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AllowedLlm = Schema.Struct({
  /** Model name to put in `chatModel`. */
  name: Schema.String
})

/**
 * The type of `AllowedLlm`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AllowedLlm = typeof AllowedLlm.Type

/**
 * A local knowledge-base config of a user.
 *
 * @since 0.1.0
 * @category schemas
 */
export const LocalKbConfig = Schema.Struct({
  /** Config id, the `localConfigId` of a session. */
  id: Schema.String,
  /** Display name, when sent. */
  name: Nullish(Schema.String),
  /** The LLMs a session of this config may chat with. */
  allowed_llms: Nullish(Schema.Array(AllowedLlm))
})

/**
 * The type of `LocalKbConfig`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type LocalKbConfig = typeof LocalKbConfig.Type

/**
 * One entry of `GET /config-manager/api/v1/user/configs`.
 *
 * @since 0.1.0
 * @category schemas
 */
export class UserConfig extends Schema.Class<UserConfig>("GatewayUserConfig")({
  /** The user's group. */
  userGroupId: Nullish(Schema.String),
  /** Local knowledge-base configs. */
  localKbConfigs: Nullish(Schema.Array(LocalKbConfig))
}) {}

/**
 * The user's configs.
 *
 * @since 0.1.0
 * @category schemas
 */
export const UserConfigList = Schema.Array(UserConfig).annotations({ identifier: "GatewayUserConfigList" })

/**
 * Upload statuses: `pending` while uploading; done: `uploaded`, `duplicated`; failed: `error`,
 * `file_too_large`, `file_type_not_supported`. Other strings pass.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FileStatus = OpenEnum(
  ["pending", "uploaded", "duplicated", "error", "file_too_large", "file_type_not_supported"],
  "Upload status."
)

/**
 * The statuses that end an upload successfully.
 *
 * @since 0.1.0
 * @category constants
 */
export const fileDoneStatuses: ReadonlyArray<string> = ["uploaded", "duplicated"]

/**
 * The statuses that end an upload in failure.
 *
 * @since 0.1.0
 * @category constants
 */
export const fileFailedStatuses: ReadonlyArray<string> = ["error", "file_too_large", "file_type_not_supported"]

/**
 * A file of the file manager.
 *
 * @since 0.1.0
 * @category schemas
 */
export class GatewayFile extends Schema.Class<GatewayFile>("GatewayFile")({
  /** File id, for polling and `activeFiles`. */
  fileId: Schema.String,
  /** Upload status (see `FileStatus`). */
  status: FileStatus,
  /** Owner. */
  userId: Nullish(Schema.String),
  /** Original file name. */
  fileName: Nullish(Schema.String),
  /** Where the gateway stored it: the `filePath` of the ingestion task. */
  fileUri: Nullish(Schema.String),
  /** Size in bytes, when sent. */
  size: Nullish(Schema.Number),
  /** Why it failed, when sent. */
  message: Nullish(Schema.String)
}) {
  /** True once the upload ended well (`uploaded` or `duplicated`). */
  get isDone(): boolean {
    return fileDoneStatuses.includes(this.status)
  }
  /** True once the upload failed. */
  get isFailed(): boolean {
    return fileFailedStatuses.includes(this.status)
  }
}

/**
 * A list of files.
 *
 * @since 0.1.0
 * @category schemas
 */
export const GatewayFileList = Schema.Array(GatewayFile).annotations({ identifier: "GatewayFileList" })

/**
 * Metadata of an ingestion task (`file_uri` is required for retrieval to work).
 *
 * @since 0.1.0
 * @category schemas
 */
export const IngestMetadata = Schema.Struct({
  /** File id. */
  file_id: Schema.String,
  /** Owner. */
  user_id: Schema.String,
  /** File name. */
  file_name: Schema.String,
  /** The file's `fileUri`. */
  file_uri: Schema.String
})

/**
 * The type of `IngestMetadata`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type IngestMetadata = typeof IngestMetadata.Type

/**
 * `POST /ingest-master/api/v1/task` body.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreateTaskParams = Schema.Struct({
  /** The file's `fileUri`. */
  filePath: Schema.String,
  /** `user` (local knowledge base). */
  role: Schema.String,
  /** File metadata. */
  metadata: IngestMetadata
}).annotations({ identifier: "GatewayCreateTaskParams" })

/**
 * The type of `CreateTaskParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreateTaskParams = typeof CreateTaskParams.Type

/**
 * Ingestion statuses: done `ingested`, failed `ingestion_failed`; others (`queued`, `ingesting`) pass.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TaskStatus = OpenEnum(["queued", "ingesting", "ingested", "ingestion_failed"], "Ingestion status.")

/**
 * An ingestion task.
 *
 * @since 0.1.0
 * @category schemas
 */
export class IngestTask extends Schema.Class<IngestTask>("GatewayIngestTask")({
  /** Task id, when sent. */
  taskId: Nullish(Schema.String),
  /** Status (see `TaskStatus`). */
  status: Schema.optionalWith(TaskStatus, { default: () => "queued" }),
  /** The file it ingests. */
  filePath: Nullish(Schema.String),
  /** Progress from 0 to 100, when sent. */
  progress: Nullish(Schema.Number),
  /** Why it failed, when sent. */
  message: Nullish(Schema.String)
}) {
  /** True once ingested. */
  get isDone(): boolean {
    return this.status === "ingested"
  }
  /** True once failed. */
  get isFailed(): boolean {
    return this.status === "ingestion_failed"
  }
}

/**
 * The tasks of a file, oldest first (the last one is the current state).
 *
 * @since 0.1.0
 * @category schemas
 */
export const IngestTaskList = Schema.Array(IngestTask).annotations({ identifier: "GatewayIngestTaskList" })

/**
 * The config of a chat session.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SessionConfig = Schema.Struct({
  /** The local knowledge-base config (`localKbConfigs[].id`). */
  localConfigId: Nullish(Schema.String),
  /** Chat over the global knowledge base. */
  globalContext: Schema.optional(Schema.Boolean),
  /** File ids to retrieve from; empty means all local files. */
  activeFiles: Schema.optional(Schema.Array(Schema.String)),
  /** An allowed LLM of the config. */
  chatModel: Nullish(Schema.String)
})

/**
 * The type of `SessionConfig`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type SessionConfig = typeof SessionConfig.Type

/**
 * `POST /chat-session-manager/api/v1/sessions/` body.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreateSessionParams = Schema.Struct({
  /** Session title. */
  title: Schema.optional(Schema.String),
  /** What the session chats over. */
  config: SessionConfig
}).annotations({ identifier: "GatewayCreateSessionParams" })

/**
 * The type of `CreateSessionParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreateSessionParams = typeof CreateSessionParams.Type

/**
 * One turn of a session's history (emulator's shape; undocumented).
 *
 * @since 0.1.0
 * @category schemas
 */
export const SessionMessage = Schema.Struct({
  /** `user` or `assistant`. */
  role: Schema.String,
  /** The text. */
  content: Schema.String
})

/**
 * A chat session (create answers at least `{"sessionId"}`).
 *
 * @since 0.1.0
 * @category schemas
 */
export class ChatSession extends Schema.Class<ChatSession>("GatewayChatSession")({
  /** Session id. */
  sessionId: Schema.String,
  /** Title. */
  title: Nullish(Schema.String),
  /** Config. */
  config: Nullish(SessionConfig),
  /** Creation time (ISO 8601), when sent. */
  createdAt: Nullish(Schema.String),
  /** The history, when sent. */
  messages: Nullish(Schema.Array(SessionMessage))
}) {}

/**
 * A list of sessions.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatSessionList = Schema.Array(ChatSession).annotations({ identifier: "GatewayChatSessionList" })

/**
 * What a delete answered (undocumented: any JSON passes).
 *
 * @since 0.1.0
 * @category schemas
 */
export class Deleted extends Schema.Class<Deleted>("GatewayDeleted")({
  /** The id deleted, when sent. */
  id: Nullish(Schema.String),
  /** `true`, when sent. */
  deleted: Nullish(Schema.Boolean)
}) {}

/**
 * `POST /<query-pipeline>/api/v1/chat` body.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatParams = Schema.Struct({
  /** The session. */
  sessionId: Schema.String,
  /** The question. */
  userPrompt: Schema.String
}).annotations({ identifier: "GatewayChatParams" })

/**
 * The type of `ChatParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChatParams = typeof ChatParams.Type

/**
 * A passage the answer was grounded in.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatSource = Schema.Struct({
  /** File id. */
  fileId: Nullish(Schema.String),
  /** File name. */
  fileName: Nullish(Schema.String),
  /** The passage's text. */
  passage: Nullish(Schema.String),
  /** Retrieval score (higher is closer). */
  score: Nullish(Schema.Number)
})

/**
 * The type of `ChatSource`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ChatSource = typeof ChatSource.Type

/**
 * The query pipeline's answer. Its shape is not documented: the text is read from `answer`, `response`,
 * `message` or `content` (see `text`), and a bare JSON string decodes as `{"answer": ...}`.
 *
 * @since 0.1.0
 * @category schemas
 */
export class ChatAnswer extends Schema.Class<ChatAnswer>("GatewayChatAnswer")({
  /** The answer (emulator). */
  answer: Nullish(Schema.String),
  /** The answer, in servers that call it `response`. */
  response: Nullish(Schema.String),
  /** The answer, in servers that call it `message`. */
  message: Nullish(Schema.String),
  /** The answer, in servers that call it `content`. */
  content: Nullish(Schema.String),
  /** The session. */
  sessionId: Nullish(Schema.String),
  /** The passages used. */
  sources: Nullish(Schema.Array(ChatSource))
}) {
  /** The answer's text, whichever field carried it. */
  get text(): string {
    return this.answer ?? this.response ?? this.message ?? this.content ?? ""
  }
}

/**
 * `ChatAnswer`, also from a bare JSON string.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatAnswerFromWire = Schema.Union(
  ChatAnswer,
  Schema.transform(Schema.String, Schema.typeSchema(ChatAnswer), {
    strict: true,
    decode: (answer) => new ChatAnswer({ answer }),
    encode: (answer) => answer.text
  })
)

/**
 * The current user (user manager; undocumented: the emulator's shape).
 *
 * @since 0.1.0
 * @category schemas
 */
export class GatewayUser extends Schema.Class<GatewayUser>("GatewayUser")({
  /** User id. */
  userId: Nullish(Schema.String),
  /** User name. */
  username: Nullish(Schema.String),
  /** Roles, e.g. `CHAT_USER`. */
  roles: Nullish(Schema.Array(Schema.String)),
  /** The user's group. */
  userGroupId: Nullish(Schema.String)
}) {}
