// The test configuration of the mutation group `decoders` (stryker.config.mjs): the chat schemas and their
// hand-written fast decoders, against the schemas they stand for (test/properties/fastDecoders.test.ts) and in the
// unit and integration tests of chat answers, streams and prompt caching.
import { defineConfig } from "vitest/config"
import mutation from "./vitest.mutation.config.js"

export default defineConfig({
  ...mutation,
  test: {
    ...mutation.test,
    include: [
      "test/properties/fastDecoders.test.ts",
      "test/unit/{chunkFromWire,completionFromWire,decoderProperties,chatStream,schemas,promptCache,aiConversion}.test.ts",
      "test/integration/{endpoints,promptCaching}.test.ts"
    ]
  }
})
