/**
 * The models' context windows the limiter lacks, from one `/models` listing per key that nobody asked for: made the
 * first time a request needs a window the configuration and the plans' tables do not give (`Limiter.needsWindow`),
 * awaited by every request of that key that needs one meanwhile, and never again for that key in this process,
 * whatever it answered. What a listing gave is kept in the limiter's store (cache directory, Redis) for 30 days: a
 * process that finds there the window of the model it needs lists nothing. A listing that fails teaches nothing
 * (logged at debug level): its requests go out unchecked, and the server's own refusal ("maximum context length") is
 * the same typed error.
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import type * as Scope from "effect/Scope"
import type { ModelList } from "../../schemas/Models.js"
import type { Service as Limiter } from "../limiter/types.js"

/**
 * What a key's requests wait for before their admission: `list` (the key's listing, as the transport sends it) run
 * once per key in `scope` (the transport's: a caller interrupted while it runs does not cut it short for the others).
 */
export const make = (
  limiter: Limiter,
  list: Effect.Effect<ModelList, unknown>,
  scope: Scope.Scope
): (key: string, model: string) => Effect.Effect<void> => {
  const listings = new Map<string, Deferred.Deferred<void>>()
  return (key, model) =>
    Effect.suspend(() => {
      const known = listings.get(key)
      if (known !== undefined) return Deferred.await(known)
      const listed = Deferred.unsafeMake<void>(FiberId.none)
      listings.set(key, listed)
      // those another process or an earlier run listed and kept if they give the model's, else a listing of this
      // process's, kept for them (whatever fails or dies here ends the wait: it is logged, and teaches nothing)
      const listing = Effect.flatMap(list, (models) => limiter.learnWindows(models, key))
      const recall = Effect.suspend(() => limiter.recallWindows?.(key, model) ?? Effect.succeed(false))
      const learn = Effect.ignoreLogged(Effect.flatMap(recall, (recalled) => recalled ? Effect.void : listing))
      return Effect.zipRight(Effect.forkIn(Deferred.complete(listed, learn), scope), Deferred.await(listed))
    })
}
