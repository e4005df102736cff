/**
 * The gateway schemas decode the documented examples, extra fields and unknown statuses.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import {
  AccessToken,
  ChatAnswerFromWire,
  ChatSession,
  GatewayFileList,
  IngestTaskList,
  UserConfigList
} from "../../src/schemas/Gateway.js"

const decode = <A, I>(schema: Schema.Schema<A, I>, value: unknown) =>
  Schema.decodeUnknown(schema)(value, { onExcessProperty: "ignore" })

describe("gateway schemas", () => {
  it.effect("documented examples decode", () =>
    Effect.gen(function*() {
      const token = yield* decode(AccessToken, { access_token: "abc", something: 1 })
      assert.strictEqual(token.access_token, "abc")
      const configs = yield* decode(UserConfigList, [{
        userGroupId: "g",
        localKbConfigs: [{ id: "kb", allowed_llms: [{ name: "Llama-3.3-70B-Instruct", extra: true }] }],
        globalKbConfigs: []
      }])
      assert.strictEqual(configs[0]!.localKbConfigs![0]!.allowed_llms![0]!.name, "Llama-3.3-70B-Instruct")
      const files = yield* decode(GatewayFileList, [
        { fileId: "a", status: "uploaded", userId: "u", fileName: "x.pdf", fileUri: "s3://x" },
        { fileId: "b", status: "duplicated" },
        { fileId: "c", status: "file_too_large" },
        { fileId: "d", status: "file_type_not_supported" },
        { fileId: "e", status: "error" },
        { fileId: "f", status: "virus_scan" }
      ])
      assert.deepStrictEqual(files.map((f) => [f.isDone, f.isFailed]), [
        [true, false],
        [true, false],
        [false, true],
        [false, true],
        [false, true],
        [false, false]
      ])
      const tasks = yield* decode(IngestTaskList, [{ status: "queued" }, { status: "ingestion_failed", x: 1 }])
      assert.isTrue(tasks[1]!.isFailed)
      const session = yield* decode(ChatSession, { sessionId: "s" })
      assert.strictEqual(session.sessionId, "s")
      assert.strictEqual((yield* decode(ChatAnswerFromWire, { response: "r" })).text, "r")
      assert.strictEqual((yield* decode(ChatAnswerFromWire, "plain")).text, "plain")
      const missing = yield* Effect.flip(decode(GatewayFileList, [{ status: "uploaded" }]))
      assert.include(String(missing), "fileId")
    }))
})
