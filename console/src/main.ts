// The operator console: a hash-routed single page over the public API (no server rendering).
import { session } from "./api";
import {
  type Stage,
  currentStage,
  loginPage,
  logout,
  passwordPage,
  secondFactorPage,
  securityPage,
  stageRoute,
} from "./auth";
import { atlasPage } from "./atlas";
import { clearStaleAnnouncement, errorBox, h } from "./dom";
import { approvalsPage, policiesPage, releasesPage } from "./governance";
import { homePage } from "./home";
import { forgetDirectory } from "./names";
import { accountsPage, claimPage, eventsPage, keysPage, memoriesPage, webhooksPage } from "./pages";

const PAGES: [string, string][] = [
  ["#/home", "Home"],
  ["#/memories", "Memories"],
  ["#/atlas", "Atlas"],
  ["#/approvals", "Approvals"],
  ["#/releases", "Releases"],
  ["#/policies", "Policies"],
  ["#/events", "Events"],
  ["#/webhooks", "Webhooks"],
  ["#/keys", "Keys"],
  ["#/accounts", "Accounts"],
  ["#/security", "Passkeys"],
];
const go = (hash: string) => {
  if (location.hash === hash) void render();
  else location.hash = hash;
};

function nav(stage: Stage, path: string): void {
  const el = document.getElementById("nav")!;
  el.replaceChildren(
    ...(stage === "full"
      ? [
          ...PAGES.map(([href, label]) =>
            h("a", { href, "aria-current": path === href.slice(1) ? "page" : false }, label),
          ),
          h("button", { type: "button", on: { click: () => logout(go) } }, "Log out"),
        ]
      : session.token()
        ? [h("button", { type: "button", on: { click: () => logout(go) } }, "Log out")]
        : []),
  );
}

let renderSeq = 0;
async function render(): Promise<void> {
  const seq = ++renderSeq;
  clearStaleAnnouncement();
  forgetDirectory();
  const [path, queryString] = (location.hash.slice(1) || "/").split("?");
  const params = new URLSearchParams(queryString ?? "");
  const stage = await currentStage();
  if (seq !== renderSeq) return;
  const main = document.getElementById("main")!;
  const page = h("div");
  nav(stage, path);
  // A page for another stage than the credential's sends the person where the API says they stand.
  const expected = stageRoute(stage).slice(1);
  const authPages = ["/login", "/password", "/second-factor"];
  if (stage !== "full" ? path !== expected : authPages.includes(path) || path === "/") return go(stageRoute(stage));
  /** What a page must do once it is in the document (the Atlas's graph measures its container). */
  let mounted: (() => void) | undefined;
  try {
    if (path === "/login") loginPage(page, go);
    else if (path === "/password") passwordPage(page, go);
    else if (path === "/second-factor") secondFactorPage(page, go);
    else if (path === "/home") await homePage(page);
    else if (path === "/memories") await memoriesPage(page, go);
    else if (path.startsWith("/claim/")) await claimPage(page, go, decodeURIComponent(path.slice("/claim/".length)));
    else if (path === "/atlas") mounted = await atlasPage(page, params);
    else if (path === "/approvals") await approvalsPage(page, render, params);
    else if (path === "/releases") await releasesPage(page, render, params);
    else if (path === "/policies") await policiesPage(page, render);
    else if (path === "/events") await eventsPage(page);
    else if (path === "/webhooks") await webhooksPage(page, go, params);
    else if (path === "/keys") await keysPage(page, render);
    else if (path === "/accounts") await accountsPage(page);
    else if (path === "/security") await securityPage(page, render);
    else page.append(h("h1", null, "Not found"), h("p", null, h("a", { href: "#/home" }, "Go to the home page")));
  } catch (e) {
    page.append(errorBox((e as Error).message));
  }
  if (seq !== renderSeq) return;
  main.replaceChildren(page);
  try {
    mounted?.();
  } catch (e) {
    page.append(errorBox((e as Error).message));
  }
  document.title = `${page.querySelector("h1")?.textContent ?? "Console"} · svc-memory console`;
  // Keyboard users land on the page's first field, or its heading.
  const first = page.querySelector<HTMLElement>("[autofocus]") ?? main;
  first.focus();
  document.body.dataset.page = path;
}

window.addEventListener("hashchange", () => void render());
void render();
