/**
 * `aifs images`: generate images into PNG files, edit an image (through the queue).
 *
 * @since 0.1.0
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { writeFileSync } from "node:fs"
import { resolve } from "node:path"
import type { ImagesResponse } from "../schemas/Images.js"
import * as Images from "../services/Images.js"
import { client } from "./environment.js"
import { withDefault } from "./help.js"
import { UsageError } from "./output.js"

const modelOption = Options.text("model").pipe(
  Options.withAlias("m"),
  Options.withDescription("Image model (default gpt-image-1)"),
  withDefault("gpt-image-1")
)
const outOption = Options.text("out").pipe(
  Options.withAlias("o"),
  Options.withDescription("Output file (several images: -1, -2... before the extension)"),
  withDefault("image.png")
)

const save = (result: ImagesResponse, out: string) =>
  Effect.forEach(result.bytes, (bytes, i) =>
    Effect.gen(function*() {
      const path = result.bytes.length === 1 ? out : out.replace(/(\.\w+)?$/, (ext) => `-${i + 1}${ext}`)
      yield* Effect.sync(() => writeFileSync(path, bytes))
      yield* Console.log(`${path}\t${bytes.length} bytes`)
    }))

const generate = Command.make(
  "generate",
  {
    prompt: Args.text({ name: "PROMPT" }).pipe(Args.withDescription("What to draw")),
    model: modelOption,
    out: outOption,
    n: Options.integer("n").pipe(Options.withDescription("How many images"), withDefault(1)),
    size: Options.text("size").pipe(Options.withDescription("Size, e.g. 1024x1024"), withDefault("1024x1024"))
  },
  ({ model, n, out, prompt, size }) =>
    Effect.gen(function*() {
      const images = yield* Images.Images
      yield* save(yield* images.generate({ model, prompt, n, size }), out)
    }).pipe(Effect.provide(client))
).pipe(Command.withDescription("Generate images and write them as PNG files"))

/** Where an edit of `image` goes: `--out`, never the image itself (it would be lost), or beside it. */
const editedPath = (image: string, out: Option.Option<string>): Effect.Effect<string, UsageError> =>
  Option.match(out, {
    onNone: () => Effect.succeed(image.replace(/(\.\w+)?$/, "-edited.png")),
    onSome: (path) =>
      resolve(path) === resolve(image)
        ? Effect.fail(new UsageError(`--out is the image being edited (${path}): name another file`))
        : Effect.succeed(path)
  })

const edit = Command.make(
  "edit",
  {
    image: Args.file({ name: "IMAGE", exists: "yes" }).pipe(Args.withDescription("The image to edit")),
    prompt: Args.text({ name: "PROMPT" }).pipe(Args.withDescription("What to change")),
    model: modelOption,
    out: Options.text("out").pipe(
      Options.withAlias("o"),
      Options.withDescription(
        "Output file (several images: -1, -2... before the extension). Default: IMAGE-edited.png."
      ),
      Options.optional
    )
  },
  ({ image, model, out, prompt }) =>
    // refused before any client starts
    Effect.flatMap(editedPath(image, out), (path) =>
      Effect.gen(function*() {
        const images = yield* Images.Images
        yield* save(yield* images.edit({ model, prompt, image: Images.fromPath(image) }), path)
      }).pipe(Effect.provide(client)))
).pipe(Command.withDescription("Edit an image (sent through the queue)"))

/**
 * `aifs images`.
 *
 * @since 0.1.0
 * @category commands
 */
export const imagesCommand = Command.make("images").pipe(
  Command.withDescription("Generate and edit images"),
  Command.withSubcommands([generate, edit])
)
