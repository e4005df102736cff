/**
 * The emulator's model catalogue: every model of the service's plans, under the id the API uses, with the service's
 * `meta_data`. The plans' tables (`internal/plans.ts`, generated from the portal's exports) say which models there are
 * (dated snapshot rows under their undated ids, price bands such as `-long-context` left out), where each is hosted and
 * its context window (`max_sequence_length`; 0, unknown, where only the legacy plans have the model, as the real
 * `/models` says). A model hosted by a third-party cloud is proprietary: it sends `x-ratelimit-*` headers; the
 * operator's own open-source models send none. What the tables do not say (kind, name, embedding dimension, reasoning,
 * image input, output cap) is in `traits` below.
 *
 * A key of a plan sees the models of its plan only (`visibleTo`: any other model is "not found", 404, as the docs say);
 * a key of a custom tier sees every model. Ids are exact: case-sensitive, no trimming.
 *
 * @since 0.1.0
 */
import { contextWindowOf, hasModel, isPlan, modelsOf, planNames, regionOf } from "../internal/plans.js"
import { plans } from "../internal/planTables.js"
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

/** What the plans' tables do not say of a model. */
interface Traits {
  /** `display_name` (the portal's where it shows one). */
  readonly name: string
  /** Over the kind its id says (`-embedding`, `whisper-`, `-image`: else chat). */
  readonly kind?: CatalogueModel["kind"]
  readonly reasoning?: true
  /** Takes images besides text. */
  readonly image?: true
  /** `max_output_length` (0, unknown, when not given). */
  readonly output?: number
  readonly dimensions?: number
  readonly license?: string
  readonly stage?: string
}

const llama = "https://www.llama.com/llama3_3/license/"

const traits: Readonly<Record<string, Traits>> = {
  "gpt-oss-120b": { name: "GPT OSS 120B", reasoning: true },
  "Llama-3.3-70B-Instruct": { name: "Meta LLama 3.3 70B", output: 4096, license: llama },
  "Llama-BildungsLLM-0.9": { name: "Llama BildungsLLM 0.9", license: llama },
  "Mistral-Small-3": { name: "Mistral Small 3" },
  "Mistral-Small-24B-Instruct-2501": { name: "Mistral Small 24B Instruct 2501" },
  "Qwen2.5-Coder-32B-Instruct-FP8": { name: "Qwen2.5 Coder 32B Instruct" },
  "Qwen3-30B-A3B-FP8": { name: "Qwen 3 30B", reasoning: true },
  "Qwen3-Coder-30B-A3B-Instruct-FP8": { name: "Qwen 3 Coder 30B" },
  "Qwen3-Next-80B-A3B-Instruct": { name: "Qwen 3 Next 80B Instruct" },
  "Qwen3-Next-80B-A3B-Instruct-FP8": { name: "Qwen 3 Next 80B Instruct" },
  "Qwen3-VL-30B-A3B-Instruct-FP8": { name: "Qwen 3 VL 30B Instruct", image: true },
  "Teuken-7B-Instruct-v04": { name: "Teuken 7B Instruct", output: 1024 },
  "gemma-4-31B": { name: "Gemma 4 31B", image: true, license: "Gemma", stage: "Preview" },
  "gpt-4o": { name: "GPT 4o", image: true, output: 16384 },
  "gpt-4o-mini": { name: "GPT 4o Mini", image: true },
  "gpt-4.1": { name: "GPT 4.1", image: true, output: 32768 },
  "gpt-4.1-amber": { name: "GPT 4.1 Amber", image: true },
  "gpt-4.1-mini": { name: "GPT 4.1 Mini", image: true },
  "gpt-4.1-nano": { name: "GPT 4.1 Nano", image: true },
  "gpt-5": { name: "GPT 5", reasoning: true, image: true },
  "gpt-5.2": { name: "GPT 5.2", reasoning: true, image: true },
  "gpt-5-mini": { name: "GPT 5 Mini", reasoning: true, image: true },
  "gpt-5-nano": { name: "GPT 5 Nano", reasoning: true, image: true },
  "gpt-5-codex": { name: "GPT 5 Codex", reasoning: true },
  "GPT-5-Codex": { name: "GPT 5 Codex", reasoning: true },
  o1: { name: "o1", reasoning: true, image: true },
  "o1-mini": { name: "o1 Mini", reasoning: true },
  o3: { name: "o3", reasoning: true, image: true },
  "o3-mini": { name: "o3 Mini", reasoning: true, output: 100000 },
  "o4-mini": { name: "o4 Mini", reasoning: true, output: 100000 },
  "claude-3-7-sonnet": { name: "Claude 3.7 Sonnet", image: true, output: 64000 },
  "claude-sonnet-4": { name: "Claude 4 Sonnet", image: true },
  "claude-sonnet-4.5": { name: "Claude 4.5 Sonnet", image: true, output: 64000 },
  "claude-sonnet-4.6": { name: "Claude 4.6 Sonnet", image: true },
  "claude-haiku-4.5": { name: "Claude 4.5 Haiku", image: true },
  "claude-opus-4.5": { name: "Claude 4.5 Opus", image: true },
  "claude-opus-4.6": { name: "Claude 4.6 Opus", image: true },
  "gemini-2.5-flash": { name: "Gemini 2.5 Flash", image: true, output: 65536 },
  "gemini-2.5-flash-image": { name: "Gemini 2.5 Flash Image", image: true },
  "gemini-2.5-pro": { name: "Gemini 2.5 Pro", image: true },
  "gemini-3-flash": { name: "Gemini 3 Flash", image: true },
  "gemini-3-pro": { name: "Gemini 3 Pro", image: true },
  "mistral-medium-3": { name: "Mistral Medium 3" },
  "Mistral-Medium-3": { name: "Mistral Medium 3" },
  "Mistral-Large-2411": { name: "Mistral Large 2411" },
  "gpt-image-1": { name: "GPT Image 1", image: true },
  "text-embedding-bge-m3": { name: "Embedding BGE M3", dimensions: 1024 },
  "jina-embeddings-v2-base-de": { name: "Jina Embeddings v2 Base De", dimensions: 768 },
  "jina-embeddings-v2-base-code": { name: "Jina Embeddings v2 Base Code", dimensions: 768 },
  "text-embedding-ada-002": { name: "OpenAI Ada 002", dimensions: 1536 },
  "tsi-embedding-colqwen2-2b-v1": { name: "TSI Col Qwen 2 2b v1.0", dimensions: 128, image: true },
  "whisper-large-v3": { name: "Whisper Large v3" },
  "whisper-large-v3-turbo": { name: "Whisper Large v3 Turbo" }
}

/** The kind an id says, when its traits do not. */
const kindOf = (id: string): CatalogueModel["kind"] =>
  traits[id]?.kind ??
    (/embedding/.test(id) ? "embedding" : id.startsWith("whisper-") ? "stt" : /-image(-|$)/.test(id) ? "image" : "chat")

/** Where the metadata says a region is, by the regions the tables name. */
const countries: Readonly<Record<string, string>> = {
  "otc-germany": "Germany, EU",
  "azure-sweden-central": "Sweden, EU",
  "azure-sweden": "Sweden, EU",
  "azure-france-central": "France, EU",
  "azure-france": "France, EU",
  "gcp-europe-west1": "Belgium, EU",
  "gcp-europe-west4": "Netherlands, EU"
}

/** The plans, current ones first: the catalogue lists the current models first, then those only legacy plans have. */
const newestFirst = [
  ...planNames.filter((plan) => plans[plan].generation === "current"),
  ...planNames.filter((plan) => plans[plan].generation !== "current")
]

const modelTypes = { chat: "LLM", embedding: "EMBEDDING", stt: "STT", image: "IMAGE" } as const
const outputs = { chat: ["text"], embedding: ["embedding"], stt: ["text"], image: ["image"] } as const
const inputs = { chat: ["text"], embedding: ["text"], stt: ["audio"], image: ["text"] } as const

/** A model of the tables, with what `traits` adds. */
const entry = (id: string): CatalogueModel => {
  const kind = kindOf(id)
  const t: Traits = traits[id] ?? { name: id }
  const region = regionOf(id) ?? "otc-germany"
  // the operator's own cloud is T-Cloud (`otc-`); anything else is a third party's
  const proprietary = !/^otc-/i.test(region)
  const meta: ModelMetaData = {
    model_type: modelTypes[kind],
    source_type: proprietary ? "PROPRIETARY" : "OPEN SOURCE",
    max_sequence_length: contextWindowOf(id) ?? 0,
    hidden_size: t.dimensions ?? 0,
    max_output_length: t.output ?? 0,
    deployment_region: region,
    location: region,
    license: t.license ?? (proprietary ? "Proprietary" : kind === "embedding" ? "MIT" : "Apache-2.0"),
    display_name: t.name,
    deployment_country: countries[region.toLowerCase()] ?? "EU",
    input_modalities: t.image ? [...inputs[kind], "image"] : [...inputs[kind]],
    output_modalities: [...outputs[kind]],
    model_lifecycle_stage: t.stage ?? "Stable",
    is_externally_hosted: proprietary
  }
  return {
    id,
    kind,
    proprietary,
    ...(kind === "chat" ? { reasoning: t.reasoning ?? false } : {}),
    ...(t.dimensions === undefined ? {} : { dimensions: t.dimensions }),
    meta
  }
}

/**
 * The models the emulator serves: every model of every plan (the current plans' first), once.
 *
 * @since 0.1.0
 * @category catalogue
 */
export const catalogue: ReadonlyArray<CatalogueModel> = [...new Set(newestFirst.flatMap(modelsOf))].map(entry)

const byId = new Map(catalogue.map((model) => [model.id, model]))

/**
 * Looks a model up by its exact id (case-sensitive).
 *
 * @since 0.1.0
 * @category catalogue
 */
export const findModel = (id: string): CatalogueModel | undefined => byId.get(id)

/**
 * Whether a key of `tier` may use a model: a plan's key the models of its plan, a custom tier's key every model.
 *
 * @since 0.5.0
 * @category catalogue
 */
export const visibleTo = (tier: string, id: string): boolean => byId.has(id) && (!isPlan(tier) || hasModel(tier, id))

/**
 * The models a key of `tier` sees (`GET /models`): its plan's, or every model for a custom tier.
 *
 * @since 0.5.0
 * @category catalogue
 */
export const catalogueOf = (tier: string): ReadonlyArray<CatalogueModel> =>
  isPlan(tier) ? catalogue.filter((model) => hasModel(tier, model.id)) : catalogue
