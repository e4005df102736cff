import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as Tracer from "effect/Tracer"
import { annotateResponse } from "../../src/internal/spans.js"
import * as Testing from "../../src/layers/Testing.js"
import { InferenceHttpClient } from "../../src/services/InferenceHttpClient.js"
import { chat, stack } from "./transportStack.js"

/** The attributes `annotateResponse(body)` leaves on a fresh span. */
const attributesAfter = (body: unknown) =>
  Effect.gen(function*() {
    const span = yield* Effect.makeSpan("test")
    yield* Effect.withParentSpan(annotateResponse(body), span)
    return Object.fromEntries((span as Tracer.Span).attributes)
  })

describe("annotateResponse", () => {
  it.effect("reads the model and the usage of chat, completions and responses bodies", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(
        yield* attributesAfter({ model: "m", usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } }),
        { "gen_ai.response.model": "m", "gen_ai.usage.input_tokens": 3, "gen_ai.usage.output_tokens": 4 }
      )
      assert.deepStrictEqual(
        yield* attributesAfter({ model: "m", usage: { input_tokens: 5, output_tokens: 6, total_tokens: 11 } }),
        { "gen_ai.response.model": "m", "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 6 }
      )
      // embeddings count no output
      assert.deepStrictEqual(yield* attributesAfter({ usage: { prompt_tokens: 8, total_tokens: 8 } }), {
        "gen_ai.usage.input_tokens": 8,
        "gen_ai.usage.output_tokens": 0
      })
    }))

  it.effect("leaves bodies without them alone, whatever their shape", () =>
    Effect.gen(function*() {
      for (const body of [null, undefined, "text", 42, [], [1, 2], { usage: null }, { usage: "x", model: 7 }, {}]) {
        assert.deepStrictEqual(yield* attributesAfter(body), {})
      }
    }))
})

/** A tracer keeping every span it makes, over the test's own. */
const recording = (spans: Array<Tracer.Span>) =>
  Effect.map(Effect.tracer, (base) =>
    Tracer.make({
      span: (...args) => {
        const span = base.span(...args)
        spans.push(span)
        return span
      },
      context: base.context
    }))

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
      yield* http.json(chat(), Schema.Unknown)
      const fiber = yield* Effect.fork(
        http.json(chat(), Schema.Unknown, { span: operation, model: "m" }).pipe(Effect.withTracer(tracer))
      )
      yield* Effect.repeatN(Effect.yieldNow(), 20)
      // a caller waiting in line holds no span yet
      assert.deepStrictEqual(spans.map((span) => span.name), [])
      yield* TestClock.adjust("7 seconds")
      yield* Fiber.join(fiber)
      const { attributes, ended } = only(spans, "Chat.create")
      assert.strictEqual(ended, "success")
      assert.deepStrictEqual(attributes, {
        "gen_ai.system": "aifs",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "aifs.limiter.wait_ms": 7_000,
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
      const error = yield* Effect.flip(
        http.json(chat(), Schema.Unknown, { span: operation, model: "m" }).pipe(Effect.withTracer(tracer))
      )
      assert.strictEqual(error._tag, "RequestTooLarge")
      const { attributes, ended, span } = only(spans, "Chat.create")
      assert.strictEqual(ended, "failure")
      if (span.status._tag === "Ended" && Exit.isFailure(span.status.exit)) {
        const failure = Option.getOrUndefined(Cause.failureOption(span.status.exit.cause)) as
          | { _tag?: string }
          | undefined
        assert.strictEqual(failure?._tag, "RequestTooLarge")
      }
      // it never waited: no wait to show; and no call site either
      assert.deepStrictEqual(attributes, {
        "gen_ai.system": "aifs",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m"
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
      for (const name of ["Chat.create", "Chat.createStream"]) {
        const { attributes, ended } = only(spans, name)
        assert.strictEqual(ended, "failure", name)
        assert.notProperty(attributes, "code.stacktrace", name)
        assert.strictEqual(attributes["aifs.limiter.wait_ms"], 0, name)
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
      assert.deepStrictEqual(only(spans, "Chat.create").attributes, {
        "gen_ai.system": "aifs",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
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
      const name = "Chat.createStream"
      const states: Array<string> = []
      yield* Stream.runForEach(
        http.jsonStream(chat(), Schema.Unknown, { span: { name, operation: "chat" }, model: "m" }),
        () => Effect.sync(() => states.push(only(spans, name).ended))
      ).pipe(Effect.withTracer(tracer))
      assert.deepStrictEqual(states, ["open", "open"])
      const { attributes, ended } = only(spans, name)
      assert.strictEqual(ended, "success")
      assert.deepStrictEqual(attributes, {
        "gen_ai.system": "aifs",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "aifs.limiter.wait_ms": 0,
        "gen_ai.response.model": "m-2024",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 30
      })
    }).pipe(Effect.provide(stack(Testing.httpClient(() => ({ sse: [{ id: "a" }, answer] })))))
  })
})
