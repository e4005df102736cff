/**
 * Scrubs secrets from text that may reach a log, an error or a span (server messages echo what they get).
 * @internal
 */
import * as Redacted from "effect/Redacted"

// a token ends at whitespace, a quote or a separator; an escape pair (`\/`) is part of it, but never `\"`, so
// that redacting the text of a JSON body leaves valid JSON
const bearer = /(bearer\s+)(?:[^\s"',;\\]|\\[^\s"])+/gi
const keyShaped = /\bgen-[A-Za-z0-9]{48}\b/g

const unicodeEscape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

/**
 * A secret as it appears in a server's JSON echo: as is, JSON-escaped (a quote or a backslash in a password),
 * with every character outside printable ASCII as `\uXXXX` (Python's default), and with `<`, `>`, `&` so
 * (Go's), the escapes' hex digits in either case. Redacting only the raw form would let the parsed error message
 * show the secret.
 */
const formsOf = (value: string): ReadonlyArray<string> => {
  const json = JSON.stringify(value).slice(1, -1)
  const escaped = [json.replace(/[^\x20-\x7e]/g, unicodeEscape), json.replace(/[<>&\u2028\u2029]/g, unicodeEscape)]
  // and with upper-case hex digits (Java's Jackson, .NET)
  return [value, json, ...escaped, ...escaped.map(upperHex)]
}

/** `\u00e9` as `\u00E9`. */
const upperHex = (text: string) => text.replace(/\\u([0-9a-f]{4})/g, (_, hex: string) => `\\u${hex.toUpperCase()}`)

/** Replaces the given secrets, any bearer token and any key-shaped string with `<redacted>`. */
export const makeRedactor = (
  secrets: ReadonlyArray<Redacted.Redacted<string> | undefined>
): (text: string) => string => {
  const values = [
    ...new Set(
      secrets
        .filter((s): s is Redacted.Redacted<string> => s !== undefined)
        .map((s) => Redacted.value(s))
        .filter((v) => v.length >= 4)
        .flatMap(formsOf)
    )
  ].sort((a, b) => b.length - a.length)
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
