/**
 * What a model operation's metrics record: its duration, tagged with its error's type when it failed, and the tokens
 * its answer used (GenAI client histograms), with the response attributes on its span. The instruments of each
 * operation and model are made once.
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Metric from "effect/Metric"
import * as MetricKey from "effect/MetricKey"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import type { ApiError } from "../../schemas/Errors.js"
import { isModelOperation, operationDurationKey, providerName, ResponseSummary, tokenUsageKey } from "../telemetry.js"
import type { RequestOptions } from "./types.js"

/** A model operation's histograms, tagged with its operation, provider and model. */
interface Instruments {
  readonly duration: (errorType: string | undefined) => Metric.Metric.Histogram<number>
  readonly input: Metric.Metric.Histogram<number>
  readonly output: Metric.Metric.Histogram<number>
}

const labelled = (key: MetricKey.MetricKey.Histogram, tags: ReadonlyArray<readonly [string, string]>) =>
  Metric.fromMetricKey(MetricKey.taggedWithLabels(key, tags.map(([name, value]) => MetricLabel.make(name, value))))

/**
 * The instruments of each operation and model, made once: a metric tagged per update (`Metric.tagged`) looks its
 * series up in the registry at every update, one made from its tagged key keeps it.
 */
const instruments = new Map<string, Instruments>()

const instrumentsOf = (operation: string, model: string | undefined): Instruments => {
  const id = `${operation}\u0000${model ?? ""}`
  const known = instruments.get(id)
  if (known !== undefined) return known
  const tags: Array<readonly [string, string]> = [
    ["gen_ai.operation.name", operation],
    ["gen_ai.provider.name", providerName]
  ]
  if (model !== undefined) tags.push(["gen_ai.request.model", model])
  const ok = labelled(operationDurationKey, tags)
  const failed = new Map<string, Metric.Metric.Histogram<number>>()
  const made: Instruments = {
    duration: (errorType) => {
      if (errorType === undefined) return ok
      const metric = failed.get(errorType) ?? labelled(operationDurationKey, [...tags, ["error.type", errorType]])
      failed.set(errorType, metric)
      return metric
    },
    input: labelled(tokenUsageKey, [...tags, ["gen_ai.token.type", "input"]]),
    output: labelled(tokenUsageKey, [...tags, ["gen_ai.token.type", "output"]])
  }
  // a bound on what a stream of distinct model names could hold: past it, the oldest are made again when used
  if (instruments.size >= 1_000) instruments.delete(instruments.keys().next().value!)
  instruments.set(id, made)
  return made
}

/**
 * Shows what a model operation's answer (a JSON body, or a stream's events read into `summary`) said: the
 * response attributes on the current span, and the tokens it used.
 */
export const recordAnswer = <B = void>(
  operation: string,
  model: string | undefined,
  summary: ResponseSummary,
  result?: B
): Effect.Effect<B> => {
  const { input, output } = instrumentsOf(operation, model)
  // the span's attributes and both observations in one step, with the fiber's metric labels as `Metric.update`
  // would add them; then `result`
  return Effect.withFiberRuntime((fiber) => {
    const span = fiber.currentSpan
    if (span?._tag === "Span") {
      for (const [key, value] of Object.entries(summary.attributes())) span.attribute(key, value)
    }
    const labels = fiber.getFiberRef(FiberRef.currentMetricLabels)
    if (summary.inputTokens !== undefined) input.unsafeUpdate(summary.inputTokens, labels)
    if (summary.outputTokens !== undefined) output.unsafeUpdate(summary.outputTokens, labels)
    return Effect.succeed(result as B)
  })
}

/**
 * `recordAnswer` for one decoded JSON body, when the request runs a model (another's answer is no model's), then
 * `result`.
 */
export const recordAnswerOf = <B>(options: RequestOptions, value: unknown, result: B): Effect.Effect<B> => {
  const operation = options.span?.operation
  if (!isModelOperation(operation)) return Effect.succeed(result)
  const summary = new ResponseSummary()
  summary.observe(value)
  return recordAnswer(operation, options.model, summary, result)
}

/** `error.type`: the client's tag of a failure (`RateLimited`, `Timeout`...); nothing for an interruption. */
export const errorTypeOf = (exit: Exit.Exit<unknown, ApiError>): string | undefined =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause))?._tag : undefined

/** Records a model operation's duration, tagged with its error's type when it failed. */
export const recordDuration = (
  options: RequestOptions,
  operation: string,
  startMs: number,
  errorType: string | undefined
): Effect.Effect<void> =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (end) => Metric.update(instrumentsOf(operation, options.model).duration(errorType), (end - startMs) / 1000)
  )

/**
 * The end of an operation that has a span, in one step: `error.type` on the span when it failed and, for a model
 * operation, its duration from `startMs` on `clock`.
 */
export const ended = (
  options: RequestOptions,
  operation: string | undefined,
  startMs: number,
  clock: Clock.Clock,
  exit: Exit.Exit<unknown, ApiError>
): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    const errorType = errorTypeOf(exit)
    const span = fiber.currentSpan
    if (errorType !== undefined && span?._tag === "Span") span.attribute("error.type", errorType)
    if (isModelOperation(operation)) {
      instrumentsOf(operation, options.model).duration(errorType).unsafeUpdate(
        (clock.unsafeCurrentTimeMillis() - startMs) / 1000,
        fiber.getFiberRef(FiberRef.currentMetricLabels)
      )
    }
    return Effect.void
  })
