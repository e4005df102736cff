/**
 * A tracer that keeps every span it makes, for tests of which spans an operation opens and what they carry.
 */
import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"

/** A tracer keeping every span it makes in `spans`, over the test's own. */
export const recording = (spans: Array<Tracer.Span>): Effect.Effect<Tracer.Tracer> =>
  Effect.map(Effect.tracer, (base) =>
    Tracer.make({
      span: (...args) => {
        const span = base.span(...args)
        spans.push(span)
        return span
      },
      context: base.context
    }))
