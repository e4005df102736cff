// The types of stryker.config.mjs's exports, for the test that checks them (test/unit/mutationConfig.test.ts).

/** An equivalent mutant's place: a line of a module, the mutators whose mutants there are equivalent, and why. */
export interface Equivalent {
  readonly file: string;
  readonly line: string;
  readonly mutators: ReadonlyArray<string>;
  readonly reason: string;
}

export declare const groups: Readonly<Record<string, ReadonlyArray<string>>>;
export declare const deferred: Readonly<Record<string, string>>;
export declare const equivalents: ReadonlyArray<Equivalent>;
/** The test configuration of a group whose suites are not the shared one's. */
export declare const testConfigs: Readonly<Record<string, string>>;
/** Modules not mutated, and why. */
export declare const leftOut: ReadonlyArray<{ readonly modules: string; readonly reason: string }>;
declare const config: Readonly<Record<string, unknown>>;
export default config;
