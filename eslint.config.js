// ESLint over the hand-written TypeScript and scripts (generated data and build output left out).
// Rules: the recommended sets of ESLint and typescript-eslint, less those the code base does not follow
// (listed below with the reason), plus import-x/no-cycle over the service's and the console's sources: no
// module may import itself back through others. Tests and scripts are left out of that rule: each of them
// reaches most of src/, and following those imports from every one of them took 40 s of a 60 s lint.
// test/imports.test.ts checks the same from the import graph, and cycles between folders.
import js from "@eslint/js";
import { createNodeResolver, importX } from "eslint-plugin-import-x";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "src/generated/**",
      "clients/typescript/src/openapi.d.ts",
      "console/dist/**",
      "node_modules/**",
      ".wrangler/**",
      "**/*.d.ts",
      "**/*.d.mts",
    ],
  },
  {
    files: [
      "src/**/*.ts",
      "test/**/*.ts",
      "test/**/*.mjs",
      "scripts/**/*.mjs",
      "console/src/**/*.ts",
      "clients/typescript/src/**/*.ts",
      "examples/**/*.ts",
      "bench/**/*.ts",
      "*.config.ts",
      "eslint.config.js",
    ],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: { ecmaVersion: 2023, sourceType: "module" },
    rules: {
      // A leading underscore names a value left out on purpose (a rest sibling, an unused parameter).
      "@typescript-eslint/no-unused-vars": [
        "error",
        {
          argsIgnorePattern: "^_",
          varsIgnorePattern: "^_",
          destructuredArrayIgnorePattern: "^_",
          ignoreRestSiblings: true,
        },
      ],
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
  {
    files: ["src/**/*.ts", "console/src/**/*.ts"],
    plugins: { "import-x": importX },
    settings: {
      "import-x/resolver-next": [createNodeResolver({ extensions: [".ts", ".mjs", ".js"] })],
      // no-cycle follows imports by parsing the files they name: TypeScript ones with its parser.
      "import-x/extensions": [".ts", ".mjs", ".js"],
      "import-x/parsers": { "@typescript-eslint/parser": [".ts"] },
    },
    rules: { "import-x/no-cycle": "error" },
  },
);
