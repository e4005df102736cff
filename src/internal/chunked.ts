/**
 * A stream transformed a chunk at a time by a synchronous step that may end it, in one stage: where a `mapChunks`,
 * a `takeWhile` on a marker value and the check after it are three, each a channel every chunk passes through.
 * @internal
 */
import * as Channel from "effect/Channel"
import * as Chunk from "effect/Chunk"
import * as Stream from "effect/Stream"

/** What a step made of one chunk: its values, and whether the stream ends after them. */
export interface Stepped<B> {
  readonly values: ReadonlyArray<B>
  readonly done: boolean
}

/**
 * `self`, each chunk turned into values by `step`, until a step says the stream is done (the rest of `self` is not
 * read, and its finalizers run) or `self` ends. A failure of `self` passes through.
 */
export const mapChunksUntil = <A, E, R, B>(
  self: Stream.Stream<A, E, R>,
  step: (chunk: Chunk.Chunk<A>) => Stepped<B>
): Stream.Stream<B, E, R> => {
  const write = (values: ReadonlyArray<B>) =>
    values.length === 0 ? Channel.void : Channel.write(Chunk.unsafeFromArray(values))
  const loop: Channel.Channel<Chunk.Chunk<B>, Chunk.Chunk<A>, E, E, unknown, unknown> = Channel.readWithCause({
    onInput: (chunk: Chunk.Chunk<A>) => {
      const { done, values } = step(chunk)
      return done ? write(values) : Channel.flatMap(write(values), () => loop)
    },
    onFailure: Channel.failCause,
    onDone: () => Channel.void
  })
  return Stream.pipeThroughChannel(self, loop)
}
