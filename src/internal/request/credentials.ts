/**
 * The API key of a transport: the header it goes out in, its fingerprint (the limiter's bucket), the redactor of
 * every key the transport has held, and its renewal when the server refuses it. A key with a source (an effect
 * that reads it: a mounted secret file, a vault) is read again on a 401, by one request at a time; a request that
 * meets a 401 after another one renewed the key only tries again.
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Inspectable from "effect/Inspectable"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import { type ApiError, Unauthorized } from "../../schemas/Errors.js"
import { fingerprint, makeRedactor } from "../redact.js"

/** A transport's key, as it is now. */
export interface Credentials {
  /** The `authorization` header's value. */
  readonly authorization: () => string
  /** The key's fingerprint, for the limiter's buckets: a renewed key has a quota of its own. */
  readonly keyId: () => string
  /** Scrubs every key held so far (a server may echo an old one), and key-shaped strings. */
  readonly redact: (text: string) => string
  /** How many times the key was renewed: what is made from a key (its headers) is made again when this changes. */
  readonly generation: () => number
  /**
   * `effect`, tried once more after a 401 when the key was renewed meanwhile or can be now; otherwise its
   * `Unauthorized`, saying what the key's source gave. A request that is sent once (`repeat` false: a streamed
   * upload) renews the key for the next ones but is not repeated. Without a source: `effect` itself.
   */
  readonly renewing: <A>(effect: Effect.Effect<A, ApiError>, repeat?: boolean) => Effect.Effect<A, ApiError>
}

/** What asking the source gave: a new key, or why not. */
type Renewal = { readonly renewed: true } | { readonly renewed: false; readonly why: string }

const renewed: Renewal = { renewed: true }

/** A failure of the key's source, as text: its message when it has one (an `Error`, a `ConfigError`). */
const messageOf = (error: unknown): string =>
  Predicate.hasProperty(error, "message") && Predicate.isString(error.message)
    ? error.message
    : Predicate.isString(error)
    ? error
    : Inspectable.format(error)

/** The credentials of a configuration: its key, renewed from `reloadApiKey` when it has one. */
/** Where the key comes from: what `ClientConfig` says of it. */
export interface KeySource {
  readonly apiKey: Redacted.Redacted<string>
  readonly reloadApiKey?: Effect.Effect<Redacted.Redacted<string>, unknown> | undefined
}

export const make = (config: KeySource): Credentials => {
  let key = config.apiKey
  let generation = 0
  let authorization = `Bearer ${Redacted.value(key)}`
  let keyId = fingerprint(key)
  const held = [key]
  let redact = makeRedactor(held)
  const source = config.reloadApiKey
  const credentials = {
    authorization: () => authorization,
    keyId: () => keyId,
    redact: (text: string) => redact(text),
    generation: () => generation
  }
  if (source === undefined) return { ...credentials, renewing: (effect) => effect }

  const replace = (next: Redacted.Redacted<string>) => {
    key = next
    generation++
    authorization = `Bearer ${Redacted.value(next)}`
    keyId = fingerprint(next)
    held.push(next)
    redact = makeRedactor(held)
  }

  /** Reads the source, unless the key changed since `seen` (another request renewed it): one reader at a time. */
  const lock = Effect.unsafeMakeSemaphore(1)
  const renew = (seen: number): Effect.Effect<Renewal> =>
    lock.withPermits(1)(Effect.suspend(() => {
      if (generation !== seen) return Effect.succeed(renewed)
      // a source that throws (a defect) says why as one that fails does
      return Effect.matchCauseEffect(source, {
        onFailure: (cause) =>
          Effect.succeed<Renewal>({
            renewed: false,
            why: `the key could not be read again: ${messageOf(Cause.squash(cause))}`
          }),
        onSuccess: (next) => {
          if (Redacted.value(next) === Redacted.value(key)) {
            return Effect.succeed<Renewal>({ renewed: false, why: "the key was read again and has not changed" })
          }
          replace(next)
          return Effect.as(Effect.logInfo("the API key was refused (401): a new one was read from its source"), renewed)
        }
      })
    }))

  const renewing = <A>(effect: Effect.Effect<A, ApiError>, repeat = true): Effect.Effect<A, ApiError> =>
    Effect.suspend(() => {
      const seen = generation
      const refusedWith = (refused: Unauthorized, why: string) =>
        Effect.fail(new Unauthorized({ ...refused, message: `${refused.message} (${redact(why)})` }))
      return Effect.catchIf(
        effect,
        (error): error is Unauthorized => error._tag === "Unauthorized",
        (refused) =>
          Effect.flatMap(renew(seen), (renewal) =>
            !renewal.renewed
              ? refusedWith(refused, renewal.why)
              : repeat
              ? effect
              : refusedWith(refused, "the key was renewed from its source; this request is sent once, so not again"))
      )
    })
  return { ...credentials, renewing }
}
