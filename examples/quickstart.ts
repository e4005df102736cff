/**
 * Quickstart: a chat answer, streamed, with typed error handling.
 *
 * Run against the real service:  AIFS_API_KEY=gen-... npx tsx examples/quickstart.ts
 * Run against a local emulator:  npm run emulator, then AIFS_API_KEY=<a key it prints>
 *                                AIFS_BASE_URL=http://127.0.0.1:<port>/v2 npx tsx examples/quickstart.ts
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Chat, Node } from "effect-aifs"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"

const program = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  yield* chat.createStream({
    model: "Llama-3.3-70B-Instruct",
    messages: [{ role: "user", content: "Explain rate limits in one paragraph." }]
  }).pipe(Stream.runForEach((chunk) => Effect.sync(() => process.stdout.write(chunk.text))))
  yield* Console.log()
}).pipe(
  Effect.catchTags({
    RateLimited: (error) => Console.error(`Still rate limited after retries: ${error.message}`),
    Unauthorized: () => Console.error("Check AIFS_API_KEY")
  })
)

program.pipe(Effect.provide(Node.layerFromEnv), NodeRuntime.runMain)
