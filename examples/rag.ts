/**
 * The retrieval (RAG) gateway: ingest documents into your local knowledge base, open a chat session over
 * them, and ask; every answer names the files and passages it came from.
 *
 *   npx tsx examples/rag.ts                   (the emulator's gateway; with AIFS_GATEWAY_URL,
 *                                              AIFS_GATEWAY_USERNAME and AIFS_GATEWAY_PASSWORD set, the real one)
 */
import { Rag } from "effect-aifs"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { gateway, isMain, run } from "./run.js"

export const documents: ReadonlyArray<Rag.UploadFile> = [
  {
    name: "handbook.txt",
    content: "Archive access.\n\nThe archive code is 7319-KESTREL. Give it to nobody outside the records team."
  },
  { name: "canteen.md", content: "# Canteen\n\nThe canteen serves lentil soup on Fridays and closes at three." },
  // a type the gateway does not take: its outcome says so, and the other files go on
  { name: "diagram.bin", content: new Uint8Array([0, 1, 2, 3]) }
]

const describe = (event: Rag.Progress): string => {
  switch (event._tag) {
    case "Uploading":
      return `uploading ${event.files} files`
    case "UploadStatus":
      return `${event.name}: upload ${event.status}`
    case "IngestStarted":
      return `${event.name}: ingestion started`
    case "IngestStatus":
      return `${event.name}: ${event.status}${event.progress === undefined ? "" : ` (${event.progress}%)`}`
    case "Finished":
      return `${event.outcome.name}: ${event.outcome.ok ? "ready" : `not ingested (${event.outcome.reason})`}`
  }
}

export const program = Effect.gen(function*() {
  // upload, wait for the uploads, start ingestion, wait for it: one outcome per file, failures included
  const outcomes = yield* Rag.ingest(documents, {
    timeout: "5 minutes",
    onProgress: (event) => Console.log(`  ${describe(event)}`)
  })
  yield* Console.log(`\nIngested: ${outcomes.filter((o) => o.ok).map((o) => o.name).join(", ")}`)

  // a session over the files that made it (failed outcomes are left out)
  const session = yield* Rag.openSession({ files: outcomes, title: "effect-aifs example" })
  const answers = yield* Effect.forEach(
    ["What is the archive code?", "When does the canteen serve soup?"],
    (question) =>
      Effect.gen(function*() {
        const answer = yield* Rag.ask(session, question)
        yield* Console.log(`\nQ: ${question}\nA: ${answer.text}`)
        for (const source of answer.sources ?? []) {
          yield* Console.log(`   source: ${source.fileName} (score ${source.score}): "${source.passage}"`)
        }
        return { question, answer }
      })
  )
  return { outcomes, session, answers }
})

if (isMain(import.meta.url)) {
  // the emulator's gateway, with quick uploads and ingestion
  run(program, gateway({ gateway: { uploadDelay: "200 millis", ingestDuration: "1 second" } }))
}
