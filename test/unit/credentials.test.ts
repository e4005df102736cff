/**
 * The transport's key and its renewal after a 401: the source read once for any number of requests refused
 * together, a request tried once more and only once, the 401 kept with why when the key cannot be renewed, and
 * every key held scrubbed from text.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Credentials from "../../src/internal/request/credentials.js"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import { Forbidden, Unauthorized } from "../../src/schemas/Errors.js"

const oldKey = "old-key-0123456789"
const newKey = "new-key-9876543210"

const refused = new Unauthorized({ message: "Incorrect API key provided", status: 401, endpoint: "POST /v2/chat" })

/** Credentials whose source gives what `source` holds, counting its reads. */
const withSource = (source: Effect.Effect<string, Error>) =>
  Effect.gen(function*() {
    const reads = yield* Ref.make(0)
    const credentials = Credentials.make({
      ...ClientConfig.make({ apiKey: oldKey }),
      reloadApiKey: Effect.zipRight(Ref.update(reads, (n) => n + 1), Effect.map(source, Redacted.make))
    })
    return { credentials, reads: Ref.get(reads) }
  })

/** A request the server accepts only with `newKey`, counting its sends; its answer comes after a yield. */
const request = (credentials: Credentials.Credentials, sends: Ref.Ref<number>) =>
  Effect.gen(function*() {
    yield* Ref.update(sends, (n) => n + 1)
    const sent = credentials.authorization()
    yield* Effect.yieldNow()
    return sent === `Bearer ${newKey}` ? "answer" : yield* Effect.fail(refused)
  })

describe("Credentials", () => {
  it.effect("a fixed key: the header, its fingerprint, and a 401 passes as it is, sent once", () =>
    Effect.gen(function*() {
      const credentials = Credentials.make(ClientConfig.make({ apiKey: oldKey }))
      assert.strictEqual(credentials.authorization(), `Bearer ${oldKey}`)
      assert.match(credentials.keyId(), /^key#[0-9a-f]{8}$/)
      const sends = yield* Ref.make(0)
      const error = yield* Effect.flip(credentials.renewing(request(credentials, sends)))
      assert.strictEqual(error, refused)
      assert.strictEqual(yield* Ref.get(sends), 1)
      assert.strictEqual(credentials.generation(), 0)
    }))

  it.effect("a key renewed by its source after a 401: tried once more with it, and everything made of it follows", () =>
    Effect.gen(function*() {
      const { credentials, reads } = yield* withSource(Effect.succeed(newKey))
      const before = credentials.keyId()
      const sends = yield* Ref.make(0)
      assert.strictEqual(yield* credentials.renewing(request(credentials, sends)), "answer")
      assert.strictEqual(yield* Ref.get(sends), 2)
      assert.strictEqual(yield* reads, 1)
      assert.strictEqual(credentials.generation(), 1)
      assert.strictEqual(credentials.authorization(), `Bearer ${newKey}`)
      assert.notStrictEqual(credentials.keyId(), before)
      // a server may echo either key: both are scrubbed
      assert.strictEqual(credentials.redact(`was ${oldKey}, now ${newKey}`), "was <redacted>, now <redacted>")
      // a request that succeeds reads nothing
      assert.strictEqual(yield* credentials.renewing(request(credentials, sends)), "answer")
      assert.strictEqual(yield* reads, 1)
    }))

  it.effect("requests refused together: the source is read once, and each is tried once more", () =>
    Effect.gen(function*() {
      const { credentials, reads } = yield* withSource(Effect.succeed(newKey))
      const sends = yield* Ref.make(0)
      const answers = yield* Effect.all(
        Array.from({ length: 8 }, () => credentials.renewing(request(credentials, sends))),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(answers, Array(8).fill("answer"))
      assert.strictEqual(yield* reads, 1)
      assert.strictEqual(yield* Ref.get(sends), 16)
      assert.strictEqual(credentials.generation(), 1)
    }))

  it.effect("the source gives the same key: the 401 stands, saying so, sent once", () =>
    Effect.gen(function*() {
      const { credentials, reads } = yield* withSource(Effect.succeed(oldKey))
      const sends = yield* Ref.make(0)
      const error = yield* Effect.flip(credentials.renewing(request(credentials, sends)))
      assert.strictEqual(error._tag, "Unauthorized")
      assert.strictEqual(error.message, "Incorrect API key provided (the key was read again and has not changed)")
      assert.strictEqual(error.endpoint, "POST /v2/chat")
      assert.strictEqual(error._tag === "Unauthorized" ? error.status : 0, 401)
      assert.strictEqual(yield* Ref.get(sends), 1)
      assert.strictEqual(yield* reads, 1)
      assert.strictEqual(credentials.generation(), 0)
    }))

  it.effect("the source fails: the 401 stands with the failure's message, the key scrubbed from it", () =>
    Effect.gen(function*() {
      const { credentials } = yield* withSource(Effect.fail(new Error(`vault sealed (last key ${oldKey})`)))
      const sends = yield* Ref.make(0)
      const error = yield* Effect.flip(credentials.renewing(request(credentials, sends)))
      assert.strictEqual(
        error.message,
        "Incorrect API key provided (the key could not be read again: vault sealed (last key <redacted>))"
      )
      assert.strictEqual(yield* Ref.get(sends), 1)
    }))

  it.effect("a source that fails with something other than an Error: said as text", () =>
    Effect.gen(function*() {
      const failures: ReadonlyArray<readonly [unknown, string]> = [
        ["sealed", "sealed"],
        [{ code: 503 }, `{\n  "code": 503\n}`],
        [{ message: 42 }, `{\n  "message": 42\n}`],
        [null, "null"]
      ]
      for (const [failure, said] of failures) {
        const { credentials } = yield* withSource(Effect.fail(failure as Error))
        const error = yield* Effect.flip(credentials.renewing(request(credentials, yield* Ref.make(0))))
        assert.strictEqual(error.message, `Incorrect API key provided (the key could not be read again: ${said})`)
      }
    }))

  it.effect("a source that throws: said as one that fails", () =>
    Effect.gen(function*() {
      const { credentials } = yield* withSource(Effect.sync((): string => {
        throw new Error("disk gone")
      }))
      const error = yield* Effect.flip(credentials.renewing(request(credentials, yield* Ref.make(0))))
      assert.strictEqual(error.message, "Incorrect API key provided (the key could not be read again: disk gone)")
    }))

  it.effect("a request sent once (a streamed upload): the key is renewed for the next ones, the request not repeated", () =>
    Effect.gen(function*() {
      const { credentials, reads } = yield* withSource(Effect.succeed(newKey))
      const sends = yield* Ref.make(0)
      const error = yield* Effect.flip(credentials.renewing(request(credentials, sends), false))
      assert.strictEqual(
        error.message,
        "Incorrect API key provided (the key was renewed from its source; this request is sent once, so not again)"
      )
      assert.strictEqual(yield* Ref.get(sends), 1)
      assert.strictEqual(yield* reads, 1)
      assert.strictEqual(credentials.authorization(), `Bearer ${newKey}`)
      assert.strictEqual(yield* credentials.renewing(request(credentials, sends), false), "answer")
    }))

  it.effect("a renewed key refused too: the second 401 ends the request, with no second read", () =>
    Effect.gen(function*() {
      const { credentials, reads } = yield* withSource(Effect.succeed(newKey))
      const sends = yield* Ref.make(0)
      const alwaysRefused = Effect.zipRight(Ref.update(sends, (n) => n + 1), Effect.fail(refused))
      const error = yield* Effect.flip(credentials.renewing(alwaysRefused))
      assert.strictEqual(error, refused)
      assert.strictEqual(yield* Ref.get(sends), 2)
      assert.strictEqual(yield* reads, 1)
    }))

  it.effect("other errors are not a reason to read the key again", () =>
    Effect.gen(function*() {
      const { credentials, reads } = yield* withSource(Effect.succeed(newKey))
      const forbidden = new Forbidden({ message: "model not in your plan", status: 403 })
      assert.strictEqual(yield* Effect.flip(credentials.renewing(Effect.fail(forbidden))), forbidden)
      assert.strictEqual(yield* reads, 0)
    }))
})
