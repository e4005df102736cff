/**
 * What an operation's span and metrics say, after the OpenTelemetry GenAI semantic conventions (v1.41): a model
 * operation's span is `{gen_ai.operation.name} {gen_ai.request.model}`, kind client, with the request's
 * parameters, the response's id, model, finish reasons and usage, and `error.type` on failure; any other
 * operation (files, vector stores, fine-tuning jobs, the queue's handles) has a span named after it, with no
 * `gen_ai.*`, above the platform's HTTP client span of each attempt. The client's own extras are `aifs.*`.
 * Never the key, never the prompt.
 * @internal
 */
import * as MetricBoundaries from "effect/MetricBoundaries"
import * as MetricKey from "effect/MetricKey"
import type * as Tracer from "effect/Tracer"
import type { RequestOptions } from "./request/types.js"

/** The key of `gen_ai.client.operation.duration` (seconds), with the conventions' bucket boundaries. */
export const operationDurationKey = MetricKey.histogram(
  "gen_ai.client.operation.duration",
  MetricBoundaries.fromIterable([
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92
  ]),
  "GenAI operation duration (s)"
)

/** The key of `gen_ai.client.token.usage` (tokens), with the conventions' bucket boundaries (powers of 4). */
export const tokenUsageKey = MetricKey.histogram(
  "gen_ai.client.token.usage",
  MetricBoundaries.fromIterable(Array.from({ length: 14 }, (_, i) => 4 ** i)),
  "Number of input and output tokens used ({token})"
)

/** `gen_ai.provider.name`: no well-known value applies to AIFS, so its own. */
export const providerName = "aifs"

/** The operations that run a model, with their `gen_ai.operation.name`. */
const modelOperations: ReadonlySet<string> = new Set([
  "chat",
  "text_completion",
  "embeddings",
  "images.generations",
  "images.edits",
  "audio.transcriptions",
  "audio.translations"
])

/** Whether an operation runs a model (its span and metrics follow the GenAI conventions). */
export const isModelOperation = (operation: string | undefined): operation is string =>
  operation !== undefined && modelOperations.has(operation)

/** What a request says of its operation, for its span (its `RequestOptions.span`). */
export type Operation = NonNullable<RequestOptions["span"]>

/** The service's host and port, as `server.address` / `server.port` name them. */
export interface Server {
  readonly address: string
  readonly port: number
}

const number = (value: unknown): number | undefined => typeof value === "number" ? value : undefined

/**
 * `gen_ai.request.*` from a request's parameters (chat, completions, embeddings, responses, images, audio): only
 * the ones named here are read, never messages, input, prompts or files.
 */
const requestParameters = (
  params: Record<string, unknown>,
  operation: string,
  streaming: boolean
): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  const set = (key: string, value: unknown) => {
    if (value !== undefined) out[key] = value
  }
  set(
    "gen_ai.request.max_tokens",
    number(params.max_tokens ?? params.max_completion_tokens ?? params.max_output_tokens)
  )
  set("gen_ai.request.temperature", number(params.temperature))
  set("gen_ai.request.top_p", number(params.top_p))
  set("gen_ai.request.frequency_penalty", number(params.frequency_penalty))
  set("gen_ai.request.presence_penalty", number(params.presence_penalty))
  set("gen_ai.request.seed", number(params.seed))
  const stop = params.stop
  set("gen_ai.request.stop_sequences", typeof stop === "string" ? [stop] : Array.isArray(stop) ? stop : undefined)
  const n = number(params.n)
  set("gen_ai.request.choice.count", n === undefined || n === 1 ? undefined : n)
  if (streaming || params.stream === true) out["gen_ai.request.stream"] = true
  if (operation === "embeddings") {
    set("gen_ai.request.encoding_formats", [
      typeof params.encoding_format === "string" ? params.encoding_format : "float"
    ])
  }
  const format = (params.response_format ?? (params.text as { format?: unknown } | undefined)?.format) as
    | { readonly type?: unknown }
    | undefined
  if (operation.startsWith("images.")) out["gen_ai.output.type"] = "image"
  else if (format?.type === "json_schema" || format?.type === "json_object") out["gen_ai.output.type"] = "json"
  else if (format?.type === "text") out["gen_ai.output.type"] = "text"
  return out
}

/** The span of an operation at its start: name, kind and the attributes samplers may read. */
export const spanOf = (
  op: Operation,
  model: string | undefined,
  server: Server | undefined,
  streaming: boolean
): { readonly name: string; readonly kind: Tracer.SpanKind; readonly attributes: Record<string, unknown> } => {
  if (!isModelOperation(op.operation)) {
    return { name: op.name, kind: "internal", attributes: { "aifs.operation": op.name, ...op.attributes } }
  }
  const params = (op.params ?? {}) as Record<string, unknown>
  return {
    name: model === undefined ? op.operation : `${op.operation} ${model}`,
    kind: "client",
    attributes: {
      "gen_ai.operation.name": op.operation,
      "gen_ai.provider.name": providerName,
      ...(model === undefined ? {} : { "gen_ai.request.model": model }),
      ...(server === undefined ? {} : { "server.address": server.address, "server.port": server.port }),
      ...requestParameters(params, op.operation, streaming),
      "aifs.operation": op.name,
      ...op.attributes
    }
  }
}

/** The host and port of a base URL, as `server.address` / `server.port` name them. */
export const serverOf = (baseUrl: string): Server | undefined => {
  try {
    const url = new URL(baseUrl)
    const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
    return { address: url.hostname, port }
  } catch {
    return undefined
  }
}

/**
 * What the answers of one operation said, for its span and its token metric: a JSON body once, or each event
 * of a stream (the id and model of the first, the finish reasons and the usage wherever they come).
 */
export class ResponseSummary {
  id: string | undefined = undefined
  model: string | undefined = undefined
  inputTokens: number | undefined = undefined
  outputTokens: number | undefined = undefined
  /** Of the input tokens, those read from the prompt cache, where the answer says. */
  cacheReadTokens: number | undefined = undefined
  /** Of the input tokens, those written to the prompt cache, where the answer says. */
  cacheWriteTokens: number | undefined = undefined
  finishReasons: Array<string> = []

  /** Reads what a decoded answer (or event) holds; anything of another shape is left alone. */
  observe(value: unknown): void {
    if (typeof value !== "object" || value === null) return
    const body = value as Record<string, unknown>
    // the queue's answer: a result, or a handle to poll (which says nothing of the answer)
    if (body.kind === "result" && "value" in body) return this.observe(body.value)
    if (this.id === undefined && typeof body.id === "string" && body.id !== "") this.id = body.id
    if (this.model === undefined && typeof body.model === "string" && body.model !== "") this.model = body.model
    const usage = body.usage as Record<string, unknown> | null | undefined
    if (typeof usage === "object" && usage !== null) {
      this.inputTokens = number(usage.prompt_tokens) ?? number(usage.input_tokens) ?? this.inputTokens
      this.outputTokens = number(usage.completion_tokens) ?? number(usage.output_tokens) ?? this.outputTokens
      this.observeCache(usage)
    }
    if (Array.isArray(body.choices)) {
      for (
        const choice of body.choices as ReadonlyArray<{ readonly finish_reason?: unknown; readonly index?: unknown }>
      ) {
        if (typeof choice?.finish_reason === "string") {
          this.finishReasons[number(choice.index) ?? 0] = choice.finish_reason
        }
      }
    }
    // a Responses answer, or its `response.completed` event
    const response = (body.response ?? body) as Record<string, unknown>
    if (response !== body) this.observe(response)
    else if (body.object === "response" && typeof body.status === "string") {
      this.finishReasons[0] = body.status === "completed" ? "stop" : body.status
    }
  }

  /** The prompt cache's counts: OpenAI's names (chat or Responses), else those of Anthropic-style proxies. */
  private observeCache(usage: Record<string, unknown>): void {
    type Details = Record<string, unknown> | null | undefined
    const details = (usage.prompt_tokens_details ?? usage.input_tokens_details) as Details
    const read = number(details?.cached_tokens) ?? number(usage.cache_read_input_tokens)
    const write = number(details?.cache_write_tokens) ?? number(usage.cache_creation_input_tokens)
    if (read !== undefined) this.cacheReadTokens = read
    if (write !== undefined) this.cacheWriteTokens = write
  }

  /** The span attributes of what was read. */
  attributes(): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    if (this.id !== undefined) out["gen_ai.response.id"] = this.id
    if (this.model !== undefined) out["gen_ai.response.model"] = this.model
    const reasons = this.finishReasons.filter((reason) => reason !== undefined)
    if (reasons.length > 0) out["gen_ai.response.finish_reasons"] = reasons
    if (this.inputTokens !== undefined) out["gen_ai.usage.input_tokens"] = this.inputTokens
    if (this.outputTokens !== undefined) out["gen_ai.usage.output_tokens"] = this.outputTokens
    if (this.cacheReadTokens !== undefined) out["gen_ai.usage.cache_read.input_tokens"] = this.cacheReadTokens
    if (this.cacheWriteTokens !== undefined) out["gen_ai.usage.cache_creation.input_tokens"] = this.cacheWriteTokens
    return out
  }
}
