// The types of scripts/stryker-equivalents.mjs's export, for the test that runs it (test/unit/mutationConfig.test.ts).
import type { Ignorer } from "@stryker-mutator/api/ignore";

export declare const strykerPlugins: ReadonlyArray<{ readonly value: Ignorer }>;

export declare const discardReason: string;
