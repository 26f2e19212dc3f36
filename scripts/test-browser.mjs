#!/usr/bin/env node
// npm run test:browser: the operator console in a real browser. Starts `npm start` (scripts/start.mjs)
// on a free port with a temporary SVC_STATE_DIR, writes memories through the API with the printed owner
// key, then drives headless Chromium (Debian's `chromium`; puppeteer-core over CDP, with the WebAuthn
// domain's virtual authenticator) through the console at http://localhost:PORT/console/ (the RP ID is
// `localhost`: an IP address such as 127.0.0.1 can never be one), in a 1,280 px wide window: no page may
// scroll sideways. Screenshots go to a folder it prints; with --update-screenshots the home, keys, memories
// and Atlas pages' also go to docs/screenshots/ (README.md and docs/api-guide.md show them; a plain run leaves the tree as it was).
//   CHROMIUM=/path/to/chromium  overrides the browser;  --keep  keeps the state and screenshot folders.
// Every wait is on a condition of the page (no sleeps); a failure prints what the page said.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer from "puppeteer-core";
import { freePort, root } from "./local.mjs";

const chromium = process.env.CHROMIUM || ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find(existsSync);
if (!chromium) {
  console.error(
    "test:browser: Chromium is missing; install it with `apt-get install -y chromium` (as root) or set CHROMIUM.",
  );
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
const pageSays = () =>
  page
    ?.evaluate(
      () =>
        [...document.querySelectorAll("main .error, #status")]
          .map((e) => e.textContent.trim())
          .filter(Boolean)
          .join(" | ") || document.querySelector("main")?.innerText.slice(0, 400),
    )
    .catch((e) => `(unreadable: ${e.message})`);
const t0 = Date.now();
const log = (msg) => console.log(`  ✓ ${msg} [${Math.round((Date.now() - t0) / 1000)} s]`);
/** The pages whose screenshots the docs show: written to docs/screenshots/<name>.png when asked. */
const DOC_SHOTS = new Set(process.argv.includes("--update-screenshots") ? ["home", "keys", "memories", "atlas"] : []);
const docShots = join(root, "docs", "screenshots");
/** The window's width: every page must fit it (document.documentElement.scrollWidth <= WIDTH). */
const WIDTH = 1280;
/** Every page the test must have checked for horizontal overflow (console routes, query left out). */
const PAGES_THAT_MUST_FIT = [
  "/login",
  "/password",
  "/home",
  "/security",
  "/second-factor",
  "/memories",
  "/claim",
  "/policies",
  "/approvals",
  "/releases",
  "/atlas",
  "/events",
  "/webhooks",
  "/keys",
  "/accounts",
];
const pagesThatFit = new Set();

// ---- a webhook receiver on loopback: refuses (500) until the test lets it accept ---------------------
const hookCalls = [];
let hookAccepts = false;
const receiver = createServer(async (req, res) => {
  let body = "";
  for await (const chunk of req) body += chunk;
  hookCalls.push({ delivery: req.headers["x-svc-delivery"], body });
  res.writeHead(hookAccepts ? 204 : 500).end();
});
await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
const hookUrl = `http://127.0.0.1:${receiver.address().port}/console-hook`;

// ---- the server, exactly as a person starts it (webhook retries a second apart) -------------------
const server = spawn(process.execPath, [join(root, "scripts", "start.mjs")], {
  cwd: root,
  env: { ...process.env, SVC_STATE_DIR: state, PORT: String(port), WEBHOOK_RETRY_SCHEDULE: "1s" },
  stdio: ["ignore", "pipe", "pipe"],
});
let output = "";
server.stdout.on("data", (d) => (output += d));
server.stderr.on("data", (d) => (output += d));
const started = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error("npm start did not say it was serving within 180 s")), 180_000);
  server.stdout.on("data", () => {
    if (/operator console: http/.test(output)) {
      clearTimeout(timer);
      resolve(true);
    }
  });
  server.on("exit", (code) => reject(new Error(`npm start exited with ${code}\n${output}`)));
});
const printed = (label) => output.match(new RegExp(`${label}:\\s+(\\S+)`))?.[1];
// The console is opened at the address npm start prints, so a wrong printed address fails here.
if (printed("operator console") !== `${base}/console/`)
  throw new Error(`npm start printed the console at ${printed("operator console")}, not ${base}/console/`);
const ownerKey = printed("owner API key");
const orgId = output.match(/Default organization (org_[0-9a-f]{32}) created/)?.[1];
const username = printed("dashboard username");
const temporaryPassword = printed("temporary password");
if (!started || !ownerKey || !username || !temporaryPassword || !orgId)
  throw new Error(`start output lacks the owner credentials:\n${output}`);

let browser;
let page;
let failed = false;
try {
  // ---- memories written through the API (the console appends nothing) ---------------------------
  step = "writing memories through the API";
  const call = async (method, path, body, key = ownerKey) => {
    const r = await fetch(api + path, {
      method,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, json: await r.json().catch(() => null) };
  };
  const must = async (method, path, body, key) => {
    const r = await call(method, path, body, key);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json.data;
  };
  const observe = (content, extra = {}, key) =>
    must(
      "POST",
      "/v1/observations",
      { subject_id: "user:ada", kind: "note", content, source: { type: "browser-test" }, visibility: "team", ...extra },
      key,
    ).then((d) => d.observation_id);
  const seen = await observe("Ada prefers the staging cluster in eu-west for release rehearsals.");
  const also = await observe("Release rehearsals ran on eu-west staging three times last month.");
  // An agent's private note supports the same claim: the owner must see it only as a hidden count.
  const agent = await must("POST", "/v1/keys", {
    label: "browser-test agent",
    scopes: ["observations:write", "claims:write"],
  });
  const secret = await observe(
    "Private scratch note of the agent about eu-west.",
    { visibility: "private" },
    agent.key,
  );
  const [claimId] = (
    await must(
      "POST",
      "/v1/consolidations",
      {
        subject_id: "user:ada",
        claims: [
          {
            kind: "preference",
            statement: "Ada rehearses releases on the eu-west staging cluster.",
            visibility: "team",
            sources: [
              { observation_id: seen, relation: "supports" },
              { observation_id: also, relation: "supports" },
              { observation_id: secret, relation: "supports" },
            ],
          },
        ],
      },
      agent.key,
    )
  ).claims.map((c) => c.claim_id);
  await must("POST", "/v1/consolidations", {
    subject_id: "user:ada",
    claims: [
      {
        kind: "fact",
        statement: "Release rehearsals happen monthly.",
        visibility: "team",
        sources: [{ observation_id: also, relation: "supports" }],
      },
    ],
  });
  // Long unbroken values (a URL, a subject id, a key label) that no table or form may let push a page past 1,280 px.
  await must("POST", "/v1/webhooks", {
    url: `http://127.0.0.1:9/hook/${"a1b2c3d4".repeat(40)}`,
    secret: "browser-test-secret-0123",
    events: ["*"],
  });
  await observe("A note about a repository with a long id.", {
    subject_id: `repository:${"example-organization.very-long-repository-name.".repeat(3)}`,
  });
  // A releasable claim of the owner's (verified, team, its one source verified) and a gateway service principal.
  const docsSource = await observe("The public docs site is rebuilt from main on every merge.", {
    subject_id: "service:docs",
    trust: "verified",
  });
  const [releasable] = (
    await must("POST", "/v1/consolidations", {
      subject_id: "service:docs",
      claims: [
        {
          kind: "fact",
          statement: "The docs site rebuilds from main on every merge.",
          visibility: "team",
          sources: [{ observation_id: docsSource, relation: "supports" }],
        },
      ],
    })
  ).claims.map((c) => c.claim_id);
  const gateway = await must("POST", "/v1/keys", {
    label: `docs-gateway-${"for-the-public-documentation-site-".repeat(4)}`,
    scopes: ["channel:compile"],
  });
  // A context run of the owner's that selects the first claim: its evidence trace shows it (selected-in).
  await must("POST", "/v1/context/compile", { query: "eu-west staging release rehearsals" });
  log(`memories written through the API (claims ${claimId}, ${releasable})`);

  // ---- the browser -------------------------------------------------------------------------------
  step = "launching Chromium";
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    userDataDir: profile,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--user-data-dir=${profile}`,
    ],
    defaultViewport: { width: WIDTH, height: 800 },
  });
  page = await browser.newPage();
  const problems = pageProblems;
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/status of 4\d\d/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  const cdp = await page.createCDPSession();
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  /** The page fits the window: nothing wider than WIDTH, no horizontal scrollbar. */
  const checkFits = async () => {
    const { path, scrollWidth, clientWidth, widest } = await page.evaluate(() => {
      const root = document.documentElement;
      // The widest element sticking out on the right, to name in a failure.
      const out = [...document.querySelectorAll("main *, header *")]
        .map((e) => [e, e.getBoundingClientRect().right])
        .filter(([, right]) => right > root.clientWidth)
        .sort((a, b) => b[1] - a[1])[0];
      return {
        path: document.body.dataset.page,
        scrollWidth: root.scrollWidth,
        clientWidth: root.clientWidth,
        widest: out ? `${out[0].outerHTML.slice(0, 160)} (right edge ${Math.round(out[1])} px)` : "",
      };
    });
    if (scrollWidth > WIDTH || scrollWidth > clientWidth)
      throw new Error(
        `${path} overflows a ${WIDTH} px window: scrollWidth ${scrollWidth}, clientWidth ${clientWidth}; widest: ${widest}`,
      );
    pagesThatFit.add(path.startsWith("/claim/") ? "/claim" : path);
  };
  let shot = 0;
  const screenshot = async (name) => {
    await checkFits();
    await page.screenshot({ path: join(shots, `${String(++shot).padStart(2, "0")}-${name}.png`), fullPage: true });
    if (DOC_SHOTS.has(name)) {
      const file = join(docShots, `${name}.png`);
      // The window as a person sees it, at most 1,600 px tall: small enough for the docs.
      const height = Math.min(1600, await page.evaluate(() => document.documentElement.scrollHeight));
      await page.screenshot({ path: file, clip: { x: 0, y: 0, width: WIDTH, height }, captureBeyondViewport: true });
      if (statSync(file).size > 400_000)
        throw new Error(`docs/screenshots/${name}.png is ${statSync(file).size} bytes`);
    }
  };
  const onPage = (path) => page.waitForFunction((p) => document.body.dataset.page === p, { timeout: 20_000 }, path);
  const visit = async (hash, path) => {
    await page.evaluate((h) => (location.hash = h), hash);
    await onPage(path);
  };
  const alertText = () => page.$eval("main .error", (e) => e.textContent).catch(() => null);
  /** Waits for a condition of the page; on timeout says what was awaited and what the page shows. */
  const until = async (fn, what, ...args) => {
    try {
      await page.waitForFunction(fn, { timeout: 20_000 }, ...args);
    } catch (err) {
      throw new Error(`${what}: ${err.message}; the page says: ${await pageSays()}`);
    }
  };
  /**
   * Clicks the element the selector finds at this moment, inside the page (query and click in one
   * task), so a page that re-rendered in between cannot hand over a detached element.
   */
  const clickNow = async (selector) => {
    await until((sel) => document.querySelector(sel), `waiting for ${selector}`, selector);
    await page.evaluate((sel) => document.querySelector(sel).click(), selector);
  };
  /** Every field, button and link of the page is named for assistive technology (labels, text or aria-label). */
  const checkLabels = async () => {
    await checkFits();
    const unnamed = await page.evaluate(() =>
      [
        ...document.querySelectorAll(
          "main input:not([type=hidden]), main select, main textarea, main button, main a, #nav a, #nav button",
        ),
      ]
        .filter((el) => {
          if (el.getAttribute("aria-label")?.trim()) return false;
          if (!el.labels?.length) return !el.textContent.trim(); // buttons and links: their text (an unlabelled input has none)
          // A label's own words, without the text of the control it wraps (a select's options).
          return ![...el.labels].some((l) => {
            const words = l.cloneNode(true);
            words.querySelectorAll("input, select, textarea").forEach((c) => c.remove());
            return words.textContent.trim();
          });
        })
        .map((el) => el.outerHTML.slice(0, 120)),
    );
    if (unnamed.length)
      throw new Error(
        `controls without a label on ${await page.evaluate(() => location.hash)}:\n${unnamed.join("\n")}`,
      );
  };
  /** Waits until the Atlas drew a view of `lens` and painted it (or showed an error), and returns what it drew. */
  const atlasDrawn = async (lens) => {
    await until(
      (l) =>
        (window.__atlas?.lens === l && window.__atlas.painted) ||
        document.querySelector("main .error, #atlas-unavailable"),
      `the Atlas drawing ${lens}`,
      lens,
    );
    const problem = await page.$eval("main .error, #atlas-unavailable", (e) => e.textContent).catch(() => null);
    if (problem) throw new Error(`the Atlas (${lens}) shows: ${problem}`);
    const drawn = await page.evaluate(() => window.__atlas);
    if (!(drawn.nodes > 0)) throw new Error(`the Atlas drew an empty ${lens} graph`);
    return drawn;
  };

  step = "opening the console";
  await page.goto(`${base}/console/`, { waitUntil: "load" });
  await onPage("/login");
  const csp = (await page.goto(`${base}/console/`, { waitUntil: "load" }))?.headers()["content-security-policy"] ?? "";
  if (!/default-src 'none'/.test(csp) || !/script-src 'self'/.test(csp))
    throw new Error(`the console is served without the strict CSP: "${csp}"`);
  await onPage("/login");
  await checkLabels();
  if (await page.$("main .notice")) throw new Error("the login page on localhost shows a passkey address note");
  await screenshot("login");

  step = "opening the console on 127.0.0.1 (passkeys cannot work there: the page says so in words)";
  await page.goto(`http://127.0.0.1:${port}/console/`, { waitUntil: "load" });
  await onPage("/login");
  const note = await page.$eval("main .notice", (e) => e.textContent).catch(() => "");
  if (!note.includes(`http://localhost:${port}/console/`))
    throw new Error(`the login page on 127.0.0.1 does not point to localhost: "${note}"`);
  await page.goto(`${base}/console/`, { waitUntil: "load" });
  await onPage("/login");
  log("on 127.0.0.1 the console says to use localhost for passkeys");

  step = "logging in with the temporary password (keyboard only)";
  await page.keyboard.type(username); // the username field has focus on arrival
  await page.keyboard.press("Tab");
  await page.keyboard.type(temporaryPassword);
  await page.keyboard.press("Enter");
  await onPage("/password");
  await checkLabels();
  await screenshot("replace-password");
  log("logged in with the temporary password; asked to replace it");

  step = "replacing the temporary password";
  const newPassword = "correct horse battery staple 42";
  await page.type("input[name=current_password]", temporaryPassword);
  await page.type("input[name=new_password]", newPassword);
  await page.type("input[name=repeat]", newPassword);
  await page.click("form[aria-label='Replace password'] button[type=submit]");
  await onPage("/home");
  log("password replaced; logged in again with the new one (full session)");

  step = "the home page";
  await checkLabels();
  const home = await page.evaluate(() => ({
    org: document.getElementById("org-id")?.textContent,
    account: document.getElementById("account")?.textContent,
    role: document.getElementById("role")?.textContent,
    counts: Object.fromEntries(
      [...document.querySelectorAll("[data-count]")].map((c) => [
        c.dataset.count,
        c.querySelector(".value").textContent,
      ]),
    ),
  }));
  if (home.org !== orgId || home.account !== username || home.role !== "owner")
    throw new Error(
      `the home page shows organization ${home.org}, account ${home.account}, role ${home.role} (expected ${orgId}, ${username}, owner)`,
    );
  // Three claims, three principals (the owner, the agent, the gateway) with one key each, one webhook.
  const expectedCounts = {
    "Current memories": "3",
    Principals: "3",
    "Active API keys": "3",
    Webhooks: "1",
    "Pending approvals": "0",
  };
  if (JSON.stringify(home.counts) !== JSON.stringify(expectedCounts))
    throw new Error(`the home page counts ${JSON.stringify(home.counts)}`);
  /** The Actor cells of the table under `scope`: [name shown, id in the title]. */
  const actors = (scope) =>
    page.evaluate((sel) => {
      const table = document.querySelector(sel);
      const column = [...table.querySelectorAll("thead th")].findIndex((th) => th.textContent === "Actor");
      return [...table.querySelectorAll("tbody tr")].map((r) => [
        r.cells[column].textContent,
        r.cells[column].querySelector("[title]")?.title,
      ]);
    }, scope);
  const named = (rows, name) => rows.some(([shown, id]) => shown === name && /^prn_[0-9a-f]{32}$/.test(id ?? ""));
  const recent = await actors("section[aria-labelledby=recent-activity] table");
  if (
    !named(recent, username) ||
    !named(recent, "browser-test agent") ||
    recent.some(([shown]) => shown.startsWith("prn_"))
  )
    throw new Error(`the home page's recent activity shows actors ${JSON.stringify(recent)}`);
  await screenshot("home");
  log(
    `home page: organization ${orgId}, account ${username} (owner), counts ${JSON.stringify(home.counts)}, actors by name`,
  );

  step = "enrolling a passkey";
  await visit("#/security", "/security");
  await checkLabels();
  await page.type("input[name=name]", "Virtual authenticator");
  await page.click("form[aria-label='Enroll a passkey'] button[type=submit]");
  await page
    .waitForFunction(() => document.querySelectorAll("#recovery-codes li").length === 8, { timeout: 20_000 })
    .catch(async (e) => {
      throw new Error(`${e.message}; page says: ${await alertText()}`);
    });
  const recovery = await page.$$eval("#recovery-codes li", (els) => els.map((e) => e.textContent));
  if (!recovery.every((c) => /^[a-z2-7]{5}-[a-z2-7]{5}$/i.test(c)))
    throw new Error(`unexpected recovery codes: ${recovery}`);
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
  await checkLabels();
  await screenshot("second-factor");
  await page.click("form[aria-label='Use a passkey'] button[type=submit]");
  await onPage("/home");
  const stored = await page.evaluate(() => Object.keys(sessionStorage).concat(Object.keys(localStorage)));
  if (stored.join() !== "svc-console-session")
    throw new Error(`the console stores more than the session token: ${stored}`);
  log("logged in with password, then the passkey through navigator.credentials.get");

  step = "searching memories";
  await visit("#/memories", "/memories");
  await page.type("input[name=q]", "eu-west");
  await page.click("form[aria-label='Search memories'] button[type=submit]");
  await page.waitForSelector("section[data-query='eu-west']", { timeout: 20_000 });
  const listed = await page.$$eval("main tbody a", (as) => as.map((a) => a.textContent));
  if (listed.length !== 1 || !/eu-west staging/.test(listed[0]))
    throw new Error(`the search for eu-west listed an unrelated claim: ${listed}`);
  await checkLabels();
  await screenshot("memories");
  log(`searched memories: ${listed.length} result(s) for "eu-west"`);

  step = "opening evidence";
  await clickNow(`main a[href="#/claim/${claimId}"]`);
  await onPage(`/claim/${claimId}`);
  const hidden = await page.$eval(".hidden-count", (e) => e.textContent);
  const supporting = await page.$$eval("section[aria-label=supporting] tbody tr", (r) => r.length);
  if (supporting !== 2 || !/^1 source hidden/.test(hidden))
    throw new Error(`evidence shows ${supporting} supporting rows and "${hidden}"`);
  await checkLabels();
  await screenshot("evidence");
  log('evidence: two readable supporting observations, the agent\'s private one only as "1 source hidden"');

  step = "creating a release policy";
  await visit("#/policies", "/policies");
  await checkLabels();
  const policyForm = "form[aria-label='Create a policy']";
  await page.type(`${policyForm} input[name=name]`, "Release approved claims only");
  await page.select(`${policyForm} select[name=type]`, "release");
  await page.select(`${policyForm} select[name=status]`, "active");
  await page.click(`${policyForm} input[name=require_approved_claim]`);
  await page.click(`${policyForm} button[type=submit]`);
  await until(
    () => document.querySelector("button[aria-label='Retire policy Release approved claims only']"),
    "the new policy is listed",
  );
  const [policy] = (await must("GET", "/v1/policies?status=active")).policies;
  if (
    policy?.type !== "release" ||
    policy.rules.require_approved_claim !== true ||
    policy.rules.separation_of_duty !== false
  )
    throw new Error(`the console created ${JSON.stringify(policy)}`);
  await screenshot("policies");
  log("policy created (release, active, approved claims only)");

  step = "submitting a claim for approval";
  await visit(`#/claim/${releasable}`, `/claim/${releasable}`);
  await clickNow(`main a[href="#/approvals?claim_id=${releasable}"]`);
  await onPage("/approvals");
  await checkLabels();
  const submitForm = "form[aria-label='Submit a claim for approval']";
  const prefilled = await page.$eval(`${submitForm} input[name=claim_id]`, (e) => e.value);
  if (prefilled !== releasable) throw new Error(`the approval form holds "${prefilled}", not the claim`);
  await page.type(`${submitForm} input[name=note]`, "Checked against the CI configuration.");
  await page.click(`${submitForm} button[type=submit]`);
  await until(() => document.querySelector("button[aria-label^='Approve apr_']"), "the pending approval is listed");

  step = "approving the claim with the keyboard";
  await page.focus("button[aria-label^='Approve apr_']");
  await page.keyboard.press("Enter");
  await until(
    () => document.activeElement?.matches("dialog[open] button[value=cancel]"),
    "the confirmation opens with focus on Cancel",
  );
  await page.keyboard.press("Tab");
  await page.keyboard.press("Enter");
  await until(
    () =>
      !document.querySelector("dialog") &&
      !document.querySelector("button[aria-label^='Approve apr_']") &&
      /approved/.test(document.querySelector("main table tbody")?.textContent ?? ""),
    "the approval shows as approved",
  );
  const [approval] = (await must("GET", `/v1/claim-approvals?claim_id=${releasable}`)).approvals;
  if (approval?.status !== "approved" || approval.note !== "Checked against the CI configuration.")
    throw new Error(`the approval is ${JSON.stringify(approval)}`);
  await screenshot("approvals");
  log("claim submitted for approval from its page, then approved (keyboard: Enter, Tab, Enter)");

  step = "creating a channel";
  await visit("#/releases", "/releases");
  await checkLabels();
  const channelForm = "form[aria-label='Create a channel']";
  await page.type(`${channelForm} input[name=name]`, "public-docs");
  await page.type(`${channelForm} input[name=audiences]`, "docs, support");
  await page.select(`${channelForm} select[name=min_trust]`, "high");
  await page.select(`${channelForm} select[name=gateway_principal_id]`, gateway.principal_id);
  await page.click(`${channelForm} button[type=submit]`);
  await until(
    () => document.querySelector("button[aria-label='Pause channel public-docs']"),
    "the new channel is listed",
  );
  const [channel] = (await must("GET", "/v1/channels")).channels;
  if (
    channel?.gateway_principal_id !== gateway.principal_id ||
    channel.audiences.join() !== "docs,support" ||
    channel.min_trust !== "high"
  )
    throw new Error(`the console created ${JSON.stringify(channel)}`);
  log("channel created (two audiences, minimum trust high, the gateway principal chosen from the directory)");

  step = "a release the API refuses";
  const releaseForm = "form[aria-label='Draft a release']";
  await page.type(`${releaseForm} input[name=claim_id]`, claimId);
  await page.click(`${releaseForm} button[type=submit]`);
  await until((f) => document.querySelector(`${f} .error`), "the refusal is shown in the form", releaseForm);
  const refusal = (await call("POST", "/v1/knowledge-releases", { claim_id: claimId, channel_id: channel.channel_id }))
    .json?.error?.message;
  const shown = await page.$eval(`${releaseForm} .error`, (e) => e.textContent);
  if (!refusal || shown !== refusal) throw new Error(`the form shows "${shown}", the API says "${refusal}"`);
  log(`an ineligible claim: the form shows the API's message ("${shown}")`);

  step = "drafting, approving and activating a release";
  await page.$eval(`${releaseForm} input[name=claim_id]`, (e) => (e.value = ""));
  await page.type(`${releaseForm} input[name=claim_id]`, releasable);
  await page.click(`${releaseForm} button[type=submit]`);
  await until(
    () => document.querySelector("button[aria-label^='Approve release rel_']"),
    "the draft release is listed",
  );
  await clickNow("button[aria-label^='Approve release rel_']");
  await until(
    () => document.querySelector("button[aria-label^='Activate release rel_']"),
    "the approved release offers activation",
  );
  await clickNow("button[aria-label^='Activate release rel_']");
  await until(() => document.querySelector("dialog[open] button[value=confirm]"), "activation asks to confirm");
  await page.click("dialog[open] button[value=confirm]");
  await until(
    () =>
      !document.querySelector("dialog") &&
      !document.querySelector("button[aria-label^='Activate release rel_']") &&
      /active/.test([...document.querySelectorAll("main table")].at(-1)?.textContent ?? ""),
    "the release shows as active",
  );
  const served = await must("POST", `/v1/channels/${channel.channel_id}/context/compile`, {}, gateway.key);
  if (served.items.length !== 1 || served.items[0].claim_id !== releasable)
    throw new Error(`the channel serves ${JSON.stringify(served.items)}`);
  await screenshot("releases");
  log("release drafted, approved, activated after confirmation; the channel's gateway is served it");

  step = "the Atlas: a claim's evidence trace";
  await visit(`#/claim/${claimId}`, `/claim/${claimId}`);
  await clickNow(`main a[href^="#/atlas?lens=evidence_trace"]`);
  await onPage("/atlas");
  await checkLabels();
  const trace = await atlasDrawn("evidence_trace");
  const legend = await page.$$eval("#atlas-legend [data-color]", (items) =>
    items.map((i) => [i.textContent, i.dataset.color.toLowerCase()]),
  );
  const sameColour = legend.filter(([, c], i) => legend.findIndex(([, d]) => d === c) !== i);
  if (legend.length < 22 || sameColour.length)
    throw new Error(`the Atlas legend repeats colours: ${JSON.stringify(sameColour)} of ${JSON.stringify(legend)}`);
  // The claim, its two readable sources (the agent's private one is not drawn), the owner's context run.
  if (
    trace.nodeTypes.claim !== 1 ||
    trace.nodeTypes.observation !== 2 ||
    trace.edgeTypes.supports !== 2 ||
    trace.nodeTypes.context !== 1
  )
    throw new Error(`the evidence trace drew ${JSON.stringify(trace)}`);
  await screenshot("atlas");
  log(
    `Atlas evidence trace drawn with Cytoscape.js: ${trace.nodes} nodes, ${trace.edges} edges (${JSON.stringify(trace.nodeTypes)}); ${legend.length} legend colours, all distinct`,
  );

  step = "the Atlas: workspace graph and knowledge releases";
  await page.select("select[name=lens]", "workspace_graph");
  await page.click("form[aria-label='Compile an Atlas view'] button[type=submit]");
  const graph = await atlasDrawn("workspace_graph");
  if (graph.nodeTypes.claim !== 3 || !graph.nodeTypes.subject || !graph.edgeTypes.about)
    throw new Error(`the workspace graph drew ${JSON.stringify(graph)}`);
  await screenshot("atlas-workspace");
  await page.select("select[name=lens]", "knowledge_release");
  await page.type("input[name=channel_id]", channel.channel_id); // the workspace field stays empty; only its own argument is sent
  await page.click("form[aria-label='Compile an Atlas view'] button[type=submit]");
  const released = await atlasDrawn("knowledge_release");
  if (released.nodeTypes.channel !== 1 || released.nodeTypes.release !== 1 || released.edgeTypes["released-as"] !== 1)
    throw new Error(`the knowledge-release view drew ${JSON.stringify(released)}`);
  await screenshot("atlas-releases");
  log(
    `Atlas workspace graph (${graph.nodes} nodes, ${graph.edges} edges) and knowledge releases (${released.nodes} nodes) drawn`,
  );

  // Back to the claim for the lifecycle move (the Atlas comes first: an expired claim leaves the trace's views).
  await visit(`#/claim/${claimId}`, `/claim/${claimId}`);

  step = "expiring a claim after confirmation";
  await page.type("form[aria-label=Expire] input[name=reason]", "checked by the browser test");
  await page.click("form[aria-label=Expire] button[type=submit]");
  await page.waitForSelector("dialog[open]");
  await page.keyboard.press("Escape"); // Esc cancels: nothing may change
  await page.waitForFunction(() => !document.querySelector("dialog"));
  if ((await call("GET", `/v1/claims/${claimId}/evidence`)).json.data.claim.valid_to)
    throw new Error("a cancelled confirmation expired the claim");
  await page.click("form[aria-label=Expire] button[type=submit]");
  await page.waitForSelector("dialog[open]");
  await page.click("dialog[open] button[value=confirm]");
  await page.waitForFunction(() => /expire done/.test(document.getElementById("status").textContent), {
    timeout: 20_000,
  });
  if (!(await call("GET", `/v1/claims/${claimId}/evidence`)).json.data.claim.valid_to)
    throw new Error("the confirmed expiry did not reach the API");
  log("expire: Esc on the confirmation changed nothing; confirming set valid_to");

  step = "the event feed";
  await visit("#/events", "/events");
  if (!(await page.$$eval("main tbody tr", (r) => r.length))) throw new Error("the event feed is empty");
  const feedActors = await actors("main table.events");
  if (
    !named(feedActors, username) ||
    !named(feedActors, "browser-test agent") ||
    feedActors.some(([shown]) => shown.startsWith("prn_"))
  )
    throw new Error(`the event feed's Actor column shows ${JSON.stringify(feedActors)}`);
  await checkLabels();
  await screenshot("events");
  log("event feed listed, newest first; the Actor column names the owner and the agent (ids in the titles)");

  step = "registering a webhook";
  await visit("#/webhooks", "/webhooks");
  await checkLabels();
  const hookForm = "form[aria-label='Register a webhook']";
  await page.type(`${hookForm} input[name=url]`, hookUrl);
  await page.type(`${hookForm} input[name=secret]`, "console-hook-secret-0123");
  await page.$eval(`${hookForm} input[name=events]`, (e) => (e.value = ""));
  await page.type(`${hookForm} input[name=events]`, "observation.appended");
  await page.click(`${hookForm} button[type=submit]`);
  await until(
    (url) => document.querySelector("section[aria-label=Deliveries] h2")?.textContent === `Deliveries of ${url}`,
    "the new hook's deliveries are shown",
    hookUrl,
  );
  const consoleHook = (await must("GET", "/v1/webhooks")).webhooks.find((w) => w.url === hookUrl);
  if (consoleHook?.status !== "active" || consoleHook.events.join() !== "observation.appended")
    throw new Error(`the console registered ${JSON.stringify(consoleHook)}`);
  log("webhook registered through the form (one event kind)");

  step = "a delivery that fails five times, then redelivered";
  /** Clicks Refresh until the deliveries table satisfies `fn` (each wait is on the page; the service retries a second apart). */
  const refreshUntil = async (fn, what, arg) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      await clickNow("button[aria-label='Refresh deliveries']");
      try {
        return await page.waitForFunction(fn, { timeout: 1_500 }, arg);
      } catch {
        if (Date.now() > deadline) throw new Error(`${what}; the page says: ${await pageSays()}`);
      }
    }
  };
  const deliveryCells = () =>
    [...document.querySelectorAll("section[aria-label=Deliveries] tbody tr")].map((r) =>
      [...r.cells].map((c) => c.textContent),
    );
  await observe("A note the console's webhook receives.");
  await refreshUntil(() => {
    const rows = [...document.querySelectorAll("section[aria-label=Deliveries] tbody tr")].map((r) =>
      [...r.cells].map((c) => c.textContent),
    );
    return (
      rows.length === 1 && rows[0][2] === "failed" && rows[0][3] === "5" && rows[0][4] === "500" && rows[0][6] === ""
    );
  }, "the delivery shows failed after five attempts (status, attempts, response, no next retry)");
  if (hookCalls.length !== 5 || new Set(hookCalls.map((c) => c.delivery)).size !== 1)
    throw new Error(`the receiver got ${JSON.stringify(hookCalls)}`);
  await checkLabels();
  await screenshot("webhooks");
  const [failedId] = (await page.evaluate(deliveryCells))[0];
  hookAccepts = true;
  await clickNow(`button[aria-label='Redeliver ${failedId}']`);
  await until(
    (id) => document.getElementById("status").textContent.includes(`Delivery ${id} is pending again`),
    "the redelivery is announced",
    failedId,
  );
  await refreshUntil(() => {
    const rows = [...document.querySelectorAll("section[aria-label=Deliveries] tbody tr")].map((r) =>
      [...r.cells].map((c) => c.textContent),
    );
    return rows[0]?.[2] === "delivered" && rows[0][3] === "6" && rows[0][4] === "204";
  }, "the redelivered delivery shows delivered on its sixth attempt");
  if (hookCalls.length !== 6 || hookCalls.some((c) => c.delivery !== failedId))
    throw new Error(`the receiver got ${JSON.stringify(hookCalls)}`);
  await screenshot("webhook-redelivered");
  log(
    "a failing receiver: five attempts a second apart, shown failed; redelivered from the page under the same id (delivered)",
  );

  step = "pausing, resuming and deleting a webhook";
  await clickNow(`button[aria-label='Pause webhook ${hookUrl}']`);
  await until(
    (url) => document.querySelector(`button[aria-label='Resume webhook ${url}']`),
    "the hook offers Resume",
    hookUrl,
  );
  if ((await must("GET", "/v1/webhooks")).webhooks.find((w) => w.url === hookUrl).status !== "paused")
    throw new Error("the pause did not reach the API");
  await observe("Written while the console's hook is paused.");
  const whilePaused = (await must("GET", `/v1/webhooks/${consoleHook.webhook_id}/deliveries`)).deliveries.length;
  await clickNow(`button[aria-label='Resume webhook ${hookUrl}']`);
  await until(
    (url) => document.querySelector(`button[aria-label='Pause webhook ${url}']`),
    "the hook offers Pause again",
    hookUrl,
  );
  await refreshUntil(
    () =>
      [...document.querySelectorAll("section[aria-label=Deliveries] tbody tr")].length === 2 &&
      document.querySelector("section[aria-label=Deliveries] tbody tr")?.cells[2].textContent === "delivered",
    "the event written while paused is delivered after the resume",
  );
  if (whilePaused !== 1 || !hookCalls.at(-1).body.includes("user:ada"))
    throw new Error(`paused: ${whilePaused} deliveries; the receiver's last call: ${JSON.stringify(hookCalls.at(-1))}`);
  await clickNow(`button[aria-label='Delete webhook ${hookUrl}']`);
  await until(() => document.querySelector("dialog[open] button[value=confirm]"), "deletion asks to confirm");
  await page.click("dialog[open] button[value=confirm]");
  await until(
    (url) =>
      !document.querySelector(`button[aria-label='Delete webhook ${url}']`) &&
      /deleted/.test(document.getElementById("status").textContent),
    "the hook is gone from the list",
    hookUrl,
  );
  if ((await must("GET", "/v1/webhooks")).webhooks.some((w) => w.url === hookUrl))
    throw new Error("the deleted hook is still listed by the API");
  log("webhook paused (an event accrued), resumed (delivered), deleted after confirmation");

  step = "the keys page: scopes explained, presets, principals by name";
  await visit("#/keys", "/keys");
  await checkLabels();
  const scopeTitles = await page.$$eval("fieldset.scopes label", (ls) =>
    ls.map((l) => [l.textContent.trim(), l.title, l.querySelector("input").title]),
  );
  const untitled = scopeTitles.filter(([, label, input]) => !label || label !== input);
  if (scopeTitles.length < 40 || untitled.length)
    throw new Error(`scopes without a one-line meaning on hover: ${JSON.stringify(untitled)}`);
  if (!/irreversible/i.test(scopeTitles.find(([s]) => s === "observations:purge")[1]))
    throw new Error(`observations:purge is explained as "${scopeTitles.find(([s]) => s === "observations:purge")[1]}"`);
  const keyRows = await page.$$eval("main table tbody tr", (rows) =>
    rows.map((r) => [r.cells[0].textContent, r.cells[1].textContent, r.cells[1].querySelector("[title]")?.title]),
  );
  const agentKeyRow = keyRows.find(([label]) => label.startsWith("browser-test agent"));
  if (agentKeyRow?.[1] !== "browser-test agent" || agentKeyRow[2] !== agent.principal_id)
    throw new Error(`the keys table shows principals ${JSON.stringify(keyRows)}`);
  const ticked = () =>
    page.evaluate(() => ({
      all: document.querySelector("input[name=all_scopes]").checked,
      scopes: [...document.querySelectorAll("input[name=scope]:checked")].map((i) => i.value).sort(),
      locked: [...document.querySelectorAll("input[name=scope]")].every((i) => i.disabled),
    }));
  // What SPEC's route tables give each preset (the console's help text lists the same).
  const PRESET_SCOPES = {
    "Read-only agent": [
      "projects:resolve",
      "projects:read",
      "subjects:read",
      "context:compile",
      "views:compile",
      "evidence:read",
      "checkpoints:read",
      "handoffs:read",
      "mcp:call",
    ],
    "Webhook consumer": ["webhooks:read", "webhooks:write", "events:read"],
  };
  PRESET_SCOPES["Writing agent"] = [
    ...PRESET_SCOPES["Read-only agent"],
    "projects:create",
    "observations:write",
    "claims:write",
    "feedback:write",
    "checkpoints:write",
    "handoffs:write",
    "leases:read",
    "leases:write",
  ];
  await page.click("input[name=scope][value='audit:read']"); // a tick of one's own: a preset replaces it
  for (const [preset, scopes] of Object.entries(PRESET_SCOPES)) {
    await page.click(`button[data-preset='${preset}']`);
    const now = await ticked();
    if (now.all || now.locked || JSON.stringify(now.scopes) !== JSON.stringify([...scopes].sort()))
      throw new Error(`the ${preset} preset ticks ${JSON.stringify(now)}`);
    const help = await page.$eval(".preset-help", (e) => e.textContent);
    if (!scopes.every((sc) => help.includes(sc)))
      throw new Error(`the presets' help text does not list ${preset}'s scopes: ${help}`);
  }
  await page.click("button[data-preset='Admin']");
  const admin = await ticked();
  if (!admin.all || !admin.locked || admin.scopes.length !== scopeTitles.length)
    throw new Error(`the Admin preset ticks ${JSON.stringify(admin)}`);
  await page.click("button[data-preset='Webhook consumer']");
  if ((await ticked()).locked) throw new Error("after the Admin preset, another preset leaves the scopes locked");
  await screenshot("keys");
  log(
    "every scope explained on hover; presets tick the expected scopes (Admin: all scopes, locked); the agent's key names its principal",
  );

  step = "minting and revoking a key";
  await page.type("input[name=label]", "browser-test key");
  await page.click("form[aria-label='Mint a key'] button[type=submit]");
  await page.waitForSelector("#minted-key .secret", { timeout: 20_000 });
  const raw = await page.$eval("#minted-key .secret", (e) => e.textContent);
  const asKey = await call("GET", "/v1/principal", undefined, raw);
  if (
    asKey.status !== 200 ||
    JSON.stringify([...asKey.json.data.scopes].sort()) !== JSON.stringify([...PRESET_SCOPES["Webhook consumer"]].sort())
  )
    throw new Error(`the minted key does not work as chosen: ${asKey.status} ${JSON.stringify(asKey.json)}`);
  await screenshot("key-minted");
  await page.click("button[aria-label='Revoke key browser-test key']");
  await page.waitForSelector("dialog[open]");
  await screenshot("confirm-revoke");
  await page.click("dialog[open] button[value=confirm]");
  await page.waitForFunction(() => !document.querySelector("button[aria-label='Revoke key browser-test key']"), {
    timeout: 20_000,
  });
  const after = await call("GET", "/v1/principal", undefined, raw);
  if (after.status !== 401) throw new Error(`the revoked key still answers ${after.status}`);
  log(
    "key minted with the webhook consumer preset (raw value shown once, works), then revoked after confirmation (401)",
  );

  step = "creating an account";
  await visit("#/accounts", "/accounts");
  await checkLabels();
  await page.type("input[name=username]", "grace.ops");
  await page.select("select[name=role]", "member");
  await page.click("form[aria-label='Create an account'] button[type=submit]");
  await page.waitForSelector("main .secret", { timeout: 20_000 });
  await screenshot("account-created");
  const grace = await fetch(`${api}/v1/dashboard-sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "grace.ops", password: await page.$eval("main .secret", (e) => e.textContent) }),
  });
  if (grace.status !== 201)
    throw new Error(`the new account cannot log in with its temporary password: ${grace.status}`);
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
  await onPage("/home");
  const remaining = await page.$eval("#status", (e) => e.textContent);
  if (!/7 recovery codes remain/.test(remaining))
    throw new Error(`after a recovery code the console says "${remaining}"`);
  log("logged in with password + recovery code (7 remain)");

  step = "replacing the recovery codes";
  await visit("#/security", "/security");
  await page.type("form[aria-label='Replace recovery codes'] input[name=current_password]", newPassword);
  await page.click("form[aria-label='Replace recovery codes'] button[type=submit]");
  await until(
    (old) => {
      const codes = [...document.querySelectorAll("#recovery-codes li")].map((e) => e.textContent);
      return codes.length === 8 && !codes.some((c) => old.includes(c));
    },
    "eight new recovery codes are shown",
    recovery,
  );
  const staged = (await must("POST", "/v1/dashboard-sessions", { username, password: newPassword }, "")).session_token;
  const oldCode = await call("POST", "/v1/dashboard-sessions/current/recovery-code", { code: recovery[1] }, staged);
  if (oldCode.status !== 400) throw new Error(`a replaced recovery code answers ${oldCode.status}`);
  await call("DELETE", "/v1/dashboard-sessions/current", undefined, staged);
  log("recovery codes replaced (password asked); a code of the old set no longer works");

  step = "removing the passkey";
  await page.type("input[name=remove_password]", newPassword);
  await clickNow("button[aria-label='Remove passkey Virtual authenticator']");
  await until(() => document.querySelector("dialog[open] button[value=confirm]"), "removal asks to confirm");
  await page.click("dialog[open] button[value=confirm]");
  await until(
    () => /No passkey yet/.test(document.querySelector("main")?.textContent ?? ""),
    "the passkey is gone from the list",
  );
  await page.click("#nav button:last-child");
  await onPage("/login");
  await page.type("input[name=username]", username);
  await page.type("input[name=password]", newPassword);
  await page.click("form[aria-label='Log in'] button[type=submit]");
  await onPage("/home");
  log("the last passkey removed (password asked); the next login needs the password only");

  if (problems.length) throw new Error(`the page reported problems:\n${problems.join("\n")}`);
  const unchecked = PAGES_THAT_MUST_FIT.filter((p) => !pagesThatFit.has(p));
  if (unchecked.length) throw new Error(`pages never checked for horizontal overflow: ${unchecked.join(", ")}`);
  log(
    `${pagesThatFit.size} pages fit a ${WIDTH} px window (no horizontal overflow); docs/screenshots/: ${[...DOC_SHOTS].map((n) => `${n}.png`).join(", ")}`,
  );
  console.log(`test:browser passed in ${Math.round((Date.now() - t0) / 1000)} s; screenshots in ${shots}`);
} catch (err) {
  failed = true;
  console.error(`test:browser FAILED while ${step}: ${err.stack ?? err}`);
  if (pageProblems.length) console.error(`the page reported:\n  ${pageProblems.join("\n  ")}`);
  console.error(`screenshots so far in ${shots}`);
  if (page) {
    console.error(`the page (${await page.evaluate(() => location.hash).catch(() => "?")}) says: ${await pageSays()}`);
    await page.screenshot({ path: join(shots, "failure.png"), fullPage: true }).catch(() => {});
  }
} finally {
  await browser?.close().catch(() => {});
  server.kill("SIGTERM");
  await new Promise((r) => (server.exitCode === null ? server.once("exit", r) : r()));
  receiver.close();
  if (!process.argv.includes("--keep")) {
    rmSync(state, { recursive: true, force: true });
    rmSync(profile, { recursive: true, force: true });
  }
}
process.exit(failed ? 1 : 0);
