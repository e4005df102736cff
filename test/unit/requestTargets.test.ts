/**
 * Where a request goes and what it is named, decided before the transport: the bases `ClientConfig.make` derives
 * from the base URL (which hosts get the key), the gateway's URL (which host gets the password), the gateway's path and query joining (`Gateway.request`,
 * `withQuery`), and the file name an upload is sent under (`Upload.filenameOf`). Direct tests of the small functions
 * the services' suites reach only through whole requests.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as Tracer from "effect/Tracer"
import * as ClientConfig from "../../src/layers/ClientConfig.js"
import * as GatewayConfig from "../../src/layers/GatewayConfig.js"
import * as Testing from "../../src/layers/Testing.js"
import * as Upload from "../../src/schemas/Upload.js"
import * as Gateway from "../../src/services/gateway/Gateway.js"
import { recording } from "../helpers/spans.js"

describe("ClientConfig.make: the bases and the defaults", () => {
  it("every default, as the README's configuration table gives it", () => {
    const config = ClientConfig.make({ apiKey: "k" })
    assert.deepStrictEqual(
      {
        ...config,
        apiKey: undefined,
        timeout: Duration.toMillis(config.timeout),
        connectTimeout: Duration.toMillis(config.connectTimeout),
        firstByteTimeout: Duration.toMillis(config.firstByteTimeout),
        queueTimeout: Duration.toMillis(config.queueTimeout),
        streamIdleTimeout: Duration.toMillis(config.streamIdleTimeout)
      },
      {
        apiKey: undefined,
        baseUrl: "https://llm-server.llmhub.t-systems.net/v2",
        v1Url: "https://llm-server.llmhub.t-systems.net/v1",
        queueUrl: "https://llm-server.llmhub.t-systems.net/queue",
        apiVersion: "1.1.0",
        tier: "auto",
        maxRetries: 6,
        timeout: 600_000,
        connectTimeout: 10_000,
        firstByteTimeout: 600_000,
        queueTimeout: 1_800_000,
        streamIdleTimeout: 120_000
      }
    )
  })

  it("each option given wins over its default, zero retries included", () => {
    const config = ClientConfig.make({
      apiKey: "k",
      apiVersion: "1.0.0",
      tier: "basic",
      maxRetries: 0,
      connectTimeout: "1 second",
      firstByteTimeout: "2 seconds",
      queueTimeout: "3 seconds"
    })
    assert.strictEqual(config.apiVersion, "1.0.0")
    assert.strictEqual(config.tier, "basic")
    assert.strictEqual(config.maxRetries, 0)
    assert.deepStrictEqual(
      [config.connectTimeout, config.firstByteTimeout, config.queueTimeout].map(Duration.toMillis),
      [1_000, 2_000, 3_000]
    )
  })

  it("bases given explicitly are kept, without their trailing slashes, whatever the base URL's origin", () => {
    const config = ClientConfig.make({
      apiKey: "k",
      baseUrl: "http://one.test/v2",
      v1Url: "http://two.test/stores/v1//",
      queueUrl: "http://three.test/q/"
    })
    assert.strictEqual(config.v1Url, "http://two.test/stores/v1")
    assert.strictEqual(config.queueUrl, "http://three.test/q")
  })

  it("a base that is no URL keeps its text as the origin (trailing slashes dropped), so nothing is sent elsewhere", () => {
    const config = ClientConfig.make({ apiKey: "k", baseUrl: "relative/v2/" })
    assert.strictEqual(config.baseUrl, "relative/v2")
    assert.strictEqual(config.v1Url, "relative/v2/v1")
    assert.strictEqual(config.queueUrl, "relative/v2/queue")
  })
})

describe("ClientConfig.httpUrl", () => {
  const provider = (env: Record<string, string>) => ConfigProvider.fromMap(new Map(Object.entries(env)))
  const read = (text: string) =>
    ClientConfig.httpUrl("X").pipe(
      Effect.withConfigProvider(provider({ X: text })),
      Effect.either,
      Effect.runSync
    )

  it("an http or https URL is read trimmed; anything else says what it expected and what it got", () => {
    assert.deepStrictEqual(read("  http://a.test/v2 "), Either.right("http://a.test/v2"))
    assert.strictEqual(read("https://a.test")._tag, "Right")
    for (const bad of ["ftp://a.test", "a.test/v2", "mailto:x@a.test"]) {
      const result = read(bad)
      assert.strictEqual(result._tag, "Left", bad)
      assert.strictEqual(
        String(result._tag === "Left" ? result.left : ""),
        `(Invalid data at X: "Expected an http(s) URL such as ${ClientConfig.defaultBaseUrl}, got "${bad}"")`
      )
    }
  })

  it("blank is missing, not invalid: a default applies", () => {
    const result = read("   ")
    assert.strictEqual(result._tag, "Left")
    assert.strictEqual(String(result._tag === "Left" ? result.left : ""), `(Missing data at X: "X is empty")`)
    const defaulted = ClientConfig.httpUrl("X").pipe(Config.withDefault("http://default.test"))
    assert.strictEqual(
      Effect.runSync(Effect.withConfigProvider(defaulted, provider({ X: " " }))),
      "http://default.test"
    )
  })
})

describe("the configuration's errors: the variable and what was wrong, exactly", () => {
  const provider = (env: Record<string, string>) => ConfigProvider.fromMap(new Map(Object.entries(env)))
  const errorOf = <A>(config: Config.Config<A>, env: Record<string, string>) =>
    String(Effect.runSync(Effect.flip(Effect.withConfigProvider(config, provider(env)))))

  it("a duration, a duration above zero, a missing key", () => {
    assert.strictEqual(
      errorOf(ClientConfig.duration("X"), { X: "soon" }),
      `(Invalid data at X: "Expected a duration such as 30s, 1m30s or 30 seconds, got "soon"")`
    )
    assert.strictEqual(
      errorOf(ClientConfig.positiveDuration("X"), { X: "0s" }),
      `(Invalid data at X: "Expected a duration above zero such as 30s, 1m30s or 30 seconds, got "0s"")`
    )
    assert.match(errorOf(ClientConfig.fromEnv, {}), /^\(Missing data at AIFS_API_KEY: "AIFS_API_KEY is not set: /)
  })

  it("retries from 0 to 100, for the client and the gateway", () => {
    const gateway = { AIFS_GATEWAY_USERNAME: "u", AIFS_GATEWAY_PASSWORD: "p" }
    const read = (env: Record<string, string>) =>
      Effect.runSync(Effect.either(Effect.withConfigProvider(
        Effect.zip(ClientConfig.fromEnv, GatewayConfig.fromEnv),
        provider({ AIFS_API_KEY: "k", ...gateway, ...env })
      )))
    for (const n of [0, 100]) {
      const both = read({ AIFS_MAX_RETRIES: String(n), AIFS_GATEWAY_MAX_RETRIES: String(n) })
      assert.deepStrictEqual(both._tag === "Right" && [both.right[0].maxRetries, both.right[1].maxRetries], [n, n])
    }
    for (const n of [-1, 101]) {
      for (const name of ["AIFS_MAX_RETRIES", "AIFS_GATEWAY_MAX_RETRIES"]) {
        const refused = read({ [name]: String(n) })
        assert.strictEqual(
          String(refused._tag === "Left" && refused.left),
          `(Invalid data at ${name}: "Expected a number of retries from 0 to 100")`
        )
      }
    }
  })
})

describe("Gateway.request: the path and the query", () => {
  const sent = (service: string, route: string, query?: Gateway.Query) =>
    Effect.gen(function*() {
      const urls: Array<URL> = []
      const handler: Testing.Handler = (request) => {
        if (request.path === "/api/v1/auth/user") return { body: { access_token: "t" } }
        urls.push(request.url)
        return { body: {} }
      }
      yield* Gateway.request(service, "GET", route, { query, response: Schema.Unknown }).pipe(
        Effect.provide(Testing.layerGatewayHttp(handler))
      )
      return urls[0]!
    })

  it.effect("the service's slashes are trimmed, a route without its leading slash gets one, no service: the route", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* sent("user-manager", "/api/v1/me")).pathname, "/user-manager/api/v1/me")
      assert.strictEqual((yield* sent("//custom//", "api/v1/me")).pathname, "/custom/api/v1/me")
      assert.strictEqual((yield* sent("/nested/path/", "/me")).pathname, "/nested/path/me")
      assert.strictEqual((yield* sent("", "/api/v1/me")).pathname, "/api/v1/me")
      assert.strictEqual((yield* sent("//", "api/v1/me")).pathname, "/api/v1/me")
    }))

  it.effect("the query: numbers and booleans as text, a list repeats its name, undefined is left out, none: no '?'", () =>
    Effect.gen(function*() {
      const url = yield* sent("s", "/r", { limit: 0, flag: false, ids: ["a", "b c"], skip: undefined, empty: "" })
      assert.strictEqual(url.search, "?limit=0&flag=false&ids=a&ids=b+c&empty=")
      assert.strictEqual((yield* sent("s", "/r")).search, "")
      assert.strictEqual((yield* sent("s", "/r", { ids: [] })).search, "")
    }))

  it.effect("no body: nothing is sent but the request; retry: false sends once; the span names the call and the service", () =>
    Effect.gen(function*() {
      const seen: Array<Testing.ScriptedRequest> = []
      const handler: Testing.Handler = (request) => {
        if (request.path === "/api/v1/auth/user") return { body: { access_token: "t" } }
        seen.push(request)
        return { status: 503, body: { detail: "busy" } }
      }
      const spans: Array<Tracer.Span> = []
      const tracer = yield* recording(spans)
      const failed = yield* Gateway.request("user-manager", "DELETE", "/api/v1/x", {
        retry: false,
        response: Schema.Unknown
      }).pipe(Effect.provide(Testing.layerGatewayHttp(handler)), Effect.withTracer(tracer), Effect.flip)
      assert.strictEqual(failed._tag, "ServerError")
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(seen[0]!.body, undefined)
      assert.isUndefined(seen[0]!.headers["content-type"])
      const span = spans.find((span) => span.name === "Gateway.request")
      assert.strictEqual(span?.attributes.get("aifs.gateway.service"), "user-manager")
    }))

  it("withQuery adds to a request's own parameters", () => {
    const request = Gateway.withQuery(HttpClientRequest.get("/r?kb=local"), { fileIds: ["x"], n: 2 })
    assert.strictEqual(request.url, "/r?kb=local")
    assert.deepStrictEqual(request.urlParams, [["fileIds", "x"], ["n", "2"]])
    assert.strictEqual(Gateway.withQuery(request, undefined), request)
  })
})

describe("Upload.filenameOf", () => {
  it("a path's last segment, either separator; its own name first; a path ending in a separator: 'file'", () => {
    assert.strictEqual(Upload.filenameOf(Upload.fromPath("/data/in/train.jsonl")), "train.jsonl")
    assert.strictEqual(Upload.filenameOf(Upload.fromPath("C:\\data\\train.jsonl")), "train.jsonl")
    assert.strictEqual(Upload.filenameOf(Upload.fromPath("train.jsonl")), "train.jsonl")
    assert.strictEqual(Upload.filenameOf(Upload.fromPath("/data/x.bin", { filename: "named.jsonl" })), "named.jsonl")
    assert.strictEqual(Upload.filenameOf(Upload.fromPath("/data/in/")), "file")
    assert.strictEqual(Upload.filenameOf(Upload.fromPath("")), "file")
  })

  it("bytes, a blob and a stream are sent under the name they were given", () => {
    assert.strictEqual(Upload.filenameOf(Upload.fromBytes("x", "a/b.txt")), "a/b.txt")
    assert.strictEqual(Upload.filenameOf(Upload.fromBlob(new Blob(["x"]), "b.txt")), "b.txt")
    assert.strictEqual(Upload.filenameOf(Upload.fromStream(Stream.empty, "c.txt")), "c.txt")
  })

  it("the constructors keep what they are given: text as UTF-8 bytes, a path's options", () => {
    const bytes = Upload.fromBytes("é", "a.txt", "text/plain")
    assert.deepStrictEqual(bytes, {
      _tag: "Bytes",
      bytes: new Uint8Array([0xc3, 0xa9]),
      filename: "a.txt",
      contentType: "text/plain"
    })
    const raw = new Uint8Array([1, 2])
    assert.strictEqual((Upload.fromBytes(raw, "b") as Upload.FromBytes).bytes, raw)
    assert.deepStrictEqual(Upload.fromPath("/p", { filename: "n", contentType: "t" }), {
      _tag: "Path",
      path: "/p",
      filename: "n",
      contentType: "t"
    })
    const stream = Upload.fromStream(Stream.empty, "s", { size: 3, contentType: "t" }) as Upload.FromStream
    assert.deepStrictEqual([stream._tag, stream.size, stream.contentType], ["Stream", 3, "t"])
  })
})

describe("GatewayConfig: where the password goes", () => {
  it("every default; the URL without its trailing slashes, the pipeline's path without slashes at either end", () => {
    const config = GatewayConfig.make({ username: "u", password: "p" })
    assert.deepStrictEqual(
      [config.url, config.queryPipelinePath, config.maxRetries],
      ["https://api-gateway.ai.t-systems.net", "query-pipeline", 4]
    )
    assert.deepStrictEqual(
      [config.refreshAhead, config.timeout, config.connectTimeout].map(Duration.toMillis),
      [60_000, 120_000, 10_000]
    )
    const own = GatewayConfig.make({
      username: "u",
      password: Redacted.make("p"),
      url: "http://gw.test/base//",
      queryPipelinePath: "//pipelines/mine/",
      refreshAhead: 0,
      maxRetries: 0,
      timeout: "1 second",
      connectTimeout: "2 seconds"
    })
    assert.deepStrictEqual(
      [own.url, own.queryPipelinePath, own.maxRetries],
      ["http://gw.test/base", "pipelines/mine", 0]
    )
    assert.deepStrictEqual([own.refreshAhead, own.timeout, own.connectTimeout].map(Duration.toMillis), [
      0,
      1_000,
      2_000
    ])
    assert.strictEqual(Redacted.value(GatewayConfig.make({ username: "u", password: "plain" }).password), "plain")
    // every slash at either end goes, none between
    for (const [given, kept] of [["pipelines/mine//", "pipelines/mine"], ["///a/b/c", "a/b/c"]]) {
      assert.strictEqual(
        GatewayConfig.make({ username: "u", password: "p", queryPipelinePath: given }).queryPipelinePath,
        kept
      )
    }
  })

  it.effect("AIFS_GATEWAY_URL must be an http(s) URL; blank is the default gateway", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        GatewayConfig.fromEnv.pipe(
          Effect.withConfigProvider(ConfigProvider.fromMap(
            new Map(Object.entries({ AIFS_GATEWAY_USERNAME: "u", AIFS_GATEWAY_PASSWORD: "p", ...env }))
          ))
        )
      const error = yield* Effect.flip(read({ AIFS_GATEWAY_URL: "gateway.example/api" }))
      assert.include(String(error), "AIFS_GATEWAY_URL")
      assert.include(String(error), `got "gateway.example/api"`)
      assert.strictEqual((yield* read({ AIFS_GATEWAY_URL: " " })).url, GatewayConfig.defaultUrl)
      assert.strictEqual((yield* read({ AIFS_GATEWAY_URL: "http://gw.test/x" })).url, "http://gw.test/x")
    }))
})
