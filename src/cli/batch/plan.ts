/**
 * The plan of `aifs batch`: what each input line is (a request to run, one to skip because an earlier run did it, a
 * bad line, a blank one), decided from the line, what the output already holds and the ids seen on earlier lines.
 * Pure functions over plain values; `steps` walks a stream of lines with them.
 *
 * @since 0.4.0
 */
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import * as Batch from "../../services/Batch.js"
import { customIdOf } from "../batchOutput.js"

/**
 * What the output holds from earlier runs: the ids whose latest line succeeded, those whose latest line failed, and
 * whether failures are kept as they are (`--keep-failed`) instead of run again.
 *
 * @since 0.4.0
 * @category models
 */
export interface Resume {
  readonly succeeded: ReadonlySet<string>
  readonly failed: ReadonlySet<string>
  readonly keepFailed: boolean
}

/**
 * What one input line is.
 *
 * @since 0.4.0
 * @category models
 */
export type Step =
  | { readonly _tag: "Blank" }
  /** `counted`: the line was counted among those to run (its id, if any, is not done), so the total loses it. */
  | { readonly _tag: "Bad"; readonly line: number; readonly reason: string; readonly counted: boolean }
  /** `keptFailed`: done because its failure is kept (`--keep-failed`). */
  | { readonly _tag: "Skip"; readonly id: string; readonly keptFailed: boolean }
  /** `retried`: its latest result failed, and it runs again. */
  | { readonly _tag: "Run"; readonly request: Batch.BatchRequest; readonly retried: boolean }

/**
 * Whether an id is done: its latest line succeeded, or failed and failures are kept.
 *
 * @since 0.4.0
 * @category planning
 */
export const isDone = (resume: Resume, id: string): boolean =>
  resume.succeeded.has(id) || (resume.keepFailed && resume.failed.has(id))

/**
 * Whether a line counts among those a run sends before it is parsed: not blank, and not done. A bad line among them is
 * taken off when it is read (`Bad.counted`), by the same rule, so that the count ends exact.
 *
 * @since 0.4.0
 * @category planning
 */
export const counts = (resume: Resume, text: string): boolean => text.trim() !== "" && !isDone(resume, customIdOf(text))

const bad = (resume: Resume, text: string, line: number, reason: string): Step => ({
  _tag: "Bad",
  line,
  reason,
  counted: !isDone(resume, customIdOf(text))
})

/**
 * What line `line` (1-based) of the input is, given the ids of the earlier lines (`seen`): a second line with an id
 * is bad, whatever the first one was.
 *
 * @since 0.4.0
 * @category planning
 */
export const step = (resume: Resume, seen: ReadonlySet<string>, text: string, line: number): Step => {
  if (text.trim() === "") return { _tag: "Blank" }
  const parsed = Batch.parseLine(text, line)
  if (Either.isLeft(parsed)) return bad(resume, text, line, parsed.left.reason)
  const id = parsed.right.custom_id
  if (seen.has(id)) return bad(resume, text, line, `duplicate custom_id "${id}"`)
  if (isDone(resume, id)) return { _tag: "Skip", id, keptFailed: resume.failed.has(id) }
  return { _tag: "Run", request: parsed.right, retried: resume.failed.has(id) }
}

/** The id a step takes: no later line may have it. */
const idOf = (step: Step): string | undefined =>
  step._tag === "Run" ? step.request.custom_id : step._tag === "Skip" ? step.id : undefined

/**
 * The steps of a stream of numbered lines, in order.
 *
 * @since 0.4.0
 * @category planning
 */
export const steps = <E, R>(
  lines: Stream.Stream<readonly [string, number], E, R>,
  resume: Resume
): Stream.Stream<Step, E, R> =>
  Stream.suspend(() => {
    const seen = new Set<string>()
    return Stream.map(lines, ([text, line]) => {
      const next = step(resume, seen, text, line)
      const id = idOf(next)
      if (id !== undefined) seen.add(id)
      return next
    })
  })
