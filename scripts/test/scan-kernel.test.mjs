// src/generated/scan-kernel.wasm is generated: the committed bytes must be exactly what
// scripts/build-scan-kernel.mjs writes (run it after changing the kernel's source). Its results are
// checked in workerd by test/vector-scan.test.ts.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { KERNEL_PATH, scanKernelBytes } from "../build-scan-kernel.mjs";

test("the committed scan kernel is the one its script assembles, and it validates", () => {
  const built = scanKernelBytes();
  assert.deepEqual(new Uint8Array(readFileSync(KERNEL_PATH)), built, "run: node scripts/build-scan-kernel.mjs");
  assert.ok(WebAssembly.validate(built));
});
