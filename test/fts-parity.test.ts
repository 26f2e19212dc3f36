// The JavaScript tokenizer (fts.ts: ftsTokens, queryTerms, porter) against claims_fts's own
// tokenizer (tokenize='porter unicode61') in this runtime's SQLite: ranking statistics, stored stems
// and coverage are computed in JavaScript while candidates are FTS5 matches, so every term on which
// the two disagree would make ranking read the wrong statistics.
import { describe, expect, it } from "vitest";
import { phraseCount, phraseStems, stemsOf, storedTerm } from "../src/domains/memory/fts";
import { queryTerms } from "../src/text/unicode61";
import { TOKEN_RANGES } from "../src/generated/unicode61-tables";
import type { Db } from "../src/sql/db";
import { inOrg } from "./helpers";

/** Texts where a careless tokenizer parts from unicode61. */
const TRICKY = [
  "The runners were running quickly; billing invoices",
  "Ελλάδα ΕΛΛΆΔΑ άλφα ΐ ΰ ς Σ", // Greek accents: unicode61 keeps them (its diacritic table is Latin)
  "ſtate Maßſtab", // long s folds to s
  "ﬁle ﬂow ﬀ Ǆ ǅ ǆ Ĳ", // ligatures and digraphs
  "ＡＢＣ ａｂｃ １２３ ｶﾀｶﾅ", // fullwidth and halfwidth forms
  "İstanbul ISTANBUL ıi Iı", // Turkish dotted and dotless i
  "Straße STRASSE ẞ", // sharp s
  "1\u20e3 2\u0301 x\u0301y \u0301lead", // marks on digits, a leading mark
  "nai\u0308ve cafe\u0301 Cafe\u0300s re\u0301sume\u0301", // decomposed Latin diacritics
  "Ǖ ǖ ṩ Ấ ǻ ȫ", // precomposed letters with two diacritics
  "cheese🧀 smile😀 family👨‍👩‍👧 flag🇫🇷", // emoji, joiners, regional indicators
  "\ue000private\uf8ff \u{f0000}x", // private use
  "한국어 텍스트 ㄱㄴ", // Hangul syllables and jamo
  "日本語のテキスト 中文 豈 丽", // CJK, compatibility ideographs
  "Ა Ბ ა ბ Ᲊ", // Georgian (Mtavruli is newer than Unicode 6.1)
  "𐐀𐐨 Deseret 𝐀𝐁 𝔸", // astral letters, mathematical alphanumerics
  "а\u0483б мо\u0301ре Ёлка", // Cyrillic with a titlo and an accent
  "x\u200by x\u00ady x\u2060y", // zero-width space, soft hyphen, word joiner
  "ⅷ Ⅻ ½ ² ₃ ①", // number forms
  "foo_bar Foo_Bar __init__ a_b_c _", // underscores
  "lone \ud800 surrogate \udc00x", // lone surrogates
  "ab" + "c".repeat(70) + "ing " + "é".repeat(40) + "ing", // longer than porter's 64 bytes
  "généralisations ÉTATS-UNIS Ångström Øresund Łódź", // Latin with diacritics, porter on top
  "ağaç ğ ş ç ű ő ț ș", // more Latin diacritics
  "عربي مرحبا עברית שלום हिन्दी ไทย", // other scripts, some with marks
];

let scratch = 0;
/** SQLite's terms for each text, in order: a scratch twin of claims_fts read back through fts5vocab. */
function sqliteTerms(db: Db, texts: string[]): string[] {
  const t = `parity_${++scratch}`;
  db.run(
    `CREATE VIRTUAL TABLE ${t} USING fts5(statement, content='', contentless_delete=1, tokenize='porter unicode61')`,
  );
  db.run(`CREATE VIRTUAL TABLE ${t}_v USING fts5vocab(${t}, 'instance')`);
  // Bound one by one: a lone surrogate must reach SQLite as a claim's statement does.
  if (texts.some((s) => /[\ud800-\udfff]/.test(s)))
    texts.forEach((s, i) => db.run(`INSERT INTO ${t} (rowid, statement) VALUES (?, ?)`, i + 1, s));
  else db.run(`INSERT INTO ${t} (rowid, statement) SELECT key + 1, value FROM json_each(?)`, JSON.stringify(texts));
  const byDoc = new Map(
    db
      .all<{ doc: number; terms: string }>(
        `SELECT doc, group_concat(term, ' ' ORDER BY offset) AS terms FROM ${t}_v GROUP BY doc`,
      )
      .map((r) => [r.doc, r.terms]),
  );
  return texts.map((_, i) => byDoc.get(i + 1) ?? "");
}
const jsTerms = (text: string) => stemsOf(text).map(storedTerm).join(" ");

/** Where JS and SQLite disagree, as readable lines (empty when they agree). */
function disagreements(db: Db, texts: string[]): string[] {
  const sql = sqliteTerms(db, texts);
  const out: string[] = [];
  texts.forEach((text, i) => {
    const js = jsTerms(text);
    if (js !== sql[i] && out.length < 25)
      out.push(`${JSON.stringify(text)} U+${text.codePointAt(0)!.toString(16)}: sqlite [${sql[i]}] js [${js}]`);
  });
  return out;
}

describe("ftsTokens + porter tokenize as claims_fts does", () => {
  it("on texts that part a careless tokenizer from unicode61", async () => {
    await inOrg(`fts-parity-${crypto.randomUUID()}`, (o) => {
      expect(disagreements(o.db, TRICKY)).toEqual([]);
    });
  });

  it("on every code point, alone and inside a word (all of planes 0-2, samples and range edges beyond)", async () => {
    const points: number[] = [];
    for (let c = 0x80; c < 0x30000; c++) if (c < 0xd800 || c > 0xdfff) points.push(c);
    for (let c = 0x30000; c <= 0x10ffff; c += 251) points.push(c);
    for (const edge of TOKEN_RANGES)
      for (const c of [edge - 1, edge, edge + 1]) if (c >= 0x30000 && c <= 0x10ffff) points.push(c);
    points.push(0x10ffff);
    await inOrg(`fts-parity-${crypto.randomUUID()}`, (o) => {
      const texts = points.map((c) => `${String.fromCodePoint(c)} Q${String.fromCodePoint(c)}Q`);
      const wrong: string[] = [];
      for (let i = 0; i < texts.length && wrong.length < 25; i += 20_000)
        wrong.push(...disagreements(o.db, texts.slice(i, i + 20_000)));
      expect(wrong).toEqual([]);
    });
  }, 120_000);

  it("a query word finds the text it came from, and ranking sees it there (phraseStems = the indexed form)", async () => {
    await inOrg(`fts-parity-${crypto.randomUUID()}`, (o) => {
      const t = "parity_query";
      o.db.run(
        `CREATE VIRTUAL TABLE ${t} USING fts5(statement, content='', contentless_delete=1, tokenize='porter unicode61')`,
      );
      TRICKY.forEach((s, i) => o.db.run(`INSERT INTO ${t} (rowid, statement) VALUES (?, ?)`, i + 1, s));
      const wrong: string[] = [];
      // Text with symbols (emoji, skin-tone modifiers) is the exception: a query reads them as spaces.
      const symbol = /[\p{So}\p{Sk}\p{Cn}]/u;
      TRICKY.forEach((s, i) => {
        if (symbol.test(s)) return;
        for (const word of queryTerms(s)) {
          const phrase = phraseStems(word);
          const rows = o.db
            .all<{ rowid: number }>(`SELECT rowid FROM ${t} WHERE ${t} MATCH ?`, `"${word}"`)
            .map((r) => r.rowid);
          const indexed = sqliteTerms(o.db, [word])[0];
          if (phrase.length && !rows.includes(i + 1)) wrong.push(`${word}: FTS5 does not find row ${i + 1}`);
          if (phrase.length && !phraseCount(stemsOf(s), phrase))
            wrong.push(`${word}: ranking does not see it in its text`);
          if (phrase.map(storedTerm).join(" ") !== indexed)
            wrong.push(`${word}: phrase [${phrase.map(storedTerm)}] indexed [${indexed}]`);
        }
      });
      expect(wrong).toEqual([]);
      expect(TRICKY.filter((s) => !symbol.test(s)).length).toBeGreaterThan(TRICKY.length / 2);
      expect(queryTerms("great work 👍🏽")).toEqual(["great", "work"]);
      expect(queryTerms("billing robot🤖 cheese🧀")).toEqual(["billing", "robot", "cheese"]);
      // "_" joins a word: FTS5 reads it as a phrase of adjacent tokens, and so does ranking.
      expect(queryTerms("foo_bar Foo_Bar FOO")).toEqual(["foo_bar", "foo"]);
      expect(phraseStems("foo_bar")).toEqual(["foo", "bar"]);
      o.db.run(`INSERT INTO ${t} (rowid, statement) VALUES (1001, 'bar foo'), (1002, 'the foo bar')`);
      expect(o.db.all(`SELECT rowid FROM ${t} WHERE ${t} MATCH '"foo_bar"' AND rowid > 1000`)).toEqual([
        { rowid: 1002 },
      ]);
    });
  });
});
