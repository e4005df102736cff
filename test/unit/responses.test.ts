/**
 * Responses on a scripted transport: the request body (flat tools, `text.format`, `stream`), output text,
 * typed stream events, unknown event types skipped, a malformed known event failing with DecodeError.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Testing from "../../src/layers/Testing.js"
import { outputText, Response } from "../../src/schemas/Responses.js"
import * as Responses from "../../src/services/Responses.js"
import { capturing, urlOf } from "./surfaceHelpers.js"

const response = {
  id: "resp_1",
  object: "response",
  created_at: 1710000000,
  model: "gpt-4.1",
  status: "completed",
  output: [
    { type: "reasoning", id: "rs_1", summary: [] },
    {
      type: "message",
      id: "msg_1",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: "Hello ", annotations: [] }, { type: "output_text", text: "world" }]
    },
    { type: "function_call", id: "fc_1", call_id: "call_1", name: "get_weather", arguments: "{\"city\":\"Bonn\"}" },
    { type: "web_search_call", id: "ws_1", status: "completed" }
  ],
  usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 }
}

describe("Responses schemas", () => {
  it("decodes output items, known and unknown, and reads output_text", () => {
    const decoded = Schema.decodeUnknownSync(Response)(response)
    assert.strictEqual(decoded.text, "Hello world")
    assert.strictEqual(outputText(decoded), "Hello world")
    assert.strictEqual(decoded.functionCalls[0]?.call_id, "call_1")
    assert.strictEqual(decoded.output[3]?.type, "web_search_call")
    assert.strictEqual(decoded.usage?.total_tokens, 7)
  })

  it("an item of a type not known keeps its type and the fields of a known item's shape; a known one stays strict", () => {
    const searched = { type: "tool_search_call", id: "ts_1", status: "completed", arguments: { query: "x" }, extra: 1 }
    const decoded = Schema.decodeUnknownSync(Response)({ ...response, output: [searched] })
    assert.deepStrictEqual({ ...decoded.output[0] }, { type: "tool_search_call", id: "ts_1", status: "completed" })
    // keys that name Object.prototype's members are fields like any other
    const odd = JSON.parse(`{"type":"x_call","id":"x_1","__proto__":{"a":1},"constructor":2,"toString":"s"}`)
    assert.deepStrictEqual({ ...Schema.decodeUnknownSync(Response)({ ...response, output: [odd] }).output[0] }, {
      type: "x_call",
      id: "x_1"
    })
    const malformed = { type: "function_call", id: "fc_1", call_id: "c", name: "f", arguments: { city: "Bonn" } }
    assert.throws(() => Schema.decodeUnknownSync(Response)({ ...response, output: [malformed] }))
  })

  it("falls back to a server-sent output_text when there is no output", () => {
    const decoded = Schema.decodeUnknownSync(Response)({ id: "r", output_text: "just text", status: "queued_later" })
    assert.strictEqual(decoded.text, "just text")
    assert.strictEqual(decoded.status, "queued_later")
  })
})

describe("Responses service", () => {
  it.effect("create posts the params to /v2/responses", () => {
    const { layer, requests } = capturing(() => ({ body: response }))
    return Effect.gen(function*() {
      const responses = yield* Responses.Responses
      const result = yield* responses.create({
        model: "gpt-4.1",
        input: [{ role: "user", content: [{ type: "input_text", text: "hi" }] }],
        tools: [{ type: "function", name: "get_weather", parameters: { type: "object" } }],
        text: { format: { type: "json_schema", name: "x", schema: { type: "object" }, strict: true } }
      })
      assert.strictEqual(result.text, "Hello world")
      assert.strictEqual(urlOf(requests[0]).pathname, "/v2/responses")
      const body = requests[0]!.body
      const sent = body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(body.body)) : undefined
      assert.deepStrictEqual(sent.tools, [{ type: "function", name: "get_weather", parameters: { type: "object" } }])
      assert.strictEqual(sent.text.format.type, "json_schema")
      assert.isUndefined(sent.stream)
    }).pipe(Effect.provide(layer))
  })

  it.effect("createStream decodes known events, skips unknown ones, needs no [DONE]", () =>
    Effect.gen(function*() {
      const responses = yield* Responses.Responses
      const events = Chunk.toReadonlyArray(
        yield* Stream.runCollect(responses.createStream({ model: "gpt-4.1", input: "hi" }))
      )
      assert.deepStrictEqual(events.map((e) => e.type), [
        "response.created",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.completed"
      ])
      const text = yield* Responses.collectText(responses.createStream({ model: "gpt-4.1", input: "hi" }))
      assert.strictEqual(text, "Hello world")
    }).pipe(Effect.provide(Testing.layerHttp((request) => {
      assert.strictEqual((request.body as { stream?: boolean }).stream, true)
      return {
        done: false,
        sse: [
          { type: "response.created", response: { ...response, status: "in_progress", output: [] } },
          { type: "response.brand_new_event", whatever: 1 },
          { type: "response.output_text.delta", item_id: "msg_1", output_index: 0, content_index: 0, delta: "Hello " },
          { type: "response.reasoning_summary_text.delta", delta: "..." },
          { type: "response.output_text.delta", item_id: "msg_1", output_index: 0, content_index: 0, delta: "world" },
          { type: "response.completed", response }
        ]
      }
    }))))

  it.effect("a known event with the wrong shape fails with DecodeError", () =>
    Effect.gen(function*() {
      const responses = yield* Responses.Responses
      const error = yield* Effect.flip(Stream.runDrain(responses.createStream({ model: "gpt-4.1", input: "hi" })))
      assert.strictEqual(error._tag, "DecodeError")
      assert.match(error.message, /response\.output_text\.delta/)
    }).pipe(Effect.provide(Testing.layerHttp(() => ({
      done: false,
      sse: [{ type: "response.output_text.delta", delta: 42 }]
    })))))
})
