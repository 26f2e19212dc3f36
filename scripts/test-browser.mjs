#!/usr/bin/env node
// npm run test:browser: the operator console in a real browser. Starts `npm start` (scripts/start.mjs)
// on a free port with a temporary SVC_STATE_DIR, writes memories through the API with the printed owner
// key, then drives headless Chromium (Debian's `chromium`; puppeteer-core over CDP, with the WebAuthn
// domain's virtual authenticator) through the console at http://localhost:PORT/console/ (the RP ID is
// `localhost`: an IP address such as 127.0.0.1 can never be one). Screenshots go to a folder it prints.
//   CHROMIUM=/path/to/chromium  overrides the browser;  --keep  keeps the state and screenshot folders.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer from "puppeteer-core";
import { freePort, root } from "./local.mjs";

const chromium = process.env.CHROMIUM || ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find(existsSync);
if (!chromium) {
  console.error("test:browser: Chromium is missing; install it with `apt-get install -y chromium` (as root) or set CHROMIUM.");
  process.exit(1);
}
const state = mkdtempSync(join(tmpdir(), "svc-browser-state-"));
const profile = mkdtempSync(join(tmpdir(), "svc-browser-profile-"));
const shots = join(tmpdir(), `svc-console-screenshots-${Date.now()}`);
mkdirSync(shots, { recursive: true });
const port = await freePort();
const base = `http://localhost:${port}`;
const api = `http://127.0.0.1:${port}`;
let step = "starting the server";
/** What the page reported (errors, CSP violations), printed when the test fails. */
const pageProblems = [];
const log = (msg) => console.log(`  ✓ ${msg}`);

// ---- the server, exactly as a person starts it --------------------------------------------------
const server = spawn(process.execPath, [join(root, "scripts", "start.mjs")], {
  cwd: root, env: { ...process.env, SVC_STATE_DIR: state, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"],
});
let output = "";
server.stdout.on("data", (d) => (output += d));
server.stderr.on("data", (d) => (output += d));
const started = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("npm start did not say it was serving within 180 s")), 180_000);
  server.stdout.on("data", () => {
    if (/serving on /.test(output)) {
      clearTimeout(timer);
      resolve(true);
    }
  });
  server.on("exit", (code) => reject(new Error(`npm start exited with ${code}\n${output}`)));
});
const printed = (label) => output.match(new RegExp(`${label}:\\s+(\\S+)`))?.[1];
const ownerKey = printed("owner API key");
const username = printed("dashboard username");
const temporaryPassword = printed("temporary password");
if (!started || !ownerKey || !username || !temporaryPassword) throw new Error(`start output lacks the owner credentials:\n${output}`);

let browser;
let failed = false;
try {
  // ---- memories written through the API (the console appends nothing) ---------------------------
  step = "writing memories through the API";
  const call = async (method, path, body, key = ownerKey) => {
    const r = await fetch(api + path, { method, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, json: await r.json().catch(() => null) };
  };
  const must = async (method, path, body, key) => {
    const r = await call(method, path, body, key);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json.data;
  };
  const observe = (content, extra = {}, key) => must("POST", "/v1/observations",
    { subject_id: "user:ada", kind: "note", content, source: { type: "browser-test" }, visibility: "team", ...extra }, key).then((d) => d.observation_id);
  const seen = await observe("Ada prefers the staging cluster in eu-west for release rehearsals.");
  const also = await observe("Release rehearsals ran on eu-west staging three times last month.");
  // An agent's private note supports the same claim: the owner must see it only as a hidden count.
  const agent = await must("POST", "/v1/keys", { label: "browser-test agent", scopes: ["observations:write", "claims:write"] });
  const secret = await observe("Private scratch note of the agent about eu-west.", { visibility: "private" }, agent.key);
  const [claimId] = (await must("POST", "/v1/consolidations", { subject_id: "user:ada", claims: [
    { kind: "preference", statement: "Ada rehearses releases on the eu-west staging cluster.", visibility: "team",
      sources: [{ observation_id: seen, relation: "supports" }, { observation_id: also, relation: "supports" }, { observation_id: secret, relation: "supports" }] },
  ] }, agent.key)).claims.map((c) => c.claim_id);
  await must("POST", "/v1/consolidations", { subject_id: "user:ada", claims: [
    { kind: "fact", statement: "Release rehearsals happen monthly.", visibility: "team", sources: [{ observation_id: also, relation: "supports" }] },
  ] });
  await must("POST", "/v1/webhooks", { url: "http://127.0.0.1:9/hook", secret: "browser-test-secret-0123", events: ["*"] });
  log(`memories written through the API (claim ${claimId})`);

  // ---- the browser -------------------------------------------------------------------------------
  step = "launching Chromium";
  browser = await puppeteer.launch({
    executablePath: chromium, headless: true, userDataDir: profile,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", `--user-data-dir=${profile}`],
    defaultViewport: { width: 1100, height: 760 },
  });
  const page = await browser.newPage();
  const problems = pageProblems;
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 4\d\d/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  const cdp = await page.createCDPSession();
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", { options: {
    protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true,
    automaticPresenceSimulation: true,
  } });
  let shot = 0;
  const screenshot = async (name) => {
    const file = join(shots, `${String(++shot).padStart(2, "0")}-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
  };
  const onPage = (path) => page.waitForFunction((p) => document.body.dataset.page === p, { timeout: 20_000 }, path);
  const visit = async (hash, path) => {
    await page.evaluate((h) => (location.hash = h), hash);
    await onPage(path);
  };
  const alertText = () => page.$eval("main .error", (e) => e.textContent).catch(() => null);

  step = "opening the console";
  await page.goto(`${base}/console/`, { waitUntil: "load" });
  await onPage("/login");
  const csp = (await page.goto(`${base}/console/`, { waitUntil: "load" }))?.headers()["content-security-policy"] ?? "";
  if (!/default-src 'none'/.test(csp) || !/script-src 'self'/.test(csp)) throw new Error(`the console is served without the strict CSP: "${csp}"`);
  await onPage("/login");
  await screenshot("login");

  step = "logging in with the temporary password (keyboard only)";
  await page.keyboard.type(username); // the username field has focus on arrival
  await page.keyboard.press("Tab");
  await page.keyboard.type(temporaryPassword);
  await page.keyboard.press("Enter");
  await onPage("/password");
  await screenshot("replace-password");
  log("logged in with the temporary password; asked to replace it");

  step = "replacing the temporary password";
  const newPassword = "correct horse battery staple 42";
  await page.type("input[name=current_password]", temporaryPassword);
  await page.type("input[name=new_password]", newPassword);
  await page.type("input[name=repeat]", newPassword);
  await page.click("form[aria-label='Replace password'] button[type=submit]");
  await onPage("/memories");
  log("password replaced; logged in again with the new one (full session)");

  step = "enrolling a passkey";
  await visit("#/security", "/security");
  await page.type("input[name=name]", "Virtual authenticator");
  await page.click("form[aria-label='Enroll a passkey'] button[type=submit]");
  await page.waitForFunction(() => document.querySelectorAll("#recovery-codes li").length === 8, { timeout: 20_000 })
    .catch(async (e) => { throw new Error(`${e.message}; page says: ${await alertText()}`); });
  const recovery = await page.$$eval("#recovery-codes li", (els) => els.map((e) => e.textContent));
  if (!recovery.every((c) => /^[a-z2-7]{5}-[a-z2-7]{5}$/i.test(c))) throw new Error(`unexpected recovery codes: ${recovery}`);
  const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  if (credentials.length !== 1) throw new Error(`the virtual authenticator holds ${credentials.length} credentials`);
  await screenshot("passkeys-and-recovery-codes");
  log("passkey enrolled through navigator.credentials.create; eight recovery codes shown once");

  step = "logging out";
  await page.click("#nav button");
  await onPage("/login");
  if (await page.evaluate(() => sessionStorage.length)) throw new Error("the session token outlived the logout");
  log("logged out (sessionStorage empty)");

  step = "logging in with password + passkey";
  await page.type("input[name=username]", username);
  await page.type("input[name=password]", newPassword);
  await page.click("form[aria-label='Log in'] button[type=submit]");
  await onPage("/second-factor");
  await screenshot("second-factor");
  await page.click("form[aria-label='Use a passkey'] button[type=submit]");
  await onPage("/memories");
  const stored = await page.evaluate(() => Object.keys(sessionStorage).concat(Object.keys(localStorage)));
  if (stored.join() !== "svc-console-session") throw new Error(`the console stores more than the session token: ${stored}`);
  log("logged in with password, then the passkey through navigator.credentials.get");

  step = "searching memories";
  await page.type("input[name=q]", "eu-west");
  await page.click("form[aria-label='Search memories'] button[type=submit]");
  await page.waitForSelector("section[data-query='eu-west']", { timeout: 20_000 });
  const listed = await page.$$eval("main tbody a", (as) => as.map((a) => a.textContent));
  if (listed.length !== 1 || !/eu-west staging/.test(listed[0])) throw new Error(`the search for eu-west listed an unrelated claim: ${listed}`);
  await screenshot("memories");
  log(`searched memories: ${listed.length} result(s) for "eu-west"`);

  step = "opening evidence";
  await page.click(`a[href="#/claim/${claimId}"]`);
  await onPage(`/claim/${claimId}`);
  const hidden = await page.$eval(".hidden-count", (e) => e.textContent);
  const supporting = await page.$$eval("section[aria-label=supporting] tbody tr", (r) => r.length);
  if (supporting !== 2 || !/^1 source hidden/.test(hidden)) throw new Error(`evidence shows ${supporting} supporting rows and "${hidden}"`);
  await screenshot("evidence");
  log("evidence: two readable supporting observations, the agent's private one only as \"1 source hidden\"");

  step = "the Atlas";
  // The claim page re-renders after the expiry: retry a click that caught the old link detached.
  for (let attempt = 0; ; attempt++) {
    try {
      await page.waitForSelector(`main a[href^="#/atlas?lens=evidence_trace"]`, { visible: true });
      await page.click(`main a[href^="#/atlas?lens=evidence_trace"]`);
      break;
    } catch (err) {
      if (attempt >= 4 || !/detached/i.test(String(err?.message))) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  await onPage("/atlas");
  await page.waitForSelector("#atlas-summary, #atlas-unavailable, main .error", { timeout: 30_000 });
  if (await page.$("#atlas-unavailable")) {
    console.log("  ⚠ SKIPPED the Atlas route step: POST /v1/memory-views/compile is not on this server yet (404 Unknown endpoint.);\n" +
      "    the console shows its note. Re-run once the Atlas route lands. Checking the graph renderer with a DESIGN-shaped sample instead.");
    await screenshot("atlas-route-missing");
    await page.setRequestInterception(true);
    page.on("request", (req) => {
      if (!req.url().endsWith("/v1/memory-views/compile")) return req.continue();
      const body = JSON.parse(req.postData() ?? "{}");
      if (body.lens !== "evidence_trace" || body.focus_id !== claimId) problems.push(`the Atlas asked for ${req.postData()}`);
      req.respond({ status: 200, contentType: "application/json", body: JSON.stringify({ data: sampleAtlas(body.lens, claimId), meta: { request_id: "sample" } }) });
    });
    await page.click("form[aria-label='Compile an Atlas view'] button[type=submit]");
    await page.waitForSelector("#atlas-summary", { timeout: 20_000 });
  } else if (!(await page.$("#atlas-summary"))) {
    throw new Error(`the Atlas answered an error: ${await alertText()}`);
  }
  await page.waitForFunction(() => window.__atlas && window.__atlas.nodes > 0, { timeout: 20_000 });
  const drawn = await page.evaluate(() => window.__atlas);
  await new Promise((r) => setTimeout(r, 500)); // let the canvas paint before the screenshot
  await screenshot("atlas");
  log(`Atlas drawn with Cytoscape.js: ${drawn.nodes} nodes, ${drawn.edges} edges`);
  if (page.listenerCount("request")) {
    page.removeAllListeners("request");
    await page.setRequestInterception(false);
  }

  // Back to the claim for the lifecycle move (the Atlas comes first: an expired claim leaves the trace's views).
  await visit(`#/claim/${claimId}`, `/claim/${claimId}`);

  step = "expiring a claim after confirmation";
  await page.type("form[aria-label=Expire] input[name=reason]", "checked by the browser test");
  await page.click("form[aria-label=Expire] button[type=submit]");
  await page.waitForSelector("dialog[open]");
  await page.keyboard.press("Escape"); // Esc cancels: nothing may change
  await page.waitForFunction(() => !document.querySelector("dialog"));
  if ((await call("GET", `/v1/claims/${claimId}/evidence`)).json.data.claim.valid_to) throw new Error("a cancelled confirmation expired the claim");
  await page.click("form[aria-label=Expire] button[type=submit]");
  await page.waitForSelector("dialog[open]");
  await page.click("dialog[open] button[value=confirm]");
  await page.waitForFunction(() => /expire done/.test(document.getElementById("status").textContent), { timeout: 20_000 });
  if (!(await call("GET", `/v1/claims/${claimId}/evidence`)).json.data.claim.valid_to) throw new Error("the confirmed expiry did not reach the API");
  log("expire: Esc on the confirmation changed nothing; confirming set valid_to");

  step = "events and webhooks";
  await visit("#/events", "/events");
  if (!(await page.$$eval("main tbody tr", (r) => r.length))) throw new Error("the event feed is empty");
  await screenshot("events");
  await visit("#/webhooks", "/webhooks");
  await page.click("main tbody button");
  await page.waitForFunction(() => /Deliveries of/.test(document.querySelector("main section h2")?.textContent ?? ""), { timeout: 20_000 });
  await screenshot("webhooks");
  log("event feed and webhook deliveries listed");

  step = "minting and revoking a key";
  await visit("#/keys", "/keys");
  await page.type("input[name=label]", "browser-test key");
  await page.click("input[name=scope][value='views:compile']");
  await page.click("input[name=scope][value='evidence:read']");
  await page.click("form[aria-label='Mint a key'] button[type=submit]");
  await page.waitForSelector("#minted-key .secret", { timeout: 20_000 });
  const raw = await page.$eval("#minted-key .secret", (e) => e.textContent);
  const asKey = await call("GET", "/v1/principal", undefined, raw);
  if (asKey.status !== 200 || JSON.stringify(asKey.json.data.scopes) !== JSON.stringify(["evidence:read", "views:compile"]))
    throw new Error(`the minted key does not work as chosen: ${asKey.status} ${JSON.stringify(asKey.json)}`);
  await screenshot("key-minted");
  await page.click("button[aria-label='Revoke key browser-test key']");
  await page.waitForSelector("dialog[open]");
  await screenshot("confirm-revoke");
  await page.click("dialog[open] button[value=confirm]");
  await page.waitForFunction(() => !document.querySelector("button[aria-label='Revoke key browser-test key']"), { timeout: 20_000 });
  const after = await call("GET", "/v1/principal", undefined, raw);
  if (after.status !== 401) throw new Error(`the revoked key still answers ${after.status}`);
  log("key minted with two chosen scopes (raw value shown once, works), then revoked after confirmation (401)");

  step = "creating an account";
  await visit("#/accounts", "/accounts");
  await page.type("input[name=username]", "grace.ops");
  await page.select("select[name=role]", "member");
  await page.click("form[aria-label='Create an account'] button[type=submit]");
  await page.waitForSelector("main .secret", { timeout: 20_000 });
  await screenshot("account-created");
  const grace = await fetch(`${api}/v1/dashboard-sessions`, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "grace.ops", password: await page.$eval("main .secret", (e) => e.textContent) }) });
  if (grace.status !== 201) throw new Error(`the new account cannot log in with its temporary password: ${grace.status}`);
  log("account created with role member; its temporary password logs in");

  step = "logging in with a recovery code";
  await page.click("#nav button:last-child");
  await onPage("/login");
  await page.type("input[name=username]", username);
  await page.type("input[name=password]", newPassword);
  await page.click("form[aria-label='Log in'] button[type=submit]");
  await onPage("/second-factor");
  await page.type("input[name=code]", recovery[0]);
  await page.click("form[aria-label='Use a recovery code'] button[type=submit]");
  await onPage("/memories");
  const remaining = await page.$eval("#status", (e) => e.textContent);
  if (!/7 recovery codes remain/.test(remaining)) throw new Error(`after a recovery code the console says "${remaining}"`);
  log("logged in with password + recovery code (7 remain)");

  if (problems.length) throw new Error(`the page reported problems:\n${problems.join("\n")}`);
  console.log(`test:browser passed; screenshots in ${shots}`);
} catch (err) {
  failed = true;
  console.error(`test:browser FAILED while ${step}: ${err.stack ?? err}`);
  if (pageProblems.length) console.error(`the page reported:\n  ${pageProblems.join("\n  ")}`);
  console.error(`screenshots so far in ${shots}`);
  if (browser) {
    const [p] = await browser.pages();
    await p?.screenshot({ path: join(shots, "failure.png"), fullPage: true }).catch(() => {});
  }
} finally {
  await browser?.close().catch(() => {});
  server.kill("SIGTERM");
  await new Promise((r) => server.exitCode === null ? server.once("exit", r) : r());
  if (!process.argv.includes("--keep")) {
    rmSync(state, { recursive: true, force: true });
    rmSync(profile, { recursive: true, force: true });
  }
}
process.exit(failed ? 1 : 0);

/** A response in DESIGN "Memory Atlas" shape, used only while the route is missing, to check the renderer. */
function sampleAtlas(lens, claimId) {
  const nodes = [
    { id: claimId, type: "claim", label: "Ada rehearses releases on the eu-west staging cluster.", status: "active", trust: "medium", kind: "preference" },
    { id: "clm_sample_older", type: "claim", label: "Ada rehearses releases on us-east.", status: "superseded", trust: "medium", kind: "preference" },
    { id: "obs_sample_1", type: "observation", label: "Ada prefers the staging cluster in eu-west…", trust: "medium", kind: "note" },
    { id: "obs_sample_2", type: "observation", label: "Release rehearsals ran on eu-west…", trust: "medium", kind: "note" },
    { id: "obs_sample_3", type: "observation", label: "Rehearsal on us-east failed twice", trust: "low", kind: "note" },
    { id: "subject:user:ada", type: "subject", label: "user:ada" },
    { id: "ctx_sample", type: "context", label: "context run" },
    { id: "rel_sample", type: "release", label: "release v1", status: "active" },
  ];
  const edges = [
    { source: "obs_sample_1", target: claimId, type: "supports" },
    { source: "obs_sample_2", target: claimId, type: "supports" },
    { source: "obs_sample_3", target: claimId, type: "qualifies" },
    { source: claimId, target: "clm_sample_older", type: "supersedes" },
    { source: claimId, target: "subject:user:ada", type: "about" },
    { source: claimId, target: "ctx_sample", type: "selected-in" },
    { source: claimId, target: "rel_sample", type: "released-as" },
  ];
  return { lens, focus: { id: claimId, type: "claim" }, nodes, edges, truncated: false, withheld: { nodes: "0", edges: "0" } };
}
