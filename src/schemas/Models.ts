/**
 * Wire schemas of `GET /models` and `GET /models/{id}`, including the service's non-standard `meta_data`.
 *
 * @example
 * ```ts
 * import * as ModelsSchema from "effect-aifs/schemas/Models"
 * import * as Schema from "effect/Schema"
 *
 * const list = Schema.decodeUnknownSync(ModelsSchema.ModelList)({
 *   object: "list",
 *   data: [
 *     { id: "Llama-3.3-70B-Instruct", meta_data: { model_type: "LLM", max_sequence_length: 128000 } },
 *     { id: "text-embedding-bge-m3", meta_data: { model_type: "EMBEDDING" } }
 *   ]
 * })
 *
 * console.log(list.data.filter((model) => model.meta_data?.model_type === "LLM").map((model) => model.id))
 * // => [ 'Llama-3.3-70B-Instruct' ]
 * ```
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Nullish, OpenEnum } from "./Shared.js"

/**
 * The service's description of a model. Every field is optional and nullable: older records lack some,
 * and `0` in a length or size means unknown.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ModelMetaData = Schema.Struct({
  /** Kind of model. */
  model_type: Nullish(OpenEnum(["LLM", "EMBEDDING", "STT", "NLP", "Embedding", "Vision"], "Kind of model.")),
  /** Who built it. */
  source_type: Nullish(OpenEnum(["OPEN SOURCE", "PROPRIETARY"], "Origin of the model.")),
  /** Context window in tokens; 0 when unknown. */
  max_sequence_length: Nullish(Schema.Number),
  /** Embedding dimension for embedding models, else 0. */
  hidden_size: Nullish(Schema.Number),
  /** Longest output in tokens; 0 when unknown. */
  max_output_length: Nullish(Schema.Number),
  /** Where it is deployed, e.g. `otc-germany`. */
  deployment_region: Nullish(Schema.String),
  /** Location of the deployment. */
  location: Nullish(Schema.String),
  /** License name or URL. */
  license: Nullish(Schema.String),
  /** Human-readable name. */
  display_name: Nullish(Schema.String),
  /** Country of the deployment, e.g. `Germany, EU`. */
  deployment_country: Nullish(Schema.String),
  /** Input modalities, e.g. `["text", "image"]`. */
  input_modalities: Nullish(Schema.Array(Schema.String)),
  /** Output modalities. */
  output_modalities: Nullish(Schema.Array(Schema.String)),
  /** Lifecycle stage, e.g. `Stable`, `Preview`, `Deprecated`. */
  model_lifecycle_stage: Nullish(Schema.String),
  /** True for proprietary models hosted by a third-party cloud (these send rate-limit headers). */
  is_externally_hosted: Nullish(Schema.Boolean),
  /** End-of-life date, on older records. */
  end_of_life_date: Nullish(Schema.String)
})

/**
 * The type of `ModelMetaData`.
 *
 * @since 0.1.0
 * @category schemas
 */
export type ModelMetaData = typeof ModelMetaData.Type

/**
 * One model of the catalogue.
 *
 * @since 0.1.0
 * @category schemas
 */
export class Model extends Schema.Class<Model>("Model")({
  /** Case-sensitive model id, e.g. `Llama-3.3-70B-Instruct`. */
  id: Schema.String,
  /** `model`, when sent. */
  object: Nullish(Schema.String),
  /** Creation time in epoch seconds, when sent. */
  created: Nullish(Schema.Number),
  /** Owner, when sent. */
  owned_by: Nullish(Schema.String),
  /** The service's description of the model. */
  meta_data: Nullish(ModelMetaData)
}) {}

/**
 * The catalogue: `{"object": "list", "data": [...]}`.
 *
 * @since 0.1.0
 * @category schemas
 */
export class ModelList extends Schema.Class<ModelList>("ModelList")({
  /** `list`. */
  object: Nullish(Schema.String),
  /** The models. */
  data: Schema.Array(Model)
}) {}
