/**
 * `mapChunksUntil`: one stage that maps chunks and may end the stream; what it reads of its source, when its source's
 * finalizer runs, and a failure passing through.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { mapChunksUntil } from "../../src/internal/chunked.js"

/** A source of these chunks that counts the chunks pulled from it and whether its finalizer ran. */
const counted = (chunks: ReadonlyArray<ReadonlyArray<number>>) => {
  const seen = { pulled: 0, finalized: false }
  const stream = Stream.unfoldChunk(0, (i) => {
    if (i >= chunks.length) return Option.none()
    seen.pulled++
    return Option.some([Chunk.unsafeFromArray(chunks[i]!), i + 1] as const)
  }).pipe(Stream.ensuring(Effect.sync(() => (seen.finalized = true))))
  return { seen, stream }
}

describe("mapChunksUntil", () => {
  it.effect("maps each chunk; the step that says done ends the stream there, the source's rest unread", () =>
    Effect.gen(function*() {
      const { seen, stream } = counted([[1], [2], [3], [4]])
      const values = yield* Stream.runCollect(
        mapChunksUntil(stream, (chunk) => {
          const n = Chunk.unsafeHead(chunk)
          return { values: [n * 10, n * 10 + 1], done: n === 2 }
        })
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(values), [10, 11, 20, 21])
      assert.strictEqual(seen.pulled, 2)
      assert.isTrue(seen.finalized)
    }))

  it.effect("a source that ends first ends the stream, and its finalizer runs; empty steps write nothing", () =>
    Effect.gen(function*() {
      const { seen, stream } = counted([[1], [2], [3]])
      const chunks: Array<ReadonlyArray<number>> = []
      yield* mapChunksUntil(stream, (chunk) => {
        const n = Chunk.unsafeHead(chunk)
        return { values: n === 2 ? [] : [n], done: false }
      }).pipe(Stream.runForEachChunk((chunk) => Effect.sync(() => chunks.push(Chunk.toReadonlyArray(chunk)))))
      assert.deepStrictEqual(chunks, [[1], [3]])
      assert.strictEqual(seen.pulled, 3)
      assert.isTrue(seen.finalized)
    }))

  it.effect("a failure of the source passes through after the values before it", () =>
    Effect.gen(function*() {
      const source = Stream.concat(Stream.make(1, 2), Stream.fail("reset"))
      const values: Array<number> = []
      const result = yield* mapChunksUntil(source, (chunk) => ({ values: Chunk.toArray(chunk), done: false })).pipe(
        Stream.runForEach((n) => Effect.sync(() => values.push(n))),
        Effect.either
      )
      assert.deepStrictEqual(result, Either.left("reset"))
      assert.deepStrictEqual(values, [1, 2])
    }))
})
