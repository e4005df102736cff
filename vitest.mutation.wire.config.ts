// The test configuration of the mutation groups `wire` and `decoders` (stryker.config.mjs): the suites that state what
// reaches the wire and what is read back from it. The properties over every operation with an id in its path and
// every upload's names, the gateway's token lifetimes and the fast decoders against their schemas
// (test/properties/), the unit tests of the services and schemas, and the integration tests that send files, uploads
// and gateway calls to the emulator. Its own configuration, so that the other groups' runs (and their incremental
// files) are not charged with suites that see none of their modules.
import { defineConfig } from "vitest/config"
import mutation from "./vitest.mutation.config.js"

export default defineConfig({
  ...mutation,
  test: {
    ...mutation.test,
    include: [
      "test/properties/{pathIds,uploadNames,fastDecoders,gatewayTokens}.test.ts",
      "test/unit/{files,audio,images,vectorStores,gatewayAuth,gatewayServices,gatewaySchemas}.test.ts",
      "test/unit/{chunkFromWire,completionFromWire,decoderProperties,chatStream,schemas}.test.ts",
      "test/integration/{files,vectorStores,gateway,badInput,surface,endpoints}.test.ts"
    ]
  }
})
