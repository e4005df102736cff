/**
 * Duration parsing shared by the rate-limit headers, the configuration and the CLI flags.
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"

const goUnits: Record<string, number> = {
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
  us: 0.001,
  "µs": 0.001,
  "μs": 0.001,
  ns: 0.000_001
}

const goDuration = /^(?:(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|μs|ns))+$/
const goPart = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|μs|ns)/g

/**
 * Parses a Go-style duration (`3s`, `6m0s`, `12ms`, `1h4m48s`, `23m16.298s`) into milliseconds.
 * Negative values and anything else give `None`.
 */
export const parseGoDurationMillis = (input: string): Option.Option<number> => {
  const text = input.trim()
  if (text === "0") return Option.some(0)
  if (!goDuration.test(text)) return Option.none()
  let total = 0
  for (const match of text.matchAll(goPart)) {
    total += Number(match[1]) * goUnits[match[2]!]!
  }
  return Number.isFinite(total) ? Option.some(total) : Option.none()
}

/**
 * Parses a bare number of seconds (`20`, `1.5`). Negative values (the `-1` sentinel) give `None`.
 */
export const parseSecondsMillis = (input: string): Option.Option<number> => {
  const text = input.trim()
  if (!/^\d+(?:\.\d+)?$/.test(text)) return Option.none()
  // digits alone are never NaN; too many of them are Infinity, which callers cap
  return Option.some(Number(text) * 1000)
}

/**
 * A reset header value: a Go duration or bare seconds.
 */
export const parseResetMillis = (input: string): Option.Option<number> =>
  Option.orElse(parseGoDurationMillis(input), () => parseSecondsMillis(input))

/**
 * A duration as users write it in flags and configuration: Go style (`30s`, `1m30s`), Effect style
 * (`30 seconds`, `500 millis`) or bare seconds (`30`).
 */
export const parseDurationInput = (input: string): Option.Option<Duration.Duration> => {
  const text = input.trim()
  const millis = parseResetMillis(text)
  if (Option.isSome(millis)) {
    return Number.isFinite(millis.value)
      ? Option.some(Duration.millis(millis.value))
      : Option.none()
  }
  // the "<n> <unit>" form that Duration.decode reads, checked first because decode throws on anything else
  if (!/^\d+(?:\.\d+)?\s+(?:nanos?|micros?|millis?|seconds?|minutes?|hours?|days?|weeks?)$/.test(text)) {
    return Option.none()
  }
  return Option.some(Duration.decode(text as Duration.DurationInput))
}
