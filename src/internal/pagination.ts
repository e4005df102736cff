/**
 * Cursor pagination (`after` = the last id of the previous page, while `has_more`) as a stream of items.
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** A page as the list routes return it. */
export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly has_more?: boolean | null | undefined
  readonly last_id?: string | null | undefined
}

/**
 * Streams the items of every page. Stops when a page says no more, is empty, or would repeat its cursor
 * (a server that ignores `after` would otherwise loop forever).
 */
export const paginate = <A extends { readonly id: string }, E>(
  page: (after: string | undefined) => Effect.Effect<Page<A>, E>
): Stream.Stream<A, E> =>
  Stream.paginateEffect(undefined as string | undefined, (after) =>
    Effect.map(page(after), (result) => {
      const last = result.last_id ?? result.data.at(-1)?.id
      const next = result.has_more === true && last !== undefined && last !== after
        ? Option.some<string | undefined>(last)
        : Option.none()
      return [result.data, next] as const
    })).pipe(Stream.mapConcat((items) => items))
