// Memories, a claim's evidence and lifecycle, the event feed, webhooks, keys and accounts.
import { SCOPES } from "../../src/auth/scope-names";
import { api } from "./api";
import { guarded } from "./auth";
import { announce, cell, clip, confirmDialog, errorBox, field, h, select, table } from "./dom";
import { type Directory, principalDirectory, principalName } from "./names";
import { PRESETS, type Preset, SCOPE_HELP, type Scope } from "./scopes";

type Go = (hash: string) => void;
const CLAIM_STATUSES = ["", "active", "disputed", "superseded", "revoked"];
const CLAIM_KINDS = ["", "fact", "preference", "decision", "instruction", "summary"];
const VISIBILITIES = ["", "private", "team"];
const TRUST = ["", "low", "medium", "high", "verified"];
const ROLES = ["reader", "member", "admin", "owner"];

/** The search the memories page shows: kept in memory so the back link from a claim returns to it. */
let search: { filters: Record<string, string>; cursors: string[] } = { filters: {}, cursors: [] };

export async function memoriesPage(main: HTMLElement, _go: Go): Promise<void> {
  const results = h("section", { "aria-label": "Results", "aria-live": "polite" });
  const f = search.filters;
  const form = guarded(
    h(
      "form",
      { "aria-label": "Search memories", class: "inline", role: "search" },
      field("Search", "q", { type: "search", value: f.q ?? "", autofocus: true }),
      select("Status", "status", CLAIM_STATUSES),
      select("Kind", "kind", CLAIM_KINDS),
      select("Visibility", "visibility", VISIBILITIES),
      field("Subject id", "subject_id", { value: f.subject_id ?? "", size: 14 }),
      field("Project id", "project_id", { value: f.project_id ?? "", size: 14 }),
      field("Per page", "limit", { type: "number", min: 1, max: 100, value: f.limit ?? "25", size: 4 }),
      h("button", { type: "submit" }, "Search"),
    ),
    async (v) => {
      search = { filters: v, cursors: [] };
      await load();
    },
  );
  for (const name of ["status", "kind", "visibility"])
    (form.elements.namedItem(name) as HTMLSelectElement).value = f[name] ?? "";

  /** `quiet`: the first load on arrival keeps whatever status line the login left (e.g. recovery codes remaining). */
  async function load(quiet = false): Promise<void> {
    const after = search.cursors.at(-1);
    let data: any;
    try {
      data = await api("GET", "/v1/memories", { query: { ...search.filters, after } });
    } catch (e) {
      results.replaceChildren(errorBox((e as Error).message));
      return;
    }
    const page = search.cursors.length + 1;
    results.replaceChildren(
      h("h2", null, `Page ${page}`),
      data.items.length
        ? table(
            ["Statement", "Kind", "Status", "Trust", "Subject", "Valid to"],
            data.items.map((c: any) => [
              h("a", { href: `#/claim/${encodeURIComponent(c.claim_id)}` }, c.statement),
              c.kind,
              c.status,
              c.trust,
              c.subject_id ?? "",
              c.valid_to ?? "",
            ]),
          )
        : h("p", null, "No memories match."),
      h(
        "div",
        { class: "inline" },
        search.cursors.length
          ? h(
              "button",
              {
                type: "button",
                class: "secondary",
                on: {
                  click: () => {
                    search.cursors.pop();
                    void load();
                  },
                },
              },
              "Previous page",
            )
          : null,
        data.has_more
          ? h(
              "button",
              {
                type: "button",
                class: "secondary",
                on: {
                  click: () => {
                    search.cursors.push(data.next_cursor);
                    void load();
                  },
                },
              },
              "Next page",
            )
          : null,
      ),
    );
    results.dataset.query = search.filters.q ?? "";
    if (!quiet) announce(`${data.items.length} memories on page ${page}.`);
  }
  main.append(h("h1", null, "Memories"), form, results);
  await load(true);
}

function observationRows(list: any[]) {
  return list.map((o) => [o.observation_id, o.kind, o.trust, o.content ?? "(purged)", o.created_at]);
}

export async function claimPage(main: HTMLElement, go: Go, claimId: string): Promise<void> {
  const ev = await api("GET", `/v1/claims/${encodeURIComponent(claimId)}/evidence`);
  const c = ev.claim;
  const act = (label: string, path: string, extra: Record<string, unknown>, warn: string) =>
    guarded(
      h(
        "form",
        { "aria-label": label, class: "inline" },
        ...(path === "supersede"
          ? [field("Superseded by (claim id)", "superseded_by", { required: true, size: 30 })]
          : []),
        field("Reason", "reason", { maxlength: 1000 }),
        h("button", { type: "submit", class: "danger" }, label),
      ),
      async (v) => {
        if (!(await confirmDialog(`${label}?`, warn, label))) return;
        const body: Record<string, unknown> = { ...extra, ...(v.reason ? { reason: v.reason } : {}) };
        if (v.superseded_by) body.superseded_by = v.superseded_by;
        await api("POST", `/v1/claims/${encodeURIComponent(claimId)}/${path}`, { body });
        announce(`Claim: ${label.toLowerCase()} done.`, true);
        go(`#/claim/${encodeURIComponent(claimId)}?t=${Date.now()}`);
      },
    );
  main.append(
    h("p", null, h("a", { href: "#/memories" }, "← Back to memories")),
    h("h1", null, c.statement),
    table(
      ["Claim", "Kind", "Status", "Trust", "Visibility", "Subject", "Valid from", "Valid to", "Version"],
      [
        [
          c.claim_id,
          c.kind,
          c.status,
          c.trust,
          c.visibility,
          c.subject_id ?? "",
          c.valid_from ?? "",
          c.valid_to ?? "",
          String(c.version ?? ""),
        ],
      ],
    ),
    h(
      "p",
      { class: "inline" },
      h(
        "a",
        { href: `#/atlas?lens=evidence_trace&focus_id=${encodeURIComponent(c.claim_id)}` },
        "Open this claim's evidence trace in the Atlas",
      ),
      h("a", { href: `#/approvals?claim_id=${encodeURIComponent(c.claim_id)}` }, "Submit for approval"),
      h("a", { href: `#/releases?claim_id=${encodeURIComponent(c.claim_id)}` }, "Draft a release"),
    ),
    h("h2", { id: "evidence" }, "Evidence"),
    h(
      "p",
      { class: "hidden-count" },
      ev.hidden_source_count
        ? `${ev.hidden_source_count} source${ev.hidden_source_count === 1 ? "" : "s"} hidden (you may not read them).`
        : "No hidden sources.",
    ),
    ...(["supporting", "contradicting", "qualifying"] as const).map((rel) =>
      h(
        "section",
        { "aria-label": rel },
        h("h2", null, `${rel[0].toUpperCase()}${rel.slice(1)} (${ev[rel].length})`),
        ev[rel].length
          ? table(["Observation", "Kind", "Trust", "Content", "Created"], observationRows(ev[rel]))
          : h("p", { class: "muted" }, "None."),
      ),
    ),
    h("h2", null, "Lifecycle"),
    act("Supersede", "supersede", {}, "The claim becomes superseded by the other claim; this cannot be undone."),
    act("Revoke", "revoke", {}, "The claim is revoked and leaves memories and compiles; this cannot be undone."),
    act("Expire", "expire", {}, "The claim's valid_to becomes now; it leaves current memories."),
  );
}

/** An event's resource: its type and id (a claim's links to the claim's page). */
function eventResource(e: any): HTMLElement {
  const id =
    e.resource_type === "claim"
      ? h("a", { href: `#/claim/${encodeURIComponent(e.resource_id)}`, title: e.resource_id }, e.resource_id)
      : h("span", { title: e.resource_id }, e.resource_id);
  return h("span", { class: "resource" }, `${e.resource_type} `, h("small", null, id));
}

/** The cells of an event row: time, kind, resource, actor by name. */
export const eventCells = (directory: Directory, e: any) => [
  e.created_at,
  e.kind,
  eventResource(e),
  principalName(directory, e.actor_id),
];
export const EVENT_HEADERS = ["Time", "Kind", "Resource", "Actor"];

/** The newest 200 events, newest on top; "Watch live" adds what follows in commit order. */
export async function eventsPage(main: HTMLElement): Promise<void> {
  const directory = await principalDirectory();
  const rows = h("tbody");
  let timer: number | undefined;
  const newest = await api("GET", "/v1/events", { query: { order: "newest", limit: 200 } });
  rows.append(...newest.events.map((e: any) => h("tr", null, eventCells(directory, e).map(cell))));
  /** The newest event shown: live polling continues after it. */
  let cursor: string | undefined = newest.events[0]?.id;
  async function poll(): Promise<number> {
    const data = await api("GET", "/v1/events", { query: { after: cursor, limit: 200 } });
    for (const e of data.events) rows.prepend(h("tr", null, eventCells(directory, e).map(cell)));
    if (data.events.length) cursor = data.events.at(-1).id;
    return data.events.length;
  }
  const status = h("p", { class: "muted", "aria-live": "polite" });
  const watch = h(
    "button",
    {
      type: "button",
      "aria-pressed": "false",
      on: {
        click: () => {
          if (timer) {
            clearInterval(timer);
            timer = undefined;
            watch.setAttribute("aria-pressed", "false");
            watch.textContent = "Watch live";
            status.textContent = "Stopped.";
            return;
          }
          watch.setAttribute("aria-pressed", "true");
          watch.textContent = "Stop watching";
          status.textContent = "Watching: new events appear at the top every 3 seconds.";
          timer = window.setInterval(async () => {
            if (!main.isConnected) return clearInterval(timer);
            try {
              const n = await poll();
              if (n) status.textContent = `${n} new event${n === 1 ? "" : "s"}.`;
            } catch (e) {
              status.textContent = (e as Error).message;
            }
          }, 3000);
        },
      },
    },
    "Watch live",
  );
  main.append(
    h("h1", null, "Event feed"),
    watch,
    status,
    h(
      "p",
      { class: "muted" },
      newest.events.length === 200 ? "The newest 200 events are shown." : `${newest.events.length} events.`,
    ),
    h(
      "table",
      { class: "events" },
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          EVENT_HEADERS.map((t) => h("th", { scope: "col" }, t)),
        ),
      ),
      rows,
    ),
  );
}

/**
 * Webhooks: register, pause, resume and delete hooks; `?hook=` shows one hook's deliveries with their
 * attempts and next retry, and redelivers a failed one. Every move goes through its public route; the
 * API's refusal is shown as it says it.
 */
export async function webhooksPage(main: HTMLElement, go: Go, params: URLSearchParams): Promise<void> {
  const { webhooks } = await api("GET", "/v1/webhooks");
  const chosen = webhooks.find((w: any) => w.webhook_id === params.get("hook"));
  const here = (hookId?: string) => `#/webhooks${hookId ? `?hook=${encodeURIComponent(hookId)}` : ""}`;
  const hookPath = (w: any) => `/v1/webhooks/${encodeURIComponent(w.webhook_id)}`;
  /** One move: its route, then the status line and this page again; a refusal shows at the top. */
  const move = async (work: () => Promise<string>, then = here(chosen?.webhook_id)) => {
    try {
      announce(await work(), true);
      go(`${then}${then.includes("?") ? "&" : "?"}t=${Date.now()}`);
    } catch (e) {
      main.querySelector(":scope > .error")?.remove();
      main.prepend(errorBox((e as Error).message));
    }
  };
  const button = (label: string, name: string, onClick: () => void, kind = "secondary") =>
    h("button", { type: "button", class: kind, "aria-label": name, on: { click: onClick } }, label);

  const rows = webhooks.map((w: any) => [
    clip(w.url),
    w.status,
    (w.events ?? []).join(", "),
    String(w.failure_count ?? 0),
    w.created_at,
    h(
      "span",
      { class: "inline" },
      h("a", { href: here(w.webhook_id), "aria-label": `Deliveries of ${w.url}` }, "Deliveries"),
      w.status === "active"
        ? button("Pause", `Pause webhook ${w.url}`, () =>
            move(async () => {
              await api("POST", `${hookPath(w)}/pause`);
              return `Webhook ${w.url} paused: its events wait until it is resumed.`;
            }),
          )
        : null,
      w.status === "paused"
        ? button("Resume", `Resume webhook ${w.url}`, () =>
            move(async () => {
              await api("POST", `${hookPath(w)}/resume`);
              return `Webhook ${w.url} resumed: what waited is being delivered.`;
            }),
          )
        : null,
      button(
        "Delete",
        `Delete webhook ${w.url}`,
        async () => {
          if (
            !(await confirmDialog(
              "Delete webhook?",
              `${w.url} and its delivery records are removed; nothing more is sent to it.`,
              "Delete",
            ))
          )
            return;
          await move(async () => {
            const r = await api("DELETE", hookPath(w));
            return `Webhook ${w.url} deleted with ${r.deliveries_removed} delivery record${r.deliveries_removed === 1 ? "" : "s"}.`;
          }, here());
        },
        "danger",
      ),
    ),
  ]);

  const register = guarded(
    h(
      "form",
      { "aria-label": "Register a webhook" },
      field("URL (https, or http to localhost / 127.0.0.1)", "url", {
        type: "url",
        required: true,
        maxlength: 2048,
        size: 50,
      }),
      field("Secret (at least 16 characters; signs every delivery, never shown again)", "secret", {
        type: "password",
        required: true,
        minlength: 16,
        maxlength: 512,
        autocomplete: "off",
      }),
      field("Events (kinds separated by commas; * for every kind)", "events", { required: true, value: "*" }),
      h("button", { type: "submit" }, "Register webhook"),
    ),
    async (v) => {
      const events = v.events
        .split(",")
        .map((e) => e.trim())
        .filter(Boolean);
      const w = await api("POST", "/v1/webhooks", { body: { url: v.url, secret: v.secret, events } });
      announce(`Webhook ${w.url} registered; it receives events from now on.`, true);
      go(here(w.webhook_id));
    },
  );

  main.append(
    h("h1", null, "Webhooks"),
    webhooks.length
      ? table(["URL", "Status", "Events", "Failures", "Created", ""], rows)
      : h("p", null, "No webhooks registered."),
  );
  if (chosen) {
    const { deliveries, has_more } = await api("GET", `${hookPath(chosen)}/deliveries`, { query: { limit: 200 } });
    main.append(
      h(
        "section",
        { "aria-label": "Deliveries" },
        h("h2", null, `Deliveries of ${chosen.url}`),
        h(
          "p",
          { class: "muted" },
          "A failed attempt is retried by the service (at most 5 attempts; Next retry says when); a failed delivery can be redelivered.",
          has_more ? " The newest 200 are shown." : "",
        ),
        button("Refresh", "Refresh deliveries", () => go(`${here(chosen.webhook_id)}&t=${Date.now()}`)),
        deliveries.length
          ? table(
              ["Delivery", "Event", "Status", "Attempts", "Response", "Last attempt", "Next retry", ""],
              deliveries.map((d: any) => [
                d.id,
                d.event_id,
                d.status,
                String(d.attempts),
                d.response_status == null ? "" : String(d.response_status),
                d.last_attempt_at ?? "",
                d.next_retry_at ?? "",
                d.status === "failed" && chosen.status !== "disabled"
                  ? button("Redeliver", `Redeliver ${d.id}`, () =>
                      move(async () => {
                        await api("POST", `${hookPath(chosen)}/deliveries/${encodeURIComponent(d.id)}/retry`);
                        return `Delivery ${d.id} is pending again: it is sent at once, under the same id.`;
                      }),
                    )
                  : "",
              ]),
            )
          : h("p", null, "No deliveries yet."),
      ),
    );
  }
  main.append(h("h2", null, "Register a webhook"), register);
}

export async function keysPage(main: HTMLElement, refresh: () => void): Promise<void> {
  const keys: any[] = [];
  let after: string | undefined;
  do {
    const page = await api("GET", "/v1/keys", { query: { limit: 200, after } });
    keys.push(...page.keys);
    after = page.has_more ? page.next_cursor : undefined;
  } while (after);
  const directory = await principalDirectory();
  const minted = h("div", { "aria-live": "polite" });
  const allScopes = h("input", { type: "checkbox", name: "all_scopes", on: { change: () => syncAll() } });
  const scopeBoxes = SCOPES.map((s) => h("input", { type: "checkbox", name: "scope", value: s, title: SCOPE_HELP[s] }));
  /** "All scopes" holds every scope: the single boxes show ticked and locked; unticking it gives back the earlier ticks. */
  let ticksBeforeAll: Set<string> | null = null;
  const syncAll = () => {
    if (allScopes.checked && !ticksBeforeAll)
      ticksBeforeAll = new Set(scopeBoxes.filter((b) => b.checked).map((b) => b.value));
    if (!allScopes.checked && ticksBeforeAll) {
      for (const b of scopeBoxes) b.checked = ticksBeforeAll.has(b.value);
      ticksBeforeAll = null;
    }
    for (const b of scopeBoxes) {
      b.disabled = allScopes.checked;
      if (allScopes.checked) b.checked = true;
    }
  };
  const applyPreset = (preset: Preset) => {
    allScopes.checked = false;
    ticksBeforeAll = null;
    for (const b of scopeBoxes) b.checked = preset.scopes !== "all" && preset.scopes.includes(b.value as Scope);
    allScopes.checked = preset.scopes === "all";
    syncAll();
    announce(
      `Preset ${preset.label}: ${preset.scopes === "all" ? "all scopes (*)" : `${preset.scopes.length} scopes`} ticked.`,
    );
  };
  const form = guarded(
    h(
      "form",
      { "aria-label": "Mint a key", class: "mint" },
      field("Label", "label", { required: true, maxlength: 200 }),
      select("Trust ceiling", "max_trust", TRUST),
      h(
        "fieldset",
        { class: "presets" },
        h("legend", null, "Presets (tick the scopes of a common kind of key)"),
        h(
          "div",
          { class: "inline" },
          PRESETS.map((p) =>
            h(
              "button",
              { type: "button", class: "secondary", "data-preset": p.label, on: { click: () => applyPreset(p) } },
              p.label,
            ),
          ),
        ),
        h(
          "ul",
          { class: "muted preset-help" },
          PRESETS.map((p) =>
            h(
              "li",
              null,
              h("strong", null, p.label),
              `: ${p.summary}. `,
              p.scopes === "all" ? "All scopes (*)." : `Scopes: ${p.scopes.join(", ")}.`,
            ),
          ),
        ),
      ),
      h("label", { class: "check", title: "Every scope the service has, now and later" }, allScopes, " All scopes (*)"),
      h(
        "fieldset",
        { class: "scopes" },
        h("legend", null, "Scopes (hover one for what it allows)"),
        scopeBoxes.map((box) => h("label", { title: box.title }, box, box.value)),
      ),
      h("button", { type: "submit" }, "Mint key"),
    ),
    async (v) => {
      const ticked = [...form.querySelectorAll<HTMLInputElement>("input[name=scope]:checked")].map((i) => i.value);
      const scopes = v.all_scopes ? "*" : ticked;
      if (scopes !== "*" && !scopes.length) throw new Error("Choose at least one scope.");
      const key = await api("POST", "/v1/keys", {
        body: { label: v.label, scopes, ...(v.max_trust ? { max_trust: v.max_trust } : {}) },
      });
      announce(`Key ${key.key_id} minted.`, true);
      await refresh();
      const shown = document.getElementById("minted-key");
      shown?.replaceChildren(
        h(
          "div",
          { class: "notice", role: "alert" },
          h("p", null, `Key ${key.key_id} ("${key.label}"). Its raw value is shown once; copy it now:`),
          h("p", { class: "secret", tabindex: "0", "aria-label": "Raw key" }, key.key),
        ),
      );
    },
  );
  minted.id = "minted-key";
  main.append(
    h("h1", null, "API keys"),
    minted,
    table(
      ["Label", "Principal", "Scopes", "Trust", "Status", "Created", ""],
      keys.map((k) => [
        h("span", null, clip(k.label, 60), h("br"), h("small", { class: "muted" }, k.key_id)),
        principalName(directory, k.principal_id),
        Array.isArray(k.scopes) ? clip(k.scopes.join(" "), 160) : k.scopes,
        k.max_trust,
        k.status,
        k.created_at,
        k.status === "active"
          ? h(
              "button",
              {
                type: "button",
                class: "danger",
                "aria-label": `Revoke key ${k.label}`,
                on: {
                  click: async () => {
                    if (
                      !(await confirmDialog(
                        "Revoke key?",
                        `Key "${k.label}" (${k.key_id}) fails from its next request on.`,
                        "Revoke",
                      ))
                    )
                      return;
                    try {
                      await api("DELETE", `/v1/keys/${encodeURIComponent(k.key_id)}`);
                      announce(`Key ${k.key_id} revoked.`, true);
                      refresh();
                    } catch (e) {
                      main.prepend(errorBox((e as Error).message));
                    }
                  },
                },
              },
              "Revoke",
            )
          : "",
      ]),
      "Keys",
    ),
    h("h2", null, "Mint a key"),
    h(
      "p",
      { class: "muted" },
      "A new key belongs to a new agent principal (role member) named after its label; it cannot hold a scope or trust ceiling you do not hold.",
    ),
    form,
  );
}

export async function accountsPage(main: HTMLElement): Promise<void> {
  const created = h("div", { "aria-live": "polite" });
  let principals: any[] | null = null;
  try {
    principals = (await api("GET", "/v1/principals", { query: { limit: 200 } })).principals;
  } catch {
    principals = null; // members cannot list principals; they may still create accounts with keys:manage
  }
  main.append(
    h("h1", null, "Operator accounts"),
    created,
    h("h2", null, "Create an account"),
    guarded(
      h(
        "form",
        { "aria-label": "Create an account" },
        field("Username", "username", {
          required: true,
          minlength: 3,
          maxlength: 64,
          pattern: "[a-z0-9][a-z0-9._\\-]{2,63}",
          autocomplete: "off",
        }),
        field("Display name", "display_name", { maxlength: 200 }),
        select("Role", "role", ROLES),
        h("button", { type: "submit" }, "Create account"),
      ),
      async (v) => {
        const account = await api("POST", "/v1/operator-accounts", {
          body: { username: v.username, role: v.role, ...(v.display_name ? { display_name: v.display_name } : {}) },
        });
        created.replaceChildren(
          h(
            "div",
            { class: "notice", role: "alert" },
            h(
              "p",
              null,
              `Account ${account.username} (${v.role}) created. Its temporary password is shown once; hand it over now:`,
            ),
            h("p", { class: "secret", tabindex: "0", "aria-label": "Temporary password" }, account.temporary_password),
          ),
        );
      },
    ),
    ...(principals
      ? [
          h("h2", null, "People and agents"),
          table(
            ["Principal", "Kind", "Name", "Role", "Created"],
            principals.map((p) => [p.principal_id, p.kind, p.display_name, p.role ?? "", p.created_at]),
          ),
        ]
      : []),
  );
}
