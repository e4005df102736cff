/**
 * A tokenizer-free token estimate: runs of letters or digits count one token per four characters, other
 * non-space characters one each (close to BPE counts for English and code, and exact on the emulator).
 * @internal
 */
import { isCount } from "./budgets.js"

// a word (letters and digits, captured) or one other visible character
const tokenPattern = /([\p{L}\p{N}]+)|[^\s\p{L}\p{N}]/gu

/** Estimated tokens of a text: a quarter of each word's length (rounded up), one per other visible character. */
export const estimateText = (text: string): number => {
  let total = 0
  tokenPattern.lastIndex = 0
  for (let match = tokenPattern.exec(text); match !== null; match = tokenPattern.exec(text)) {
    const word = match[1]
    total += word === undefined ? 1 : Math.ceil(word.length / 4)
  }
  return total
}

const record = (u: unknown): Record<string, unknown> | undefined =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? (u as Record<string, unknown>) : undefined

const contentText = (content: unknown): { text: string; images: number } => {
  if (typeof content === "string") return { text: content, images: 0 }
  if (!Array.isArray(content)) return { text: "", images: 0 }
  let text = ""
  let images = 0
  for (const part of content) {
    const p = record(part)
    if (p?.type === "text" && typeof p.text === "string") text += p.text
    else if (p?.type === "image_url") images++
  }
  return { text, images }
}

/** What a request body is expected to cost. */
export interface BodyEstimate {
  /** The model the body names. */
  readonly model: string | undefined
  /** Input tokens. */
  readonly promptTokens: number
  /** The output cap the body sets (`max_completion_tokens`, `max_tokens`, `max_output_tokens`), if any. */
  readonly maxOutputTokens: number | undefined
  /** False for requests that generate nothing (embeddings). */
  readonly generates: boolean
}

/**
 * Estimates a JSON request body of chat completions, completions, embeddings or responses: 3 tokens per
 * message plus its text and 3 to prime the reply, tool definitions as JSON, 85 per image.
 */
export const estimateBody = (path: string, body: unknown): BodyEstimate => {
  const b = record(body) ?? {}
  const model = typeof b.model === "string" ? b.model : undefined
  const cap = [b.max_completion_tokens, b.max_tokens, b.max_output_tokens].find(isCount)
  let prompt = 0
  if (Array.isArray(b.messages)) {
    prompt += 3
    for (const message of b.messages) {
      const m = record(message) ?? {}
      const { images, text } = contentText(m.content)
      prompt += 3 + estimateText(text) + images * 85
      if (typeof m.name === "string") prompt += 1
      if (m.tool_calls !== undefined) prompt += estimateText(JSON.stringify(m.tool_calls))
    }
  }
  if (Array.isArray(b.tools) && b.tools.length > 0) prompt += estimateText(JSON.stringify(b.tools))
  const inputs = b.prompt ?? b.input
  if (typeof inputs === "string") prompt += estimateText(inputs)
  else if (Array.isArray(inputs)) {
    for (const input of inputs) {
      prompt += typeof input === "string" ? estimateText(input) : estimateText(JSON.stringify(input))
    }
  }
  if (typeof b.instructions === "string") prompt += estimateText(b.instructions)
  return { model, promptTokens: prompt, maxOutputTokens: cap, generates: !path.endsWith("/embeddings") }
}
