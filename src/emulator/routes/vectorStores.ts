/**
 * `/v1/vector_stores` of the emulator: stores that really index what is added (text chunked by size and
 * overlap and embedded with the store's text model, PNG pages kept as `data:` URLs), search over both, and
 * deletes that remove from the index. Per-key: another key gets 404.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { AddFileParams, CreateVectorStoreParams, EmbeddingModels, SearchParams } from "../../schemas/VectorStores.js"
import { authenticate, decodeBody, reject, requireCatalogued } from "../http.js"
import type { EmulatorState, KeySpec } from "../state.js"
import {
  chunkText,
  type IndexedFile,
  indexStatus,
  isoNoZone,
  type StoredFile,
  type StoredVectorStore
} from "../store.js"
import { embed } from "../text.js"
import { limitParam, orderParam, page, queryParam } from "./files.js"

const defaultTextModel = "text-embedding-bge-m3"
const defaultVisionModel = "tsi-embedding-colqwen2-2b-v1"

const CreateRequest = Schema.Struct({
  ...CreateVectorStoreParams.fields,
  chunking_strategy: Schema.optional(Schema.NullOr(EmbeddingModels))
})

const SearchRequest = Schema.Struct({
  ...SearchParams.fields,
  top_k_texts: Schema.optional(Schema.NullOr(Schema.Number)),
  top_k_images: Schema.optional(Schema.NullOr(Schema.Number))
})

const isPng = (bytes: Uint8Array) =>
  bytes.length > 8 && bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47

const utf8 = new TextDecoder("utf-8", { fatal: true })

const extension = (filename: string) => {
  const dot = filename.lastIndexOf(".")
  return dot < 0 ? "" : filename.slice(dot).toLowerCase()
}

const cosine = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => {
  let sum = 0
  for (let i = 0; i < a.length && i < b.length; i++) sum += a[i]! * b[i]!
  return sum
}

/** Indexes an upload: PNG as an image, UTF-8 text in chunks, anything else fails readably. */
const indexFile = (
  vs: StoredVectorStore,
  file: StoredFile,
  now: number,
  chunkSize: number,
  chunkOverlap: number
): IndexedFile => {
  const base = {
    fileId: file.id,
    filename: file.filename,
    createdMs: now,
    bytes: file.content.length,
    chunkSize,
    chunkOverlap
  }
  if (isPng(file.content)) {
    const dataUrl = `data:image/png;base64,${Buffer.from(file.content).toString("base64")}`
    return { ...base, chunks: [], image: { dataUrl, vector: embed(file.filename, vs.dimensions) }, problem: undefined }
  }
  let text: string
  try {
    text = utf8.decode(file.content)
  } catch {
    text = "\u0000"
  }
  if (text.includes("\u0000")) {
    return {
      ...base,
      chunks: [],
      image: undefined,
      problem: `The emulator indexes text and PNG files only; '${file.filename}' is neither`
    }
  }
  const chunks = chunkText(text, chunkSize, chunkOverlap).map((chunk) => ({
    text: chunk,
    vector: embed(chunk, vs.dimensions)
  }))
  return { ...base, chunks, image: undefined, problem: chunks.length === 0 ? "The file has no text" : undefined }
}

const storeRecord = (vs: StoredVectorStore, now: number) => {
  const counts = { cancelled: 0, completed: 0, failed: 0, in_progress: 0, total: 0 }
  let usage = 0
  for (const file of vs.files.values()) {
    counts[indexStatus(file, now)]++
    counts.total++
    usage += file.bytes
  }
  return {
    id: vs.id,
    object: "vector_store",
    created_at: isoNoZone(vs.createdMs),
    name: vs.name,
    status: counts.in_progress > 0 ? "in_progress" : "completed",
    file_counts: counts,
    usage_bytes: usage,
    metadata: { text_embedding_model: vs.textModel, vision_embedding_model: vs.visionModel },
    last_active_at: isoNoZone(vs.lastActiveMs),
    expires_after: null,
    expires_at: null
  }
}

const fileRecord = (vs: StoredVectorStore, file: IndexedFile, now: number) => {
  const status = indexStatus(file, now)
  return {
    id: file.fileId,
    object: "vector_store.file",
    created_at: isoNoZone(file.createdMs),
    vector_store_id: vs.id,
    status,
    last_error: status === "failed" ? { code: "unsupported_file", message: file.problem } : null,
    usage_bytes: file.bytes,
    chunking_strategy: { chunk_size: file.chunkSize, chunk_overlap: file.chunkOverlap }
  }
}

const storeOf = (state: EmulatorState, key: KeySpec) =>
  Effect.gen(function*() {
    const { id } = yield* HttpRouter.params
    const vs = id === undefined ? undefined : state.store.of(key.key).vectorStores.get(id)
    if (vs === undefined) return yield* reject(404, `Vector store '${id ?? ""}' not found`)
    return vs
  })

const indexedOf = (vs: StoredVectorStore) =>
  Effect.gen(function*() {
    const { file_id } = yield* HttpRouter.params
    const file = file_id === undefined ? undefined : vs.files.get(file_id)
    if (file === undefined) return yield* reject(404, `File '${file_id ?? ""}' not found in vector store '${vs.id}'`)
    return file
  })

const searchTime = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace("T", " ")

/** `POST /vector_stores`: a store of its own name, on catalogued embedding models. */
const createStore = (state: EmulatorState) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const params = yield* decodeBody(CreateRequest)
    const textModel = params.chunking_strategy?.text_embedding_model ?? defaultTextModel
    const visionModel = params.chunking_strategy?.vision_embedding_model ?? defaultVisionModel
    const text = yield* requireCatalogued(textModel, "embedding", "text embeddings")
    yield* requireCatalogued(visionModel, "embedding", "vision embeddings")
    const stores = state.store.of(key.key).vectorStores
    if ([...stores.values()].some((vs) => vs.name === params.name)) {
      return yield* reject(409, `A vector store named '${params.name}' already exists`)
    }
    const now = yield* Clock.currentTimeMillis
    const vs: StoredVectorStore = {
      id: `vs_${state.next().toString(36).padStart(8, "0")}`,
      name: params.name,
      createdMs: now,
      textModel,
      visionModel,
      dimensions: text.dimensions ?? 256,
      files: new Map(),
      lastActiveMs: now
    }
    stores.set(vs.id, vs)
    return HttpServerResponse.unsafeJson(storeRecord(vs, now))
  })

/** `POST /vector_stores/:id/files`: an uploaded file chunked and indexed into the store. */
const addFile = (state: EmulatorState) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const vs = yield* storeOf(state, key)
    const params = yield* decodeBody(AddFileParams)
    const file = state.store.of(key.key).files.get(params.file_id)
    if (file === undefined) return yield* reject(404, `File '${params.file_id}' not found`)
    const chunkSize = params.chunking_strategy?.chunk_size ?? 1024
    const chunkOverlap = params.chunking_strategy?.chunk_overlap ?? 100
    if (!Number.isInteger(chunkSize) || chunkSize < 1 || chunkSize > 8192) {
      return yield* reject(400, "chunk_size must be an integer from 1 to 8192")
    }
    if (!Number.isInteger(chunkOverlap) || chunkOverlap < 0 || chunkOverlap >= chunkSize) {
      return yield* reject(400, "chunk_overlap must be an integer from 0 to less than chunk_size")
    }
    const now = yield* Clock.currentTimeMillis
    const indexed = indexFile(vs, file, now, chunkSize, chunkOverlap)
    vs.files.set(file.id, indexed)
    vs.lastActiveMs = now
    return HttpServerResponse.unsafeJson(fileRecord(vs, indexed, now))
  })

/** `POST /vector_stores/:id/search`: the best text chunks and images of the store's indexed files. */
const searchStore = (state: EmulatorState) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const vs = yield* storeOf(state, key)
    const params = yield* decodeBody(SearchRequest)
    const topTexts = params.top_k_texts ?? 3
    const topImages = params.top_k_images ?? 2
    if (!Number.isInteger(topTexts) || topTexts < 0 || !Number.isInteger(topImages) || topImages < 0) {
      return yield* reject(400, "top_k_texts and top_k_images must be non-negative integers")
    }
    const now = yield* Clock.currentTimeMillis
    vs.lastActiveMs = now
    const query = embed(params.query, vs.dimensions)
    const ready = [...vs.files.values()].filter((f) => indexStatus(f, now) === "completed")
    const texts = ready.flatMap((file) =>
      file.chunks.map((chunk, i) => ({
        file,
        score: cosine(query, chunk.vector),
        content: [{ type: "text", text: chunk.text }],
        page: i + 1
      }))
    ).sort((a, b) => b.score - a.score).slice(0, topTexts)
    // a late-interaction vision score: a different scale from the text cosine, as on the service
    const images = ready.flatMap((file) =>
      file.image === undefined ? [] : [{
        file,
        score: 10 + 20 * Math.max(0, cosine(query, file.image.vector)),
        content: [{ type: "base64", text: file.image.dataUrl }],
        page: 1
      }]
    ).sort((a, b) => b.score - a.score).slice(0, topImages)
    return HttpServerResponse.unsafeJson({
      object: "vector_store.search_results.page",
      search_query: [params.query],
      data: [...texts, ...images].map((hit) => ({
        file_id: hit.file.fileId,
        filename: hit.file.filename,
        score: hit.score,
        attributes: {},
        content: hit.content,
        file_type: extension(hit.file.filename),
        created_at: searchTime(hit.file.createdMs),
        page_number: hit.page
      })),
      has_more: false,
      next_page: null
    })
  })

/** `GET /vector_stores/:id/files`: a page of the store's files. */
const listFiles = (state: EmulatorState) =>
  Effect.gen(function*() {
    const key = yield* authenticate(state)
    const vs = yield* storeOf(state, key)
    const limit = yield* limitParam(20, 100)
    const after = yield* queryParam("after")
    const order = yield* orderParam
    const now = yield* Clock.currentTimeMillis
    const files = [...vs.files.values()].map((f) => ({ ...f, id: f.fileId }))
    const { data, has_more } = page(files, { limit, after, order })
    return HttpServerResponse.unsafeJson({
      object: "list",
      data: data.map((f) => fileRecord(vs, f, now)),
      has_more
    })
  })

/**
 * The vector-store routes (mounted at `/v1`).
 *
 * @since 0.1.0
 * @category routers
 */
export const router = (state: EmulatorState) =>
  HttpRouter.empty.pipe(
    HttpRouter.post(
      "/vector_stores",
      createStore(state)
    ),
    HttpRouter.get(
      "/vector_stores",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        const limit = yield* limitParam(20, 100)
        const after = yield* queryParam("after")
        const order = yield* orderParam
        const now = yield* Clock.currentTimeMillis
        const { data, has_more } = page([...state.store.of(key.key).vectorStores.values()], { limit, after, order })
        return HttpServerResponse.unsafeJson({ object: "list", data: data.map((vs) => storeRecord(vs, now)), has_more })
      })
    ),
    HttpRouter.get(
      "/vector_stores/:id",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        const vs = yield* storeOf(state, key)
        return HttpServerResponse.unsafeJson(storeRecord(vs, yield* Clock.currentTimeMillis))
      })
    ),
    HttpRouter.del(
      "/vector_stores/:id",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        const vs = yield* storeOf(state, key)
        state.store.of(key.key).vectorStores.delete(vs.id)
        return HttpServerResponse.unsafeJson({ id: vs.id, deleted: true, object: "vector_store.deleted" })
      })
    ),
    HttpRouter.post(
      "/vector_stores/:id/files",
      addFile(state)
    ),
    HttpRouter.get(
      "/vector_stores/:id/files",
      listFiles(state)
    ),
    HttpRouter.get(
      "/vector_stores/:id/files/:file_id",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        const vs = yield* storeOf(state, key)
        const file = yield* indexedOf(vs)
        return HttpServerResponse.unsafeJson(fileRecord(vs, file, yield* Clock.currentTimeMillis))
      })
    ),
    HttpRouter.del(
      "/vector_stores/:id/files/:file_id",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        const vs = yield* storeOf(state, key)
        const file = yield* indexedOf(vs)
        vs.files.delete(file.fileId)
        return HttpServerResponse.unsafeJson({ id: file.fileId, deleted: true, object: "vector_store.file.deleted" })
      })
    ),
    HttpRouter.post(
      "/vector_stores/:id/search",
      searchStore(state)
    )
  )
