#!/usr/bin/env node
// npm run bench:webhooks: webhook delivery as a receiver sees it, on one private local server (a
// snapshot of the code, WEBHOOK_RETRY_SCHEDULE short so retries happen within the run), each part in
// its own organization with one hook to a receiver on loopback. Rewrites its section of
// docs/BENCHMARKS.md.
//   latency   commit -> first delivery, p50/p95 over --latency-events (200) events appended one at a time
//   slow      deliveries per second to a receiver that answers after 500 ms
//   flaky     deliveries per second to a receiver that fails every other request
//   outage    --outage-events (10,000) events while the receiver is killed and restarted twice:
//             every event delivered, none under two delivery ids
// Options: --latency-events N, --slow-events N, --flaky-events N, --outage-events N, --parts a,b,...
import { createServer } from "node:http";
import {
  api,
  apiOk,
  fmt,
  log,
  machineLine,
  newOrg,
  parseArgs,
  percentile,
  pool,
  progress,
  sleep,
  startServer,
  table,
  writeSection,
} from "./bench-lib.mjs";

const args = parseArgs();
const PARTS = new Set(String(args.parts ?? "latency,slow,flaky,outage").split(","));
const N = {
  latency: Number(args["latency-events"] ?? 200),
  slow: Number(args["slow-events"] ?? 120),
  flaky: Number(args["flaky-events"] ?? 300),
  outage: Number(args["outage-events"] ?? 10_000),
};
/** Retries within the run: the outage part's receiver is down for OUTAGE_MS, well inside the retry window (15 s). */
const RETRY_SCHEDULE = "1s,2s,4s,8s";
const OUTAGE_MS = 3_000;
const SECRET = "bench-webhooks-secret-0123456789";

/**
 * A receiver on a loopback port: `answer(request number)` gives the status (after `delayMs`). Records
 * each request's delivery id, event id and arrival time. `kill()` closes it and every open connection;
 * `restart()` listens again on the same port.
 */
async function receiver({ answer = () => 204, delayMs = 0 } = {}) {
  const requests = [];
  const server = createServer(async (req, res) => {
    for await (const _ of req);
    const at = Date.now();
    const n = requests.length + 1;
    const status = answer(n);
    requests.push({
      at,
      status,
      delivery: req.headers["x-svc-delivery"],
      event: req.headers["x-svc-event-id"],
      eventAt: Date.parse(req.headers["x-svc-timestamp"]),
    });
    if (delayMs) await sleep(delayMs);
    res.writeHead(status).end();
  });
  server.keepAliveTimeout = 1_000;
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    kill: () =>
      new Promise((r) => {
        server.close(r);
        server.closeAllConnections();
      }),
    restart: () => new Promise((r) => server.listen(port, "127.0.0.1", r)),
    close: () =>
      new Promise((r) => {
        server.close(r);
        server.closeAllConnections();
      }),
  };
}

const observation = (i, tag) => ({
  subject_id: `bench-${tag}`,
  kind: "note",
  content: `webhook bench ${tag} ${i}`,
  source: { type: "bench" },
});

async function hookFor(server, rx) {
  const org = await newOrg(server);
  const hook = (
    await apiOk(server.url, org.api_key, "POST", "/v1/webhooks", {
      url: rx.url,
      secret: SECRET,
      events: ["observation.appended"],
    })
  ).json.data;
  return { key: org.api_key, hook };
}

/** Waits until `done()` or until nothing new arrived for `idleMs`; returns whether done. */
async function until(done, rx, idleMs = 30_000) {
  let seen = rx.requests.length,
    since = Date.now();
  while (!done()) {
    await sleep(50);
    if (rx.requests.length !== seen) [seen, since] = [rx.requests.length, Date.now()];
    else if (Date.now() - since > idleMs) return false;
  }
  return true;
}

/** Every delivery of a hook (pages of 200), counted by status, and those that took more than one attempt. */
async function deliveryStatuses(server, key, hookId) {
  const counts = {};
  let after;
  do {
    const page = (
      await apiOk(
        server.url,
        key,
        "GET",
        `/v1/webhooks/${hookId}/deliveries?limit=200${after ? `&after=${after}` : ""}`,
      )
    ).json.data;
    for (const d of page.deliveries) {
      counts[d.status] = (counts[d.status] ?? 0) + 1;
      if (d.attempts > 1)
        counts["retried (more than one attempt)"] = (counts["retried (more than one attempt)"] ?? 0) + 1;
    }
    after = page.has_more ? page.next_cursor : undefined;
  } while (after);
  return counts;
}

/**
 * Pause the hook, append n events, resume: the alarm then has all n at once. Returns the resume's time
 * and whether `done` came true (else nothing more arrived for a while).
 */
async function backlog(server, rx, key, hook, n, tag, done) {
  await apiOk(server.url, key, "POST", `/v1/webhooks/${hook.webhook_id}/pause`);
  await pool(n, 8, (i) => apiOk(server.url, key, "POST", "/v1/observations", observation(i, tag)));
  const t0 = Date.now();
  await apiOk(server.url, key, "POST", `/v1/webhooks/${hook.webhook_id}/resume`);
  return { t0, finished: await until(done, rx, 20_000) };
}

/** When the last successful answer went out: its arrival plus the receiver's delay. */
const lastSuccess = (rx, delayMs = 0) =>
  Math.max(...rx.requests.filter((r) => r.status < 300).map((r) => r.at)) + delayMs;

async function partLatency(server) {
  const rx = await receiver();
  try {
    const { key } = await hookFor(server, rx);
    for (let i = 0; i < N.latency; i++) {
      await apiOk(server.url, key, "POST", "/v1/observations", observation(i, "latency"));
      await until(() => rx.requests.length > i, rx, 10_000);
    }
    const ms = rx.requests.map((r) => r.at - r.eventAt);
    return { p50: percentile(ms, 50), p95: percentile(ms, 95), max: Math.max(...ms), n: ms.length };
  } finally {
    await rx.close();
  }
}

async function partSlow(server) {
  const rx = await receiver({ delayMs: 500 });
  try {
    const { key, hook } = await hookFor(server, rx);
    const { t0, finished } = await backlog(server, rx, key, hook, N.slow, "slow", () => rx.requests.length >= N.slow);
    await sleep(600); // the last answers
    const seconds = (lastSuccess(rx, 500) - t0) / 1000;
    return {
      n: N.slow,
      seconds,
      rate: rx.requests.length / seconds,
      finished,
      statuses: await deliveryStatuses(server, key, hook.webhook_id),
    };
  } finally {
    await rx.close();
  }
}

async function partFlaky(server) {
  const rx = await receiver({ answer: (n) => (n % 2 ? 500 : 204) });
  try {
    const { key, hook } = await hookFor(server, rx);
    const ok = () => rx.requests.filter((r) => r.status === 204).length;
    // Done when every event is delivered; a delivery that failed all its attempts leaves the wait idle.
    const { t0, finished } = await backlog(server, rx, key, hook, N.flaky, "flaky", () => ok() >= N.flaky);
    const seconds = (lastSuccess(rx) - t0) / 1000;
    return {
      n: N.flaky,
      seconds,
      delivered: ok(),
      rate: ok() / seconds,
      attempts: rx.requests.length,
      finished,
      statuses: await deliveryStatuses(server, key, hook.webhook_id),
    };
  } finally {
    await rx.close();
  }
}

async function partOutage(server) {
  const rx = await receiver();
  try {
    const { key, hook } = await hookFor(server, rx);
    const outages = [];
    const kills = [Math.floor(N.outage * 0.3), Math.floor(N.outage * 0.7)];
    const t0 = Date.now();
    let appended = 0;
    const outage = async () => {
      const down = Date.now();
      await rx.kill();
      await sleep(OUTAGE_MS);
      await rx.restart();
      outages.push({ at: (down - t0) / 1000, ms: Date.now() - down });
    };
    const running = [];
    await pool(
      N.outage,
      8,
      async (i) => {
        await apiOk(server.url, key, "POST", "/v1/observations", observation(i, "outage"));
        appended++;
        if (kills.includes(appended)) running.push(outage());
      },
      { onProgress: progress("outage events", 5_000) },
    );
    const appendSeconds = (Date.now() - t0) / 1000;
    await Promise.all(running);
    const acknowledged = () => new Set(rx.requests.filter((r) => r.status === 204).map((r) => r.event)).size;
    const finished = await until(() => acknowledged() >= N.outage, rx, 60_000);
    const seconds = (lastSuccess(rx) - t0) / 1000;
    await sleep(1_000);
    const byEvent = new Map();
    for (const r of rx.requests) byEvent.set(r.event, new Set([...(byEvent.get(r.event) ?? []), r.delivery]));
    const ackedTwice = new Map();
    for (const r of rx.requests.filter((x) => x.status === 204))
      ackedTwice.set(r.delivery, (ackedTwice.get(r.delivery) ?? 0) + 1);
    return {
      n: N.outage,
      appendSeconds,
      seconds,
      finished,
      outages,
      received: byEvent.size,
      acknowledged: acknowledged(),
      requests: rx.requests.length,
      twoIds: [...byEvent.values()].filter((s) => s.size > 1).length,
      resentAfterAck: [...ackedTwice.values()].filter((c) => c > 1).length,
      statuses: await deliveryStatuses(server, key, hook.webhook_id),
    };
  } finally {
    await rx.close();
  }
}

const server = await startServer({ label: "bench-webhooks", vars: { WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE } });
const out = {};
try {
  const ready = (await api(server.url, "", "GET", "/readyz")).json?.data?.capabilities;
  log(`server ${server.url}: background_repair ${ready?.background_repair}`);
  if (PARTS.has("latency")) {
    log("latency");
    out.latency = await partLatency(server);
  }
  if (PARTS.has("slow")) {
    log("slow receiver");
    out.slow = await partSlow(server);
  }
  if (PARTS.has("flaky")) {
    log("flaky receiver");
    out.flaky = await partFlaky(server);
  }
  if (PARTS.has("outage")) {
    log("outage");
    out.outage = await partOutage(server);
  }
} finally {
  await server.stop();
}
log(JSON.stringify(out, null, 1));

const statusText = (s) =>
  Object.entries(s ?? {})
    .map(([k, v]) => `${v} ${k}`)
    .join(", ");
const rows = [];
if (out.latency)
  rows.push([
    "commit → first delivery (one event at a time, receiver answers at once)",
    `${out.latency.n} events`,
    `p50 **${fmt(out.latency.p50, 0)} ms**, p95 **${fmt(out.latency.p95, 0)} ms** (max ${fmt(out.latency.max, 0)} ms)`,
  ]);
if (out.slow)
  rows.push([
    "receiver answers after 500 ms",
    `${out.slow.n} events at once`,
    `**${fmt(out.slow.rate, 1)} deliveries/s** (${fmt(out.slow.seconds, 1)} s; ${statusText(out.slow.statuses)})`,
  ]);
if (out.flaky)
  rows.push([
    "receiver fails every other request",
    `${out.flaky.n} events at once`,
    `**${fmt(out.flaky.rate, 1)} deliveries/s** (${out.flaky.delivered} delivered in ${fmt(out.flaky.seconds, 1)} s, ${out.flaky.attempts} requests; ${statusText(out.flaky.statuses)})`,
  ]);
if (out.outage)
  rows.push([
    `receiver killed twice for ${OUTAGE_MS / 1000} s while events are written`,
    `${out.outage.n} events (8 writers)`,
    `**${out.outage.acknowledged} of ${out.outage.n} delivered, ${out.outage.twoIds} under two delivery ids** ` +
      `(${out.outage.requests} requests; ${out.outage.resentAfterAck} acknowledged twice; all delivered ${fmt(out.outage.seconds, 1)} s after the first append, ` +
      `appends took ${fmt(out.outage.appendSeconds, 1)} s; outages at ${out.outage.outages.map((o) => `${fmt(o.at, 1)} s`).join(" and ")}; ${statusText(out.outage.statuses)})`,
  ]);

writeSection(
  "webhooks",
  `### 10. Webhook delivery (\`npm run bench:webhooks\`)

Method: one local server (a snapshot of the code via \`scripts/serve.mjs\`, background timer on, \`WEBHOOK_RETRY_SCHEDULE=${RETRY_SCHEDULE}\`), each
row in its own organization with one hook (\`observation.appended\`) to a Node receiver on loopback. Nothing calls
\`POST /v1/webhooks/deliver\`: the organization's alarm delivers and retries. Latency is the receiver's arrival time
minus the event's commit time (\`X-Svc-Timestamp\`; one machine, one clock). The throughput rows pause the hook, write
the events, resume it and time from the resume to the last delivery (the alarm sends at most six at once; a hook whose
last attempt failed gets one at a time). The outage row writes the events with 8 concurrent writers, kills the receiver
(closing every connection) at 30% and 70% of them and restarts it ${OUTAGE_MS / 1000} s later on the same port; a delivery id
acknowledged twice would be a receiver's duplicate to drop, an event under two delivery ids a real duplicate.

${table(["Receiver", "Load", "Result"], rows)}

Reading it: six sends at once to a receiver that takes 500 ms bound one organization's hook at 12 deliveries/s
(a Worker invocation opens at most six connections). Against a receiver that fails every other request, a hook is
probed one send at a time after each failure, and a delivery whose five attempts all land on failures (about one in
32) ends \`failed\` and waits for a redelivery: nothing is dropped silently, but such a receiver does lose
deliveries to the attempt limit. Through the outages nothing was lost or sent under a second id: attempts that found
the receiver down were retried on the schedule, and none of those failures counted against the hook (only
deliveries that run out of attempts do). The outage row's pace is the writers' (appends on this loaded machine),
not delivery's.

Rerun: \`npm run bench:webhooks\` (options \`--parts latency,slow,flaky,outage\`, \`--latency-events\`, \`--slow-events\`, \`--flaky-events\`,
\`--outage-events\`).

<sub>${machineLine()}</sub>`,
);
