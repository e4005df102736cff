/**
 * Key renewal over several rotations, through the whole client (the real transport stack on a scripted server): the
 * server accepts one key of a small pool at a time and moves between them (back to an earlier key too); the key's
 * source follows it, lags behind (it still gives the refused key), or gives a key the server refuses as well (a second
 * 401 after a renewal). Bursts of concurrent calls in between. Every call ends as a model of the key predicts: it
 * succeeds when the key it holds, or the one its source gives after a 401, is the one accepted; otherwise
 * `Unauthorized`, saying why when the source gave nothing new. The source is read only after a 401, once for a burst
 * that it renews; no call is sent more than twice; no key shows in any error.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as Inference from "../../src/layers/Inference.js"
import * as InferenceHttp from "../../src/layers/InferenceHttp.js"
import * as RetryPolicy from "../../src/layers/RetryPolicy.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Models from "../../src/services/Models.js"

/** A pool of keys shaped as the service's: `gen-` and 48 characters. */
const keys = ["a", "b", "c", "d"].map((c) => `gen-${c.repeat(48)}`)

type Step =
  /** The server now accepts `key` only, and the source gives it: a rotation as it should go. */
  | { readonly _tag: "rotate"; readonly key: number }
  /** The server now accepts `key` only; the source is left as it is. */
  | { readonly _tag: "server"; readonly key: number }
  /** The source now gives `key`. */
  | { readonly _tag: "source"; readonly key: number }
  /** A burst of concurrent calls. */
  | { readonly _tag: "calls"; readonly callers: number }

const step: FastCheck.Arbitrary<Step> = FastCheck.oneof(
  FastCheck.record({
    _tag: FastCheck.constantFrom<"rotate" | "server" | "source">("rotate", "server", "source"),
    key: FastCheck.nat(3)
  }),
  FastCheck.record({ _tag: FastCheck.constant("calls" as const), callers: FastCheck.integer({ min: 1, max: 4 }) })
)

/** The server's and the source's keys after `s`. */
const moved = (s: Step, keys: { accepted: number; source: number }) => {
  if (s._tag === "rotate" || s._tag === "server") keys.accepted = s.key
  if (s._tag === "rotate" || s._tag === "source") keys.source = s.key
}

/** What a burst of calls should end with. */
interface Expected {
  readonly succeed: boolean
  /** Reads of the source, at least and at most (a burst refused twice may read once per call). */
  readonly reads: readonly [number, number]
  /** The source gave the key the calls hold: the 401 says so. */
  readonly unchanged: boolean
}

/** The model: which key the client holds, what each burst ends with. */
const model = (steps: ReadonlyArray<Step>) => {
  const now = { accepted: 0, source: 0 }
  let held = 0
  const bursts: Array<Expected> = []
  for (const s of steps) {
    moved(s, now)
    const { accepted, source } = now
    if (s._tag !== "calls") continue
    if (held === accepted) {
      bursts.push({ succeed: true, reads: [0, 0], unchanged: false })
    } else if (source === held) {
      bursts.push({ succeed: false, reads: [s.callers, s.callers], unchanged: true })
    } else {
      held = source
      bursts.push({
        succeed: source === accepted,
        reads: source === accepted ? [1, 1] : [1, s.callers],
        unchanged: false
      })
    }
  }
  return bursts
}

/** The client on a scripted server that accepts `accepted()` only, its key read from `source()`. */
const client = (accepted: () => string, source: () => string, onRead: () => void, onSend: () => void) =>
  Inference.layer.pipe(
    Layer.provideMerge(InferenceHttp.layer),
    Layer.provide(Layer.mergeAll(
      Layer.succeed(
        HttpClient.HttpClient,
        Testing.httpClient((request) => {
          onSend()
          return request.headers["authorization"] === `Bearer ${accepted()}`
            ? { body: { object: "list", data: [] } }
            : { status: 401, body: { detail: "Invalid API key" } }
        })
      ),
      ClientConfig.layer({
        apiKey: Effect.sync(() => {
          onRead()
          return source()
        }),
        baseUrl: "http://aifs.test/v2",
        maxRetries: 0
      }),
      RetryPolicy.layer()
    ))
  )

const run = (steps: ReadonlyArray<Step>) => {
  const now = { accepted: 0, source: 0 }
  let reads = 0
  let sends = 0
  const layer = client(() => keys[now.accepted]!, () => keys[now.source]!, () => reads++, () => sends++)
  return Effect.gen(function*() {
    // the layer reads the key once when it is built
    reads = 0
    const models = yield* Models.Models
    const bursts: Array<{
      readonly results: ReadonlyArray<Either.Either<unknown, { readonly _tag: string; readonly message: string }>>
      readonly reads: number
      readonly sends: number
    }> = []
    for (const s of steps) {
      moved(s, now)
      if (s._tag === "calls") {
        reads = 0
        sends = 0
        const results = yield* Effect.all(
          Array.from({ length: s.callers }, () => Effect.either(models.list())),
          { concurrency: "unbounded" }
        )
        bursts.push({ results, reads, sends })
      }
    }
    return bursts
  }).pipe(Effect.provide(layer))
}

describe("key renewal over several rotations", () => {
  it.effect("back to an earlier key, a source that lags, a second 401 after a renewal: as the model says", () =>
    Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(FastCheck.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
          const bursts = await Effect.runPromise(run(steps))
          const expected = model(steps)
          assert.strictEqual(bursts.length, expected.length)
          for (const [i, burst] of bursts.entries()) {
            const want = expected[i]!
            const story = `burst ${i} of ${JSON.stringify(steps)}: ${JSON.stringify(burst)}`
            for (const result of burst.results) {
              assert.strictEqual(Either.isRight(result), want.succeed, story)
              if (Either.isLeft(result)) {
                assert.strictEqual(result.left._tag, "Unauthorized", story)
                if (want.unchanged) assert.include(result.left.message, "has not changed", story)
                for (const key of keys) assert.notInclude(result.left.message, key, story)
              }
            }
            assert.isAtLeast(burst.reads, want.reads[0], story)
            assert.isAtMost(burst.reads, want.reads[1], story)
            // a refused call is tried once more at most
            assert.isAtMost(burst.sends, 2 * burst.results.length, story)
          }
        }),
        { numRuns: 80 }
      )
    ))

  it.effect("the schedules reach the cases named: back to the first key, a lagging source, a second 401", () =>
    Effect.sync(() => {
      const back: ReadonlyArray<Step> = [
        { _tag: "rotate", key: 1 },
        { _tag: "calls", callers: 2 },
        { _tag: "rotate", key: 0 },
        { _tag: "calls", callers: 3 }
      ]
      assert.deepStrictEqual(model(back).map((b) => b.succeed), [true, true])
      const lagging: ReadonlyArray<Step> = [
        { _tag: "server", key: 1 },
        { _tag: "calls", callers: 2 },
        { _tag: "source", key: 1 },
        { _tag: "calls", callers: 1 }
      ]
      assert.deepStrictEqual(model(lagging).map((b) => [b.succeed, b.unchanged]), [[false, true], [true, false]])
      const twice: ReadonlyArray<Step> = [{ _tag: "server", key: 1 }, { _tag: "source", key: 2 }, {
        _tag: "calls",
        callers: 1
      }]
      assert.deepStrictEqual(model(twice), [{ succeed: false, reads: [1, 1], unchanged: false }])
    }))
})
