/**
 * Vector stores on `/v1`: stores (create with their embedding models, list, delete), their files (add with
 * chunk size and overlap, list, retrieve, delete, wait until indexed) and search over texts and page images.
 *
 * @example
 * ```ts
 * import { Files, Testing, VectorStores } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 *
 * const program = Effect.gen(function*() {
 *   const files = yield* Files.Files
 *   const vectorStores = yield* VectorStores.VectorStores
 *   const store = yield* vectorStores.create({
 *     name: "handbook",
 *     chunking_strategy: {
 *       text_embedding_model: "text-embedding-bge-m3",
 *       vision_embedding_model: "tsi-embedding-colqwen2-2b-v1"
 *     }
 *   })
 *   // vector-store files are uploaded with purpose `visual-rag`
 *   const file = yield* files.upload({
 *     file: Files.fromBytes("Each key may send 20 requests per minute.", "limits.txt"),
 *     purpose: "visual-rag"
 *   })
 *   yield* vectorStores.addFile(store.id, { file_id: file.id })
 *   yield* vectorStores.waitForFile(store.id, file.id)
 *   const page = yield* vectorStores.search(store.id, { query: "requests per minute", top_k_texts: 1 })
 *   return page.texts.map((hit) => hit.text)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => [ 'Each key may send 20 requests per minute.' ]
 * ```
 *
 * @since 0.1.0
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import { paginate } from "../internal/pagination.js"
import { segment } from "../internal/pathSegment.js"
import { pollOrFail } from "../internal/poll.js"
import { type ApiError, Timeout } from "../schemas/Errors.js"
import {
  type AddFileParams,
  type CreateVectorStoreParams,
  type SearchParams,
  SearchResponse,
  type SearchResultPage,
  VectorStore,
  VectorStoreDeleted,
  VectorStoreFile,
  VectorStoreFileList,
  VectorStoreList
} from "../schemas/VectorStores.js"
import { InferenceHttpClient, type RequestOptions, withoutResponse } from "./InferenceHttpClient.js"

/**
 * Paging of a list.
 *
 * @since 0.1.0
 * @category models
 */
export interface ListParams {
  /** Page size. */
  readonly limit?: number | undefined
  /** Cursor: the last id of the previous page. */
  readonly after?: string | undefined
  /** `asc` or `desc` by creation time. */
  readonly order?: "asc" | "desc" | undefined
}

/**
 * How `waitForFile` polls.
 *
 * @since 0.1.0
 * @category models
 */
export interface WaitOptions {
  /** Give up after this long, with `Timeout` (default 5 minutes). */
  readonly timeout?: Duration.DurationInput | undefined
  /** Pause between polls (default 1 second). */
  readonly interval?: Duration.DurationInput | undefined
}

/**
 * Vector stores.
 *
 * @example
 * ```ts
 * import { Testing, VectorStores } from "effect-aifs"
 * import * as Effect from "effect/Effect"
 * import * as Stream from "effect/Stream"
 *
 * // a store that lives as long as the scope: deleted, with its index, when the program ends
 * const program = Effect.gen(function*() {
 *   const vectorStores = yield* VectorStores.VectorStores
 *   yield* Effect.acquireRelease(
 *     vectorStores.create({
 *       name: "scratch",
 *       chunking_strategy: {
 *         text_embedding_model: "text-embedding-bge-m3",
 *         vision_embedding_model: "tsi-embedding-colqwen2-2b-v1"
 *       }
 *     }),
 *     (store) => Effect.ignore(vectorStores.delete(store.id))
 *   )
 *   const names = yield* vectorStores.listAll().pipe(Stream.map((store) => store.name), Stream.runCollect)
 *   return [...names]
 * }).pipe(Effect.scoped)
 *
 * Effect.runPromise(program.pipe(Effect.provide(Testing.layerEmulator()))).then(console.log)
 * // => [ 'scratch' ]
 * ```
 *
 * @since 0.1.0
 * @category tags
 */
export class VectorStores extends Context.Tag("effect-aifs/VectorStores")<VectorStores, VectorStores.Service>() {}

/**
 * The types of the `VectorStores` tag.
 *
 * @since 0.1.0
 * @category models
 */
export declare namespace VectorStores {
  /**
   * What `VectorStores` provides.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Creates a store; its embedding models travel in `chunking_strategy`. */
    readonly create: (params: CreateVectorStoreParams) => Effect.Effect<VectorStore, ApiError>
    /** One page of stores. */
    readonly list: (params?: ListParams) => Effect.Effect<VectorStoreList, ApiError>
    /** Every store, page after page. */
    readonly listAll: (params?: Omit<ListParams, "after">) => Stream.Stream<VectorStore, ApiError>
    /** Deletes a store and its index. */
    readonly delete: (id: string) => Effect.Effect<VectorStoreDeleted, ApiError>
    /** Adds an uploaded (`visual-rag`) file; it is indexed in the background. */
    readonly addFile: (storeId: string, params: AddFileParams) => Effect.Effect<VectorStoreFile, ApiError>
    /** One page of a store's files. */
    readonly listFiles: (storeId: string, params?: ListParams) => Effect.Effect<VectorStoreFileList, ApiError>
    /** Every file of a store, page after page. */
    readonly listAllFiles: (
      storeId: string,
      params?: Omit<ListParams, "after">
    ) => Stream.Stream<VectorStoreFile, ApiError>
    /** One file of a store. */
    readonly retrieveFile: (storeId: string, fileId: string) => Effect.Effect<VectorStoreFile, ApiError>
    /** Removes a file from a store (and from its search results). */
    readonly deleteFile: (storeId: string, fileId: string) => Effect.Effect<VectorStoreDeleted, ApiError>
    /**
     * Polls a file until it is no longer `in_progress` and returns it (`completed` or `failed`: check
     * `status`); `Timeout` when that takes longer than `timeout`.
     */
    readonly waitForFile: (
      storeId: string,
      fileId: string,
      options?: WaitOptions
    ) => Effect.Effect<VectorStoreFile, ApiError>
    /** Searches texts (`top_k_texts`) and page images (`top_k_images`). */
    readonly search: (storeId: string, params: SearchParams) => Effect.Effect<SearchResultPage, ApiError>
  }
}

const listQuery = (params: ListParams): Record<string, string> => {
  const out: Record<string, string> = {}
  if (params.limit !== undefined) out.limit = String(params.limit)
  if (params.after !== undefined) out.after = params.after
  if (params.order !== undefined) out.order = params.order
  return out
}

/** The options of a request on `/v1` whose span is `name`. */
const v1 = (name: string) => ({ base: "v1", span: { name } }) as const

/** A vector store's path, its id encoded as one segment (or refused). */
const store = (id: string) => Effect.map(segment(id), (encoded) => `/vector_stores/${encoded}`)

/** A file of a vector store's path, both ids encoded as one segment each. */
const file = (storeId: string, fileId: string) =>
  Effect.zipWith(store(storeId), segment(fileId), (path, encoded) => `${path}/files/${encoded}`)

/**
 * `waitForFile` on `get` (a file's state at its path): several requests, one logical span around the polls, each
 * poll's request without a span of its own.
 */
const waitingFor = (get: (path: string) => Effect.Effect<VectorStoreFile, ApiError>) =>
  Effect.fnUntraced(
    function*(storeId: string, fileId: string, options: WaitOptions = {}) {
      const timeout = Duration.decode(options.timeout ?? Duration.minutes(5))
      const interval = Duration.decode(options.interval ?? Duration.seconds(1))
      const path = yield* file(storeId, fileId)
      return yield* pollOrFail(get(path), (f) => f.isDone, {
        interval,
        timeout,
        onTimeout: () =>
          new Timeout({
            message: `file ${fileId} of vector store ${storeId} was still being indexed after ${
              Duration.format(timeout)
            }`,
            endpoint: `GET /v1${path}`,
            timeout: "total",
            after: timeout
          })
      })
    },
    Effect.withSpan("VectorStores.waitForFile", {
      captureStackTrace: false,
      attributes: { "aifs.operation": "VectorStores.waitForFile" }
    })
  )

/**
 * Builds the service on the `InferenceHttpClient`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<VectorStores.Service, never, InferenceHttpClient> = Effect.gen(function*() {
  const http = yield* InferenceHttpClient

  // each request's span is the transport's, opened when the request leaves the limiter's line
  const create = Effect.fnUntraced(function*(params: CreateVectorStoreParams) {
    return yield* withoutResponse(
      http.json(HttpClientRequest.post("/vector_stores").pipe(HttpClientRequest.bodyUnsafeJson(params)), VectorStore, {
        ...v1("VectorStores.create"),
        // a retried create could make two stores (names are unique: the second would be a 409)
        retry: false
      })
    )
  })
  const list = Effect.fnUntraced(function*(params: ListParams = {}) {
    return yield* withoutResponse(
      http.json(
        HttpClientRequest.get("/vector_stores").pipe(HttpClientRequest.setUrlParams(listQuery(params))),
        VectorStoreList,
        v1("VectorStores.list")
      )
    )
  })
  const remove = Effect.fnUntraced(function*(id: string) {
    return yield* withoutResponse(
      http.json(HttpClientRequest.del(yield* store(id)), VectorStoreDeleted, v1("VectorStores.delete"))
    )
  })
  const addFile = Effect.fnUntraced(function*(storeId: string, params: AddFileParams) {
    return yield* withoutResponse(
      http.json(
        HttpClientRequest.post(`${yield* store(storeId)}/files`).pipe(HttpClientRequest.bodyUnsafeJson(params)),
        VectorStoreFile,
        v1("VectorStores.addFile")
      )
    )
  })
  const listFiles = Effect.fnUntraced(function*(storeId: string, params: ListParams = {}) {
    return yield* withoutResponse(
      http.json(
        HttpClientRequest.get(`${yield* store(storeId)}/files`).pipe(HttpClientRequest.setUrlParams(listQuery(params))),
        VectorStoreFileList,
        v1("VectorStores.listFiles")
      )
    )
  })
  const getFile = (path: string, options: RequestOptions) =>
    withoutResponse(http.json(HttpClientRequest.get(path), VectorStoreFile, options))
  const retrieveFile = Effect.fnUntraced(function*(storeId: string, fileId: string) {
    return yield* getFile(yield* file(storeId, fileId), v1("VectorStores.retrieveFile"))
  })
  const deleteFile = Effect.fnUntraced(function*(storeId: string, fileId: string) {
    return yield* withoutResponse(
      http.json(HttpClientRequest.del(yield* file(storeId, fileId)), VectorStoreDeleted, v1("VectorStores.deleteFile"))
    )
  })
  const waitForFile = waitingFor((path) => getFile(path, { base: "v1" }))
  const search = Effect.fnUntraced(function*(storeId: string, params: SearchParams) {
    return yield* withoutResponse(
      http.json(
        HttpClientRequest.post(`${yield* store(storeId)}/search`).pipe(HttpClientRequest.bodyUnsafeJson(params)),
        SearchResponse,
        v1("VectorStores.search")
      )
    )
  })
  return {
    create,
    list,
    listAll: (params = {}) => paginate((after) => list({ ...params, ...(after === undefined ? {} : { after }) })),
    delete: remove,
    addFile,
    listFiles,
    listAllFiles: (storeId, params = {}) =>
      paginate((after) => listFiles(storeId, { ...params, ...(after === undefined ? {} : { after }) })),
    retrieveFile,
    deleteFile,
    waitForFile,
    search
  }
})

/**
 * The service, on an `InferenceHttpClient`.
 *
 * @example
 * ```ts
 * import { ClientConfig, InferenceHttp, Node, VectorStores } from "effect-aifs"
 * import * as Layer from "effect/Layer"
 *
 * // VectorStores alone, on the Node HTTP client (its routes live on `/v1`, derived from `baseUrl`)
 * export const VectorStoresLive: Layer.Layer<VectorStores.VectorStores> = VectorStores.layer.pipe(
 *   Layer.provide(InferenceHttp.layerDefaultRetry),
 *   Layer.provide(ClientConfig.layer({ apiKey: "gen-..." })),
 *   Layer.provide(Node.httpClient)
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<VectorStores, never, InferenceHttpClient> = Layer.effect(VectorStores, make)
