/**
 * A CPU profile of a piece of a benchmark (the V8 sampling profiler, in process), summed by package: where the
 * time of a loop goes, as `npm run bench -- overhead --profile` prints it.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as RuntimeFlags from "effect/RuntimeFlags"
import * as RuntimeFlagsPatch from "effect/RuntimeFlagsPatch"
import * as Supervisor from "effect/Supervisor"
import { Session } from "node:inspector/promises"
import { fixed, textTable } from "./common.js"

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly hitCount?: number
}

interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples?: ReadonlyArray<number>
}

/** The package a frame belongs to: its `node_modules` package, this project, Node.js itself, or V8's own. */
export const packageOf = (url: string, functionName: string): string => {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)"
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (modules !== null) return modules[1]!
  if (url.startsWith("node:")) return "node"
  if (/\/(src|dist)\//.test(url)) return "effect-aifs"
  if (url.includes("/bench/")) return "bench"
  return url
}

/** The self time of each frame and each package, as shares of all samples. */
export const summarise = (profile: CpuProfile) => {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const counts = new Map<number, number>()
  for (const id of profile.samples ?? []) counts.set(id, (counts.get(id) ?? 0) + 1)
  const total = Math.max(1, profile.samples?.length ?? 0)
  const packages = new Map<string, number>()
  const frames = new Map<string, { readonly pkg: string; hits: number }>()
  for (const [id, hits] of counts) {
    const { functionName, lineNumber, url } = byId.get(id)!.callFrame
    const pkg = packageOf(url, functionName)
    packages.set(pkg, (packages.get(pkg) ?? 0) + hits)
    const file = url.split("/").pop() ?? ""
    const name = `${functionName || "(anonymous)"} ${file}${file === "" ? "" : `:${lineNumber + 1}`}`
    const frame = frames.get(name) ?? { pkg, hits: 0 }
    frame.hits += hits
    frames.set(name, frame)
  }
  const share = (hits: number) => `${fixed((100 * hits) / total, 1)}%`
  return {
    packages: [...packages].sort((a, b) => b[1] - a[1]).map(([pkg, hits]) => [pkg, share(hits)]),
    frames: [...frames].sort((a, b) => b[1].hits - a[1].hits).map(([name, f]) => [f.pkg, name, share(f.hits)])
  }
}

/** Runs `body` under the profiler and prints its self time by package and its top frames. */
export const profiled = async <A>(label: string, body: () => Promise<A>, topFrames = 25): Promise<A> => {
  const session = new Session()
  session.connect()
  await session.post("Profiler.enable")
  await session.post("Profiler.setSamplingInterval", { interval: 100 })
  await session.post("Profiler.start")
  try {
    return await body()
  } finally {
    const { profile } = await session.post("Profiler.stop")
    session.disconnect()
    const summary = summarise(profile as CpuProfile)
    console.log(`\n-- profile: ${label} (self time) --`)
    console.log(textTable(["package", "share"], summary.packages))
    console.log()
    console.log(textTable(["package", "frame", "share"], summary.frames.slice(0, topFrames)))
  }
}

/** Counts the steps Effect's runtime evaluates, and the fibers started, under it. */
class StepCounter extends Supervisor.AbstractSupervisor<void> {
  steps = 0
  fibers = 0
  readonly value = Effect.void
  override onStart() {
    this.fibers++
  }
  override onEffect() {
    this.steps++
  }
}

/**
 * The Effect steps (flatMaps, syncs, asyncs...) and fibers one run of `send` takes, averaged over `count` runs one
 * after the other: what a request costs the fiber runtime, a figure that does not swing with the machine's load.
 */
export const stepsOf = (send: Effect.Effect<unknown, unknown>, count: number) =>
  Effect.suspend(() => {
    const counter = new StepCounter()
    const counted = Effect.withRuntimeFlagsPatch(
      Effect.supervised(send, counter),
      RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)
    )
    // read once the runs are done
    return Effect.map(
      Effect.repeatN(counted, count - 1),
      () => ({ steps: counter.steps / count, fibers: counter.fibers / count })
    )
  })

/** `steps` Effect steps, in pairs (a `flatMap` and what it runs), one after another. */
const chain = (steps: number): Effect.Effect<void> =>
  steps <= 0 ? Effect.void : Effect.flatMap(Effect.void, () => chain(steps - 2))

/**
 * What one Effect step inside a span costs, in µs, with the tracer `layer` provides and with Effect's own (the
 * medians of `rounds` loops of 200,000 steps each, taken in turn): the cost of a tracer's `context` hook, which
 * the fiber runtime calls around every step.
 */
export const stepCost = async <E>(layer: Layer.Layer<never, E>, rounds = 7) => {
  const steps = 200_000
  const loop = Effect.withSpan(Effect.suspend(() => chain(steps)), "steps")
  const time = (provided: Layer.Layer<never, E>) =>
    Effect.runPromise(Effect.provide(Effect.timed(loop), provided)).then(([d]) => Duration.toMillis(d) * 1000 / steps)
  const native: Array<number> = []
  const traced: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    native.push(await time(Layer.empty as Layer.Layer<never, E>))
    traced.push(await time(layer))
  }
  const median = (xs: Array<number>) => xs.sort((a, b) => a - b)[xs.length >> 1]!
  return { native: median(native), traced: median(traced) }
}
