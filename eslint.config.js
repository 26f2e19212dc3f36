// ESLint over the hand-written TypeScript and scripts (generated data and build output left out).
// Rules: the recommended sets of ESLint and typescript-eslint, less those the code base does not follow
// (listed below with the reason). Import cycles, between files and between folders, type imports included,
// are test/imports.test.ts's: it reads the import graph once instead of parsing every file again per rule.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "src/generated/**", "clients/typescript/src/openapi.d.ts", "console/dist/**", "node_modules/**", ".wrangler/**", "**/*.d.ts", "**/*.d.mts",
    ],
  },
  {
    files: [
      "src/**/*.ts", "test/**/*.ts", "test/**/*.mjs", "scripts/**/*.mjs", "console/src/**/*.ts", "clients/typescript/src/**/*.ts", "examples/**/*.ts", "bench/**/*.ts",
      "*.config.ts", "eslint.config.js",
    ],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: { ecmaVersion: 2023, sourceType: "module" },
    rules: {
      // A leading underscore names a value left out on purpose (a rest sibling, an unused parameter).
      "@typescript-eslint/no-unused-vars": ["error", {
        argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_", ignoreRestSiblings: true,
      }],
      "no-empty": ["error", { allowEmptyCatch: true }],
      // Type checking is tsc's (npm test runs it); ESLint's own undefined-name check does not know the runtime's globals.
      "no-undef": "off",
      // Off: not followed by the code base. Tests and the console read loosely typed JSON answers.
      "@typescript-eslint/no-explicit-any": "off",
      // The tokenizer and validators match ASCII and control ranges on purpose.
      "no-control-regex": "off",
      // `let x = fallback; try { x = … } catch {}` is the code base's idiom for a value with a fallback.
      "no-useless-assignment": "off",
      // Errors rethrown as ApiError carry their own message; the cause is logged where it matters.
      "preserve-caught-error": "off",
    },
  },
);
