/**
 * What the CLI prints through `Console` (help, usage errors, answers), made fit for where it goes: no colour into
 * a pipe or under `NO_COLOR`; and, for `--help`, the real command name (`$ aifs chat`, not `$ chat`), no boilerplate
 * lines, and on the top-level help the environment and the exit codes. A flag value of the wrong type names its flag.
 *
 * @since 0.2.0
 */
import * as Options from "@effect/cli/Options"
import type * as Console from "effect/Console"

/** The lines @effect/cli adds to every flag of a kind, which say nothing of this flag. */
const boilerplate = new Set([
  "A user-defined piece of text.",
  "A true or false value.",
  "An integer.",
  "A floating point number.",
  "This setting is optional."
])

const environment = `ENVIRONMENT

  AIFS_API_KEY             the key; unset: the embedded emulator (or, with AIFS_BASE_URL on this machine, its
                           development key)
  AIFS_API_KEY_FILE        a file holding the key instead (a mounted secret), read again when the key is refused:
                           a rotated key is picked up without a restart
  AIFS_BASE_URL            base of the standard endpoints (default https://llm-server.llmhub.t-systems.net/v2)
  AIFS_V1_URL, AIFS_QUEUE_URL  bases of vector stores and of the queue (default: from AIFS_BASE_URL's origin)
  AIFS_API_VERSION         1.1.0 (default) or 1.0.0
  AIFS_TIER                the key's plan: auto (default: limits learnt from the server), basic, standard1000 to
                           standard4000, essential, professional or agentic (each model's row of the plan's table)
  AIFS_LIMITS              your limits per window, by model: *=300/300000/150000,gpt-4.1=100/30000
                           (requests/input/output or requests/tokens; * for any model without its own; over the plan's)
  AIFS_MAX_RETRIES         retries after the first attempt (default 6)
  AIFS_TIMEOUT, AIFS_CONNECT_TIMEOUT, AIFS_FIRST_BYTE_TIMEOUT, AIFS_QUEUE_TIMEOUT, AIFS_STREAM_IDLE_TIMEOUT
                           time limits (default 10m, 10s, 10m, 30m, 2m)
  AIFS_LIMITER_REDIS_URL, AIFS_LIMITER_REDIS_PREFIX, AIFS_LIMITER_WINDOW
                           a Redis shared by the processes of one key, its key prefix (aifs), the window (1m)
  AIFS_CACHE_DIR           where limits learnt and spend are kept without Redis (default ~/.cache/effect-aifs;
                           empty: not kept)
  AIFS_BUDGET              the most the key may spend a calendar month, in EUR: a warning at 80%, and from 100%
                           requests fail before they are sent (aifs usage shows the spend)
  AIFS_GATEWAY_URL, AIFS_GATEWAY_USERNAME, AIFS_GATEWAY_PASSWORD
                           the retrieval gateway (rag); unset: the emulator's gateway
  AIFS_GATEWAY_QUERY_PIPELINE, AIFS_GATEWAY_MAX_RETRIES, AIFS_GATEWAY_TIMEOUT, AIFS_GATEWAY_CONNECT_TIMEOUT,
  AIFS_GATEWAY_REFRESH_AHEAD
                           its query pipeline, retries, time limits, and how early a token is replaced
  NO_COLOR                 no colour in help and errors (none into a pipe either)

  --verbose (anywhere): debug lines, and every field of a failure.

EXIT CODES

  0 success; 1 the service or the network failed, or a batch has lines still failed; 2 bad usage or configuration;
  3 a batch stopped because the key's monthly budget is spent (its lines left for a rerun);
  130 stopped by Ctrl-C (SIGINT), 143 by SIGTERM
`

const ansi = /\u001b\[[0-9;]*m/g

/**
 * Text fit for its destination.
 *
 * @since 0.2.0
 * @category formatting
 */
export const clean = (
  text: string,
  context: {
    readonly color: boolean
    readonly help: boolean
    readonly topLevel: boolean
    readonly argv: ReadonlyArray<string>
  }
): string => {
  let out = context.color ? text : text.replace(ansi, "")
  if (context.help) {
    out = out.split("\n").filter((line) => !boilerplate.has(line.trim())).join("\n")
      .replace(/^\$ (?!aifs\b)/gm, "$ aifs ")
      // a command's usage and its description, padded to the widest usage: the description under it instead
      .replace(/^ {2}- (.*?) {2,}(\S.*)$/gm, "  - $1\n      $2")
      .replace(/\n{3,}/g, "\n\n")
    if (context.topLevel && /\bCOMMANDS\b/.test(out)) out = `${out.trimEnd()}\n\n${environment}`
  }
  // "'abc' is not a integer": which flag's value?
  return out.replace(/'([^']*)' is not a (integer|float|number)/g, (whole, value: string, kind: string) => {
    const at = context.argv.indexOf(value)
    const flag = at > 0 && context.argv[at - 1]!.startsWith("-") ? context.argv[at - 1] : undefined
    return flag === undefined
      ? whole
      : `${flag} expects ${kind === "integer" ? "an integer" : "a number"}, not '${value}'`
  })
}

/**
 * `base` whose `log` and `error` print `clean`ed text, for the command line `argv` (with `node` and the script); in
 * colour only on a terminal without `NO_COLOR`, unless `color` says.
 *
 * @since 0.2.0
 * @category layers
 */
export const fitConsole = (
  base: Console.Console,
  argv: ReadonlyArray<string>,
  color: boolean = process.stdout.isTTY === true && process.env.NO_COLOR === undefined
): Console.Console => {
  const args = argv.slice(2)
  const help = args.includes("--help") || args.includes("-h")
  const context = {
    color,
    help,
    topLevel: help && args.filter((arg) => !arg.startsWith("-")).length === 0,
    argv: args
  }
  const fit = (parts: ReadonlyArray<unknown>) =>
    parts.map((part) => typeof part === "string" ? clean(part, context) : part)
  return {
    ...base,
    log: (...parts) => base.log(...fit(parts)),
    error: (...parts) => base.error(...fit(parts).map(usageLine))
  }
}

/** `@effect/cli`'s words where this CLI has its own for the same: a missing file reads as every command says it. */
const ourWords = (text: string): string => text.replace(/^Path '(.*)' must exist$/, "no such file: $1")

/**
 * Every line this CLI writes to stderr starts with `aifs`; any other text is `@effect/cli`'s account of a usage
 * error (a missing argument, a file that does not exist, a value of the wrong type), printed as ours are: one line,
 * `aifs: error: ...`.
 */
const usageLine = (part: unknown): unknown =>
  typeof part !== "string" || part.startsWith("aifs") || part.trim() === ""
    ? part
    : `aifs: error: ${ourWords(part.trim().replace(/\s*\n\s*/g, " "))}`

/**
 * `Options.withDefault` that also says the default in the help.
 *
 * @since 0.2.0
 * @category flags
 */
export const withDefault =
  <const B>(fallback: B, shown: string = String(fallback)) => <A>(self: Options.Options<A>): Options.Options<A | B> =>
    self.pipe(Options.withDefault(fallback), Options.withDescription(`Default: ${shown}.`))
