// The test configuration of the mutation group `wire` (stryker.config.mjs): the suites that state what reaches the wire.
// The properties over every operation with an id in its path and every upload's names, and the gateway's token
// lifetimes (test/properties/), the unit tests of the services and of the configuration (the hosts the key goes to,
// the key's file), and the integration tests that send files, uploads, gateway calls and keys to the emulator. Its own configuration, so that the other groups' runs (and their incremental
// files) are not charged with suites that see none of their modules. Each file runs in a module graph of its own: the
// upload property replaces the emulator's upload reader (vi.mock) to see what it read, which a module cache shared
// with a file that loaded the real one first would undo.
import { defineConfig } from "vitest/config"
import mutation from "./vitest.mutation.config.js"

export default defineConfig({
  ...mutation,
  test: {
    ...mutation.test,
    include: [
      "test/properties/{pathIds,uploadNames,gatewayTokens}.test.ts",
      "test/unit/{files,audio,images,vectorStores,gatewayAuth,gatewayServices,gatewayTransport,pathSegment,multipart}.test.ts",
      "test/unit/{requestTargets,config,keyFile}.test.ts",
      "test/integration/{files,vectorStores,gateway,badInput,surface,keyRotation,secrets}.test.ts"
    ],
    isolate: true
  }
})
