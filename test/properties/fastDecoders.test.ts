/**
 * The hand-written fast decoders of src/schemas/Chat.ts against the schemas they stand for, differentially: for
 * chunks and answers of every shape (the common one the fast path checks by hand, and the others it hands to the
 * schema), every field in turn, at every depth, is set to `null`, to a value of each wrong type, to arbitrary JSON,
 * or left out; both decoders give the same value, or both refuse.
 */
import { describe, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionChunkFromWire,
  ChatCompletionFromWire
} from "../../src/schemas/Chat.js"
import { decodesLike } from "../helpers/fromWire.js"

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** The values every field meets in turn: `null` and one of each JSON type, the empty and the odd ones. */
const wrongValues: ReadonlyArray<Json> = [null, 0, 1.5, -1, "", "x", true, false, [], [null], {}, { x: 1 }]

/** Every path to a field or an element in `value` (the root excluded). */
const pathsOf = (value: Json, at: ReadonlyArray<string | number> = []): Array<ReadonlyArray<string | number>> => {
  if (Array.isArray(value)) return value.flatMap((item, i) => [[...at, i], ...pathsOf(item as Json, [...at, i])])
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([key, item]) => [[...at, key], ...pathsOf(item, [...at, key])])
  }
  return []
}

/** `value` with the field at `path` set to `replacement`, or left out when `replacement` is `undefined`. */
const setAt = (value: Json, path: ReadonlyArray<string | number>, replacement: Json | undefined): Json | undefined => {
  if (path.length === 0) return replacement
  const [head, ...rest] = path
  if (Array.isArray(value)) {
    const copy: Array<Json | undefined> = [...value]
    copy[head as number] = setAt(value[head as number] as Json, rest, replacement)
    return copy.filter((item) => item !== undefined) as Array<Json>
  }
  const object = value as { readonly [key: string]: Json }
  const next = setAt(object[head as string]!, rest, replacement)
  const { [head as string]: _, ...others } = object
  return next === undefined ? others : { ...others, [head as string]: next }
}

/** `value` with every list cut to its first two elements (fewer paths to change, still of the schema). */
const shortened = (value: Json): Json =>
  Array.isArray(value)
    ? value.slice(0, 2).map(shortened)
    : typeof value === "object" && value !== null
    ? Object.fromEntries(Object.entries(value).map(([key, item]) => [key, shortened(item)]))
    : value

/** An object of `fields`, each present nine times out of ten (the common chunk has most, not all). */
const mostOf = (fields: Record<string, FastCheck.Arbitrary<Json>>): FastCheck.Arbitrary<Json> =>
  FastCheck.tuple(
    ...Object.entries(fields).map(([key, arbitrary]) =>
      FastCheck.tuple(FastCheck.integer({ min: 0, max: 9 }), arbitrary).map(([dice, value]) =>
        dice === 0 ? [] : [[key, value] as const]
      )
    )
  ).map((entries) => Object.fromEntries(entries.flat()))

const text = FastCheck.string({ maxLength: 4 })
const nullable = <A extends Json>(arbitrary: FastCheck.Arbitrary<A>) =>
  FastCheck.oneof({ arbitrary, weight: 4 }, { arbitrary: FastCheck.constant(null), weight: 1 })
const count = FastCheck.nat(500)

const counts = { prompt_tokens: count, completion_tokens: nullable(count), total_tokens: count }

/** The prompt cache's counts as Anthropic-style proxies report them (Claude models), beside the counts. */
const cacheCounts = { cache_creation_input_tokens: nullable(count), cache_read_input_tokens: nullable(count) }

/**
 * A usage: counts only, or with the Anthropic-style cache counts (the common ones, checked by hand), or with details
 * (left to its class).
 */
const usage = FastCheck.oneof(
  { arbitrary: mostOf(counts), weight: 2 },
  { arbitrary: mostOf({ ...counts, ...cacheCounts }), weight: 1 },
  {
    arbitrary: mostOf({
      ...counts,
      ...cacheCounts,
      prompt_tokens_details: nullable(
        mostOf({ cached_tokens: nullable(count), cache_write_tokens: nullable(count), audio_tokens: nullable(count) })
      ),
      completion_tokens_details: nullable(mostOf({ reasoning_tokens: nullable(count), audio_tokens: nullable(count) }))
    }),
    weight: 1
  }
)

/** A usage or none (none: the common chunk). */
const usageOrNot = FastCheck.oneof(FastCheck.constant(null), usage)

/** Tool calls: mostly none (the common chunk), else a piece or two. */
const toolCallsOrNot = (call: FastCheck.Arbitrary<Json>) =>
  FastCheck.oneof(
    { arbitrary: FastCheck.constant(null), weight: 2 },
    { arbitrary: FastCheck.array(call, { minLength: 1, maxLength: 2 }), weight: 1 }
  )

const toolCallDelta = mostOf({
  index: count,
  id: nullable(text),
  type: nullable(FastCheck.constantFrom("function", "custom")),
  function: nullable(mostOf({ name: nullable(text), arguments: nullable(text) })),
  custom: nullable(mostOf({ name: nullable(text), input: nullable(text) }))
})

const chunk = mostOf({
  id: text,
  object: nullable(FastCheck.constant("chat.completion.chunk")),
  created: nullable(count),
  model: text,
  system_fingerprint: nullable(text),
  usage: usageOrNot,
  choices: FastCheck.array(
    mostOf({
      index: count,
      delta: mostOf({
        role: nullable(FastCheck.constant("assistant")),
        content: nullable(text),
        reasoning_content: nullable(text),
        refusal: nullable(text),
        tool_calls: toolCallsOrNot(toolCallDelta)
      }),
      finish_reason: nullable(FastCheck.constantFrom("stop", "length", "other")),
      logprobs: nullable(FastCheck.constant({ content: [] }))
    }),
    { maxLength: 2 }
  )
})

const toolCall = FastCheck.oneof(
  mostOf({ id: text, type: FastCheck.constant("function"), function: mostOf({ name: text, arguments: text }) }),
  mostOf({ id: text, type: FastCheck.constant("custom"), custom: mostOf({ name: text, input: text }) })
)

const completion = mostOf({
  id: text,
  object: nullable(FastCheck.constant("chat.completion")),
  created: nullable(count),
  model: text,
  system_fingerprint: nullable(text),
  service_tier: nullable(text),
  usage: usageOrNot,
  choices: FastCheck.array(
    mostOf({
      index: count,
      message: mostOf({
        role: FastCheck.constant("assistant"),
        content: nullable(text),
        reasoning_content: nullable(text),
        refusal: nullable(text),
        tool_calls: toolCallsOrNot(toolCall)
      }),
      finish_reason: nullable(FastCheck.constantFrom("stop", "length", "tool_calls", "other")),
      logprobs: nullable(FastCheck.constant({ content: [] }))
    }),
    { maxLength: 2 }
  )
})

/** `base`, and every one-field change of it: each field set to each wrong value, to `other`, or left out. */
const oneFieldChanges = (base: Json, other: Json): Array<Json | undefined> => [
  base,
  ...pathsOf(base).flatMap((path) => [...wrongValues, other, undefined].map((value) => setAt(base, path, value)))
]

const differential = <A extends { readonly text: string }, I>(
  schema: Schema.Schema<A, I> & (new(...args: Array<never>) => A),
  fromWire: Schema.Schema<A, I>,
  handBuilt: FastCheck.Arbitrary<Json>
) => {
  const { same } = decodesLike(schema, fromWire)
  // the schema's own idea of a valid wire value besides the hand-built shapes, its lists cut to two elements
  const generated = Arbitrary.make(Schema.encodedSchema(schema)).map((value) =>
    shortened(JSON.parse(JSON.stringify(value)) as Json)
  )
  const base = FastCheck.oneof({ arbitrary: handBuilt, weight: 3 }, { arbitrary: generated, weight: 1 })
  FastCheck.assert(
    FastCheck.property(base, FastCheck.jsonValue({ maxDepth: 2 }) as FastCheck.Arbitrary<Json>, (value, other) => {
      for (const input of oneFieldChanges(value, other)) same(input)
    }),
    { numRuns: 80 }
  )
}

describe("the fast decoders agree with their schemas, one field at a time", () => {
  it("ChatCompletionChunkFromWire and ChatCompletionChunk: the same value, or both refuse", () => {
    differential(ChatCompletionChunk, ChatCompletionChunkFromWire, chunk)
  })

  it("ChatCompletionFromWire and ChatCompletion: the same value, or both refuse", () => {
    differential(ChatCompletion, ChatCompletionFromWire, completion)
  })
})
