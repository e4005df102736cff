/**
 * The command line's help and flags, as a user meets them: no colour into a pipe, the real command name, the
 * defaults, the environment and the exit codes; a flag of the wrong type named; `--json`, a prompt from stdin,
 * `--temperature`.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { pages } from "../../src/cli/helpPages.js"
import { renderHelpPages } from "../../src/cli/main.js"
import { aifs } from "../helpers/cli.js"

const ansi = /\u001b\[/

describe("aifs --help", { timeout: 60_000 }, () => {
  it.live("the top-level help: every command, the environment, the exit codes; no colour into a pipe", () =>
    Effect.gen(function*() {
      const run = yield* aifs(["--help"])
      assert.strictEqual(run.code, 0, run.stderr)
      assert.notMatch(run.stdout, ansi)
      for (const command of ["demo", "models", "chat", "embed", "batch", "emulator", "rag", "files", "vs"]) {
        assert.match(run.stdout, new RegExp(`^  - ${command}\\b`, "m"), command)
      }
      for (
        const part of ["ENVIRONMENT", "AIFS_API_KEY", "AIFS_BASE_URL", "AIFS_LIMITER_REDIS_URL", "EXIT CODES", "143"]
      ) {
        assert.include(run.stdout, part)
      }
    }))

  it.live("the top-level help names every AIFS_ variable the sources read", () =>
    Effect.gen(function*() {
      const run = yield* aifs(["--help"])
      const sources = readdirSync("src", { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".ts") && !file.startsWith("emulator"))
        .map((file) => readFileSync(join("src", file), "utf8"))
      const read = new Set(sources.flatMap((text) => [...text.matchAll(/"(AIFS_[A-Z0-9_]+)"/g)].map((m) => m[1]!)))
      assert.isAbove(read.size, 20)
      for (const name of read) assert.include(run.stdout, name)
    }))

  it.live("a command's help: its real name, every default, none of the boilerplate lines", () =>
    Effect.gen(function*() {
      const chat = yield* aifs(["chat", "--help"], { NO_COLOR: "1" })
      assert.strictEqual(chat.code, 0, chat.stderr)
      assert.match(chat.stdout, /^\$ aifs chat /m)
      assert.include(chat.stdout, "Default: Llama-3.3-70B-Instruct.")
      assert.include(chat.stdout, "--temperature")
      assert.include(chat.stdout, "--json")
      for (const boilerplate of ["A user-defined piece of text.", "This setting is optional.", "An integer."]) {
        assert.notInclude(chat.stdout, boilerplate)
      }
      const batch = yield* aifs(["batch", "--help"])
      assert.include(batch.stdout, "Default: 32.")
      assert.match(batch.stdout, /^\$ aifs batch /m)
    }))
})

describe("the help pages bin.ts serves without loading the command line", { timeout: 60_000 }, () => {
  it.effect("are every page the command line prints, as it prints them (else: npm run help-pages)", () =>
    Effect.gen(function*() {
      const rendered = yield* renderHelpPages
      assert.isAbove(Object.keys(rendered).length, 25)
      assert.deepStrictEqual(pages, rendered)
    }).pipe(Effect.provide(NodeContext.layer)))

  it("show an optional flag that may be repeated in brackets, as every optional flag, the required ones bare", () => {
    assert.include(pages["rag chat"], "[--files file...] [--global]")
    assert.include(pages["vs search"], "[--store text] [--files file...]")
    assert.include(pages["limits"], "[(-m, --model text)...] [--json]")
    // an argument the command needs: no brackets
    assert.include(pages["rag ingest"], "<FILE>...")
    // no flag, with an alias or not, repeated outside brackets
    for (const [command, page] of Object.entries(pages)) {
      const usage = page.split("\n").find((line) => line.startsWith("$ aifs")) ?? ""
      const bare = usage.replace(/\[[^\]]*\]/g, "")
      assert.notMatch(bare, /--[a-z-]+ \w+\)?\.\.\./, `${command}: ${usage}`)
    }
  })

  it.live("are what a help flag prints; any other command line runs the command line", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* aifs(["vs", "files", "--help"])).stdout, pages["vs files"])
      assert.strictEqual((yield* aifs(["-h"])).stdout, pages[""])
      // not a page: the command line itself answers (here: the same help)
      const verbose = yield* aifs(["chat", "--help", "--verbose"])
      assert.strictEqual(verbose.code, 0, verbose.stderr)
      assert.strictEqual(verbose.stdout, pages["chat"])
      // a word that names a member of every object is no page either
      const odd = yield* aifs(["constructor", "--help"])
      assert.notInclude(odd.stderr, "    at ")
      assert.strictEqual(odd.code, 0, odd.stderr)
      assert.include(odd.stdout, "COMMANDS")
    }))
})

describe("aifs flags", { timeout: 60_000 }, () => {
  it.live("a value of the wrong type names its flag; a temperature out of range is refused before any request", () =>
    Effect.gen(function*() {
      const wrong = yield* aifs(["chat", "--max-tokens", "abc", "hi"])
      assert.strictEqual(wrong.code, 2, wrong.stderr)
      assert.strictEqual(wrong.stderr.trim(), "aifs: error: --max-tokens expects an integer, not 'abc'")
      assert.notMatch(wrong.stderr, ansi)
      const hot = yield* aifs(["chat", "--temperature", "3", "hi"], {
        AIFS_API_KEY: "gen-x",
        AIFS_BASE_URL: "http://127.0.0.1:9/v2"
      })
      assert.strictEqual(hot.code, 2, hot.stderr)
      assert.strictEqual(hot.stderr.trim(), "aifs: error: --temperature must be from 0 to 2, not 3")
    }))

  it.live("a missing argument or a file that does not exist is one line, as every usage error is", () =>
    Effect.gen(function*() {
      const missing = yield* aifs(["embed"])
      assert.strictEqual(missing.code, 2, missing.stderr)
      assert.strictEqual(missing.stderr, "aifs: error: Missing argument <TEXT>\n")
      const absent = yield* aifs(["images", "edit", "no-such-image.png", "blue"])
      assert.strictEqual(absent.code, 2, absent.stderr)
      // in the words aifs batch uses for its input
      assert.strictEqual(absent.stderr, "aifs: error: no such file: no-such-image.png\n")
    }))

  it.live("a flag no command has is refused by its name, not taken for the prompt; the known ones still work", () =>
    Effect.gen(function*() {
      const run = yield* aifs(["chat", "--bogus", "hi"])
      assert.strictEqual(run.code, 2, run.stderr)
      assert.strictEqual(run.stderr.trim(), "aifs: error: unknown flag --bogus (aifs chat --help lists the flags)")
      const known = yield* aifs(["embed", "--model=text-embedding-bge-m3", "a"])
      assert.strictEqual(known.code, 0, known.stderr)
      // another command's flag is this command's unknown flag, subcommands included
      const other = yield* aifs(["chat", "--out", "x.jsonl", "hi"])
      assert.strictEqual(other.code, 2, other.stderr)
      assert.strictEqual(other.stderr.trim(), "aifs: error: unknown flag --out (aifs chat --help lists the flags)")
      const nested = yield* aifs(["vs", "files", "--texts", "3", "vs_1"])
      assert.strictEqual(
        nested.stderr.trim(),
        "aifs: error: unknown flag --texts (aifs vs files --help lists the flags)"
      )
    }))

  it.live("chat --json prints the whole answer as JSON; a prompt of - is read from stdin", () =>
    Effect.gen(function*() {
      const run = yield* aifs(["chat", "--json", "--temperature", "0.2", "-"], {}, { input: "what the pipe said" })
      assert.strictEqual(run.code, 0, run.stderr)
      const answer = JSON.parse(run.stdout) as {
        object: string
        choices: ReadonlyArray<{ message: { content: string } }>
        usage: { total_tokens: number }
      }
      assert.strictEqual(answer.object, "chat.completion")
      // the emulator's answers begin with the prompt they answer
      assert.include(answer.choices[0]!.message.content, "what the pipe said")
      assert.isAbove(answer.usage.total_tokens, 0)
    }))

  it.live("models --json prints the list as JSON; without it, one tab-separated line per model", () =>
    Effect.gen(function*() {
      const json = yield* aifs(["models", "--json"])
      assert.strictEqual(json.code, 0, json.stderr)
      const list = JSON.parse(json.stdout) as { data: ReadonlyArray<{ id: string }> }
      assert.isTrue(list.data.some((model) => model.id === "Llama-3.3-70B-Instruct"))
      const plain = yield* aifs(["models"])
      assert.strictEqual(plain.stdout.trim().split("\n").length, list.data.length)
      assert.match(plain.stdout, /^Llama-3\.3-70B-Instruct\t/m)
    }))

  it.live("without an optional peer the command line needs: one line naming it and its install command", () =>
    Effect.gen(function*() {
      // the version it names is the one the package develops against (bin.ts must follow package.json)
      const { devDependencies } = JSON.parse(readFileSync("package.json", "utf8")) as {
        devDependencies: Record<string, string>
      }
      for (const name of ["@effect/cli", "@effect/platform-node"]) {
        const run = yield* aifs(["models"], { HIDE_PACKAGE: name }, {
          node: ["--import", "./test/fixtures/hidePackage.mjs"]
        })
        assert.strictEqual(run.code, 1)
        assert.strictEqual(
          run.stderr,
          `aifs: error: the command line needs the optional peer ${name}, which is not installed: npm install ${name}@${
            devDependencies[name]
          }\n`
        )
      }
      // a help page needs neither
      const help = yield* aifs(["--help"], { HIDE_PACKAGE: "@effect/cli" }, {
        node: ["--import", "./test/fixtures/hidePackage.mjs"]
      })
      assert.strictEqual(help.code, 0, help.stderr)
    }))
})
