/**
 * A batch from code: a `Stream` of requests in the OpenAI batch format goes through `Batch.run`, which sends
 * them as fast as the rate limiter allows and emits one result line per request, in the order they finish. A
 * request that fails becomes an error line; the batch goes on.
 *
 *   npx tsx examples/batch.ts                 (the emulator; with AIFS_API_KEY set, the real service)
 */
import { Batch } from "effect-aifs"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { inference, isMain, run } from "./run.js"

const questions = ["What is a token?", "What is a rate limit?", "What is an embedding?"]

/** The requests, built in code (`Batch.parseLine` reads the same from a JSON Lines file). */
export const requests: ReadonlyArray<Batch.BatchRequest> = [
  ...questions.map((question, i): Batch.BatchRequest => ({
    custom_id: `question-${i + 1}`,
    endpoint: "chat",
    body: { model: "Llama-3.3-70B-Instruct", messages: [{ role: "user", content: question }], max_tokens: 40 }
  })),
  {
    custom_id: "completion-1",
    endpoint: "completions",
    body: { model: "Llama-3.3-70B-Instruct", prompt: "Rate limits exist because", max_tokens: 16 }
  },
  // an unknown model: this one fails with NotFound and becomes an error line
  {
    custom_id: "typo",
    endpoint: "chat",
    body: { model: "Llama-3.3-70B-Instruct-typo", messages: [{ role: "user", content: "Hello" }] }
  }
]

export const program = Effect.gen(function*() {
  const lines = yield* Batch.run(Stream.fromIterable(requests), { concurrency: 8 }).pipe(
    // each line as it finishes: in a real job, append `JSON.stringify(line)` to a .jsonl file here
    Stream.tap((line) => Console.log(JSON.stringify(line))),
    Stream.runCollect
  )
  const failed = [...lines].filter((line) => line.error !== null)
  yield* Console.log(`\n${lines.length} lines, ${lines.length - failed.length} answered, ${failed.length} failed:`)
  for (const line of failed) yield* Console.log(`  ${line.custom_id}: ${line.error?.code} ${line.error?.message}`)
  return [...lines]
})

if (isMain(import.meta.url)) run(program, inference())
