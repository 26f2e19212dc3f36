// Every relative link in README.md and docs/*.md points to a file that exists, and every #anchor it
// names is a heading of that file (GitHub's heading ids). External links (http:, https:, mailto:) are
// not fetched.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Markdown text without fenced code blocks and inline code spans (their brackets are not links). */
export function prose(markdown) {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`[^`\n]*`/g, "``");
}

/** The targets of inline links and images: [text](target) and ![alt](target "title"). */
export function linkTargets(markdown) {
  const out = [];
  for (const m of prose(markdown).matchAll(/!?\[(?:[^\][]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
    out.push(m[1]);
  return out;
}

/** GitHub's id for a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function headingIds(markdown) {
  const ids = new Set();
  const seen = new Map();
  const text = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  for (const m of text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const base = m[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link in a heading counts by its text
      .replace(/<[^>]+>/g, "")
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n ? `${base}-${n}` : base);
  }
  // Explicit anchors: <a id="x"></a> or <a name="x">
  for (const m of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) ids.add(m[1]);
  return ids;
}

/** Broken links of one Markdown file: ["target: why"]. */
export function brokenLinks(file) {
  const markdown = readFileSync(file, "utf8");
  const problems = [];
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [pathPart, anchor] = target.split("#", 2);
    const path = decodeURIComponent(pathPart.split("?")[0]);
    const resolved = path ? join(dirname(file), path) : file;
    if (!existsSync(resolved)) {
      problems.push(`${target}: no such file`);
      continue;
    }
    if (anchor === undefined) continue;
    if (statSync(resolved).isDirectory() || !resolved.endsWith(".md")) {
      problems.push(`${target}: an anchor into something that is not a Markdown file`);
      continue;
    }
    if (!headingIds(readFileSync(resolved, "utf8")).has(decodeURIComponent(anchor)))
      problems.push(`${target}: no heading "#${anchor}" in ${relative(root, resolved)}`);
  }
  return problems;
}

test("link targets, code left out, and GitHub heading ids", () => {
  assert.deepEqual(
    linkTargets('See [a](docs/a.md#x), ![s](docs/s.png "t") and `[no](b.md)`.\n```\n[no](c.md)\n```\n'),
    ["docs/a.md#x", "docs/s.png"],
  );
  const ids = headingIds(
    "# API guide\n## `GET /v1/export`: NDJSON\n## Memory loop\n## Memory loop\n### Roles, scopes & the trust ceiling\n",
  );
  assert.deepEqual(
    [...ids],
    ["api-guide", "get-v1export-ndjson", "memory-loop", "memory-loop-1", "roles-scopes--the-trust-ceiling"],
  );
});

test("every relative link in README.md and docs/*.md resolves, anchors included", () => {
  const docs = readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => join(root, "docs", f));
  const report = [];
  for (const file of [join(root, "README.md"), ...docs]) {
    for (const problem of brokenLinks(file)) report.push(`${relative(root, file)}: ${problem}`);
  }
  assert.deepEqual(report, []);
});
