import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { inspect } from "node:util"
import { fingerprint, makeRedactor } from "../../src/internal/redact.js"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import type { ApiError } from "../../src/schemas/Errors.js"
import * as Chat from "../../src/services/Chat.js"
import { defaultChatParams, layerWithClient, listModels, modelListBody, recorder, sequence } from "./helpers.js"

const configuredKey = "sk-configured-secret-0123456789"
const keyShaped = "gen-" + "Ab3".repeat(16)
const noRetry = { retry: { maxRetries: 0 }, config: { apiKey: configuredKey } }

/** Every way an error can be shown: none may contain the secret. */
const assertHidden = (error: ApiError, secret: string) => {
  assert.notInclude(error.message, secret)
  assert.notInclude(String(error), secret)
  assert.notInclude(JSON.stringify(error), secret)
  assert.notInclude(inspect(error, { depth: 10 }), secret)
  assert.notInclude(Cause.pretty(Cause.fail(error)), secret)
}

describe("makeRedactor", () => {
  const redact = makeRedactor([Redacted.make(configuredKey), undefined])

  it("replaces the configured secret wherever it appears", () => {
    assert.strictEqual(
      redact(`key ${configuredKey} and again ${configuredKey}.`),
      "key <redacted> and again <redacted>."
    )
  })

  it("replaces bearer tokens and gen- keys", () => {
    assert.strictEqual(redact("Authorization: Bearer abc.def-ghi"), "Authorization: Bearer <redacted>")
    assert.strictEqual(redact(`Incorrect API key provided: ${keyShaped}`), "Incorrect API key provided: <redacted>")
    assert.strictEqual(redact(`"${keyShaped}"`), "\"<redacted>\"")
  })

  it("leaves other text alone", () => {
    assert.strictEqual(redact("generation failed: gen-short"), "generation failed: gen-short")
  })

  it("ignores secrets too short to redact safely", () => {
    assert.strictEqual(makeRedactor([Redacted.make("a")])("a banana"), "a banana")
  })

  it("replaces a secret echoed in JSON with <, > and & escaped (Go's encoder) or non-ASCII escaped (Python's)", () => {
    const secret = "pa<ss>&wörd"
    const redactSecret = makeRedactor([Redacted.make(secret)])
    for (
      const echoed of [
        secret,
        "pa\\u003css\\u003e\\u0026wörd",
        "pa<ss>&w\\u00f6rd",
        // the hex digits in upper case, as Java's and .NET's encoders write them
        "pa\\u003Css\\u003E\\u0026wörd",
        "pa<ss>&w\\u00F6rd"
      ]
    ) {
      assert.strictEqual(redactSecret(`{"detail":"bad key ${echoed}"}`), `{"detail":"bad key <redacted>"}`, echoed)
    }
  })
})

describe("fingerprint", () => {
  it("is FNV-1a of the key in 8 hex digits, zeros kept: stable, short, and never the key", () => {
    assert.strictEqual(fingerprint(Redacted.make("hello")), "key#4f9f2cab")
    assert.strictEqual(fingerprint(Redacted.make("k120")), "key#0493fd3b")
    assert.strictEqual(fingerprint(Redacted.make("")), "key#811c9dc5")
    assert.notStrictEqual(fingerprint(Redacted.make(keyShaped)), fingerprint(Redacted.make(`${keyShaped}x`)))
  })
})

describe("the configuration never shows the key", () => {
  it("String, JSON and inspect of the config hide the key", () => {
    const config = ClientConfig.make({ apiKey: configuredKey })
    assert.strictEqual(String(config.apiKey), "<redacted>")
    assert.notInclude(JSON.stringify(config), configuredKey)
    assert.notInclude(inspect(config, { depth: 10 }), configuredKey)
    assert.notInclude(`${config.apiKey}`, configuredKey)
  })
})

describe("the transport authenticates and redacts", () => {
  it.effect("sends authorization: Bearer <key>", () =>
    Effect.gen(function*() {
      const rec = yield* recorder(() => ({ body: modelListBody }))
      yield* listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, noRetry)))
      const request = yield* Queue.take(rec.calls)
      assert.strictEqual(request.headers["authorization"], `Bearer ${configuredKey}`)
      assert.strictEqual(request.headers["accept"], "application/json")
      assert.match(request.headers["user-agent"] ?? "", /^effect-aifs\//)
    }))

  const echoes: ReadonlyArray<readonly [string, number, unknown, string]> = [
    ["a key-shaped detail", 401, { detail: `Incorrect API key provided: ${keyShaped}` }, keyShaped],
    ["the configured key in detail", 401, { detail: `Incorrect API key provided: ${configuredKey}` }, configuredKey],
    [
      "the configured key in an error object",
      403,
      { error: { message: `key ${configuredKey} may not use this model`, type: "forbidden", code: "403" } },
      configuredKey
    ],
    [
      "the configured key in a validation list",
      422,
      { detail: [{ loc: ["header", configuredKey], msg: `bad ${configuredKey}`, type: "x" }] },
      configuredKey
    ],
    ["the configured key in plain text", 500, `upstream rejected Bearer ${configuredKey}`, configuredKey],
    ["the key in an HTML title", 502, `<html><title>bad key ${configuredKey}</title></html>`, configuredKey],
    [
      "the key in a rate-limit body",
      429,
      { error: { message: `Rate limit for ${configuredKey}. Please retry after 22 seconds`, code: "429" } },
      configuredKey
    ]
  ]

  for (const [name, status, body, secret] of echoes) {
    it.effect(`an error body echoing ${name} does not show it`, () =>
      Effect.gen(function*() {
        const rec = yield* sequence({ status, body })
        const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, noRetry))))
        assert.include(error.message, "<redacted>")
        assertHidden(error, secret)
      }))
  }

  it.effect("a DecodeError excerpt does not show the key", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ status: 200, body: `not json, but ${configuredKey}` })
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, noRetry))))
      assert.strictEqual(error._tag, "DecodeError")
      assertHidden(error, configuredKey)
    }))

  it.effect("a DecodeError message (schema mismatch) does not show the key", () =>
    Effect.gen(function*() {
      // a JSON body of the wrong shape whose offending value echoes the key: the parse error quotes values
      const rec = yield* sequence({
        status: 200,
        body: { object: "list", data: [{ id: "x", meta_data: configuredKey }] }
      })
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(Testing.layerHttp(rec.handler, noRetry))))
      assert.strictEqual(error._tag, "DecodeError")
      assertHidden(error, configuredKey)
    }))

  it.effect("an error event in a stream that echoes the key does not show it", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({
        sse: [{ error: { message: `upstream rejected key ${configuredKey}`, type: "server_error" } }]
      })
      const error = yield* Effect.flip(
        Effect.flatMap(Chat.Chat, (chat) => Stream.runDrain(chat.createStream(defaultChatParams))).pipe(
          Effect.provide(Testing.layerHttp(rec.handler, noRetry))
        )
      )
      assert.strictEqual(error._tag, "ServerError")
      assertHidden(error, configuredKey)
    }))

  it.effect("a non-JSON stream event that echoes the key does not show it", () =>
    Effect.gen(function*() {
      const rec = yield* sequence({ sse: [`oops ${configuredKey}`] })
      const error = yield* Effect.flip(
        Effect.flatMap(Chat.Chat, (chat) => Stream.runDrain(chat.createStream(defaultChatParams))).pipe(
          Effect.provide(Testing.layerHttp(rec.handler, noRetry))
        )
      )
      assert.strictEqual(error._tag, "DecodeError")
      assertHidden(error, configuredKey)
    }))

  it.effect("a TransportError whose cause mentions the key does not show it", () =>
    Effect.gen(function*() {
      const client = HttpClient.make((request) =>
        Effect.fail(
          new HttpClientError.RequestError({
            request,
            reason: "Transport",
            cause: new Error(`proxy refused Authorization: Bearer ${configuredKey}`)
          })
        )
      )
      const layer = layerWithClient(client, { config: { apiKey: configuredKey }, retry: RetryPolicy.layerDisabled })
      const exit = yield* Effect.exit(listModels.pipe(Effect.provide(layer)))
      assert.isTrue(Exit.isFailure(exit))
      if (!Exit.isFailure(exit)) return
      assert.notInclude(Cause.pretty(exit.cause), configuredKey)
      const error = yield* Effect.flip(listModels.pipe(Effect.provide(layer)))
      assert.strictEqual(error._tag, "TransportError")
      assert.include(error.message, "connection failed")
      assertHidden(error, configuredKey)
    }))
})
