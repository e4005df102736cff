import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type * as Tracer from "effect/Tracer"
import { ResponseSummary, serverOf, spanOf } from "../../src/internal/telemetry.js"
import * as Testing from "../../src/layers/Testing.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { recording } from "../helpers/spans.js"
import { chat, chatBody, chatOptions, stack } from "./transportStack.js"

/** The attributes a `ResponseSummary` shows after reading `bodies`. */
const summaryOf = (...bodies: ReadonlyArray<unknown>) => {
  const summary = new ResponseSummary()
  for (const body of bodies) summary.observe(body)
  return summary.attributes()
}

describe("ResponseSummary", () => {
  it("reads the id, model, finish reasons and usage of chat, completions, responses and embeddings", () => {
    assert.deepStrictEqual(
      summaryOf({
        id: "c1",
        model: "m",
        choices: [{ index: 0, finish_reason: "stop" }, { index: 1, finish_reason: "length" }],
        usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }
      }),
      {
        "gen_ai.response.id": "c1",
        "gen_ai.response.model": "m",
        "gen_ai.response.finish_reasons": ["stop", "length"],
        "gen_ai.usage.input_tokens": 3,
        "gen_ai.usage.output_tokens": 4
      }
    )
    assert.deepStrictEqual(
      summaryOf({
        id: "resp_1",
        object: "response",
        status: "completed",
        model: "m",
        usage: { input_tokens: 5, output_tokens: 6, total_tokens: 11 }
      }),
      {
        "gen_ai.response.id": "resp_1",
        "gen_ai.response.model": "m",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 5,
        "gen_ai.usage.output_tokens": 6
      }
    )
    // embeddings count no output tokens, and say so by leaving them out
    assert.deepStrictEqual(summaryOf({ model: "e", usage: { prompt_tokens: 8, total_tokens: 8 } }), {
      "gen_ai.response.model": "e",
      "gen_ai.usage.input_tokens": 8
    })
  })

  it("across a stream: the first id and model, each choice's finish reason, the usage of the last chunk", () => {
    assert.deepStrictEqual(
      summaryOf(
        { id: "c1", model: "m", choices: [{ index: 0, delta: { content: "a" } }] },
        { id: "c1", model: "other", choices: [{ index: 0, finish_reason: "tool_calls" }] },
        { id: "c1", choices: [], usage: { prompt_tokens: 2, completion_tokens: 9 } },
        { type: "response.completed", response: { object: "response", status: "incomplete", id: "x" } }
      ),
      {
        "gen_ai.response.id": "c1",
        "gen_ai.response.model": "m",
        "gen_ai.response.finish_reasons": ["incomplete"],
        "gen_ai.usage.input_tokens": 2,
        "gen_ai.usage.output_tokens": 9
      }
    )
  })

  it("a queue's answer: a result is read as the answer it holds, a handle says nothing of one", () => {
    const body = { id: "c9", model: "m", usage: { prompt_tokens: 4, completion_tokens: 5 } }
    assert.deepStrictEqual(summaryOf({ kind: "result", value: body }), summaryOf(body))
    assert.deepStrictEqual(summaryOf({ kind: "handle", value: { id: "job-1", status: "queued" } }), {})
  })

  it("leaves bodies without them alone, whatever their shape", () => {
    for (const body of [null, undefined, "text", 42, [], [1, 2], { usage: null }, { usage: "x", model: 7 }, {}]) {
      assert.deepStrictEqual(summaryOf(body), {})
    }
  })
})

describe("spanOf", () => {
  const server = { address: "aifs.test", port: 443 }
  it("a model operation: `{operation} {model}`, kind client, the request's parameters, never its messages", () => {
    const span = spanOf(
      {
        name: "Chat.create",
        operation: "chat",
        params: {
          model: "m",
          messages: [{ role: "user", content: "secret prompt" }],
          max_tokens: 100,
          temperature: 0.5,
          top_p: 0.9,
          frequency_penalty: 0.1,
          presence_penalty: 0.2,
          seed: 7,
          stop: "END",
          n: 2,
          response_format: { type: "json_schema" }
        }
      },
      "m",
      server,
      true
    )
    assert.strictEqual(span.name, "chat m")
    assert.strictEqual(span.kind, "client")
    assert.deepStrictEqual(span.attributes, {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "aifs",
      "gen_ai.request.model": "m",
      "server.address": "aifs.test",
      "server.port": 443,
      "gen_ai.request.max_tokens": 100,
      "gen_ai.request.temperature": 0.5,
      "gen_ai.request.top_p": 0.9,
      "gen_ai.request.frequency_penalty": 0.1,
      "gen_ai.request.presence_penalty": 0.2,
      "gen_ai.request.seed": 7,
      "gen_ai.request.stop_sequences": ["END"],
      "gen_ai.request.choice.count": 2,
      "gen_ai.request.stream": true,
      "gen_ai.output.type": "json",
      "aifs.operation": "Chat.create"
    })
    assert.notInclude(JSON.stringify(span), "secret prompt")
  })

  it("embeddings name their encoding; images their output; one choice is not counted; no model, no model in the name", () => {
    const embeddings = spanOf(
      { name: "Embeddings.create", operation: "embeddings", params: { n: 1 } },
      "e",
      undefined,
      false
    )
    assert.strictEqual(embeddings.name, "embeddings e")
    assert.deepStrictEqual(embeddings.attributes, {
      "gen_ai.operation.name": "embeddings",
      "gen_ai.provider.name": "aifs",
      "gen_ai.request.model": "e",
      "gen_ai.request.encoding_formats": ["float"],
      "aifs.operation": "Embeddings.create"
    })
    const image = spanOf({ name: "Images.generate", operation: "images.generations" }, undefined, undefined, false)
    assert.strictEqual(image.name, "images.generations")
    assert.strictEqual(image.attributes["gen_ai.output.type"], "image")
  })

  it("any other operation: its own name, kind internal, no gen_ai attribute", () => {
    assert.deepStrictEqual(spanOf({ name: "Files.upload" }, undefined, server, false), {
      name: "Files.upload",
      kind: "internal",
      attributes: { "aifs.operation": "Files.upload" }
    })
    assert.deepStrictEqual(serverOf("https://llm.example/v2"), { address: "llm.example", port: 443 })
    assert.deepStrictEqual(serverOf("http://127.0.0.1:8080/v2"), { address: "127.0.0.1", port: 8080 })
    assert.deepStrictEqual(serverOf("http://example"), { address: "example", port: 80 })
    assert.isUndefined(serverOf("not a url"))
  })
})

const operation = { name: "Chat.create", operation: "chat" } as const
const answer = { model: "m-2024", usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 } }

/** The attributes of the one span named `name`, and how it ended. */
const only = (spans: ReadonlyArray<Tracer.Span>, name: string) => {
  const named = spans.filter((span) => span.name === name)
  assert.strictEqual(named.length, 1, `one span ${name}`)
  const span = named[0]!
  return {
    span,
    attributes: Object.fromEntries(span.attributes),
    ended: span.status._tag === "Ended" ? (Exit.isSuccess(span.status.exit) ? "success" : "failure") : "open"
  }
}

describe("the operation's span, through InferenceHttpClient", () => {
  it.effect("opens when the request leaves the limiter's line, with the wait, the operation, the models and the usage", () => {
    const spans: Array<Tracer.Span> = []
    return Effect.gen(function*() {
      const tracer = yield* recording(spans)
      const http = yield* InferenceHttpClient
      // holds the window's only slot (the limiter counts a request by its operation's model and parameters)
      yield* http.json(chat(), Schema.Unknown, chatOptions)
      const fiber = yield* Effect.fork(
        http.json(chat(), Schema.Unknown, { span: operation, model: "m" }).pipe(Effect.withTracer(tracer))
      )
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      // a caller waiting in line holds no span yet
      assert.deepStrictEqual(spans.map((span) => span.name), [])
      yield* TestClock.adjust("7 seconds")
      yield* Fiber.join(fiber)
      const { attributes, ended, span } = only(spans, "chat m")
      assert.strictEqual(ended, "success")
      assert.strictEqual(span.kind, "client")
      assert.deepStrictEqual(attributes, {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "aifs",
        "gen_ai.request.model": "m",
        "server.address": "aifs.test",
        "server.port": 80,
        "aifs.operation": "Chat.create",
        "aifs.limiter.wait_ms": 7_000,
        "aifs.route": "/v2",
        "gen_ai.response.model": "m-2024",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 30
      })
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: answer })), {
      limiter: { limits: { m: { rpm: 1, tpm: 1_000_000 } }, window: "7 seconds" }
    })))
  })

  it.effect("a request the limiter refuses (larger than the whole quota) gets an ended span with the error", () => {
    const spans: Array<Tracer.Span> = []
    return Effect.gen(function*() {
      const tracer = yield* recording(spans)
      const http = yield* InferenceHttpClient
      // its prompt and its 100 output tokens, against a combined budget of 50
      const error = yield* Effect.flip(
        http.json(chat(), Schema.Unknown, { span: { ...operation, params: chatBody }, model: "m" }).pipe(
          Effect.withTracer(tracer)
        )
      )
      assert.strictEqual(error._tag, "RequestTooLarge")
      assert.strictEqual(error._tag === "RequestTooLarge" ? error.budget : undefined, "tokens")
      const { attributes, ended, span } = only(spans, "chat m")
      assert.strictEqual(ended, "failure")
      if (span.status._tag === "Ended" && Exit.isFailure(span.status.exit)) {
        const failure = Option.getOrUndefined(Cause.failureOption(span.status.exit.cause)) as
          | { _tag?: string }
          | undefined
        assert.strictEqual(failure?._tag, "RequestTooLarge")
      }
      // it never waited: no wait or route to show; and no call site either
      assert.deepStrictEqual(attributes, {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "aifs",
        "gen_ai.request.model": "m",
        "server.address": "aifs.test",
        "server.port": 80,
        "gen_ai.request.max_tokens": 100,
        "aifs.operation": "Chat.create",
        "error.type": "RequestTooLarge"
      })
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ body: answer })), {
      limiter: { limits: { m: { rpm: 10, tpm: 50 } } }
    })))
  })

  it.effect("a failed request's span ends with its error and holds no call site", () => {
    const spans: Array<Tracer.Span> = []
    return Effect.gen(function*() {
      const tracer = yield* recording(spans)
      const http = yield* InferenceHttpClient
      yield* Effect.flip(http.json(chat(), Schema.Unknown, { span: operation }).pipe(Effect.withTracer(tracer)))
      yield* Effect.flip(
        Stream.runDrain(http.sse(chat(), { span: { name: "Chat.createStream", operation: "chat" } })).pipe(
          Effect.withTracer(tracer)
        )
      )
      // no model named: the span is the operation's name alone, the call and the stream one each
      assert.strictEqual(spans.filter((span) => span.name === "chat").length, 2)
      for (const span of spans.filter((span) => span.name === "chat")) {
        const attributes = Object.fromEntries(span.attributes)
        assert.strictEqual(span.status._tag === "Ended" && Exit.isFailure(span.status.exit), true)
        assert.notProperty(attributes, "code.stacktrace")
        assert.strictEqual(attributes["aifs.limiter.wait_ms"], 0)
        assert.strictEqual(attributes["error.type"], "ServerError")
      }
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ status: 500, body: { detail: "down" } })))))
  })

  it.effect("without a limiter the span has no wait; a request without a span annotates nobody else's", () => {
    const spans: Array<Tracer.Span> = []
    return Effect.gen(function*() {
      const tracer = yield* recording(spans)
      const http = yield* InferenceHttpClient
      yield* http.json(chat(), Schema.Unknown, { span: operation, model: "m" }).pipe(Effect.withTracer(tracer))
      yield* Effect.withSpan(
        Effect.zipRight(
          http.json(chat(), Schema.Unknown),
          Stream.runDrain(http.jsonStream(chat(), Schema.Unknown))
        ),
        "caller"
      ).pipe(Effect.withTracer(tracer))
      assert.deepStrictEqual(only(spans, "chat m").attributes, {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "aifs",
        "gen_ai.request.model": "m",
        "server.address": "aifs.test",
        "server.port": 80,
        "aifs.operation": "Chat.create",
        "aifs.route": "/v2",
        "gen_ai.response.model": "m-2024",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 30
      })
      assert.deepStrictEqual(only(spans, "caller").attributes, {})
    }).pipe(
      Effect.provide(
        Testing.layerHttp((request) =>
          request.headers["accept"] === "text/event-stream" ? { sse: [answer] } : { body: answer }
        )
      )
    )
  })

  it.effect("a stream's span lasts until the stream ends and shows the usage it reported", () => {
    const spans: Array<Tracer.Span> = []
    return Effect.gen(function*() {
      const tracer = yield* recording(spans)
      const http = yield* InferenceHttpClient
      const name = "chat m"
      const states: Array<string> = []
      yield* Stream.runForEach(
        http.jsonStream(chat(), Schema.Unknown, { span: { name: "Chat.createStream", operation: "chat" }, model: "m" }),
        () => Effect.sync(() => states.push(only(spans, name).ended))
      ).pipe(Effect.withTracer(tracer))
      assert.deepStrictEqual(states, ["open", "open"])
      const { attributes, ended } = only(spans, name)
      assert.strictEqual(ended, "success")
      assert.deepStrictEqual(attributes, {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "aifs",
        "gen_ai.request.model": "m",
        "server.address": "aifs.test",
        "server.port": 80,
        "gen_ai.request.stream": true,
        "aifs.operation": "Chat.createStream",
        "aifs.limiter.wait_ms": 0,
        "aifs.route": "/v2",
        "gen_ai.response.id": "a",
        "gen_ai.response.model": "m-2024",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 30
      })
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ sse: [{ id: "a" }, answer] })))))
  })
})
