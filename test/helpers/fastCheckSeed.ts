/**
 * Property tests run from one seed, so that `npm test` gives the same verdict on every run and a failure is
 * reproduced by running again. `FC_SEED=<number>` runs them from another seed, `FC_SEED=random` from a fresh
 * one each run (to explore); fast-check prints the seed of any failure.
 */
import * as FastCheck from "effect/FastCheck"

const chosen = process.env.FC_SEED
if (chosen !== "random") {
  FastCheck.configureGlobal({
    ...FastCheck.readConfigureGlobal(),
    seed: chosen === undefined ? 20261121 : Number(chosen)
  })
}
