/**
 * The routers of the rest of the inference surface (files, fine-tuning, audio, images, responses, vector
 * stores), grouped by where they are mounted: `/v2`, `/v1` and the queue root.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import type { LimitMode } from "../http.js"
import type { EmulatorState } from "../state.js"
import * as Audio from "./audio.js"
import * as Files from "./files.js"
import * as FineTuning from "./fineTuning.js"
import * as Images from "./images.js"
import * as Responses from "./responses.js"
import * as VectorStores from "./vectorStores.js"

/**
 * Paths of these routers (a request with another method gets 405, not 404).
 *
 * @since 0.1.0
 * @category routers
 */
export const knownPaths: ReadonlyArray<RegExp> = [
  /^\/(v1|v2)\/files(\/validate)?(\/[^/]+)?\/?$/,
  /^\/v1\/vector_stores(\/[^/]+(\/files(\/[^/]+)?|\/search)?)?\/?$/,
  /^\/(v2|queue)\/audio\/(transcriptions|translations|models)\/?$/,
  /^\/(v2|queue)\/images\/generations\/?$/,
  /^\/queue\/images\/edits\/?$/,
  /^\/v2\/responses\/?$/,
  /^\/v2\/fine_tuning\/jobs(\/[^/]+(\/cancel|\/events)?)?\/?$/
]

/**
 * The routes under `/v2`.
 *
 * @since 0.1.0
 * @category routers
 */
export const v2 = (state: EmulatorState) =>
  HttpRouter.concatAll(
    Files.router(state, "v2"),
    Audio.router(state, "reject"),
    Images.generations(state, "reject"),
    Responses.router(state, "reject"),
    FineTuning.router(state)
  )

/**
 * The routes under `/v1`.
 *
 * @since 0.1.0
 * @category routers
 */
export const v1 = (state: EmulatorState) =>
  HttpRouter.concatAll(
    Files.router(state, "v1"),
    VectorStores.router(state)
  )

/**
 * The routes under the queue root (besides chat, completions, embeddings and models).
 *
 * @since 0.1.0
 * @category routers
 */
export const queue = (state: EmulatorState) => {
  const mode: LimitMode = "wait"
  return HttpRouter.concatAll(
    Audio.router(state, mode),
    Images.generations(state, mode),
    Images.edits(state, mode)
  )
}
