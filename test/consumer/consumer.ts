/**
 * The package as a new user meets it: `npm pack` (its package.json without an install hook), then the
 * README's install line in a fresh app, then
 * - one copy of `effect` in the app's tree;
 * - `import` and `require` both reach the services (root and deep entry points);
 * - the README quickstart type-checks with `skipLibCheck: false`, as ESM and as CommonJS;
 * - `npx aifs models` answers from the embedded emulator;
 * - an esbuild bundle of the quickstart from the root entry holds no emulator or CLI module and is at most
 *   1.05x the bundle of the same program with deep imports;
 * - the README's install lines of the optional `@effect/ai` and `@effect/opentelemetry` (the Effect 3 releases)
 *   keep one copy of `effect`, and a program on `effect-aifs/ai` traced by `@effect/opentelemetry` runs on the
 *   embedded emulator (a `chat {model}` span under `@effect/ai`'s own);
 * - and the same checks but the bundle and the traced program again in a second app with every peer at the lowest
 *   version its range in package.json allows (the floor the full suite was run on).
 *
 * Run with `npm run test:consumer` (CI runs it after the build). Needs the npm registry, nothing else.
 * `-- --keep` leaves the app's folder in place to look at.
 */
import * as esbuild from "esbuild"
import { execFileSync, type ExecFileSyncOptions } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))
const keep = process.argv.includes("--keep")
const minutes = (n: number) => n * 60_000

const run = (command: string, args: ReadonlyArray<string>, options: ExecFileSyncOptions & { cwd: string }) =>
  execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: minutes(5), ...options })
    .toString()

const fail = (message: string): never => {
  throw new Error(message)
}

/** The one `npm install effect-aifs ...` line of the README. */
export const installLine = (readme: string): ReadonlyArray<string> => {
  const lines = readme.split("\n").filter((line) => /^npm (install|i) effect-aifs\b/.test(line.trim()))
  if (lines.length !== 1) {
    fail(`README.md must have exactly one 'npm install effect-aifs ...' line, found ${lines.length}`)
  }
  return lines[0]!.trim().replace(/\s+#.*$/, "").split(/\s+/).slice(2)
}

/** The README's `npm install @effect/ai@...` and `npm install @effect/opentelemetry@...` lines, as arguments. */
export const optionalPeerLines = (readme: string): ReadonlyArray<string> => {
  const lines = readme.split("\n").map((line) => line.trim())
  const args = ["@effect/ai@", "@effect/opentelemetry@"].flatMap((name) => {
    const line = lines.find((l) => l.startsWith(`npm install ${name}`))
    return line === undefined ? fail(`README.md has no 'npm install ${name}...' line`) : line.split(/\s+/).slice(2)
  })
  return args
}

/** A program on the `@effect/ai` provider, traced in memory, against the embedded emulator. */
const tracedProgram = [
  "import { LanguageModel } from '@effect/ai'",
  "import * as NodeSdk from '@effect/opentelemetry/NodeSdk'",
  "import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'",
  "import { Testing } from 'effect-aifs'",
  "import { AifsLanguageModel } from 'effect-aifs/ai'",
  "import * as Effect from 'effect/Effect'",
  "import * as Layer from 'effect/Layer'",
  "const spans = new InMemorySpanExporter()",
  "const sdk = NodeSdk.layer(() => ({ resource: { serviceName: 'consumer' }, spanProcessor: new SimpleSpanProcessor(spans) }))",
  // the spans are read before the SDK's layer closes: its shutdown empties the in-memory exporter
  "const program = LanguageModel.generateText({ prompt: 'Hello' }).pipe(",
  "  Effect.map((response) => ({ text: response.text, names: spans.getFinishedSpans().map((span) => span.name) })),",
  "  Effect.provide(AifsLanguageModel.model('Llama-3.3-70B-Instruct')),",
  "  Effect.provide(Layer.provideMerge(Testing.layerEmulator(), sdk))",
  ")",
  "const { names, text } = await Effect.runPromise(program)",
  "if (text.length === 0 || !names.includes('chat Llama-3.3-70B-Instruct') ||",
  "  !names.includes('LanguageModel.generateText')) { console.error(names); process.exit(1) }"
].join("\n")

/** The first TypeScript block after the README's "## Quickstart" heading. */
export const quickstart = (readme: string): string => {
  const section = readme.slice(readme.indexOf("## Quickstart"))
  const match = /```ts\n([\s\S]*?)```/.exec(section)
  return match?.[1] ?? fail("README.md has no ```ts block under ## Quickstart")
}

/** Every installed copy of a package, by walking node_modules (nested copies included). */
const copiesOf = (dir: string, name: string): Array<string> => {
  const found: Array<string> = []
  const walk = (modules: string, depth: number) => {
    if (depth > 12) return
    let entries: Array<string>
    try {
      entries = readdirSync(modules)
    } catch {
      return
    }
    for (const entry of entries) {
      const packages = entry.startsWith("@")
        ? readdirSync(join(modules, entry)).map((sub) => join(entry, sub))
        : [entry]
      for (const pkg of packages) {
        const path = join(modules, pkg)
        if (pkg === name) found.push(path)
        walk(join(path, "node_modules"), depth + 1)
      }
    }
  }
  walk(join(dir, "node_modules"), 0)
  return found
}

const tsconfig = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    types: ["node"]
  },
  include: ["quickstart.ts", "quickstart.cts"]
}

/** Optional peers installed (ioredis, @effect/ai): their entries (`effect-aifs/redis`, `effect-aifs/ai`) must load too. */
interface Optional {
  readonly redis: boolean
  readonly ai: boolean
}

const probe = (kind: "esm" | "cjs", { ai, redis }: Optional) => {
  const load = (specifier: string) => kind === "esm" ? `await import("${specifier}")` : `require("${specifier}")`
  const body = [
    `const root = ${load("effect-aifs")}`,
    `const chat = ${load("effect-aifs/services/Chat")}`,
    `const node = ${load("effect-aifs/layers/Node")}`,
    `const redis = ${redis ? load("effect-aifs/redis") : "{ layer: () => {} }"}`,
    // the store loads ioredis when its layer is built: the installed one is loaded here, a client made as the store
    // makes it (its named export), never connected
    `const ioredis = ${redis ? load("ioredis") : "{ Redis: class { disconnect() {} } }"}`,
    "new ioredis.Redis({ lazyConnect: true }).disconnect()",
    `const ai = ${
      ai
        ? load("effect-aifs/ai")
        : "{ AifsLanguageModel: { model: () => {} }, AifsEmbeddingModel: { model: () => {} } }"
    }`,
    "const ok = typeof root.Chat.Chat === 'function' && root.Chat.Chat.key === 'effect-aifs/Chat'",
    "  && chat.Chat === root.Chat.Chat && node.layerFromEnv === root.Node.layerFromEnv",
    "  && typeof root.Errors.RateLimited === 'function' && Object.keys(root).length > 40",
    "  && typeof redis.layer === 'function'",
    "  && typeof ai.AifsLanguageModel.model === 'function' && typeof ai.AifsEmbeddingModel.model === 'function'",
    "if (!ok) { console.error(Object.keys(root)); process.exit(1) }"
  ].join("\n")
  return kind === "esm" ? ["--input-type=module", "-e", body] : ["-e", body]
}

const bundle = async (app: string, entry: string) => {
  const result = await esbuild.build({
    absWorkingDir: app,
    entryPoints: [entry],
    bundle: true,
    minify: true,
    platform: "node",
    format: "esm",
    write: false,
    metafile: true,
    logLevel: "silent"
  })
  const output = Object.values(result.metafile.outputs)[0]!
  const modules = Object.entries(output.inputs).filter(([, input]) => input.bytesInOutput > 0).map(([path]) => path)
  return { bytes: output.bytes, modules }
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`

/** The install arguments with every peer at the floor of its range in package.json (`^3.22.2`, `>=0.76.0 <0.78.0`). */
const lowestPeers = (): ReadonlyArray<string> => {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    peerDependencies: Record<string, string>
  }
  return Object.entries(pkg.peerDependencies).map(([name, range]) => {
    const floor = /\d+\.\d+\.\d+/.exec(range)?.[0] ?? fail(`no floor in the peer range ${name}@${range}`)
    return `${name}@${floor}`
  })
}

/** A fresh app with the tarball and `peers` installed, as the README tells a user to. */
const installApp = (work: string, name: string, tarball: string, peers: ReadonlyArray<string>) => {
  const app = join(work, name)
  mkdirSync(app)
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: `consumer-${name}`, private: true, type: "module" }))
  console.error(`${name}: npm install effect-aifs ${peers.join(" ")}`)
  const typesNode = JSON.parse(readFileSync(join(root, "node_modules/@types/node/package.json"), "utf8")).version
  const npmInstall = (args: ReadonlyArray<string>) =>
    run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", ...args], { cwd: app })
  npmInstall([tarball, ...peers])
  npmInstall(["-D", `@types/node@${typesNode}`])
  return app
}

/** One copy of effect, import and require, the quickstart's types, and the CLI through npx. */
const checkApp = (app: string, code: string, optional: Optional) => {
  const effects = copiesOf(app, "effect")
  if (effects.length !== 1) fail(`expected one copy of effect, found ${effects.length}: ${effects.join(", ")}`)
  run(process.execPath, probe("esm", optional), { cwd: app })
  run(process.execPath, probe("cjs", optional), { cwd: app })
  writeFileSync(join(app, "quickstart.ts"), code)
  writeFileSync(join(app, "quickstart.cts"), code)
  writeFileSync(join(app, "tsconfig.json"), JSON.stringify(tsconfig))
  try {
    run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], { cwd: app })
  } catch (error) {
    fail(`the README quickstart does not type-check:\n${(error as { stdout?: string }).stdout ?? String(error)}`)
  }
  const models = run("npx", ["--no-install", "aifs", "models"], {
    cwd: app,
    env: { ...process.env, AIFS_API_KEY: "", AIFS_BASE_URL: "", NO_COLOR: "1" }
  })
  if (!models.includes("Llama-3.3-70B-Instruct")) fail(`npx aifs models printed no model list:\n${models}`)
  // the help page as an installed user meets it: printed without loading the command line (its time is reported,
  // not judged: timing belongs to the benchmarks)
  const times = Array.from({ length: 3 }, () => {
    const start = performance.now()
    const help = run("npx", ["--no-install", "aifs", "--help"], { cwd: app })
    if (!help.includes("ENVIRONMENT")) fail(`npx aifs --help printed no help page:\n${help}`)
    return performance.now() - start
  }).sort((a, b) => a - b)
  return `npx aifs --help ${(times[1]! / 1000).toFixed(2)} s`
}

/** The optional peers' install lines on top: still one copy of effect, and the traced provider program runs. */
const checkOptionalPeers = (app: string, peers: ReadonlyArray<string>) => {
  console.error(`${app}: npm install ${peers.join(" ")}`)
  run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", ...peers], { cwd: app })
  const effects = copiesOf(app, "effect")
  if (effects.length !== 1) fail(`with ${peers.join(" ")}: ${effects.length} copies of effect: ${effects.join(", ")}`)
  writeFileSync(join(app, "traced.mjs"), tracedProgram)
  run(process.execPath, ["traced.mjs"], { cwd: app })
}

/** The quickstart bundled from the root entry and from deep imports: no emulator or CLI, at most 1.05x. */
const checkBundles = async (app: string, code: string) => {
  writeFileSync(join(app, "root.ts"), code)
  writeFileSync(
    join(app, "deep.ts"),
    code.replace(
      /import \{ Chat, Node \} from "effect-aifs"/,
      "import * as Chat from \"effect-aifs/services/Chat\"\nimport * as Node from \"effect-aifs/layers/Node\""
    )
  )
  const rooted = await bundle(app, "root.ts")
  const deep = await bundle(app, "deep.ts")
  const unwanted = rooted.modules.filter((path) => /effect-aifs\/dist\/esm\/(emulator|cli)\//.test(path))
  if (unwanted.length > 0) fail(`the root bundle holds emulator or CLI modules: ${unwanted.join(", ")}`)
  const ratio = rooted.bytes / deep.bytes
  if (ratio > 1.05) fail(`the root bundle is ${ratio.toFixed(3)}x the deep-import bundle (at most 1.05x)`)
  return `root bundle ${kb(rooted.bytes)} / deep bundle ${kb(deep.bytes)} (${ratio.toFixed(3)}x, ` +
    `${rooted.modules.length} modules, none of the emulator or CLI)`
}

/**
 * The packed package.json runs nothing at a user's install: no install hook (npm runs a dependency's `prepare` only when
 * it is installed from git; the repository's own `npm install` needs it, to build what the examples import by name).
 */
const checkInstallScripts = (tarball: string, cwd: string) => {
  const packed = JSON.parse(run("tar", ["-xOzf", tarball, "package/package.json"], { cwd })) as {
    scripts?: Record<string, string>
  }
  const hooks = ["preinstall", "install", "postinstall"].filter((name) => packed.scripts?.[name] !== undefined)
  if (hooks.length > 0) fail(`the packed package.json runs ${hooks.join(", ")} at install`)
}

const main = async () => {
  const readme = readFileSync(join(root, "README.md"), "utf8")
  const install = installLine(readme)
  const code = quickstart(readme)
  const work = mkdtempSync(join(tmpdir(), "aifs-consumer-"))
  try {
    console.error(`packing (builds dist/) into ${work}`)
    const tarball = join(work, run("npm", ["pack", "--silent", "--pack-destination", work], { cwd: root }).trim())
    checkInstallScripts(tarball, work)
    const app = installApp(work, "readme", tarball, install.filter((arg) => arg !== "effect-aifs"))
    const help = checkApp(app, code, {
      redis: install.includes("ioredis"),
      ai: install.some((arg) => arg.startsWith("@effect/ai@"))
    })
    const bundles = await checkBundles(app, code)
    const optional = optionalPeerLines(readme)
    checkOptionalPeers(app, optional)
    const lowest = lowestPeers()
    const lowestApp = installApp(work, "lowest", tarball, lowest)
    checkApp(lowestApp, code, { redis: true, ai: true })
    checkOptionalPeers(lowestApp, optional.filter((arg) => !arg.startsWith("@effect/ai@")))
    console.log(
      `effect copies 1, ESM ok, CJS ok, quickstart types ok, npx aifs ok (${help}), ${bundles}, ` +
        `${optional.join(" ")}: one effect, traced provider ok, no install scripts, tarball ` +
        `${kb(statSync(tarball).size)}; the same with the lowest peers (${lowest.join(" ")}) ok`
    )
  } finally {
    if (keep) console.error(`kept ${work}`)
    else rmSync(work, { recursive: true, force: true })
  }
}

main().catch((error: unknown) => {
  console.error(`consumer test failed: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
})
