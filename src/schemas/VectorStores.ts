/**
 * Wire schemas of `/v1/vector_stores` (retrieval over visual documents): stores whose `chunking_strategy`
 * carries the embedding models, their files (chunk size and overlap), and search results whose content is
 * `text` or `base64` (a whole `data:image/png;base64,...` URL).
 *
 * @example
 * ```ts
 * import * as VectorStoresSchema from "effect-aifs/schemas/VectorStores"
 * import * as Schema from "effect/Schema"
 *
 * // a search answer holds text chunks and page images (as data URLs, ready for a visual model)
 * const page = Schema.decodeUnknownSync(VectorStoresSchema.SearchResultPage)({
 *   object: "vector_store.search_results.page",
 *   search_query: ["opening hours"],
 *   data: [
 *     { file_id: "file-1", filename: "faq.txt", score: 0.8, content: [{ type: "text", text: "Open 9 to 5." }] },
 *     { file_id: "file-2", filename: "page-1.png", score: 0.6, content: [{ type: "base64", data: "iVBORw0KGgo=" }] }
 *   ]
 * })
 *
 * console.log(page.texts.map((hit) => hit.text), page.imageResults.length)
 * // => [ 'Open 9 to 5.' ] 1
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Nullish, OpenEnum } from "./Shared.js"

/**
 * The embedding models of a store, sent in the reused `chunking_strategy` field on create.
 *
 * @since 0.1.0
 * @category schemas
 */
export const EmbeddingModels = Schema.Struct({
  /** Model that embeds text, e.g. `text-embedding-bge-m3`. */
  text_embedding_model: Schema.optional(Schema.String),
  /** Model that embeds page images, e.g. `tsi-embedding-colqwen2-2b-v1`. */
  vision_embedding_model: Schema.optional(Schema.String)
})

/**
 * The type of `EmbeddingModels`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type EmbeddingModels = typeof EmbeddingModels.Type

/**
 * Parameters of `POST /vector_stores`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CreateVectorStoreParams = Schema.Struct({
  /** Store name, unique per user. */
  name: Schema.String,
  /** The embedding models (the service reuses this field for them). */
  chunking_strategy: Schema.optional(EmbeddingModels),
  /** Free-form metadata. */
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
})

/**
 * The type of `CreateVectorStoreParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type CreateVectorStoreParams = typeof CreateVectorStoreParams.Type

/**
 * How many files of a store are in each state.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FileCounts = Schema.Struct({
  /** Cancelled files. */
  cancelled: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Indexed files. */
  completed: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Files that failed to index. */
  failed: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** Files being indexed. */
  in_progress: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  /** All files. */
  total: Schema.optionalWith(Schema.Number, { default: () => 0 })
})

/**
 * The type of `FileCounts`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type FileCounts = typeof FileCounts.Type

/**
 * A vector store. Times are ISO strings without a zone on this service.
 *
 * @since 0.1.0
 * @category schemas
 */
export class VectorStore extends Schema.Class<VectorStore>("VectorStore")({
  /** Store id. */
  id: Schema.String,
  /** `vector_store`. */
  object: Nullish(Schema.String),
  /** Creation time: an ISO string without zone here (a number on other servers). */
  created_at: Nullish(Schema.Union(Schema.String, Schema.Number)),
  /** The name. */
  name: Nullish(Schema.String),
  /** `completed`, `in_progress`, `expired`... */
  status: Nullish(OpenEnum(["completed", "in_progress", "expired"], "State of a store.")),
  /** Files per state. */
  file_counts: Nullish(FileCounts),
  /** Bytes stored. */
  usage_bytes: Nullish(Schema.Number),
  /** The store's embedding models and any other metadata. */
  metadata: Nullish(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** Last use. */
  last_active_at: Nullish(Schema.Union(Schema.String, Schema.Number)),
  /** Expiry policy. */
  expires_after: Nullish(Schema.Unknown),
  /** Expiry time. */
  expires_at: Nullish(Schema.Union(Schema.String, Schema.Number))
}) {
  /** The text embedding model, from `metadata`. */
  get textEmbeddingModel(): string | undefined {
    const value = this.metadata?.["text_embedding_model"]
    return typeof value === "string" ? value : undefined
  }
  /** The vision embedding model, from `metadata`. */
  get visionEmbeddingModel(): string | undefined {
    const value = this.metadata?.["vision_embedding_model"]
    return typeof value === "string" ? value : undefined
  }
}

/**
 * A page of stores.
 *
 * @since 0.1.0
 * @category schemas
 */
export class VectorStoreList extends Schema.Class<VectorStoreList>("VectorStoreList")({
  /** `list`. */
  object: Nullish(Schema.String),
  /** The stores. */
  data: Schema.Array(VectorStore),
  /** Whether another page follows. */
  has_more: Nullish(Schema.Boolean),
  /** First id of the page. */
  first_id: Nullish(Schema.String),
  /** Last id of the page. */
  last_id: Nullish(Schema.String)
}) {}

/**
 * The answer of a delete: `{"id", "deleted": true, "object": "vector_store.deleted" | "vector_store.file.deleted"}`.
 *
 * @since 0.1.0
 * @category schemas
 */
export class VectorStoreDeleted extends Schema.Class<VectorStoreDeleted>("VectorStoreDeleted")({
  /** The deleted store's or file's id. */
  id: Schema.String,
  /** True when deleted. */
  deleted: Schema.Boolean,
  /** `vector_store.deleted` or `vector_store.file.deleted`. */
  object: Nullish(Schema.String)
}) {}

/**
 * How a file is chunked: `{"chunk_size": 1024, "chunk_overlap": 100}`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FileChunking = Schema.Struct({
  /** Chunk size (tokens). */
  chunk_size: Schema.optional(Schema.Number),
  /** Overlap between neighbouring chunks (tokens). */
  chunk_overlap: Schema.optional(Schema.Number)
})

/**
 * Parameters of `POST /vector_stores/{id}/files`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const AddFileParams = Schema.Struct({
  /** An uploaded file (purpose `visual-rag`). */
  file_id: Schema.String,
  /** Chunk size and overlap. */
  chunking_strategy: Schema.optional(FileChunking),
  /** Attributes returned with search results. */
  attributes: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})

/**
 * The type of `AddFileParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type AddFileParams = typeof AddFileParams.Type

/**
 * Why indexing a file failed.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FileError = Schema.Struct({
  /** Machine-readable code. */
  code: Nullish(Schema.String),
  /** Human-readable message. */
  message: Nullish(Schema.String)
})

/**
 * A file of a store: `in_progress`, then `completed` (or `failed`, with `last_error`).
 *
 * @since 0.1.0
 * @category schemas
 */
export class VectorStoreFile extends Schema.Class<VectorStoreFile>("VectorStoreFile")({
  /** The file's id. */
  id: Schema.String,
  /** `vector_store.file`. */
  object: Nullish(Schema.String),
  /** When it was added. */
  created_at: Nullish(Schema.Union(Schema.String, Schema.Number)),
  /** The store. */
  vector_store_id: Nullish(Schema.String),
  /** `in_progress`, `completed`, `failed`, `cancelled`; absent when the server does not say (OpenAI allows it). */
  status: Nullish(OpenEnum(["in_progress", "completed", "failed", "cancelled"], "Indexing state of a file.")),
  /** Why indexing failed. */
  last_error: Nullish(FileError),
  /** Bytes stored. */
  usage_bytes: Nullish(Schema.Number),
  /** How it was chunked. */
  chunking_strategy: Nullish(Schema.Unknown),
  /** Its attributes. */
  attributes: Nullish(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}) {
  /** True once indexing is over, either way (a file whose status is not given has nothing to wait for). */
  get isDone(): boolean {
    return this.status !== "in_progress"
  }
}

/**
 * A page of a store's files.
 *
 * @since 0.1.0
 * @category schemas
 */
export class VectorStoreFileList extends Schema.Class<VectorStoreFileList>("VectorStoreFileList")({
  /** `list`. */
  object: Nullish(Schema.String),
  /** The files. */
  data: Schema.Array(VectorStoreFile),
  /** Whether another page follows. */
  has_more: Nullish(Schema.Boolean),
  /** First id of the page. */
  first_id: Nullish(Schema.String),
  /** Last id of the page. */
  last_id: Nullish(Schema.String)
}) {}

/**
 * Parameters of `POST /vector_stores/{id}/search`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchParams = Schema.Struct({
  /** What to look for. */
  query: Schema.String,
  /** How many text chunks to return. */
  top_k_texts: Schema.optional(Schema.Number),
  /** How many page images to return. */
  top_k_images: Schema.optional(Schema.Number),
  /** Attribute filters. */
  filters: Schema.optional(Schema.Unknown)
})

/**
 * The type of `SearchParams`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type SearchParams = typeof SearchParams.Type

/**
 * One piece of a search result: `text` (a chunk) or `base64` (a page image as a whole data URL).
 *
 * @since 0.1.0
 * @category schemas
 */
export class SearchContent extends Schema.Class<SearchContent>("SearchContent")({
  /** `text` or `base64`. */
  type: OpenEnum(["text", "base64"], "Kind of search content."),
  /** The chunk, or the `data:image/png;base64,...` URL. */
  text: Schema.optionalWith(Schema.String, { default: () => "" })
}) {
  /** True for an image. */
  get isImage(): boolean {
    return this.type === "base64"
  }
  /** The image as a data URL (bare base64 gets a PNG prefix), or `undefined` for text. */
  get dataUrl(): string | undefined {
    if (!this.isImage) return undefined
    return this.text.startsWith("data:") ? this.text : `data:image/png;base64,${this.text}`
  }
  /** The image as a chat `image_url` part, ready for a vision model; `undefined` for text. */
  get imagePart(): { readonly type: "image_url"; readonly image_url: { readonly url: string } } | undefined {
    const url = this.dataUrl
    return url === undefined ? undefined : { type: "image_url", image_url: { url } }
  }
}

/**
 * One search hit. Image and text scores are on different scales.
 *
 * @since 0.1.0
 * @category schemas
 */
export class SearchResult extends Schema.Class<SearchResult>("SearchResult")({
  /** The file it came from. */
  file_id: Nullish(Schema.String),
  /** That file's name. */
  filename: Nullish(Schema.String),
  /** Relevance (text and image scores are not comparable). */
  score: Nullish(Schema.Number),
  /** The file's attributes. */
  attributes: Nullish(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** The matched chunk or image. */
  content: Schema.optionalWith(Schema.Array(SearchContent), { default: () => [] }),
  /** The file's extension, e.g. `.pdf`. */
  file_type: Nullish(Schema.String),
  /** Time as `2025-11-28 08:06:42`, or null. */
  created_at: Nullish(Schema.Union(Schema.String, Schema.Number)),
  /** The page it came from. */
  page_number: Nullish(Schema.Number)
}) {
  /** The text pieces, joined. */
  get text(): string {
    return this.content.filter((c) => !c.isImage).map((c) => c.text).join("\n")
  }
  /** The images as data URLs. */
  get images(): ReadonlyArray<string> {
    return this.content.flatMap((c) => c.dataUrl === undefined ? [] : [c.dataUrl])
  }
}

/**
 * The results of a search.
 *
 * @since 0.1.0
 * @category schemas
 */
export class SearchResultPage extends Schema.Class<SearchResultPage>("SearchResultPage")({
  /** `vector_store.search_results.page`. */
  object: Nullish(Schema.String),
  /** The query as searched. */
  search_query: Nullish(Schema.Unknown),
  /** The hits. */
  data: Schema.Array(SearchResult),
  /** Whether more hits follow. */
  has_more: Nullish(Schema.Boolean),
  /** Cursor of the next page. */
  next_page: Nullish(Schema.String)
}) {
  /** The text hits. */
  get texts(): ReadonlyArray<SearchResult> {
    return this.data.filter((r) => r.content.some((c) => !c.isImage))
  }
  /** The image hits. */
  get imageResults(): ReadonlyArray<SearchResult> {
    return this.data.filter((r) => r.content.some((c) => c.isImage))
  }
}

/**
 * What a search may answer: a page (`{"data": [...]}`), `{"results": [...]}` or a bare array, all read as
 * a `SearchResultPage`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SearchResponse = Schema.Union(
  SearchResultPage,
  Schema.transform(
    Schema.Struct({ results: Schema.Array(SearchResult) }),
    Schema.typeSchema(SearchResultPage),
    {
      strict: true,
      decode: ({ results }) => new SearchResultPage({ data: results }),
      encode: (page) => ({ results: page.data })
    }
  ),
  Schema.transform(Schema.Array(SearchResult), Schema.typeSchema(SearchResultPage), {
    strict: true,
    decode: (results) => new SearchResultPage({ data: results }),
    encode: (page) => page.data
  })
)
