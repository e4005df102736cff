/**
 * Chat with a function tool: the model asks for `get_weather`, this code runs it, its result goes back as a
 * `tool` message, and the model gives its final answer.
 *
 *   npx tsx examples/chat-tools.ts            (the emulator; with AIFS_API_KEY set, the real service)
 */
import { Chat, type ChatSchema } from "effect-aifs"
import { isFunctionCall } from "effect-aifs/schemas/Chat"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { inference, isMain, run } from "./run.js"

const model = "Llama-3.3-70B-Instruct"

/** The tool as the model sees it: a name, what it does, and a JSON Schema of its arguments. */
export const weatherTool: ChatSchema.FunctionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The current weather in a city",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", description: "The city, e.g. Berlin" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"] }
      },
      required: ["city"]
    }
  }
}

/** The arguments, decoded from the JSON string the model sends (models may send invalid JSON: it fails here). */
const WeatherArgs = Schema.parseJson(Schema.Struct({
  city: Schema.String,
  unit: Schema.optionalWith(Schema.Literal("celsius", "fahrenheit"), { default: () => "celsius" })
}))

/** The tool itself: your code (a stand-in for a weather API). */
export const getWeather = (args: typeof WeatherArgs.Type) =>
  Effect.succeed({
    city: args.city,
    temperature: args.unit === "celsius" ? 21 : 70,
    unit: args.unit,
    conditions: "sunny with a light breeze"
  })

/** Runs the conversation until the model answers without asking for a tool (at most `maxRounds` requests). */
export const program = Effect.gen(function*() {
  const chat = yield* Chat.Chat
  const messages: Array<ChatSchema.ChatMessage> = [
    { role: "user", content: "Use get_weather to tell me the weather in Berlin." }
  ]
  const maxRounds = 5
  for (let round = 1; round <= maxRounds; round++) {
    const answer = yield* chat.create({ model, messages, tools: [weatherTool], tool_choice: "auto" })
    const message = answer.choices[0]?.message
    // function calls (a model may also call custom tools, which this program does not offer)
    const calls = (message?.tool_calls ?? []).filter(isFunctionCall)
    if (calls.length === 0) {
      yield* Console.log(`\nAnswer (${answer.choices[0]?.finish_reason}): ${answer.text}`)
      return { answer, messages }
    }
    // the assistant's turn with its tool calls goes back into the conversation, then one result per call
    messages.push({ role: "assistant", content: message?.content ?? null, tool_calls: calls })
    for (const call of calls) {
      yield* Console.log(`The model asks for ${call.function.name}(${call.function.arguments})`)
      const result = call.function.name === weatherTool.function.name
        ? yield* Schema.decode(WeatherArgs)(call.function.arguments).pipe(
          Effect.flatMap(getWeather),
          Effect.catchTag("ParseError", (error) => Effect.succeed({ error: `bad arguments: ${error.message}` }))
        )
        : { error: `unknown tool ${call.function.name}` }
      yield* Console.log(`  -> ${JSON.stringify(result)}`)
      messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify(result) })
    }
  }
  return yield* Effect.dieMessage(`still calling tools after ${maxRounds} rounds`)
})

if (isMain(import.meta.url)) run(program, inference())
