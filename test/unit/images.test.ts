/**
 * Images on a scripted transport: generations on `/v2`, edits on `/queue/images/edits` as multipart, and the
 * documented answer.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ImagesResponse } from "../../src/schemas/Images.js"
import * as Images from "../../src/services/Images.js"
import { capturing, formOf, urlOf } from "./surfaceHelpers.js"

const documented = `{"created": 1710000000, "data": [{"b64_json": "iVBORw0KGgo="}]}`

describe("Images", () => {
  it("decodes the documented answer and variants", () => {
    const images = Schema.decodeUnknownSync(ImagesResponse)(JSON.parse(documented))
    assert.strictEqual(images.created, 1710000000)
    assert.deepStrictEqual([...images.bytes[0]!.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47])
    assert.deepStrictEqual(images.urls, ["data:image/png;base64,iVBORw0KGgo="])
    const url = Schema.decodeUnknownSync(ImagesResponse)({
      data: [{ url: "https://x/y.png", b64_json: null }],
      usage: {}
    })
    assert.deepStrictEqual(url.urls, ["https://x/y.png"])
    assert.strictEqual(url.bytes.length, 0)
  })

  it.effect("generate posts JSON to /v2/images/generations; edit posts multipart to /queue/images/edits", () => {
    const { layer, requests } = capturing(() => ({ body: JSON.parse(documented) }))
    return Effect.gen(function*() {
      const images = yield* Images.Images
      yield* images.generate({ model: "gpt-image-1", prompt: "a fox", size: "1024x1024" })
      assert.strictEqual(urlOf(requests[0]).pathname, "/v2/images/generations")
      const body = requests[0]!.body
      assert.deepStrictEqual(
        body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(body.body)) : undefined,
        { model: "gpt-image-1", prompt: "a fox", size: "1024x1024" }
      )
      const edited = yield* images.edit({
        model: "gpt-image-1",
        prompt: "blue",
        image: Images.fromBytes(new Uint8Array([0x89, 0x50]), "in.png", "image/png"),
        n: 2
      })
      assert.strictEqual(edited.data.length, 1)
      assert.strictEqual(urlOf(requests[1]).pathname, "/queue/images/edits")
      const form = yield* formOf(requests[1])
      assert.deepStrictEqual(form.fields, { model: "gpt-image-1", prompt: "blue", n: "2" })
      assert.deepStrictEqual(form.files.image?.filename, "in.png")
    }).pipe(Effect.provide(layer))
  })
})
