/**
 * `GET /models` and `GET /models/{id}` of the emulator.
 *
 * @since 0.1.0
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import type { Model, ModelList } from "../../schemas/Models.js"
import { catalogue, type CatalogueModel, findModel } from "../catalogue.js"
import { authenticate, reject } from "../http.js"
import type { EmulatorState } from "../state.js"

// the real service shows only `id` and `meta_data`; the emulator sends exactly that, in the wire type (checked by
// the compiler, no validation per request)
const toModel = (m: CatalogueModel): typeof Model.Encoded => ({ id: m.id, meta_data: m.meta })
const list: typeof ModelList.Encoded = { object: "list", data: catalogue.map(toModel) }

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
        yield* authenticate(state)
        return HttpServerResponse.unsafeJson(list)
      })
    ),
    HttpRouter.get(
      "/models/:id",
      Effect.gen(function*() {
        yield* authenticate(state)
        const { id } = yield* HttpRouter.params
        const model = id === undefined ? undefined : findModel(id)
        if (model === undefined) return yield* reject(404, `Model '${id ?? ""}' not found`)
        return HttpServerResponse.unsafeJson(toModel(model))
      })
    )
  )
