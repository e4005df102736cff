// Lint and format in one pass: typescript-eslint for correctness, the Effect dprint rule for layout
// (the settings of the Effect monorepo: 2 spaces, 120 columns, no semicolons, double quotes).
import effect from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "coverage/**", "bench/results/**", ".stryker-tmp*/**", "scratch/**"] },
  ...tseslint.configs.recommended,
  ...effect.configs.dprint,
  {
    files: ["**/*.ts", "**/*.mjs"],
    rules: {
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/ban-ts-comment": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "no-console": "error"
    }
  },
  {
    files: ["src/cli/**/*.ts", "bench/**/*.ts", "examples/**/*.ts", "test/**/*.ts", "scripts/**/*.mjs"],
    rules: { "no-console": "off" }
  }
)
