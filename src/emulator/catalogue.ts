/**
 * The emulator's model catalogue: open-source models (no rate-limit headers) and proprietary models hosted
 * by a third-party cloud (rate-limit headers on every response), with the service's `meta_data`.
 *
 * @since 0.1.0
 */
import type { ModelMetaData } from "../schemas/Models.js"

/**
 * What the emulator knows of a model.
 *
 * @since 0.1.0
 * @category models
 */
export interface CatalogueModel {
  /** Case-sensitive id. */
  readonly id: string
  /** What it serves. */
  readonly kind: "chat" | "embedding" | "stt" | "image"
  /** Hosted by a third-party cloud: sends `x-ratelimit-*` headers, answers 429 with an OpenAI-style body. */
  readonly proprietary: boolean
  /** Streams `reasoning_content` before the answer. */
  readonly reasoning?: boolean
  /** Embedding dimension. */
  readonly dimensions?: number
  /** The record's `meta_data`. */
  readonly meta: ModelMetaData
}

const llm = (
  id: string,
  display: string,
  options: {
    readonly proprietary?: boolean
    readonly reasoning?: boolean
    readonly context?: number
    readonly output?: number
    readonly image?: boolean
    readonly license?: string
  } = {}
): CatalogueModel => ({
  id,
  kind: "chat",
  proprietary: options.proprietary ?? false,
  reasoning: options.reasoning ?? false,
  meta: {
    model_type: "LLM",
    source_type: options.proprietary ? "PROPRIETARY" : "OPEN SOURCE",
    max_sequence_length: options.context ?? 128000,
    hidden_size: 0,
    max_output_length: options.output ?? 0,
    deployment_region: options.proprietary ? "eu-central" : "otc-germany",
    location: options.proprietary ? "eu-central" : "otc-germany",
    license: options.license ?? (options.proprietary ? "Proprietary" : "Apache-2.0"),
    display_name: display,
    deployment_country: "Germany, EU",
    input_modalities: options.image ? ["text", "image"] : ["text"],
    output_modalities: ["text"],
    model_lifecycle_stage: "Stable",
    is_externally_hosted: options.proprietary ?? false
  }
})

const embedding = (id: string, display: string, dimensions: number, proprietary = false): CatalogueModel => ({
  id,
  kind: "embedding",
  proprietary,
  dimensions,
  meta: {
    model_type: "EMBEDDING",
    source_type: proprietary ? "PROPRIETARY" : "OPEN SOURCE",
    max_sequence_length: 8192,
    hidden_size: dimensions,
    max_output_length: 0,
    deployment_region: "otc-germany",
    location: "otc-germany",
    license: proprietary ? "Proprietary" : "MIT",
    display_name: display,
    deployment_country: "Germany, EU",
    input_modalities: ["text"],
    output_modalities: ["embedding"],
    model_lifecycle_stage: "Stable",
    is_externally_hosted: proprietary
  }
})

/**
 * The models the emulator serves.
 *
 * @since 0.1.0
 * @category catalogue
 */
export const catalogue: ReadonlyArray<CatalogueModel> = [
  llm("Llama-3.3-70B-Instruct", "Meta LLama 3.3 70B", {
    license: "https://www.llama.com/llama3_3/license/",
    output: 4096
  }),
  llm("gpt-oss-120b", "GPT OSS 120B", { reasoning: true, context: 131072 }),
  llm("Qwen3-30B-A3B-FP8", "Qwen3 30B A3B", { reasoning: true, context: 32768 }),
  llm("Qwen3-VL-30B-A3B-Instruct-FP8", "Qwen3 VL 30B A3B", { image: true, context: 32768 }),
  llm("Mistral-Small-24B-Instruct-2501", "Mistral Small 24B", { context: 32768 }),
  llm("Teuken-7B-Instruct-v04", "Teuken 7B", { context: 4096, output: 1024 }),
  llm("gpt-4.1", "GPT-4.1", { proprietary: true, context: 1047576, output: 32768, image: true }),
  llm("gpt-4o", "GPT-4o", { proprietary: true, output: 16384, image: true }),
  llm("o3-mini", "o3-mini", { proprietary: true, reasoning: true, context: 200000, output: 100000 }),
  llm("o4-mini", "o4-mini", { proprietary: true, reasoning: true, context: 200000, output: 100000 }),
  llm("claude-sonnet-4.5", "Claude Sonnet 4.5", { proprietary: true, context: 200000, output: 64000, image: true }),
  llm("gemini-2.5-flash", "Gemini 2.5 Flash", { proprietary: true, context: 1048576, output: 65536, image: true }),
  llm("claude-3-7-sonnet", "Claude 3.7 Sonnet", { proprietary: true, context: 200000, output: 64000, image: true }),
  llm("mistral-medium-3", "Mistral Medium 3", { proprietary: true, context: 128000 }),
  llm("gemma-4-31B", "Gemma 4 31B", { context: 256000, image: true, license: "Gemma" }),
  embedding("text-embedding-bge-m3", "BGE M3", 1024),
  embedding("jina-embeddings-v2-base-de", "Jina Embeddings v2 Base DE", 768),
  embedding("text-embedding-ada-002", "OpenAI Ada 002", 1536, true),
  {
    ...embedding("tsi-embedding-colqwen2-2b-v1", "ColQwen2 2B (vision)", 128),
    meta: {
      ...embedding("tsi-embedding-colqwen2-2b-v1", "ColQwen2 2B (vision)", 128).meta,
      input_modalities: ["text", "image"]
    }
  },
  {
    id: "whisper-large-v3",
    kind: "stt",
    proprietary: false,
    meta: { model_type: "STT", source_type: "OPEN SOURCE", display_name: "Whisper Large v3", hidden_size: 0 }
  },
  {
    id: "whisper-large-v3-turbo",
    kind: "stt",
    proprietary: false,
    meta: { model_type: "STT", source_type: "OPEN SOURCE", display_name: "Whisper Large v3 Turbo", hidden_size: 0 }
  },
  {
    id: "gpt-image-1",
    kind: "image",
    proprietary: true,
    meta: {
      model_type: "IMAGE",
      source_type: "PROPRIETARY",
      display_name: "GPT Image 1",
      input_modalities: ["text", "image"],
      output_modalities: ["image"],
      is_externally_hosted: true
    }
  }
]

/**
 * Looks a model up by its exact id.
 *
 * @since 0.1.0
 * @category catalogue
 */
export const findModel = (id: string): CatalogueModel | undefined => catalogue.find((m) => m.id === id)
