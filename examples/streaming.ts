/**
 * Streaming: a chat answer printed token by token as it arrives, the same stream folded into the completion a
 * plain `create` would have returned (`Chat.collect`), and a reasoning model whose reasoning streams first.
 *
 *   npx tsx examples/streaming.ts             (the emulator; with AIFS_API_KEY set, the real service)
 */
import { Chat, type ChatSchema } from "effect-aifs"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { inference, isMain, run } from "./run.js"

const write = (text: string) => Effect.sync(() => process.stdout.write(text))

export const request: ChatSchema.CreateChatCompletionParams = {
  model: "Llama-3.3-70B-Instruct",
  messages: [{ role: "user", content: "Explain in two sentences why streaming answers feel faster." }],
  max_tokens: 80
}

export const program = Effect.gen(function*() {
  const chat = yield* Chat.Chat

  // 1. Print every piece of text as it arrives, and fold the chunks into one completion at the end.
  yield* Console.log("Llama-3.3-70B-Instruct, streamed:")
  let streamed = ""
  const answer = yield* Chat.collect(
    chat.createStream(request).pipe(Stream.tap((chunk) => {
      streamed += chunk.text
      return write(chunk.text)
    }))
  )
  // `Chat.collect` gives what `chat.create` returns: the whole text, why it stopped, the usage chunk's counts
  yield* Console.log(
    `\n[collected: ${answer.text.length} characters, finish_reason ${answer.choices[0]?.finish_reason}, ` +
      `${answer.usage?.prompt_tokens} prompt + ${answer.usage?.completion_tokens} completion tokens]`
  )

  // 2. A reasoning model: `delta.reasoning_content` arrives before the answer's `delta.content`.
  yield* Console.log("\ngpt-oss-120b, reasoning first:")
  let section: "none" | "reasoning" | "answer" = "none"
  const reasoned = yield* Chat.collect(
    chat.createStream({
      model: "gpt-oss-120b",
      messages: [{ role: "user", content: "Is 91 a prime number?" }],
      max_tokens: 120
    }).pipe(Stream.tap((chunk) => {
      const delta = chunk.choices[0]?.delta
      const effects: Array<Effect.Effect<void>> = []
      if (delta?.reasoning_content) {
        if (section !== "reasoning") effects.push(write("  (thinking) "))
        section = "reasoning"
        effects.push(write(delta.reasoning_content))
      }
      if (delta?.content) {
        if (section !== "answer") effects.push(write("\n  (answer) "))
        section = "answer"
        effects.push(write(delta.content))
      }
      return Effect.all(effects, { discard: true })
    }))
  )
  yield* Console.log()
  return { streamed, answer, reasoned }
})

if (isMain(import.meta.url)) run(program, inference({ streamChunkDelay: "30 millis" }))
