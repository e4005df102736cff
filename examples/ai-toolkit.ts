/**
 * The `@effect/ai` provider with a `Toolkit`: the model asks for `get_weather`, `@effect/ai` runs the handler, the
 * `Chat` keeps the call and its result, and the next turn answers from them. The same program runs on any
 * `@effect/ai` provider; only the model layer names AIFS.
 *
 *   npx tsx examples/ai-toolkit.ts            (the emulator; with AIFS_API_KEY set, the real service)
 */
import { Chat, LanguageModel, Tool, Toolkit } from "@effect/ai"
import { AifsLanguageModel } from "effect-aifs/ai"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { inference, isMain, run } from "./run.js"

/** The tool: its parameters as a Schema (sent to the model as JSON Schema) and what it returns. */
const GetWeather = Tool.make("get_weather", {
  description: "The current weather in a city",
  parameters: { city: Schema.String.annotations({ description: "The city, e.g. Berlin" }) },
  success: Schema.Struct({ city: Schema.String, celsius: Schema.Number, sky: Schema.String })
})

/** The toolkit the model may use, and its handlers (a stand-in for a weather API). */
export const Tools = Toolkit.make(GetWeather)
export const ToolsLive = Tools.toLayer({
  get_weather: ({ city }) => Effect.succeed({ city, celsius: 21, sky: "sunny" })
})

/** A forecast as a typed object, asked for with a Schema. */
const Forecast = Schema.Struct({ city: Schema.String, summary: Schema.String })

export const program = Effect.gen(function*() {
  const chat = yield* Chat.empty
  const asked = yield* chat.generateText({ prompt: "What is the get_weather in Berlin?", toolkit: Tools })
  for (const call of asked.toolCalls) {
    yield* Console.log(`the model called ${call.name}(${JSON.stringify(call.params)})`)
  }
  for (const result of asked.toolResults) yield* Console.log(`the tool returned ${JSON.stringify(result.result)}`)
  // the chat's history holds the call and its result: the model answers from them
  const answered = yield* chat.generateText({ prompt: [], toolkit: Tools })
  yield* Console.log(`answer: ${answered.text}`)
  const forecast = yield* LanguageModel.generateObject({ prompt: "A forecast for Berlin", schema: Forecast })
  yield* Console.log(`object: ${JSON.stringify(forecast.value)}`)
  return { asked, answered, forecast: forecast.value }
}).pipe(Effect.provide(Layer.merge(AifsLanguageModel.model("Llama-3.3-70B-Instruct"), ToolsLive)))

if (isMain(import.meta.url)) run(program, inference())
