/**
 * Scrubs secrets from text that may reach a log, an error or a span (server messages echo what they get).
 * @internal
 */
import * as Redacted from "effect/Redacted"

const bearer = /(bearer\s+)[^\s"',;]+/gi
const keyShaped = /\bgen-[A-Za-z0-9]{48}\b/g

/** Replaces the given secrets, any bearer token and any key-shaped string with `<redacted>`. */
export const makeRedactor = (
  secrets: ReadonlyArray<Redacted.Redacted<string> | undefined>
): (text: string) => string => {
  const values = secrets
    .filter((s): s is Redacted.Redacted<string> => s !== undefined)
    .map((s) => Redacted.value(s))
    .filter((v) => v.length >= 4)
  return (text) => {
    let out = text
    for (const value of values) out = out.split(value).join("<redacted>")
    return out.replace(bearer, "$1<redacted>").replace(keyShaped, "<redacted>")
  }
}

/** A short, stable, non-reversible name for a key, for limiter buckets and snapshots (FNV-1a, 32 bits). */
export const fingerprint = (secret: Redacted.Redacted<string>): string => {
  const text = Redacted.value(secret)
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return `key#${(h >>> 0).toString(16).padStart(8, "0")}`
}
