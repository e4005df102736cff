/**
 * Lexical retrieval of the emulated query pipeline: files are cut into passages, a question's words are
 * scored against them (term frequency times inverse document frequency), and the best passages ground the
 * answer. Deterministic, no model.
 *
 * @since 0.1.0
 */

/**
 * A passage of an ingested file.
 *
 * @since 0.1.0
 * @category models
 */
export interface Passage {
  /** The passage's text. */
  readonly text: string
  /** Its index in the file. */
  readonly index: number
}

/**
 * A passage with its file and score.
 *
 * @since 0.1.0
 * @category models
 */
export interface Hit {
  readonly fileId: string
  readonly fileName: string
  readonly passage: string
  readonly score: number
}

const stopwords = new Set(
  ("a an and are as at be by do does for from has have how i in is it its of on or that the this to was what " +
    "when where which who why will with you your my me our can could would should about into there their they")
    .split(" ")
)

/**
 * The content words of a text, lower-cased.
 *
 * @since 0.1.0
 * @category text
 */
export const terms = (text: string): ReadonlyArray<string> =>
  (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((word) => word.length > 1 && !stopwords.has(word))

/**
 * Cuts a text into passages: paragraphs, and paragraphs longer than about 600 characters by sentences.
 *
 * @since 0.1.0
 * @category text
 */
export const chunkText = (text: string): ReadonlyArray<Passage> => {
  const pieces: Array<string> = []
  for (const paragraph of text.split(/\n\s*\n/)) {
    const clean = paragraph.replace(/\s+/g, " ").trim()
    if (clean === "") continue
    if (clean.length <= 600) {
      pieces.push(clean)
      continue
    }
    let current = ""
    for (const sentence of clean.split(/(?<=[.!?])\s+/)) {
      if (current !== "" && current.length + sentence.length > 600) {
        pieces.push(current)
        current = ""
      }
      current = current === "" ? sentence : `${current} ${sentence}`
    }
    if (current !== "") pieces.push(current)
  }
  return pieces.filter((p) => terms(p).length > 0).map((text, index) => ({ text, index }))
}

/**
 * The best passages for a question, highest score first; only passages sharing a word with it.
 *
 * @since 0.1.0
 * @category retrieval
 */
export const search = (
  question: string,
  documents: ReadonlyArray<
    { readonly fileId: string; readonly fileName: string; readonly passages: ReadonlyArray<Passage> }
  >,
  top = 3
): ReadonlyArray<Hit> => {
  const all = documents.flatMap((doc) => doc.passages.map((p) => ({ doc, passage: p, words: terms(p.text) })))
  const query = [...new Set(terms(question))]
  const df = new Map<string, number>()
  for (const { words } of all) for (const word of new Set(words)) df.set(word, (df.get(word) ?? 0) + 1)
  const scored = all.map(({ doc, passage, words }) => {
    let score = 0
    for (const term of query) {
      const tf = words.filter((w) => w === term).length
      if (tf > 0) score += (1 + Math.log(tf)) * Math.log(1 + all.length / (df.get(term) ?? 1))
    }
    return { fileId: doc.fileId, fileName: doc.fileName, passage: passage.text, score: Math.round(score * 1000) / 1000 }
  })
  return scored.filter((hit) => hit.score > 0).sort((a, b) => b.score - a.score).slice(0, top)
}
