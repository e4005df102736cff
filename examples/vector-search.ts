/**
 * Embeddings and vector stores: compare texts by the cosine of their embeddings, then index a text file and a
 * page image in a vector store, search both, and hand the hits (page images included) to a visual model.
 *
 *   npx tsx examples/vector-search.ts         (the emulator; with AIFS_API_KEY set, the real service)
 */
import { Chat, type ChatSchema, Embeddings, Files, VectorStores, type VectorStoresSchema } from "effect-aifs"
import * as Clock from "effect/Clock"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { inference, isMain, run } from "./run.js"

const handbook = `Rate limits. Each key may send 20 requests per minute on the basic tier and 600 on the
standard tier. A request over the limit is answered with status 429 and a retry-after header.

Tokens. Every key also has a token budget per minute: 18,750 tokens on the basic tier. The prompt and the
answer both count.

Support. Questions about quotas go to the service desk, which answers on working days.`

/** A page image: a tiny PNG standing in for a rendered page of a PDF. */
const page = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAJklEQVR4nGPYwVUyR7O00b0sNa2CAc7yaq1kgLP0l1QxwFnCh6sBBoQUNLrDWTYAAAA" +
    "ASUVORK5CYII=",
  "base64"
)

const cosine = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  let dot = 0
  let na = 0
  let nb = 0
  a.forEach((x, i) => {
    const y = b[i] ?? 0
    dot += x * y
    na += x * x
    nb += y * y
  })
  return dot / Math.sqrt(na * nb)
}

const question = "How many requests may a key send per minute?"

/** 1. Embeddings: the sentence about the same thing scores higher. */
const similarity = Effect.gen(function*() {
  const embeddings = yield* Embeddings.Embeddings
  const candidates = [
    "Each key may send 20 requests per minute on the basic tier.",
    "The canteen serves soup on Fridays."
  ]
  const result = yield* embeddings.create({ model: "text-embedding-bge-m3", input: [question, ...candidates] })
  const [query, ...vectors] = result.vectors
  yield* Console.log(`Embeddings (${query?.length} dimensions), cosine similarity to "${question}":`)
  const scores = candidates.map((text, i) => ({ text, score: cosine(query ?? [], vectors[i] ?? []) }))
  for (const { score, text } of scores) yield* Console.log(`  ${score.toFixed(3)}  ${text}`)
  return scores
})

/** 2. A vector store over a text file and a page image; deleted again when the scope closes. */
const search = Effect.gen(function*() {
  const files = yield* Files.Files
  const vs = yield* VectorStores.VectorStores
  const upload = (file: Files.FileInput) =>
    Effect.acquireRelease(
      files.upload({ file, purpose: "visual-rag" }), // visual-rag files live on /v1, beside the stores
      (uploaded) => Effect.ignore(files.delete(uploaded.id, { purpose: "visual-rag" }))
    )

  const store = yield* Effect.acquireRelease(
    vs.create({
      name: `effect-aifs-example-${yield* Clock.currentTimeMillis}`, // names are unique per user
      chunking_strategy: {
        text_embedding_model: "text-embedding-bge-m3",
        vision_embedding_model: "tsi-embedding-colqwen2-2b-v1"
      }
    }),
    (store) => Effect.ignore(vs.delete(store.id))
  )
  const text = yield* upload(Files.fromBytes(handbook, "handbook.txt"))
  const image = yield* upload(Files.fromBytes(page, "page-1.png"))
  yield* vs.addFile(store.id, { file_id: text.id, chunking_strategy: { chunk_size: 40, chunk_overlap: 5 } })
  yield* vs.addFile(store.id, { file_id: image.id })
  yield* Console.log(`\nIndexing into ${store.id}:`)
  for (const file of [text, image]) {
    const indexed = yield* vs.waitForFile(store.id, file.id, { timeout: "5 minutes" }) // completed or failed
    yield* Console.log(`  ${file.filename}: ${indexed.status} ${indexed.last_error?.message ?? ""}`)
  }

  const results = yield* vs.search(store.id, { query: question, top_k_texts: 2, top_k_images: 1 })
  yield* Console.log(`\nSearch "${question}":`)
  for (const hit of results.texts) {
    yield* Console.log(`  text   ${hit.score?.toFixed(3)}  ${hit.filename}  "${hit.text.slice(0, 70)}..."`)
  }
  // text and image scores are on different scales: rank each kind on its own
  for (const hit of results.imageResults) {
    const url = hit.images[0] ?? ""
    yield* Console.log(
      `  image  ${hit.score?.toFixed(3)}  ${hit.filename}  ${url.slice(0, 40)}... (${url.length} chars)`
    )
  }
  return results
})

/** 3. The hits as the context of a question to a visual model: excerpts as text, page images as image parts. */
const answerFrom = (results: VectorStoresSchema.SearchResultPage) =>
  Effect.gen(function*() {
    const chat = yield* Chat.Chat
    const excerpts = results.texts.map((hit) => `[${hit.filename}] ${hit.text}`).join("\n")
    // `imagePart` is `{ type: "image_url", image_url: { url: "data:image/png;base64,..." } }`
    const imageParts = results.imageResults.flatMap((hit) => hit.content.flatMap((c) => c.imagePart ?? []))
    const content: Array<ChatSchema.ContentPart> = [
      { type: "text", text: `Answer from these excerpts and pages only.\n${excerpts}\n\nQuestion: ${question}` },
      ...imageParts
    ]
    const answer = yield* chat.create({
      model: "Qwen3-VL-30B-A3B-Instruct-FP8",
      messages: [{ role: "user", content }],
      max_tokens: 200
    })
    yield* Console.log(`\nQwen3-VL, with ${imageParts.length} page image(s) and ${results.texts.length} excerpt(s):`)
    yield* Console.log(`  ${answer.text}`)
    return { content, answer }
  })

export const program = Effect.gen(function*() {
  const scores = yield* similarity
  const results = yield* search
  const { answer, content } = yield* answerFrom(results)
  return { scores, results, content, answer }
}).pipe(Effect.scoped)

if (isMain(import.meta.url)) run(program, inference())
