/**
 * Soak: 5,000 chat requests (four in five plain, one in five streamed), 200 at once, through the limiter
 * against the emulator with about 5% of requests meeting an injected fault (error statuses, dropped
 * connections, malformed bodies, a slow first byte, truncated streams). Every request must end exactly once,
 * as a value or a typed error; peak memory is sampled and the heap measured again once all is done.
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import type * as EmulatorChaos from "../src/emulator/chaos.js"
import * as Emulator from "../src/emulator/Emulator.js"
import * as Metrics from "../src/layers/ClientMetrics.js"
import * as Testing from "../src/layers/Testing.js"
import * as Chat from "../src/services/Chat.js"
import { canCollect, collect, fixed, type Report, sampleRss, thousands } from "./common.js"

const total = Number(process.env.BENCH_SOAK_REQUESTS ?? 5_000)
const concurrency = 200
const faultRate = 0.05
const model = "Llama-3.3-70B-Instruct"
const mb = (bytes: number) => bytes / (1024 * 1024)
const settle = Duration.seconds(11)

/** The faults, each with an equal share of the 5%: the first rule that fires wins, so each gets 1-(1-r)^n. */
const faults: ReadonlyArray<EmulatorChaos.Fault> = [
  { kind: "status", status: 500 },
  { kind: "status", status: 502 },
  { kind: "status", status: 503 },
  { kind: "status", status: 429 },
  { kind: "resetBeforeBody" },
  { kind: "resetDuringBody" },
  { kind: "malformedJson" },
  { kind: "wrongContentType" },
  { kind: "bodyLargerThanDeclared" },
  { kind: "slowFirstByte", delay: "40 seconds" },
  { kind: "truncatedSse" }
]
const perRule = 1 - Math.pow(1 - faultRate, 1 / faults.length)
const chaos: EmulatorChaos.Chaos = faults.map((fault) => ({
  fault,
  route: "/v2/chat/completions",
  rate: perRule
}))

const counter = (metric: Metric.Metric.Counter<number>) => Effect.map(Metric.value(metric), (s) => s.count)

type Outcome = { readonly _tag: "ok" } | { readonly _tag: "typed"; readonly error: string } | {
  readonly _tag: "defect"
  readonly cause: string
}

export const run = async (): Promise<Report> => {
  const rss = sampleRss(50)
  try {
    const result = await Effect.runPromise(
      Effect.gen(function*() {
        const chat = yield* Chat.Chat
        const emulator = yield* Emulator.Emulator
        const ask = (i: number) => ({
          model,
          messages: [{ role: "user" as const, content: `Soak request ${i}: ${"word ".repeat(i % 40)}` }],
          max_tokens: 8 + (i % 24)
        })
        // warm up with the same faults at full concurrency, so that the baseline holds the layers, the connection
        // pool and the code of every path (the error paths too); then let the limiter's window and widest
        // margin (5 s + 5 s) pass so that its entries are gone
        yield* emulator.setChaos(chaos)
        yield* Effect.forEach(
          Array.from({ length: 2 * concurrency }, (_, i) => i),
          (i) => Effect.exit(i % 5 === 4 ? Chat.collect(chat.createStream(ask(i))) : chat.create(ask(i))),
          { concurrency, discard: true }
        )
        yield* emulator.setChaos([])
        yield* Effect.sleep(settle)
        collect()
        const baseline = process.memoryUsage()
        rss.restart()
        const retriesBefore = yield* counter(Metrics.retries)
        const statsBefore = yield* emulator.stats
        yield* emulator.setChaos(chaos)

        const outcomes = new Array<Outcome | undefined>(total)
        let ended = 0
        const started = performance.now()
        yield* Effect.forEach(
          Array.from({ length: total }, (_, i) => i),
          (i) => {
            const call = i % 5 === 4
              ? Effect.asVoid(Chat.collect(chat.createStream(ask(i))))
              : Effect.asVoid(chat.create(ask(i)))
            return Effect.map(Effect.exit(call), (exit) => {
              if (outcomes[i] !== undefined) throw new Error(`request ${i} ended twice`)
              ended++
              outcomes[i] = Exit.isSuccess(exit)
                ? { _tag: "ok" }
                : Cause.isFailType(exit.cause)
                ? { _tag: "typed", error: exit.cause.error._tag }
                : { _tag: "defect", cause: Cause.pretty(exit.cause) }
            })
          },
          { concurrency, discard: true }
        )
        const elapsedMs = performance.now() - started
        const retries = (yield* counter(Metrics.retries)) - retriesBefore
        const stats = yield* emulator.stats
        yield* emulator.setChaos([])
        const peakRss = rss.peak()
        // let the limiter's window and margin pass and sockets settle, then measure the heap again
        yield* Effect.sleep(settle)
        collect()
        const after = process.memoryUsage()
        const ok = outcomes.filter((o) => o?._tag === "ok").length
        const typed = new Map<string, number>()
        let defects = 0
        let firstDefect: string | undefined
        for (const o of outcomes) {
          if (o?._tag === "typed") typed.set(o.error, (typed.get(o.error) ?? 0) + 1)
          if (o?._tag === "defect") {
            defects++
            firstDefect ??= o.cause
          }
        }
        const missing = outcomes.filter((o) => o === undefined).length
        const injected = Object.entries(stats.faults).map(([kind, n]) => [kind, n - (statsBefore.faults[kind] ?? 0)])
        return {
          ok,
          typed,
          defects,
          firstDefect,
          missing,
          ended,
          retries,
          elapsedMs,
          injected,
          received: stats.received - statsBefore.received,
          baseline,
          peakRss,
          after
        }
      }).pipe(
        Effect.provide(Testing.layerEmulator({
          tier: "soak",
          tiers: { soak: { rpm: 3_000, tpm: 10_000_000 } },
          keys: [{ key: Emulator.keyOf("standard4000"), tier: "soak" }],
          window: "5 seconds",
          chaosSeed: 20261121,
          client: { maxRetries: 6, firstByteTimeout: "30 seconds" }
        })),
        Effect.timeout(Duration.minutes(10))
      )
    )
    const { after, baseline, defects, elapsedMs, ended, firstDefect, injected, missing, ok, peakRss, retries } = result
    const typedTotal = [...result.typed.values()].reduce((a, b) => a + b, 0)
    const typedText = [...result.typed.entries()].map(([tag, n]) => `${tag} ${n}`).join(", ") || "none"
    const injectedTotal = injected.reduce((a, [, n]) => a + Number(n), 0)
    const heapGrowth = mb(after.heapUsed - baseline.heapUsed)
    const accounted = ok + typedTotal + defects === total && missing === 0 && ended === total
    const gcNote = !canCollect() ? " (no --expose-gc)" : ""
    return {
      name: "soak",
      title: "Soak under faults",
      headers: [
        "requests",
        "succeeded",
        "typed failures",
        "defects",
        "unaccounted",
        "retries",
        "faults injected",
        "requests received by the server",
        "elapsed s",
        "RSS before / peak MB",
        `heap before / after MB${gcNote}`
      ],
      rows: [[
        thousands(total),
        thousands(ok),
        `${thousands(typedTotal)} (${typedText})`,
        String(defects),
        String(total - ok - typedTotal - defects),
        thousands(retries),
        `${thousands(injectedTotal)} (${injected.map(([k, n]) => `${k} ${n}`).join(", ")})`,
        thousands(result.received),
        fixed(elapsedMs / 1000, 1),
        `${fixed(mb(baseline.rss), 0)} / ${fixed(mb(peakRss), 0)}`,
        `${fixed(mb(baseline.heapUsed), 1)} / ${fixed(mb(after.heapUsed), 1)}`
      ]],
      targets: [
        {
          target: "every request accounted for exactly once, as a value or a typed error",
          met: accounted && defects === 0,
          detail: `${thousands(ok)} values + ${thousands(typedTotal)} typed errors + ${defects} defects of ` +
            `${thousands(total)}` + (firstDefect === undefined ? "" : `; first defect: ${firstDefect.slice(0, 300)}`)
        },
        {
          target: "memory back to its baseline afterwards (heap within 10 MB of before)",
          met: heapGrowth < 10,
          detail: `heap ${fixed(mb(baseline.heapUsed), 1)} MB before, ${fixed(mb(after.heapUsed), 1)} MB after ` +
            `(${heapGrowth >= 0 ? "+" : ""}${fixed(heapGrowth, 1)} MB); peak RSS ${fixed(mb(peakRss), 0)} MB`
        }
      ],
      how: `\`Testing.layerEmulator\` with a custom tier (3,000 requests and 10M tokens per 5 s window) so the ` +
        `limiter paces the run; ${thousands(total)} \`Chat.create\` / \`Chat.createStream\` (one in five) calls, ` +
        `${concurrency} at once, maxRetries 6, a 30 s first-byte limit (the slow first byte holds 40 s). The emulator's chaos rules (seeded) give ` +
        `about ${faultRate * 100}% of chat requests one of: ${
          faults.map((f) => f.kind === "status" ? f.status : f.kind).join(", ")
        }. ` +
        `Each call's \`Exit\` is recorded in its own slot (a second end would throw); retries come from ` +
        `\`ClientMetrics.retries\`, faults from the emulator's \`stats\`. Memory: RSS sampled every 50 ms, heap ` +
        `after a forced GC before the run (after a warm-up of ${2 * concurrency} requests with the same faults) and ` +
        `once the limiter's window and widest margin have passed after it.`,
      notes: [
        "Malformed, mislabelled and over-long bodies are `DecodeError`s, which are not retried (the server " +
        "answered; repeating the request would not change a contract break); statuses, dropped connections " +
        "and the slow first byte (`Timeout`) are retried within the budget. Typed failures also include streams " +
        "cut after their first chunk (`TransportError`: a started stream is not re-sent).",
        "Elapsed time is not a throughput figure: the client and the emulator share one process on two cores, " +
        "each injected 429 closes the limiter's bucket for the server's second and widens its margin, and on this " +
        "machine new loopback connections opened in a burst wait 1 to 15 s for their handshake (seen with raw " +
        "undici against a bare `node:http` server too). A first-byte limit of a few seconds therefore times out " +
        "healthy requests here and multiplies retries; 30 s keeps timeouts to the injected slow first bytes."
      ]
    }
  } finally {
    rss.stop()
  }
}
