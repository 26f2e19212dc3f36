#!/usr/bin/env node
// npm run federation:sync -- --from URL --from-key K --from-peer P --to URL --to-key K --to-peer Q
//                            [--include-memory] [--resume FILE]
// Pulls from one deployment and pushes into the other until the source has nothing more, for cron or
// an operator. The shared secret both peers were registered with comes from the environment
// (FEDERATION_SHARED_SECRET), never from the command line. Every pull and every push is signed over
// its exact bytes (x-svc-peer-signature, with sent_at in the body), and every pulled page is checked
// against its own x-svc-peer-signature before anything is pushed.
// A pull advances the source's cursor, so a page that could not be pushed is saved to a file
// (printed) and can be pushed later with --resume FILE. Prints a JSON summary; exit 1 on failure.
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { writeFileSync, readFileSync } from "node:fs";

const USAGE =
  "usage: npm run federation:sync -- --from URL --from-key K --from-peer P --to URL --to-key K --to-peer Q [--include-memory] [--resume FILE]\n" +
  "  (the peers' shared secret in FEDERATION_SHARED_SECRET)";

export function parseArgs(argv) {
  const out = { includeMemory: false };
  const names = {
    "--from": "from",
    "--from-key": "fromKey",
    "--from-peer": "fromPeer",
    "--to": "to",
    "--to-key": "toKey",
    "--to-peer": "toPeer",
    "--resume": "resume",
  };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--include-memory") out.includeMemory = true;
    else if (names[argv[i]] && argv[i + 1] !== undefined) out[names[argv[i]]] = argv[++i];
    else throw new Error(`unknown or incomplete argument ${argv[i]}\n${USAGE}`);
  }
  for (const k of ["from", "fromKey", "fromPeer", "to", "toKey", "toPeer"])
    if (!out[k]) throw new Error(`missing --${k.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())}\n${USAGE}`);
  out.from = out.from.replace(/\/+$/, "");
  out.to = out.to.replace(/\/+$/, "");
  return out;
}

const sign = (secret, bytes) => "sha256=" + createHmac("sha256", secret).update(bytes, "utf8").digest("hex");
const sameSignature = (given, expected) =>
  typeof given === "string" &&
  given.length === expected.length &&
  timingSafeEqual(Buffer.from(given), Buffer.from(expected));

async function post(url, key, raw, headers = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: raw,
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

const describe = (r) =>
  `${r.status} ${r.json?.error?.code ?? ""} ${r.json?.error?.message ?? r.text.slice(0, 200)}`.trim();

/** Push one page; retried with the same bytes (the exchange_id makes a repeat answer the stored result). */
async function pushPage(opts, secret, page) {
  const raw = JSON.stringify({
    peer_id: opts.toPeer,
    exchange_id: `sync-${randomUUID()}`,
    sent_at: new Date().toISOString(),
    ...page,
  });
  let last;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      last = await post(`${opts.to}/v1/federation/push`, opts.toKey, raw, {
        "x-svc-peer-signature": sign(secret, raw),
      });
      if (last.status === 200) return last.json.data;
      if (last.status < 500) break; // a refusal will not change on retry
    } catch (err) {
      last = { status: 0, text: String(err?.message ?? err), json: undefined };
    }
    await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
  }
  const file = `federation-sync-unpushed-${Date.now()}.json`;
  writeFileSync(file, JSON.stringify(page));
  throw new Error(
    `push failed (${describe(last)}); the pulled page was saved to ${file}: push it with --resume ${file}`,
  );
}

const tally = (into, results = []) => {
  for (const r of results) into[r.status] = (into[r.status] ?? 0) + 1;
};

export async function sync(opts, secret, log = () => {}) {
  const summary = { rounds: 0, pulled_events: 0, pulled_bundles: 0, events: {}, bundles: {}, cursor: null };
  if (opts.resume) {
    const page = JSON.parse(readFileSync(opts.resume, "utf8"));
    const out = await pushPage(opts, secret, page);
    tally(summary.events, out.results);
    tally(summary.bundles, out.bundles);
    log(`resumed ${opts.resume}`);
  }
  for (;;) {
    const raw = JSON.stringify({
      peer_id: opts.fromPeer,
      sent_at: new Date().toISOString(),
      include_memory: opts.includeMemory,
    });
    const r = await post(`${opts.from}/v1/federation/pull`, opts.fromKey, raw, {
      "x-svc-peer-signature": sign(secret, raw),
    });
    if (r.status !== 200) throw new Error(`pull failed: ${describe(r)}`);
    if (!sameSignature(r.headers.get("x-svc-peer-signature"), sign(secret, r.text)))
      throw new Error(
        "pull response signature does not match: wrong FEDERATION_SHARED_SECRET, or the response was altered; nothing pushed",
      );
    const { events, bundles, cursor, has_more } = r.json.data;
    summary.rounds++;
    summary.pulled_events += events.length;
    summary.pulled_bundles += bundles?.length ?? 0;
    summary.cursor = cursor;
    if (events.length || bundles?.length) {
      const out = await pushPage(opts, secret, { events, ...(opts.includeMemory ? { bundles: bundles ?? [] } : {}) });
      tally(summary.events, out.results);
      tally(summary.bundles, out.bundles);
      log(`round ${summary.rounds}: ${events.length} events, ${bundles?.length ?? 0} bundles pushed`);
    }
    if (!has_more) return summary;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const opts = parseArgs(process.argv.slice(2));
    const secret = process.env.FEDERATION_SHARED_SECRET;
    if (!secret) throw new Error(`FEDERATION_SHARED_SECRET is not set\n${USAGE}`);
    const summary = await sync(opts, secret, (line) => console.error(line));
    console.log(JSON.stringify(summary));
  } catch (err) {
    console.error(String(err?.message ?? err));
    process.exit(1);
  }
}
