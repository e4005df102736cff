/**
 * The emulator's catalogue follows the plans' data (issue 34, "the 2026 catalogue"): a key of a current plan lists its
 * plan's models under the ids the API uses (undated, no price-band rows), each with its kind and the context window of
 * the plan's table; a model outside the key's plan answers 404 with the docs' "model not found" body on every model
 * route; ids are case-sensitive; a key of a custom tier sees every model. Raw HTTP on loopback: the bodies as sent.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Emulator from "../../src/emulator/Emulator.js"
import * as Plans from "../../src/internal/plans.js"
import { chat, post, type Reply, transcribe } from "../helpers/emulatorWire.js"
import { send } from "../helpers/rawHttp.js"

const keyOf = (tier: string) => `gen-${`catalogue${tier}`.padEnd(48, "0")}`

const tiers = ["basic", "standard1000", "essential", "professional", "test", "custom"] as const

const emulator = Emulator.layer({
  tiers: { custom: { rpm: 1_000 } },
  keys: tiers.map((tier) => ({ key: keyOf(tier), tier }))
})

/** One model of a `GET /models` answer, as the wire has it. */
interface Listed {
  readonly id: string
  readonly meta_data: {
    readonly model_type: string
    readonly source_type: string
    readonly max_sequence_length: number
    readonly hidden_size: number
    readonly is_externally_hosted: boolean
  }
}

/** `GET <path>` with the key of `tier`, its body as text and parsed. */
const get = (path: string, tier: string) =>
  Effect.flatMap(Emulator.Emulator, (emulator) =>
    Effect.map(
      send(emulator.url, { method: "GET", path, headers: { authorization: `Bearer ${keyOf(tier)}` } }),
      (reply) => ({ ...reply, json: JSON.parse(reply.text) as unknown })
    ))

const listOf = (tier: string, path = "/v2/models") =>
  Effect.map(get(path, tier), (reply) => (reply.json as { readonly data: ReadonlyArray<Listed> }).data)

/** The docs' "model not found": 404 with the service's `{"detail": ...}`, the same for an unknown model. */
const assertNotFound = (reply: { readonly status: number; readonly text: string }, id: string) => {
  assert.strictEqual(reply.status, 404, `${id}: ${reply.text}`)
  assert.strictEqual(reply.text, JSON.stringify({ detail: `Model '${id}' not found` }))
}

/** Essential's 42 rows as the API names them: dated snapshots undated, the four price-band rows left out. */
const essential = [
  "jina-embeddings-v2-base-de",
  "text-embedding-bge-m3",
  "whisper-large-v3",
  "whisper-large-v3-turbo",
  "Llama-3.3-70B-Instruct",
  "Mistral-Small-3",
  "Qwen3-VL-30B-A3B-Instruct-FP8",
  "Qwen3-Coder-30B-A3B-Instruct-FP8",
  "Qwen3-Next-80B-A3B-Instruct",
  "gpt-oss-120b",
  "gpt-4o",
  "gpt-4o-mini",
  "gpt-4.1",
  "gpt-4.1-mini",
  "gpt-4.1-nano",
  "gpt-image-1",
  "o1",
  "o1-mini",
  "o3",
  "o3-mini",
  "o4-mini",
  "gpt-5",
  "gpt-5.2",
  "gpt-5-mini",
  "gpt-5-nano",
  "gpt-5-codex",
  "text-embedding-ada-002",
  "mistral-medium-3",
  "claude-3-7-sonnet",
  "claude-sonnet-4",
  "claude-sonnet-4.5",
  "claude-sonnet-4.6",
  "claude-haiku-4.5",
  "gemini-2.5-pro",
  "gemini-2.5-flash",
  "gemini-2.5-flash-image",
  "gemini-3-flash",
  "gemini-3-pro"
]

describe("the 2026 catalogue", () => {
  it.effect("a current plan's key lists its plan's models, with their kinds and the table's context windows", () =>
    Effect.gen(function*() {
      const listed = yield* listOf("essential")
      assert.deepStrictEqual(listed.map((m) => m.id), essential)
      const byId = new Map(listed.map((m) => [m.id, m.meta_data]))
      for (const model of listed) {
        // the context window is the plan table's, for every model
        assert.strictEqual(model.meta_data.max_sequence_length, Plans.contextOf("essential", model.id), model.id)
        assert.notMatch(model.id, /^\s|\s$|-long-context$|-\d{4}-\d{2}-\d{2}$|-(text|image)-input$/)
      }
      const context = (id: string) => byId.get(id)?.max_sequence_length
      assert.deepStrictEqual(
        ["gpt-5", "claude-sonnet-4.6", "claude-haiku-4.5", "gemini-3-pro", "gemini-3-flash", "Mistral-Small-3"].map(
          context
        ),
        [400_000, 200_000, 200_000, 200_000, 1_000_000, 32_000]
      )
      assert.deepStrictEqual(["gpt-4.1", "Qwen3-Next-80B-A3B-Instruct", "whisper-large-v3"].map(context), [
        1_000_000,
        128_000,
        448
      ])
      const kind = (id: string) => byId.get(id)?.model_type
      assert.deepStrictEqual(
        ["gpt-5", "Qwen3-Coder-30B-A3B-Instruct-FP8", "text-embedding-bge-m3", "whisper-large-v3", "gpt-image-1"].map(
          kind
        ),
        ["LLM", "LLM", "EMBEDDING", "STT", "IMAGE"]
      )
      assert.deepStrictEqual(
        ["jina-embeddings-v2-base-de", "text-embedding-bge-m3", "text-embedding-ada-002"].map((id) =>
          byId.get(id)?.hidden_size
        ),
        [768, 1024, 1536]
      )
      // third-party clouds (Azure, Google) host the proprietary models; T-Cloud the open-source ones
      const source = (id: string) => byId.get(id)?.source_type
      for (const id of ["gpt-5", "claude-sonnet-4.6", "gemini-3-pro", "mistral-medium-3", "text-embedding-ada-002"]) {
        assert.strictEqual(source(id), "PROPRIETARY", id)
        assert.isTrue(byId.get(id)?.is_externally_hosted, id)
      }
      for (const id of ["gpt-oss-120b", "Llama-3.3-70B-Instruct", "Mistral-Small-3", "Qwen3-Next-80B-A3B-Instruct"]) {
        assert.strictEqual(source(id), "OPEN SOURCE", id)
      }
      // the premium models are on professional and agentic only; the test plan has gemma alone
      assert.includeMembers((yield* listOf("professional")).map((m) => m.id), ["claude-opus-4.5", "claude-opus-4.6"])
      assert.deepStrictEqual((yield* listOf("test")).map((m) => m.id), ["gemma-4-31B"])
      assert.deepStrictEqual((yield* listOf("test", "/queue/models")).map((m) => m.id), ["gemma-4-31B"])
    }).pipe(Effect.provide(emulator)))

  it.effect("a legacy plan's key lists its own models, with no context window the table does not give (0)", () =>
    Effect.gen(function*() {
      const basic = yield* listOf("basic")
      assert.strictEqual(basic.length, 15)
      assert.isTrue(basic.every((m) => m.meta_data.source_type === "OPEN SOURCE"), "basic: open-source models only")
      const teuken = basic.find((m) => m.id === "Teuken-7B-Instruct-v04")
      assert.strictEqual(teuken?.meta_data.max_sequence_length, 0)
      // a model current plans have too keeps the window they give
      assert.strictEqual(basic.find((m) => m.id === "Llama-3.3-70B-Instruct")?.meta_data.max_sequence_length, 128_000)
      const audio = yield* get("/v2/audio/models", "test")
      assert.deepStrictEqual((audio.json as { readonly data: ReadonlyArray<unknown> }).data, [])
    }).pipe(Effect.provide(emulator)))

  it.effect("Gemini's Dynamic Shared Quota: the gemini-3 models answer, with no limit of the key's to report", () =>
    Effect.gen(function*() {
      for (const model of ["gemini-3-pro", "gemini-3-flash"]) {
        const reply = yield* chat(keyOf("essential"), model, "Hi")
        assert.strictEqual(reply.status, 200, model)
        assert.isUndefined(reply.headers["x-ratelimit-limit-requests"], model)
      }
      // a proprietary model with numbers in the table sends its headers
      const claude = yield* chat(keyOf("essential"), "claude-sonnet-4.6", "Hi")
      assert.strictEqual(claude.headers["x-ratelimit-limit-requests"], "1200")
    }).pipe(Effect.provide(emulator)))

  it.effect("a model outside the key's plan is not found (404, the docs' body) on every model route", () =>
    Effect.gen(function*() {
      const routes = (tier: string): ReadonlyArray<[string, Effect.Effect<Reply, Error, Emulator.Emulator>]> => [
        ["gpt-4o", chat(keyOf(tier), "gpt-4o", "Hi")],
        [
          "gpt-4o",
          post("/queue/chat/completions", keyOf(tier), { model: "gpt-4o", messages: [{ role: "user", content: "Hi" }] })
        ],
        ["gpt-4.1", post("/v2/responses", keyOf(tier), { model: "gpt-4.1", input: "Hi" })],
        ["Mistral-Small-3", post("/v2/completions", keyOf(tier), { model: "Mistral-Small-3", prompt: "Hi" })],
        [
          "text-embedding-ada-002",
          post("/v2/embeddings", keyOf(tier), { model: "text-embedding-ada-002", input: "Hi" })
        ],
        ["gpt-image-1", post("/v2/images/generations", keyOf(tier), { model: "gpt-image-1", prompt: "a cat" })],
        ["gpt-4o", post("/v2/fine_tuning/jobs", keyOf(tier), { model: "gpt-4o", training_file: "file-none" })]
      ]
      // basic holds only the operator's open-source models
      for (const [model, route] of routes("basic")) assertNotFound(yield* route, model)
      assertNotFound(yield* transcribe(keyOf("test"), "whisper-large-v3"), "whisper-large-v3")
      assertNotFound(yield* get("/v2/models/gpt-4o", "basic"), "gpt-4o")
      assertNotFound(yield* get("/queue/models/claude-opus-4.6", "essential"), "claude-opus-4.6")
      assert.notInclude((yield* listOf("basic")).map((m) => m.id), "gpt-4o")
      // the premium models: not on essential, on professional
      assertNotFound(yield* chat(keyOf("essential"), "claude-opus-4.6", "Hi"), "claude-opus-4.6")
      assert.strictEqual((yield* chat(keyOf("professional"), "claude-opus-4.6", "Hi")).status, 200)
      assert.strictEqual((yield* get("/v2/models/claude-opus-4.6", "professional")).status, 200)
      // a legacy model a current plan dropped, a snapshot's dated id and a price band are no models of essential
      for (const model of ["Mistral-Small-24B-Instruct-2501", "gpt-4o-2024-11-20", "claude-sonnet-4.5-long-context"]) {
        assertNotFound(yield* chat(keyOf("essential"), model, "Hi"), model)
      }
      // the same words as for a model that does not exist
      assertNotFound(yield* chat(keyOf("essential"), "gpt-5-ultra", "Hi"), "gpt-5-ultra")
    }).pipe(Effect.provide(emulator)))

  it.effect("ids are case-sensitive", () =>
    Effect.gen(function*() {
      for (const model of ["GPT-5", "Claude-Sonnet-4.6", "llama-3.3-70b-instruct", "Gemini-3-Pro"]) {
        assertNotFound(yield* chat(keyOf("essential"), model, "Hi"), model)
        assertNotFound(yield* chat(keyOf("custom"), model, "Hi"), model)
      }
      assertNotFound(yield* get("/v2/models/GPT-5", "essential"), "GPT-5")
      assertNotFound(
        yield* post("/v2/embeddings", keyOf("custom"), { model: "Text-Embedding-BGE-M3", input: "Hi" }),
        "Text-Embedding-BGE-M3"
      )
      // the legacy plans spell gpt-5-codex GPT-5-Codex: each plan's key has its own spelling
      assert.strictEqual((yield* chat(keyOf("standard1000"), "GPT-5-Codex", "Hi")).status, 200)
      assertNotFound(yield* chat(keyOf("standard1000"), "gpt-5-codex", "Hi"), "gpt-5-codex")
      assert.strictEqual((yield* chat(keyOf("essential"), "gpt-5-codex", "Hi")).status, 200)
      assertNotFound(yield* chat(keyOf("essential"), "GPT-5-Codex", "Hi"), "GPT-5-Codex")
    }).pipe(Effect.provide(emulator)))

  it.effect("a custom tier's key sees every model of every plan", () =>
    Effect.gen(function*() {
      const listed = (yield* listOf("custom")).map((m) => m.id)
      assert.deepStrictEqual(listed, [...Emulator.models])
      const everyPlan = new Set(Plans.planNames.flatMap((plan) => Plans.modelsOf(plan)))
      assert.deepStrictEqual(new Set(listed), everyPlan)
      for (const model of ["claude-opus-4.6", "gemma-4-31B", "Teuken-7B-Instruct-v04", "gpt-5.2"]) {
        assert.strictEqual((yield* chat(keyOf("custom"), model, "Hi")).status, 200, model)
      }
    }).pipe(Effect.provide(emulator)))
})
