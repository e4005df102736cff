/**
 * The plans' tables read by model: what the service's own data says a key of a plan may send to a model a minute,
 * as budgets (requests, input tokens, output tokens), and what it costs. The tables are generated from the portal's
 * exports (`planTables.ts`); this module only looks them up.
 * @internal
 */
import { type Limit, type Limits, noLimits, shared } from "./budgets.js"
import { type Figure, type ModelRow, plans, type PlanTable, regions } from "./planTables.js"

/** A plan of the service: the name `AIFS_TIER` takes. */
export type Plan = keyof typeof plans

/** Every plan, legacy ones first, as the tables list them. */
export const planNames = Object.keys(plans) as ReadonlyArray<Plan>

/** Whether `name` names a plan. */
export const isPlan = (name: string | undefined): name is Plan => name !== undefined && Object.hasOwn(plans, name)

/** A model's row in a plan's table, by its API id (or an id the API is inferred to use for it); ids are exact. */
export const rowOf = (plan: Plan, model: string): ModelRow | undefined => {
  const table = plans[plan]
  const models: Readonly<Record<string, ModelRow>> = table.models
  const aliases: Readonly<Record<string, string>> = table.aliases
  if (Object.hasOwn(models, model)) return models[model]
  return Object.hasOwn(aliases, model) ? models[aliases[model]!] : undefined
}

/** A table's models under the ids the API is inferred to use, price-band rows left out. */
const idsOf = (table: PlanTable): ReadonlyArray<string> => {
  const byRow = new Map(Object.entries(table.aliases).map(([alias, row]) => [row, alias]))
  return Object.keys(table.models).filter((row) => !Object.hasOwn(table.bands, row)).map((row) => byRow.get(row) ?? row)
}

const served = new Map(planNames.map((plan) => [plan, idsOf(plans[plan])]))

/**
 * The models of a plan by the ids the API is inferred to use, in the table's order: a row under its alias where it has
 * one (`gpt-4o` for `gpt-4o-2024-11-20`), price-band rows left out (`claude-sonnet-4.5-long-context` is a price of
 * `claude-sonnet-4.5`, not a model).
 */
export const modelsOf = (plan: Plan): ReadonlyArray<string> => served.get(plan)!

/** Whether a plan has a model, by its API id (exact: ids are case-sensitive, a dated or price-band row id is none). */
export const hasModel = (plan: Plan, model: string): boolean => modelsOf(plan).includes(model)

/** Where a model is hosted (`otc-germany`, `azure-sweden-central`, `gcp-europe-west1`...), by its API id. */
export const regionOf = (model: string): string | undefined =>
  Object.hasOwn(regions, model) ? regions[model] : undefined

const limitOf = (figure: Figure): Limit => typeof figure === "number" ? { value: figure, source: "plan" } : shared

/**
 * A model's limits on a plan: requests, input and output tokens from its row (no combined budget: the plans have
 * none); `undefined` when the plan's table lacks the model (its limits are then learnt).
 */
export const presetOf = (plan: Plan, model: string): Limits | undefined => {
  const row = rowOf(plan, model)
  if (row === undefined) return undefined
  return { ...noLimits, requests: limitOf(row[0]), input: limitOf(row[1]), output: limitOf(row[2]) }
}

/** A model's context window on a plan, in tokens, when the table gives one. */
export const contextOf = (plan: Plan, model: string): number | undefined => rowOf(plan, model)?.[3]

/**
 * A model's context window whatever the plan, in tokens: a window is the model's, not the plan's (every plan that
 * gives one gives the same; the legacy plans give none); `undefined` when no plan gives one.
 */
export const contextWindowOf = (model: string): number | undefined =>
  planNames.map((plan) => contextOf(plan, model)).find((window) => window !== undefined)

/** A model's prices on a plan: EUR per million input and output tokens. */
export const pricesOf = (
  plan: Plan,
  model: string
): { readonly input: number; readonly output: number } | undefined => {
  const row = rowOf(plan, model)
  return row === undefined ? undefined : { input: row[4], output: row[5] }
}

/** Models metered by requests alone: their token budgets (tiny, 109 to 870) are not text tokens of an upload. */
export const requestsOnly = (model: string): boolean => /^whisper/i.test(model)

/**
 * The smallest context window the tables give a model metered by tokens: a request asking for fewer tokens fits every
 * model the service sells (and is not worth a `/models` listing to find its model's window).
 */
export const smallestWindow: number = Math.min(
  ...planNames.flatMap((plan) =>
    Object.entries<ModelRow>(plans[plan].models).flatMap(([model, row]) =>
      row[3] === undefined || requestsOnly(model) ? [] : [row[3]]
    )
  )
)

/**
 * A quarter of what a request gets of `dimension` on the plans' rows with fixed limits, audio aside: the figure a
 * twentieth of the rows fall below (the fewest is a known error of the data: gpt-4o on standard3000, 10 a request). A
 * window refused with fewer tokens a request than this was not refused by that token budget on any plan the service
 * sells, however the tokens were estimated. Scale-free: a window of any length holds requests and tokens alike.
 */
export const fewTokensPerRequest = (dimension: "input" | "output"): number => {
  const ratios: Array<number> = []
  for (const plan of planNames) {
    for (const [model, row] of Object.entries<ModelRow>(plans[plan].models)) {
      const [requests, input, output] = row
      const tokens = dimension === "input" ? input : output
      if (requestsOnly(model) || typeof requests !== "number" || typeof tokens !== "number") continue
      ratios.push(tokens / requests)
    }
  }
  ratios.sort((a, b) => a - b)
  return ratios[Math.floor(ratios.length / 20)]! / 4
}
