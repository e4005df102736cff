/**
 * A tracer that keeps every span it makes, for tests of which spans an operation opens and what they carry.
 */
import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"

const optionsOf = new WeakMap<Tracer.Span, Tracer.SpanOptions | undefined>()

/** A tracer keeping every span it makes in `spans`, over the test's own. */
export const recording = (spans: Array<Tracer.Span>): Effect.Effect<Tracer.Tracer> =>
  Effect.map(Effect.tracer, (base) =>
    Tracer.make({
      span: (...args) => {
        const span = base.span(...args)
        spans.push(span)
        optionsOf.set(span, args[6])
        return span
      },
      context: base.context
    }))

/** Whether a recorded span was asked to capture the stack trace where it opened (Effect's default). */
export const capturesStackTrace = (span: Tracer.Span): boolean => optionsOf.get(span)?.captureStackTrace !== false
