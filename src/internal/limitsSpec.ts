/**
 * Custom limits, as the limiter's options and `AIFS_LIMITS` take them. Written as one string, per model
 * `requests/input/output` (the three budgets the service meters, a window each), or the older two-number
 * `requests/tokens` (tokens then a combined budget of input and output); `*` for every model without its own; any
 * part may be left empty: `*=300/300000/150000,gpt-4.1=100//30000,claude-3-7-sonnet=36/60000/30000`.
 * @internal
 */
import * as Either from "effect/Either"

/**
 * One model's limits per window: requests (`rpm`), input tokens (`itpm`), output tokens (`otpm`), and a combined
 * token budget (`tpm`, input and output together), each optional (the portal's names for them).
 */
export interface Quota {
  readonly rpm?: number | undefined
  readonly itpm?: number | undefined
  readonly otpm?: number | undefined
  readonly tpm?: number | undefined
}

const example = "*=300/300000/150000,gpt-4.1=100//30000"

/** A positive whole number, `undefined` for an empty part, `null` for anything else. */
const count = (text: string): number | undefined | null => {
  if (text.trim() === "") return undefined
  return /^\d+$/.test(text.trim()) && Number(text) > 0 ? Number(text) : null
}

/** The quota of one entry's right side, or null when it is not one. */
const quotaOf = (text: string): Quota | null => {
  const parts = text.split("/").map(count)
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => p === null)) return null
  if (parts.every((p) => p === undefined)) return null
  const [rpm, second, third] = parts as Array<number | undefined>
  const quota = parts.length === 3 ? { rpm, itpm: second, otpm: third } : { rpm, tpm: second }
  return Object.fromEntries(Object.entries(quota).filter(([, value]) => value !== undefined))
}

/** The limits of `text` by model, or what is wrong with it (one line, naming the entry). */
export const parseLimits = (text: string): Either.Either<Record<string, Quota>, string> => {
  const limits: Record<string, Quota> = {}
  for (const entry of text.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const match = /^([^=\s]+)\s*=\s*(.*)$/.exec(entry)
    const quota = match === null ? null : quotaOf(match[2]!)
    if (match === null || quota === null) {
      return Either.left(
        `"${entry}" is not model=requests/input/output (or model=requests/tokens) with positive whole numbers ` +
          `(for example ${example})`
      )
    }
    const model = match[1]!
    if (model in limits) return Either.left(`"${model}" is given twice`)
    limits[model] = quota
  }
  return Either.right(limits)
}
