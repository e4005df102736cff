/**
 * `GET /models` and `GET /models/{id}` of the emulator.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import type { Model, ModelList } from "../../schemas/Models.js"
import { type CatalogueModel, catalogueOf, findModel, visibleTo } from "../catalogue.js"
import { authenticate, modelNotFound } from "../http.js"
import type { EmulatorState } from "../state.js"

// the real service shows only `id` and `meta_data`; the emulator sends exactly that, in the wire type (checked by
// the compiler, no validation per request)
const toModel = (m: CatalogueModel): typeof Model.Encoded => ({ id: m.id, meta_data: m.meta })
// a key of a plan sees its plan's models, a custom tier's key every model
const listOf = (tier: string): typeof ModelList.Encoded => ({ object: "list", data: catalogueOf(tier).map(toModel) })

/**
 * The model routes.
 *
 * @since 0.1.0
 * @category routers
 */
export const router = (state: EmulatorState) =>
  HttpRouter.empty.pipe(
    HttpRouter.get(
      "/models",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        return HttpServerResponse.unsafeJson(listOf(key.tier))
      })
    ),
    HttpRouter.get(
      "/models/:id",
      Effect.gen(function*() {
        const key = yield* authenticate(state)
        const { id } = yield* HttpRouter.params
        const model = id === undefined || !visibleTo(key.tier, id) ? undefined : findModel(id)
        if (model === undefined) return yield* modelNotFound(id ?? "")
        return HttpServerResponse.unsafeJson(toModel(model))
      })
    )
  )
