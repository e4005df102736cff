/**
 * The emulator's prompt cache, as the service's docs describe it for the Claude models (not verified against the live
 * service): `cache_control` breakpoints on tool definitions, messages and content parts end prefixes of the prompt
 * (tools first, then the messages in order, as Anthropic reads them). A breakpoint writes its prefix for the key and
 * model; a later request whose prompt starts with a written prefix, within 20 blocks before one of its own
 * breakpoints, reads the longest such prefix back while it lives (`ttl` `1h`, else 5 minutes of the emulator's clock,
 * renewed by each read). Other models cache nothing here: the open-source models' own prefix caching is automatic and
 * reports no counts, so none is emulated. No minimum prefix length is enforced (Anthropic's is 1,024 tokens and
 * more); the entries are capped, the least recently used dropped first.
 *
 * @since 0.5.0
 */
import { createHash } from "node:crypto"
import type { CacheControl, ChatMessage, CreateChatCompletionParams } from "../schemas/Chat.js"
import { imageTokens } from "./generate.js"
import { countTokens } from "./text.js"

/**
 * What a request read from and wrote to the cache, in prompt tokens.
 *
 * @since 0.5.0
 * @category models
 */
export interface CacheUse {
  readonly read: number
  readonly written: number
}

/** One block of a prompt in cache order: what identifies it, its tokens, and the lifetime of a breakpoint after it. */
interface Block {
  readonly text: string
  readonly tokens: number
  readonly ttlMs: number | undefined
}

/** A prefix of a prompt, up to the end of one block: its digest and its tokens (the reply's priming included). */
interface Prefix {
  readonly digest: string
  readonly tokens: number
  readonly ttlMs: number | undefined
}

const fiveMinutes = 5 * 60_000

/** How far before a breakpoint a read looks for a written prefix, in blocks (Anthropic's lookback). */
const lookback = 20

/** A breakpoint's lifetime: an hour for `ttl: "1h"`, else five minutes; none without a breakpoint. */
const ttlOf = (control: CacheControl | undefined): number | undefined =>
  control === undefined ? undefined : control.ttl === "1h" ? 60 * 60_000 : fiveMinutes

/** What identifies a part of the prompt: itself without its breakpoint (moving a breakpoint keeps the prefix). */
const identity = <A extends { readonly cache_control?: CacheControl | undefined }>(value: A): string => {
  const { cache_control: _, ...rest } = value
  return JSON.stringify(rest)
}

/** A message's blocks: one for text content, else one per part; the message's own tokens go with the first. */
const messageBlocks = (message: ChatMessage): Array<Block> => {
  const { content, ...header } = message
  let own = 3 + ("name" in message && message.name ? 1 : 0)
  if (message.role === "assistant" && message.tool_calls) own += countTokens(JSON.stringify(message.tool_calls))
  const messageTtl = ttlOf(message.cache_control)
  if (content === undefined || content === null || typeof content === "string") {
    return [{ text: identity({ ...header, content }), tokens: own + countTokens(content ?? ""), ttlMs: messageTtl }]
  }
  if (content.length === 0) return [{ text: identity(header), tokens: own, ttlMs: messageTtl }]
  return content.map((part, i) => ({
    text: i === 0 ? `${identity(header)}${identity(part)}` : identity(part),
    tokens: (i === 0 ? own : 0) + (part.type === "text" ? countTokens(part.text) : imageTokens),
    ttlMs: ttlOf(part.cache_control) ?? (i === content.length - 1 ? messageTtl : undefined)
  }))
}

/** The prompt's blocks in cache order: each tool definition, then the messages' blocks. */
const blocksOf = (params: CreateChatCompletionParams): Array<Block> => [
  ...(params.tools ?? []).map((tool) => ({
    text: identity(tool),
    tokens: countTokens(JSON.stringify(tool)),
    ttlMs: ttlOf(tool.cache_control)
  })),
  ...params.messages.flatMap(messageBlocks)
]

/** The prefix ending at each block, for one model: a running digest and a running count. */
const prefixesOf = (model: string, blocks: ReadonlyArray<Block>): Array<Prefix> => {
  const hash = createHash("sha256").update(model)
  let tokens = 3
  return blocks.map((block) => {
    hash.update(`\u0000${block.text}`)
    tokens += block.tokens
    return { digest: hash.copy().digest("base64"), tokens, ttlMs: block.ttlMs }
  })
}

/**
 * The prompt cache of one emulator: written prefixes per key and model, with the time each expires.
 *
 * @since 0.5.0
 * @category models
 */
export class PromptCache {
  private readonly entries = new Map<string, { expiresAt: number; readonly ttlMs: number }>()

  /** At most `capacity` prefixes are kept (default 4,096). */
  constructor(readonly capacity = 4_096) {}

  /**
   * Reads and writes the cache for a request of `key` to `model` at `now`: `undefined` for a model that is not a
   * Claude model; nothing read or written without breakpoints.
   */
  use(key: string, model: string, params: CreateChatCompletionParams, now: number): CacheUse | undefined {
    if (!model.startsWith("claude-")) return undefined
    const prefixes = prefixesOf(model, blocksOf(params))
    const breaks = prefixes.flatMap((prefix, i) => prefix.ttlMs === undefined ? [] : [i])
    const last = breaks[breaks.length - 1]
    if (last === undefined) return { read: 0, written: 0 }
    const hit = this.longestLive(key, prefixes, breaks, now)
    const read = hit === undefined ? 0 : prefixes[hit]!.tokens
    for (const at of breaks) {
      if (hit === undefined || at > hit) this.write(`${key}\u0000${prefixes[at]!.digest}`, prefixes[at]!.ttlMs!, now)
    }
    return { read, written: hit === undefined || last > hit ? prefixes[last]!.tokens - read : 0 }
  }

  /** The longest written prefix still alive within the lookback of a breakpoint (renewed), or undefined. */
  private longestLive(
    key: string,
    prefixes: ReadonlyArray<Prefix>,
    breaks: ReadonlyArray<number>,
    now: number
  ): number | undefined {
    for (let b = breaks.length - 1; b >= 0; b--) {
      const at = breaks[b]!
      for (let i = at; i >= 0 && i > at - lookback; i--) {
        const id = `${key}\u0000${prefixes[i]!.digest}`
        const entry = this.entries.get(id)
        if (entry !== undefined && entry.expiresAt <= now) this.entries.delete(id)
        else if (entry !== undefined) {
          this.write(id, entry.ttlMs, now)
          return i
        }
      }
    }
    return undefined
  }

  /** Writes (or renews) a prefix as the most recently used; past the capacity, the least recently used goes. */
  private write(id: string, ttlMs: number, now: number): void {
    this.entries.delete(id)
    this.entries.set(id, { expiresAt: now + ttlMs, ttlMs })
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!)
  }

  /** How many prefixes are kept. */
  get size(): number {
    return this.entries.size
  }
}
