/**
 * Custom limits written as one string, as `AIFS_LIMITS` takes them: `*=600/150000,gpt-4.1=100/30000` (per model
 * `requests/tokens` per window; `*` for every model without its own; either side may be left empty).
 * @internal
 */
import * as Either from "effect/Either"
import type { Quota } from "./slidingWindow.js"

const example = "*=600/150000,gpt-4.1=100/30000"

const count = (text: string): number | undefined | null => {
  if (text.trim() === "") return undefined
  return /^\d+$/.test(text.trim()) && Number(text) > 0 ? Number(text) : null
}

/** The limits of `text` by model, or what is wrong with it (one line, naming the entry). */
export const parseLimits = (text: string): Either.Either<Record<string, Partial<Quota>>, string> => {
  const limits: Record<string, Partial<Quota>> = {}
  for (const entry of text.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const match = /^([^=\s]+)\s*=\s*([^/]*)\/(.*)$/.exec(entry)
    const rpm = match === null ? null : count(match[2]!)
    const tpm = match === null ? null : count(match[3]!)
    if (match === null || rpm === null || tpm === null || (rpm === undefined && tpm === undefined)) {
      return Either.left(
        `"${entry}" is not model=requests/tokens with positive whole numbers (for example ${example})`
      )
    }
    const model = match[1]!
    if (model in limits) return Either.left(`"${model}" is given twice`)
    limits[model] = { ...(rpm === undefined ? {} : { rpm }), ...(tpm === undefined ? {} : { tpm }) }
  }
  return Either.right(limits)
}
