/**
 * Ids in paths: each percent-encoded as one segment, so that a request reaches the resource its id names and no
 * other. An id that no encoding can carry is refused before anything is sent: URL parsers resolve `.` and `..`
 * segments, spelt with `%2E` or not (`/files/..` is `/`), an empty one names the collection (`/files/` is the list),
 * and a lone surrogate has no UTF-8 form.
 * @internal
 */
import * as Effect from "effect/Effect"
import { BadRequest } from "../schemas/Errors.js"

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Why `id` cannot be one segment of a path; undefined when it can. */
const unsendable = (id: string): string | undefined =>
  id === ""
    ? "an empty id would name the collection"
    : id === "." || id === ".."
    ? "URLs resolve it away, encoded or not"
    : loneSurrogate.test(id)
    ? "it is not well-formed Unicode (a lone surrogate)"
    : undefined

/** `id` as one path segment: `` `/files/${yield* segment(id)}` ``; `BadRequest` (status 0, nothing sent) if it cannot be. */
export const segment = (id: string): Effect.Effect<string, BadRequest> => {
  const why = unsendable(id)
  return why === undefined
    ? Effect.succeed(encodeURIComponent(id))
    : Effect.fail(
      new BadRequest({ status: 0, message: `cannot send the id ${JSON.stringify(id)} in a URL path: ${why}` })
    )
}
