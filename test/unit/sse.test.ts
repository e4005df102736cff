/**
 * The SSE decoder's lines: its bound on a line (a server that sends bytes without a line break cannot fill the
 * memory, however the bytes are cut into network chunks, and a line of exactly the limit still passes), and its line
 * breaks (\n, \r\n, a lone \r) wherever the bytes are cut.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Stream from "effect/Stream"
import { decodeEvents, Lines, maxEventSize } from "../../src/internal/sse.js"

const encoder = new TextEncoder()

/** `text` cut into byte chunks at `cuts` (character offsets, ASCII text). */
const chunksOf = (text: string, cuts: ReadonlyArray<number>) => {
  const bounds = [0, ...[...new Set(cuts)].filter((c) => c > 0 && c < text.length).sort((a, b) => a - b), text.length]
  return bounds.slice(1).map((end, i) => encoder.encode(text.slice(bounds[i], end)))
}

/** The decoder's events (their data) on `text` cut at `cuts`, or its error. */
const decode = (text: string, cuts: ReadonlyArray<number>) =>
  decodeEvents(Stream.fromIterable(chunksOf(text, cuts)), "POST /v2/chat/completions").pipe(
    Stream.runCollect,
    Effect.map((events) => Chunk.toReadonlyArray(events).map((e) => e.data)),
    Effect.either
  )

/** A comment line (ignored by SSE) of exactly `length` characters, without its line break. */
const comment = (length: number) => `:${"x".repeat(length - 1)}`

/** Cuts every `size` characters. */
const every = (size: number, length: number) => Array.from({ length: Math.ceil(length / size) }, (_, i) => i * size)

describe("SSE decoding: the bound on a line", () => {
  // the guard bounds what is held while a line has not ended: the unterminated tail, across chunks
  for (const [label, size] of [["one chunk each", maxEventSize], ["64 KiB chunks", 65_536]] as const) {
    it.effect(`a line whose first ${maxEventSize} characters came without a break passes (${label})`, () =>
      Effect.gen(function*() {
        const head = "data: first\n\n"
        const text = `${head}${comment(maxEventSize)}\ndata: after\n\n`
        // every cut falls inside the long line; the break comes in the chunk after its last character
        const cuts = [head.length, ...every(size, maxEventSize).map((c) => head.length + c), head.length + maxEventSize]
        assert.deepStrictEqual(yield* decode(text, cuts), Either.right(["first", "after"]))
      }))

    it.effect(`one more character before the break fails with DecodeError, after the events before it (${label})`, () =>
      Effect.gen(function*() {
        const head = "data: first\n\n"
        const text = `${head}${comment(maxEventSize + 1)}\ndata: after\n\n`
        const cuts = [
          head.length,
          ...every(size, maxEventSize + 1).map((c) => head.length + c),
          head.length + maxEventSize + 1
        ]
        const events: Array<string> = []
        const result = yield* decodeEvents(Stream.fromIterable(chunksOf(text, cuts)), "POST /v2/chat/completions").pipe(
          Stream.runForEach((e) => Effect.sync(() => events.push(e.data))),
          Effect.either
        )
        assert.deepStrictEqual(events, ["first"])
        assert.isTrue(Either.isLeft(result))
        if (Either.isLeft(result)) {
          assert.strictEqual(result.left._tag, "DecodeError")
          assert.include(result.left.message, `a line longer than ${maxEventSize} characters`)
        }
      }))
  }

  it.effect("the count starts after the last line break of a chunk, whether \\n or \\r", () =>
    Effect.gen(function*() {
      for (const lineBreak of ["\n", "\r", "\r\n"]) {
        // the long line begins in the middle of a chunk, after a short line and its break, and has not ended
        // when that chunk and the next end
        const head = `: short${lineBreak}`
        const at = (n: number) => [head.length + 10, head.length + n]
        const ok = `${head}${comment(maxEventSize)}${lineBreak}data: after\n\n`
        assert.deepStrictEqual(yield* decode(ok, at(maxEventSize)), Either.right(["after"]), JSON.stringify(lineBreak))
        const over = `${head}${comment(maxEventSize + 1)}${lineBreak}data: after\n\n`
        const result = yield* decode(over, at(maxEventSize + 1))
        assert.isTrue(Either.isLeft(result), `one over the limit after ${JSON.stringify(lineBreak)}`)
      }
    }))

  it.effect("a long line that ends within its chunk is not held: lines add up to more than the limit, no failure", () =>
    Effect.gen(function*() {
      const line = comment(maxEventSize / 4)
      const text = `${[line, line, line, line, line, line].join("\n")}\ndata: after\n\n`
      assert.deepStrictEqual(yield* decode(text, every(300_000, text.length)), Either.right(["after"]))
    }))

  it.effect("an event larger than the parser's limit fails with DecodeError after the events before it, none after", () =>
    Effect.gen(function*() {
      const data = Array.from({ length: 20 }, () => `data: ${"y".repeat(60_000)}`).join("\n")
      const text = `data: first\n\n${data}\n\ndata: after\n\n`
      const events: Array<string> = []
      const result = yield* decodeEvents(Stream.make(encoder.encode(text)), "POST /v2/chat/completions").pipe(
        Stream.runForEach((e) => Effect.sync(() => events.push(e.data))),
        Effect.either
      )
      assert.deepStrictEqual(events, ["first"])
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.strictEqual(result.left._tag, "DecodeError")
        assert.include(result.left.message, "server-sent event too large")
        // nothing of the event is shown: it may be anything, of any size
        assert.strictEqual(result.left.excerpt, "")
      }
    }))

  it.effect("characters cut between network chunks, at any byte, come out whole", () =>
    Effect.gen(function*() {
      const bytes = encoder.encode("data: é😀€\n\n")
      for (let at = 1; at < bytes.length; at++) {
        const chunks = [bytes.slice(0, at), bytes.slice(at)]
        const events = yield* Stream.runCollect(decodeEvents(Stream.fromIterable(chunks), "POST /v2/chat/completions"))
        assert.deepStrictEqual(Chunk.toReadonlyArray(events).map((e) => e.data), ["é😀€"], `cut at byte ${at}`)
      }
    }))

  it.effect("line breaks of every kind mean the same wherever the bytes are cut, a \\r\\n cut in two included", () =>
    Effect.gen(function*() {
      const text = "data: a\r\ndata: b\r\n\r\ndata: c\rdata: d\r\rid: 1\ndata: e\n\n"
      const events = ["a\nb", "c\nd", "e"]
      for (let at = 0; at <= text.length; at++) {
        assert.deepStrictEqual(yield* decode(text, [at]), Either.right(events), `cut at ${at}`)
        assert.deepStrictEqual(yield* decode(text, [at, at + 1]), Either.right(events), `cut at ${at} and ${at + 1}`)
      }
    }))
})

/** `text` cut at `cuts` (character offsets, repeated ones giving empty pieces), through `Lines`: its lines, and the length of the line begun. */
const linesOf = (text: string, cuts: ReadonlyArray<number>) => {
  const bounds = [0, ...cuts.map((c) => Math.min(c, text.length)).sort((a, b) => a - b), text.length]
  const lines = new Lines()
  const out = bounds.slice(1).flatMap((end, i) => lines.push(text.slice(bounds[i], end)))
  return { lines: out, pending: lines.pending }
}

describe("SSE decoding: lines", () => {
  it("text in any pieces is cut where \\r\\n, \\n or \\r end a line, as the whole text split at them", () => {
    const text = FastCheck.array(FastCheck.constantFrom("a", "bc", ":", "\r", "\n", "\r\n", "\n\r", "é"), {
      maxLength: 24
    })
      .map((parts) => parts.join(""))
    FastCheck.assert(
      FastCheck.property(text, FastCheck.array(FastCheck.nat({ max: 40 }), { maxLength: 8 }), (whole, cuts) => {
        const expected = whole.split(/\r\n|\r|\n/)
        const begun = expected.pop()!
        assert.deepStrictEqual(
          linesOf(whole, cuts),
          { lines: expected, pending: begun.length },
          JSON.stringify([whole, cuts])
        )
      }),
      { numRuns: 500 }
    )
  })

  it("an empty piece between a \\r and a \\n keeps them one break; the line begun is what is pending", () => {
    const lines = new Lines()
    assert.deepStrictEqual(lines.push("a\r"), ["a"])
    assert.deepStrictEqual(lines.push(""), [])
    assert.deepStrictEqual(lines.push("\nb"), [])
    assert.strictEqual(lines.pending, 1)
    assert.deepStrictEqual(lines.push("c\r\rd"), ["bc", ""])
    assert.strictEqual(lines.pending, 1)
  })
})
