import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import {
  parseDurationInput,
  parseGoDurationMillis,
  parseResetMillis,
  parseSecondsMillis
} from "../../src/internal/duration.js"
import {
  maxHeaderMillis,
  parseCount,
  parseRateLimitInfo,
  parseReset,
  parseRetryAfter,
  requestId
} from "../../src/internal/headers.js"
import { RateLimitInfo } from "../../src/schemas/RateLimit.js"

const millis = (d: Duration.Duration | undefined): number | undefined =>
  d === undefined ? undefined : Duration.toMillis(d)

const now = Date.parse("2025-01-15T12:00:00Z")

describe("duration parsing", () => {
  it.each([
    ["3s", 3_000],
    ["1s", 1_000],
    ["20s", 20_000],
    ["6m0s", 360_000],
    ["12ms", 12],
    ["1h4m48s", 3_888_000],
    ["23m16.298s", 1_396_298],
    ["0s", 0],
    ["0", 0],
    ["1.5s", 1_500],
    ["2h", 7_200_000],
    ["1m30s", 90_000],
    ["500us", 0.5],
    [" 3s ", 3_000]
  ])("Go duration %s is %d ms", (input, expected) => {
    const parsed = parseGoDurationMillis(input)
    assert.isTrue(Option.isSome(parsed))
    assert.closeTo(Option.getOrThrow(parsed), expected, 1e-6)
  })

  it.each(["-1", "-3s", "", "s", "3", "3x", "soon", "3 s", "1.2.3s", "Dynamic Shared Quota"])(
    "%j is not a Go duration",
    (input) => {
      assert.isTrue(Option.isNone(parseGoDurationMillis(input)))
    }
  )

  it.each([
    ["20", 20_000],
    ["1.5", 1_500],
    ["0", 0],
    ["60", 60_000],
    ["1.25", 1_250],
    [" 20 ", 20_000]
  ])("bare seconds %j are %d ms", (input, expected) => {
    assert.deepStrictEqual(parseSecondsMillis(input), Option.some(expected))
  })

  it.each(["-1", "-0.5", "abc", "", "1e3", "3s"])("%j is not a number of seconds", (input) => {
    assert.isTrue(Option.isNone(parseSecondsMillis(input)))
  })

  it.each([
    ["3s", 3_000],
    ["20", 20_000],
    ["1.5", 1_500],
    ["0", 0],
    ["6m0s", 360_000],
    [" 20 ", 20_000],
    [" 3s ", 3_000]
  ])("a reset value %j is %d ms (Go duration or bare seconds)", (input, expected) => {
    assert.deepStrictEqual(parseResetMillis(input), Option.some(expected))
  })

  it("the -1 sentinel is no reset", () => {
    assert.isTrue(Option.isNone(parseResetMillis("-1")))
  })

  it.each([
    ["30s", 30_000],
    ["1m30s", 90_000],
    ["30 seconds", 30_000],
    ["500 millis", 500],
    ["2 minutes", 120_000],
    ["30", 30_000],
    // every unit Duration.decode reads, singular and plural, and the spacing and decimals users type
    ["1 nano", 0.000_001],
    ["2 nanos", 0.000_002],
    ["1 micro", 0.001],
    ["2 micros", 0.002],
    ["1 milli", 1],
    ["1 second", 1_000],
    ["1 minute", 60_000],
    ["1 hour", 3_600_000],
    ["2 hours", 7_200_000],
    ["1 day", 86_400_000],
    ["2 days", 172_800_000],
    ["1 week", 604_800_000],
    ["2 weeks", 1_209_600_000],
    ["1.25 seconds", 1_250],
    ["30  seconds", 30_000],
    [" 30 seconds ", 30_000],
    ["1.25", 1_250],
    [" 20 ", 20_000]
  ])("user duration %j is %d ms", (input, expected) => {
    const parsed = parseDurationInput(input)
    assert.isTrue(Option.isSome(parsed))
    assert.strictEqual(Duration.toMillis(Option.getOrThrow(parsed)), expected)
  })

  it.each(["soon", "", "30 fortnights", "-5s", "seconds", "30 secondsx", "x30 seconds"])(
    "user duration %j is rejected",
    (input) => {
      assert.isTrue(Option.isNone(parseDurationInput(input)))
    }
  )
})

describe("parseCount", () => {
  it.each([
    ["19", 19],
    ["18740", 18740],
    ["0", 0],
    [" 600 ", 600]
  ])("%j is %d", (input, expected) => {
    assert.strictEqual(parseCount(input), expected)
  })

  it.each([["Dynamic Shared Quota"], ["-1"], ["1.5"], [""], ["12abc"], ["99999999999999999999"], ["1e3"], ["0x10"]])(
    "%j is undefined",
    (input) => {
      assert.strictEqual(parseCount(input), undefined)
    }
  )

  it("a missing header is undefined", () => {
    assert.strictEqual(parseCount(undefined), undefined)
  })
})

describe("parseRetryAfter", () => {
  it("reads seconds", () => {
    assert.strictEqual(millis(parseRetryAfter(undefined, "2", now)), 2_000)
    assert.strictEqual(millis(parseRetryAfter(undefined, "1.5", now)), 1_500)
    assert.strictEqual(millis(parseRetryAfter(undefined, "0", now)), 0)
  })

  it("reads retry-after-ms, which wins over retry-after", () => {
    assert.strictEqual(millis(parseRetryAfter("1500", undefined, now)), 1_500)
    assert.strictEqual(millis(parseRetryAfter("250", "20", now)), 250)
  })

  it("falls back to retry-after when retry-after-ms is malformed", () => {
    assert.strictEqual(millis(parseRetryAfter("soon", "20", now)), 20_000)
    for (const malformed of ["12abc", "x12", "1.5.2", "-5"]) {
      assert.strictEqual(millis(parseRetryAfter(malformed, "3", now)), 3_000, malformed)
    }
  })

  it("reads Azure's x-ms-retry-after-ms like retry-after-ms: after it, before retry-after", () => {
    const wait = (headers: Record<string, string>) => millis(parseRateLimitInfo(headers, now).retryAfter)
    assert.strictEqual(wait({ "x-ms-retry-after-ms": "750", "retry-after": "20" }), 750)
    assert.strictEqual(wait({ "retry-after-ms": "250", "x-ms-retry-after-ms": "750" }), 250)
    assert.strictEqual(wait({ "retry-after-ms": "soon", "x-ms-retry-after-ms": "750", "retry-after": "20" }), 750)
    assert.strictEqual(wait({ "x-ms-retry-after-ms": "later", "retry-after": "20" }), 20_000)
    assert.strictEqual(millis(parseRetryAfter([undefined, " 40 "], undefined, now)), 40)
  })

  it("retry-after-ms may carry decimals and spaces", () => {
    assert.strictEqual(millis(parseRetryAfter("1.25", "20", now)), 1.25)
    assert.strictEqual(millis(parseRetryAfter(" 1500 ", "20", now)), 1_500)
  })

  it("reads an HTTP date relative to now", () => {
    const date = new Date(now + 30_000).toUTCString()
    assert.strictEqual(millis(parseRetryAfter(undefined, date, now)), 30_000)
    assert.strictEqual(millis(parseRetryAfter(undefined, "Wed, 15 Jan 2025 12:01:30 GMT", now)), 90_000)
  })

  it("an HTTP date in the past is no wait", () => {
    assert.strictEqual(millis(parseRetryAfter(undefined, "Wed, 15 Jan 2025 11:00:00 GMT", now)), 0)
  })

  // only an HTTP date (with a day or month name) is read as a date: not ISO dates or numbers with units
  it.each(["-1", "soon", "", "Not a date at all", "3s", "2030-01-01", "2030-01-01T00:00:00Z"])(
    "%j is ignored",
    (input) => {
      assert.strictEqual(parseRetryAfter(undefined, input, now), undefined)
    }
  )

  it("missing headers give undefined", () => {
    assert.strictEqual(parseRetryAfter(undefined, undefined, now), undefined)
  })
})

describe("parseRateLimitInfo", () => {
  it("reads the documented headers of a proprietary model", () => {
    const info = parseRateLimitInfo({
      "x-ratelimit-limit-requests": "20",
      "x-ratelimit-limit-tokens": "18750",
      "x-ratelimit-remaining-requests": "19",
      "x-ratelimit-remaining-tokens": "18740",
      "x-ratelimit-reset-requests": "3s",
      "x-ratelimit-reset-tokens": "6m0s"
    }, now)
    assert.strictEqual(info.limitRequests, 20)
    assert.strictEqual(info.limitTokens, 18750)
    assert.strictEqual(info.remainingRequests, 19)
    assert.strictEqual(info.remainingTokens, 18740)
    assert.strictEqual(millis(info.resetRequests), 3_000)
    assert.strictEqual(millis(info.resetTokens), 360_000)
    assert.strictEqual(info.retryAfter, undefined)
    assert.strictEqual(info.observedAt, now)
    assert.isTrue(info.hasLimitHeaders)
    // the later of the two resets
    assert.deepStrictEqual(Option.map(info.serverWait, Duration.toMillis), Option.some(360_000))
  })

  it("reads every reset format", () => {
    const cases: ReadonlyArray<readonly [string, number | undefined]> = [
      ["1s", 1_000],
      ["6m0s", 360_000],
      ["12ms", 12],
      ["20s", 20_000],
      ["1h4m48s", 3_888_000],
      ["23m16.298s", 1_396_298],
      ["20", 20_000],
      ["1.5", 1_500],
      ["0", 0],
      ["-1", undefined],
      ["garbage", undefined]
    ]
    for (const [value, expected] of cases) {
      const info = parseRateLimitInfo({ "x-ratelimit-reset-tokens": value }, now)
      const got = millis(info.resetTokens)
      if (expected === undefined) assert.strictEqual(got, undefined, value)
      else assert.closeTo(got!, expected, 1e-6, value)
    }
  })

  it("\"Dynamic Shared Quota\" as a limit is left out", () => {
    const info = parseRateLimitInfo({
      "x-ratelimit-limit-requests": "Dynamic Shared Quota",
      "x-ratelimit-limit-tokens": "Dynamic Shared Quota"
    }, now)
    assert.strictEqual(info.limitRequests, undefined)
    assert.strictEqual(info.limitTokens, undefined)
    assert.isFalse(info.hasLimitHeaders)
  })

  it("no headers give an empty record (open-source models)", () => {
    const info = parseRateLimitInfo({}, now)
    assert.deepStrictEqual(info, RateLimitInfo.empty(now))
    assert.isFalse(info.hasLimitHeaders)
    assert.isTrue(Option.isNone(info.serverWait))
  })

  it("serverWait is the latest of retry-after and the resets", () => {
    const info = parseRateLimitInfo({
      "retry-after": "10",
      "x-ratelimit-reset-requests": "3s",
      "x-ratelimit-reset-tokens": "5s"
    }, now)
    assert.deepStrictEqual(Option.map(info.serverWait, Duration.toMillis), Option.some(10_000))
    const info2 = parseRateLimitInfo({ "retry-after-ms": "1200", "x-ratelimit-reset-requests": "3s" }, now)
    assert.strictEqual(millis(info2.retryAfter), 1_200)
    assert.deepStrictEqual(Option.map(info2.serverWait, Duration.toMillis), Option.some(3_000))
  })

  it("serverWait after a 429 waits for the budget that ran out, told by remaining-*; the latest when none says", () => {
    const wait = (headers: Record<string, string>) =>
      Option.getOrUndefined(Option.map(parseRateLimitInfo(headers, now).serverWait, Duration.toMillis))
    const resets = { "x-ratelimit-reset-requests": "3s", "x-ratelimit-reset-tokens": "1m0s" }
    // only the request budget ran out: its reset, not the token window's minute
    assert.strictEqual(
      wait({ ...resets, "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "900" }),
      3_000
    )
    // only the token budget ran out
    assert.strictEqual(
      wait({ ...resets, "x-ratelimit-remaining-requests": "5", "x-ratelimit-remaining-tokens": "0" }),
      60_000
    )
    // both ran out: the later
    assert.strictEqual(
      wait({ ...resets, "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "0" }),
      60_000
    )
    // retry-after still counts beside the exhausted budget's reset
    assert.strictEqual(wait({ ...resets, "x-ratelimit-remaining-requests": "0", "retry-after": "7" }), 7_000)
    // nothing says which ran out (no remaining-*, or both with room): the latest of all
    assert.strictEqual(wait(resets), 60_000)
    assert.strictEqual(
      wait({ ...resets, "x-ratelimit-remaining-requests": "1", "x-ratelimit-remaining-tokens": "9" }),
      60_000
    )
    // an exhausted budget without its reset header: the others still bound the wait
    assert.strictEqual(wait({ "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-tokens": "9s" }), 9_000)
  })

  it("parseReset leaves a missing header undefined", () => {
    assert.strictEqual(parseReset(undefined), undefined)
    assert.strictEqual(millis(parseReset("3s")), 3_000)
  })

  it("requestId reads x-request-id first, then the other usual headers", () => {
    assert.strictEqual(requestId({ "x-request-id": "req-1", "request-id": "req-2" }), "req-1")
    assert.strictEqual(requestId({ "request-id": "req-2" }), "req-2")
    assert.strictEqual(requestId({ "apim-request-id": "req-3" }), "req-3")
    assert.strictEqual(requestId({ "x-request-id": "" }), undefined)
    assert.strictEqual(requestId({}), undefined)
  })
})

describe("header parsing properties", () => {
  const headerNames = [
    "x-ratelimit-limit-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "retry-after",
    "retry-after-ms",
    "x-ms-retry-after-ms"
  ] as const

  it("arbitrary header values never throw and give a RateLimitInfo of sane values", () => {
    const value = FastCheck.oneof(
      FastCheck.string(),
      FastCheck.string({ unit: FastCheck.constantFrom(..."0123456789.-hms µ") }),
      FastCheck.date({ noInvalidDate: true }).map((d) => d.toUTCString())
    )
    FastCheck.assert(
      FastCheck.property(
        FastCheck.record(Object.fromEntries(headerNames.map((name) => [name, value])), { requiredKeys: [] }),
        FastCheck.integer({ min: 0, max: 4_102_444_800_000 }),
        (headers, at) => {
          const info = parseRateLimitInfo(headers as Record<string, string>, at)
          assert.instanceOf(info, RateLimitInfo)
          for (const count of [info.limitRequests, info.limitTokens, info.remainingRequests, info.remainingTokens]) {
            if (count !== undefined) assert.isTrue(Number.isSafeInteger(count) && count >= 0)
          }
          for (const d of [info.resetRequests, info.resetTokens, info.retryAfter]) {
            if (d !== undefined) {
              const ms = Duration.toMillis(d)
              assert.isTrue(ms >= 0, `negative wait ${ms}`)
            }
          }
        }
      )
    )
  })

  it("generated Go durations round-trip to their milliseconds", () => {
    const component = FastCheck.option(FastCheck.integer({ min: 0, max: 10_000 }), { nil: undefined })
    const fraction = FastCheck.option(FastCheck.integer({ min: 0, max: 999 }), { nil: undefined })
    FastCheck.assert(
      FastCheck.property(
        component,
        component,
        component,
        fraction,
        component,
        (h, m, s, sFraction, ms) => {
          if (h === undefined && m === undefined && s === undefined && ms === undefined) return
          let text = ""
          let expected = 0
          if (h !== undefined) {
            text += `${h}h`
            expected += h * 3_600_000
          }
          if (m !== undefined) {
            text += `${m}m`
            expected += m * 60_000
          }
          if (s !== undefined) {
            const frac = sFraction === undefined ? "" : `.${String(sFraction).padStart(3, "0")}`
            text += `${s}${frac}s`
            expected += s * 1_000 + (sFraction ?? 0)
          }
          if (ms !== undefined) {
            text += `${ms}ms`
            expected += ms
          }
          const parsed = parseGoDurationMillis(text)
          assert.isTrue(Option.isSome(parsed), text)
          assert.closeTo(Option.getOrThrow(parsed), expected, 1e-6, text)
          // and the same value read as a reset header, where more than a day is read as a day
          const info = parseRateLimitInfo({ "x-ratelimit-reset-requests": text }, 0)
          assert.closeTo(Duration.toMillis(info.resetRequests!), Math.min(expected, maxHeaderMillis), 1e-6, text)
        }
      )
    )
  })

  it("arbitrary non-negative integers parse exactly as counts", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.maxSafeNat(), (n) => {
        assert.strictEqual(parseCount(String(n)), n)
        const info = parseRateLimitInfo({ "x-ratelimit-remaining-tokens": String(n) }, 0)
        assert.strictEqual(info.remainingTokens, n)
      })
    )
  })

  it("negative integers are never counts", () => {
    FastCheck.assert(
      FastCheck.property(FastCheck.integer({ min: -1_000_000, max: -1 }), (n) => {
        assert.strictEqual(parseCount(String(n)), undefined)
        assert.isTrue(Option.isNone(parseResetMillis(String(n))))
      })
    )
  })
})
