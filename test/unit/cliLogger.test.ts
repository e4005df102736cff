/**
 * What the CLI's logger prints (src/cli/logger.ts): from the info level up, and the library's retries, which it logs
 * at the debug level for applications; every debug line with `--verbose`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as HashMap from "effect/HashMap"
import * as LogLevel from "effect/LogLevel"
import { shown } from "../../src/cli/logger.js"
import { retryAnnotation } from "../../src/internal/request/retry.js"

const plain = HashMap.empty<string, unknown>()
const retry = HashMap.make([retryAnnotation, 1])

describe("the CLI's logger", () => {
  it("shows info and above, and a retry's debug line; hides other debug lines unless verbose", () => {
    for (const logLevel of [LogLevel.Info, LogLevel.Warning, LogLevel.Error, LogLevel.Fatal]) {
      assert.isTrue(shown({ logLevel, annotations: plain }, false), logLevel.label)
    }
    assert.isTrue(shown({ logLevel: LogLevel.Debug, annotations: retry }, false))
    assert.isFalse(shown({ logLevel: LogLevel.Debug, annotations: plain }, false))
    assert.isFalse(shown({ logLevel: LogLevel.Trace, annotations: plain }, false))
    assert.isTrue(shown({ logLevel: LogLevel.Debug, annotations: plain }, true))
    assert.isTrue(shown({ logLevel: LogLevel.Trace, annotations: plain }, true))
  })
})
