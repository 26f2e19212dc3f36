// The page the console lands on: who is logged in to which organization, what it holds (counted where
// one list page can tell; otherwise the newest records), and the latest events with names.
import { api } from "./api";
import { type Me, currentCaller } from "./auth";
import { clip, errorBox, h, table } from "./dom";
import { principalDirectory, principalName } from "./names";
import { EVENT_HEADERS, eventCells } from "./pages";

/** A count read from one list page of at most `limit` rows: exact when the page is the whole list. */
interface Count {
  label: string;
  href: string;
  /** The number shown, e.g. "3" or "200+"; null when the route refused (note says why). */
  value: string | null;
  note: string;
}

/** One request for a count: the API's refusal becomes the card's note rather than failing the page. */
async function counted(label: string, href: string, note: string, read: () => Promise<string>): Promise<Count> {
  try {
    return { label, href, value: await read(), note };
  } catch (e) {
    return { label, href, value: null, note: (e as Error).message };
  }
}

const atMost = (listed: number, more: boolean) => (more ? `${listed}+` : String(listed));

function countCards(counts: Count[]): HTMLElement {
  return h(
    "section",
    { class: "counts", "aria-label": "Counts" },
    counts.map((c) =>
      h(
        "a",
        { class: "count", href: c.href, "data-count": c.label },
        h("span", { class: "value" }, c.value ?? "—"),
        h("span", { class: "label" }, c.label),
        h("small", { class: "muted" }, c.note),
      ),
    ),
  );
}

function who(me: Me): HTMLElement {
  const row = (term: string, ...value: (Node | string)[]) => [h("dt", null, term), h("dd", null, ...value)];
  return h(
    "dl",
    { class: "who", id: "who" },
    row(
      "Organization",
      h("code", { id: "org-id" }, me.org_id),
      h("small", { class: "muted" }, " (an organization has an id, no name)"),
    ),
    row(
      "Account",
      h("strong", { id: "account" }, me.username ?? "(no operator account)"),
      h("small", { class: "muted", title: me.principal_id }, ` principal ${me.principal_id}`),
    ),
    row("Role", h("span", { id: "role" }, me.role), h("small", { class: "muted" }, ` · trust ceiling ${me.max_trust}`)),
  );
}

export async function homePage(main: HTMLElement): Promise<void> {
  const me = currentCaller();
  if (!me) throw new Error("Not logged in.");
  const admin = me.role === "owner" || me.role === "admin";
  const [directory, memories, counts, observations, activity] = await Promise.all([
    principalDirectory(),
    api("GET", "/v1/memories", { query: { limit: 100 } }).catch((e: Error) => e),
    Promise.all([
      counted("Principals", "#/accounts", "people and agents of the organization", async () => {
        const page = await api("GET", "/v1/principals", { query: { limit: 200 } });
        return atMost(page.principals.length, page.has_more);
      }),
      counted("Active API keys", "#/keys", admin ? "of every principal" : "of your principal", async () => {
        const page = await api("GET", "/v1/keys", { query: { limit: 200 } });
        const active = page.keys.filter((k: any) => k.status === "active").length;
        return page.has_more ? `${active}+` : String(active);
      }),
      counted("Webhooks", "#/webhooks", admin ? "of the organization" : "yours", async () => {
        const { webhooks } = await api("GET", "/v1/webhooks");
        return String(webhooks.length);
      }),
      counted("Pending approvals", "#/approvals?status=pending", "claim versions awaiting a decision", async () => {
        const page = await api("GET", "/v1/claim-approvals", { query: { status: "pending", limit: 200 } });
        return atMost(page.approvals.length, page.has_more);
      }),
    ]),
    api("GET", "/v1/events", { query: { order: "newest", kind: "observation.appended", limit: 5 } }).catch(
      (e: Error) => e,
    ),
    api("GET", "/v1/events", { query: { order: "newest", limit: 10 } }).catch((e: Error) => e),
  ]);
  const memoryCount: Count =
    memories instanceof Error
      ? { label: "Current memories", href: "#/memories", value: null, note: memories.message }
      : {
          label: "Current memories",
          href: "#/memories",
          value: atMost(memories.items.length, memories.has_more),
          note: "active and disputed claims you can read",
        };

  main.append(
    h("h1", null, "Home"),
    who(me),
    countCards([memoryCount, ...counts]),
    h(
      "div",
      { class: "columns" },
      h(
        "section",
        { "aria-labelledby": "recent-memories" },
        h("h2", { id: "recent-memories" }, "Newest memories"),
        memories instanceof Error
          ? errorBox(memories.message)
          : memories.items.length
            ? table(
                ["Statement", "Kind", "Status", "Subject"],
                memories.items
                  .slice(0, 5)
                  .map((c: any) => [
                    h(
                      "a",
                      { href: `#/claim/${encodeURIComponent(c.claim_id)}`, title: c.statement },
                      clip(c.statement, 90),
                    ),
                    c.kind,
                    c.status,
                    clip(c.subject_id, 40),
                  ]),
              )
            : h("p", { class: "muted" }, "No memories yet."),
      ),
      h(
        "section",
        { "aria-labelledby": "recent-observations" },
        h("h2", { id: "recent-observations" }, "Newest observations"),
        h(
          "p",
          { class: "muted" },
          "Observations have no list route: these are the newest observation.appended events you can read.",
        ),
        observations instanceof Error
          ? errorBox(observations.message)
          : observations.events.length
            ? table(
                ["Time", "Subject", "Kind", "By"],
                observations.events.map((e: any) => [
                  e.created_at,
                  clip(e.payload?.subject_id ?? "", 40),
                  e.payload?.kind ?? "",
                  principalName(directory, e.actor_id),
                ]),
              )
            : h("p", { class: "muted" }, "No observations yet."),
      ),
    ),
    h(
      "section",
      { "aria-labelledby": "recent-activity" },
      h("h2", { id: "recent-activity" }, "Recent activity"),
      activity instanceof Error
        ? errorBox(activity.message)
        : activity.events.length
          ? table(
              EVENT_HEADERS,
              activity.events.map((e: any) => eventCells(directory, e)),
              "The latest events you can read, newest first (at most 10)",
            )
          : h("p", { class: "muted" }, "No events yet."),
      h("p", null, h("a", { href: "#/events" }, "Open the event feed")),
    ),
  );
}
