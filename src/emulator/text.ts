/**
 * Deterministic text for the emulator: a tokenizer whose counts the usage reports honestly, a seeded
 * generator of answers, and bag-of-words embeddings (similar texts get similar vectors).
 *
 * @since 0.1.0
 */
import { estimateText } from "../internal/tokens.js"

/**
 * Counts tokens the way the emulator charges them: every run of letters or digits is one token per four
 * characters (rounded up), every other non-space character is one token. About what a BPE tokenizer gives
 * for English text; the client's default estimator counts the same way.
 *
 * @since 0.1.0
 * @category tokens
 */
export const countTokens: (text: string) => number = estimateText

/**
 * FNV-1a hash of a string, as an unsigned 32-bit seed.
 *
 * @since 0.1.0
 * @category random
 */
export const hash = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/**
 * A small seeded generator (mulberry32): the same seed gives the same sequence in [0, 1).
 *
 * @since 0.1.0
 * @category random
 */
export const seeded = (seed: number): () => number => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const vocabulary = (
  "the a model answer request token limit window quota key service emulator stream chunk response client " +
  "effect layer schema error retry header minute second budget queue batch vector store file search text " +
  "local deterministic result value reason data system user assistant tool call function message content " +
  "fast steady careful simple honest clear small large every each many few first last next good useful " +
  "runs sends waits reads writes counts returns keeps gives takes finds shows makes uses meets follows"
).split(" ")

/**
 * Deterministic words: sentences of `vocabulary` words drawn from the seed, as pieces (each piece one word
 * with its leading space or punctuation), stopping before `maxTokens` would be exceeded.
 *
 * @since 0.1.0
 * @category generation
 */
export const generatePieces = (seed: number, prefix: string, maxTokens: number): Array<string> => {
  const random = seeded(seed)
  const pieces: Array<string> = []
  let used = 0
  const push = (piece: string, limit = maxTokens): boolean => {
    const cost = countTokens(piece)
    if (used + cost > limit) return false
    pieces.push(piece)
    used += cost
    return true
  }
  for (const word of prefix.split(/(?<=\s)/)) {
    if (word !== "" && !push(word)) return pieces
  }
  let sentenceLength = 0
  let capitalise = true
  // one token is kept for the closing full stop
  while (used < maxTokens - 1) {
    const word = vocabulary[Math.floor(random() * vocabulary.length)]!
    const text = capitalise ? word[0]!.toUpperCase() + word.slice(1) : word
    const joined = pieces.length === 0 || /\s$/.test(pieces[pieces.length - 1]!)
    if (!push(joined ? text : ` ${text}`, maxTokens - 1)) break
    capitalise = false
    sentenceLength++
    if (sentenceLength >= 6 + Math.floor(random() * 6)) {
      if (!push(".")) break
      sentenceLength = 0
      capitalise = true
    }
  }
  if (pieces.length > 0 && pieces[pieces.length - 1] !== ".") push(".")
  return pieces
}

/**
 * The natural length of an answer for a seed: between 24 and 72 tokens.
 *
 * @since 0.1.0
 * @category generation
 */
export const naturalLength = (seed: number): number => 24 + (seed % 49)

/**
 * A deterministic unit vector for a text: each word hashed into a dimension with a sign, so texts sharing
 * words have a high cosine similarity.
 *
 * @since 0.1.0
 * @category embeddings
 */
export const embed = (text: string, dimensions: number): Array<number> => {
  const vector = new Array<number>(dimensions).fill(0)
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
  for (const word of words) {
    const h = hash(word)
    vector[h % dimensions]! += (h & 0x80000000) === 0 ? 1 : -1
  }
  // a faint seeded background so that empty or one-word texts still give a usable vector
  const random = seeded(hash(text))
  for (let i = 0; i < dimensions; i++) vector[i]! += (random() - 0.5) * 0.01
  const norm = Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0)) || 1
  // float32 on the wire: round here so that float and base64 responses carry the same numbers
  return vector.map((v) => Math.fround(v / norm))
}
