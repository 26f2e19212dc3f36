// Governance (DESIGN part 2 "Governance, approvals, channels, releases"): policies, claim approvals,
// channels and knowledge releases, each through its public route. A row's moves are buttons named for
// the row (aria-label), behind a confirmation where the move cannot be undone.
import { api } from "./api";
import { guarded } from "./auth";
import { announce, clip, confirmDialog, errorBox, field, h, select, table } from "./dom";
import { principalDirectory, principalName } from "./names";

const TRUST = ["low", "medium", "high", "verified"];

/** Every page of a list route (bounded: 200 a page, at most 10 pages). */
async function listAll(path: string, key: string, query: Record<string, string> = {}): Promise<any[]> {
  const rows: any[] = [];
  let after: string | undefined;
  for (let i = 0; i < 10; i++) {
    const page = await api("GET", path, { query: { ...query, limit: 200, after } });
    rows.push(...page[key]);
    if (!page.has_more) break;
    after = page.next_cursor;
  }
  return rows;
}

/**
 * A button that performs one move and re-renders the page; `confirm` asks first (Esc or Cancel: nothing
 * happens). An API refusal is shown as an alert at the top of the page.
 */
function moveButton(
  main: HTMLElement,
  refresh: () => void,
  label: string,
  name: string,
  move: () => Promise<string>,
  confirm?: { title: string; detail: string },
  danger = false,
): HTMLButtonElement {
  return h(
    "button",
    {
      type: "button",
      class: danger ? "danger" : "secondary",
      "aria-label": name,
      on: {
        click: async () => {
          if (confirm && !(await confirmDialog(confirm.title, confirm.detail, label))) return;
          try {
            announce(await move(), true);
            refresh();
          } catch (e) {
            main.querySelector(":scope > .error")?.remove();
            main.prepend(errorBox((e as Error).message));
          }
        },
      },
    },
    label,
  );
}

/** Shows `hash`; re-renders when the page is already there (no hashchange fires then). */
function show(hash: string, refresh: () => void): void {
  if (location.hash === hash) refresh();
  else location.hash = hash;
}

const short = (s: string | null | undefined, n = 80) => (s && s.length > n ? s.slice(0, n - 1) + "…" : (s ?? ""));
const claimLink = (claimId: string, text?: string) =>
  h("a", { href: `#/claim/${encodeURIComponent(claimId)}` }, text || claimId);

// ---- policies --------------------------------------------------------------------------------------

function rulesText(p: any): string {
  const r = p.rules ?? {};
  if (p.type === "retention")
    return (r.rules ?? [])
      .map(
        (x: any) =>
          `${x.record_type} older than ${x.max_age_days} d${x.kinds ? ` (${x.kinds.join(", ")})` : ""}${x.visibility ? `, ${x.visibility}` : ""}`,
      )
      .join("; ");
  return Object.entries(r)
    .map(([k, v]) => `${k.replace(/_/g, " ")}: ${v ? "yes" : "no"}`)
    .join(", ");
}

export async function policiesPage(main: HTMLElement, refresh: () => void): Promise<void> {
  const policies = await listAll("/v1/policies", "policies");
  const patch = (p: any, status: string) => async () => {
    await api("PATCH", `/v1/policies/${encodeURIComponent(p.policy_id)}`, {
      body: { status, expected_version: p.version },
    });
    return `Policy ${p.name} is now ${status}.`;
  };
  const form = guarded(
    h(
      "form",
      { "aria-label": "Create a policy" },
      field("Name", "name", { required: true, maxlength: 200 }),
      select("Type", "type", ["approval", "release", "retention"]),
      select("Status", "status", ["draft", "active"]),
      h(
        "fieldset",
        null,
        h("legend", null, "Approval and release rules"),
        h(
          "label",
          null,
          h("input", { type: "checkbox", name: "separation_of_duty" }),
          " Separation of duty (no self-approval)",
        ),
        h(
          "label",
          null,
          h("input", { type: "checkbox", name: "require_approved_claim" }),
          " Release only approved claims (release policies)",
        ),
      ),
      h(
        "fieldset",
        null,
        h("legend", null, "Retention rule (retention policies)"),
        select("Record type", "record_type", ["observation", "claim"]),
        field("Maximum age in days", "max_age_days", { type: "number", min: 1, max: 36500, value: "365" }),
      ),
      h("button", { type: "submit" }, "Create policy"),
    ),
    async (v) => {
      const rules =
        v.type === "approval"
          ? { separation_of_duty: !!v.separation_of_duty }
          : v.type === "release"
            ? { separation_of_duty: !!v.separation_of_duty, require_approved_claim: !!v.require_approved_claim }
            : { rules: [{ record_type: v.record_type, max_age_days: Number(v.max_age_days) }] };
      const p = await api("POST", "/v1/policies", { body: { type: v.type, name: v.name, status: v.status, rules } });
      announce(`Policy ${p.name} created (${p.status}).`, true);
      refresh();
    },
  );
  main.append(
    h("h1", null, "Policies"),
    h(
      "p",
      { class: "muted" },
      "One policy of each type can be active. Changes need the version you see; retired is final.",
    ),
    policies.length
      ? table(
          ["Name", "Type", "Rules", "Status", "Version", "Updated", ""],
          policies.map((p) => [
            p.name,
            p.type,
            rulesText(p),
            p.status,
            String(p.version),
            p.updated_at,
            h(
              "span",
              { class: "inline" },
              p.status !== "active" && p.status !== "retired"
                ? moveButton(main, refresh, "Activate", `Activate policy ${p.name}`, patch(p, "active"))
                : null,
              p.status === "active"
                ? moveButton(main, refresh, "Back to draft", `Deactivate policy ${p.name}`, patch(p, "draft"))
                : null,
              p.status !== "retired"
                ? moveButton(
                    main,
                    refresh,
                    "Retire",
                    `Retire policy ${p.name}`,
                    patch(p, "retired"),
                    {
                      title: "Retire policy?",
                      detail: `Policy "${p.name}" stops applying; a retired policy can never change again.`,
                    },
                    true,
                  )
                : null,
            ),
          ]),
          "Policies",
        )
      : h("p", null, "No policies yet."),
    h("h2", null, "Create a policy"),
    form,
  );
}

// ---- claim approvals -------------------------------------------------------------------------------

export async function approvalsPage(main: HTMLElement, refresh: () => void, params: URLSearchParams): Promise<void> {
  const status = params.get("status") ?? "";
  const [approvals, directory] = await Promise.all([
    listAll("/v1/claim-approvals", "approvals", status ? { status } : {}),
    principalDirectory(),
  ]);
  const claims = new Map<string, string>();
  await Promise.all(
    [...new Set(approvals.map((a) => a.claim_id))].slice(0, 50).map(async (id) => {
      try {
        claims.set(id, (await api("GET", `/v1/claims/${encodeURIComponent(id)}/evidence`)).claim.statement);
      } catch {
        /* a claim that left memory keeps its id */
      }
    }),
  );
  const decide = (a: any, decision: "approved" | "rejected") => async () => {
    await api("POST", `/v1/claim-approvals/${encodeURIComponent(a.approval_id)}/decide`, { body: { decision } });
    return `Approval ${a.approval_id} ${decision}.`;
  };
  const filter = h(
    "form",
    {
      "aria-label": "Filter approvals",
      class: "inline",
      on: {
        submit: (e: Event) => {
          e.preventDefault();
          const s = (filter.elements.namedItem("status") as HTMLSelectElement).value;
          show(s ? `#/approvals?status=${s}` : "#/approvals", refresh);
        },
      },
    },
    select("Status", "status", ["", "pending", "approved", "rejected"]),
    h("button", { type: "submit", class: "secondary" }, "Filter"),
  );
  (filter.elements.namedItem("status") as HTMLSelectElement).value = status;
  const submit = guarded(
    h(
      "form",
      { "aria-label": "Submit a claim for approval" },
      field("Claim id", "claim_id", {
        required: true,
        size: 40,
        value: params.get("claim_id") ?? "",
        autofocus: params.has("claim_id"),
      }),
      field("Note", "note", { maxlength: 2000 }),
      h("button", { type: "submit" }, "Submit for approval"),
    ),
    async (v) => {
      const a = await api("POST", "/v1/claim-approvals", {
        body: { claim_id: v.claim_id, ...(v.note ? { note: v.note } : {}) },
      });
      announce(`Version ${a.claim_version} of the claim submitted for approval (${a.approval_id}).`, true);
      show("#/approvals", refresh);
    },
  );
  main.append(
    h("h1", null, "Claim approvals"),
    filter,
    approvals.length
      ? table(
          ["Claim", "Version", "Status", "Evidence", "Note", "Submitted by", "Decided by", ""],
          approvals.map((a) => [
            claimLink(a.claim_id, short(claims.get(a.claim_id))),
            String(a.claim_version),
            a.status,
            `${a.evidence?.observation_ids?.length ?? 0} readable${a.evidence?.hidden_source_count ? `, ${a.evidence.hidden_source_count} hidden` : ""}`,
            clip(a.note),
            principalName(directory, a.submitted_by),
            principalName(directory, a.decided_by),
            a.status === "pending"
              ? h(
                  "span",
                  { class: "inline" },
                  moveButton(main, refresh, "Approve", `Approve ${a.approval_id}`, decide(a, "approved"), {
                    title: "Approve this claim version?",
                    detail: `Version ${a.claim_version} of "${short(claims.get(a.claim_id)) || a.claim_id}" becomes approved.`,
                  }),
                  moveButton(
                    main,
                    refresh,
                    "Reject",
                    `Reject ${a.approval_id}`,
                    decide(a, "rejected"),
                    {
                      title: "Reject this claim version?",
                      detail: "The approval is closed as rejected; a new one can be submitted.",
                    },
                    true,
                  ),
                )
              : "",
          ]),
          "Approvals",
        )
      : h("p", null, "No approvals match."),
    h("h2", null, "Submit a claim for approval"),
    submit,
  );
}

// ---- channels and knowledge releases ---------------------------------------------------------------

export async function releasesPage(main: HTMLElement, refresh: () => void, params: URLSearchParams): Promise<void> {
  const [channels, releases] = await Promise.all([
    listAll("/v1/channels", "channels"),
    listAll("/v1/knowledge-releases", "releases"),
  ]);
  let gateways: any[] | null = null;
  try {
    gateways = (await listAll("/v1/principals", "principals")).filter((p) => p.kind !== "human");
  } catch {
    gateways = null; // only owners and admins list principals: the id is typed instead
  }
  const channelName = new Map(channels.map((c) => [c.channel_id, c.name]));
  const gatewayName = new Map(
    (gateways ?? []).map((p) => [p.principal_id, `${p.display_name ?? ""} (${p.principal_id})`.trim()]),
  );
  const setChannel = (c: any, status: string) => async () => {
    await api("PATCH", `/v1/channels/${encodeURIComponent(c.channel_id)}`, {
      body: { status, expected_version: c.version },
    });
    return `Channel ${c.name} is now ${status}.`;
  };
  const moveRelease = (r: any, action: "approve" | "activate" | "revoke") => async () => {
    const next = await api("POST", `/v1/knowledge-releases/${encodeURIComponent(r.release_id)}/${action}`, {
      body: {},
    });
    return `Release ${r.release_id} is now ${next.status}.`;
  };
  const newChannel = guarded(
    h(
      "form",
      { "aria-label": "Create a channel" },
      field("Name", "name", { required: true, maxlength: 100 }),
      field("Audiences (comma-separated)", "audiences", { required: true }),
      select("Minimum source trust", "min_trust", TRUST),
      gateways
        ? h(
            "label",
            null,
            "Gateway principal (service)",
            h(
              "select",
              { name: "gateway_principal_id", required: true },
              gateways.map((p) =>
                h(
                  "option",
                  { value: p.principal_id, title: p.display_name },
                  `${short(p.display_name, 60) || p.principal_id} (${p.principal_id})`,
                ),
              ),
            ),
          )
        : field("Gateway principal id (service)", "gateway_principal_id", { required: true, size: 40 }),
      h("button", { type: "submit" }, "Create channel"),
    ),
    async (v) => {
      const audiences = v.audiences
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      const c = await api("POST", "/v1/channels", {
        body: { name: v.name, audiences, min_trust: v.min_trust, gateway_principal_id: v.gateway_principal_id },
      });
      announce(`Channel ${c.name} created.`, true);
      refresh();
    },
  );
  const live = channels.filter((c) => c.status !== "disabled");
  const newRelease = guarded(
    h(
      "form",
      { "aria-label": "Draft a release" },
      field("Claim id", "claim_id", {
        required: true,
        size: 40,
        value: params.get("claim_id") ?? "",
        autofocus: params.has("claim_id"),
      }),
      select(
        "Channel",
        "channel_id",
        live.map((c) => c.channel_id),
      ),
      h("button", { type: "submit" }, "Draft release"),
    ),
    async (v) => {
      const r = await api("POST", "/v1/knowledge-releases", {
        body: { claim_id: v.claim_id, channel_id: v.channel_id },
      });
      announce(`Release ${r.release_id} drafted (version ${r.claim_version} of the claim).`, true);
      show("#/releases", refresh);
    },
  );
  // The channel choice shows names; the option values stay ids.
  for (const o of newRelease.querySelectorAll<HTMLOptionElement>("select[name=channel_id] option"))
    o.textContent = channelName.get(o.value) ?? o.value;
  main.append(
    h("h1", null, "Channels and releases"),
    h("h2", null, "Channels"),
    channels.length
      ? table(
          ["Name", "Audiences", "Minimum trust", "Gateway", "Status", "Version", ""],
          channels.map((c) => [
            c.name,
            (c.audiences ?? []).join(", "),
            c.min_trust,
            gatewayName.get(c.gateway_principal_id) ?? c.gateway_principal_id,
            c.status,
            String(c.version),
            c.status === "disabled"
              ? ""
              : h(
                  "span",
                  { class: "inline" },
                  c.status === "active"
                    ? moveButton(main, refresh, "Pause", `Pause channel ${c.name}`, setChannel(c, "paused"))
                    : moveButton(main, refresh, "Resume", `Resume channel ${c.name}`, setChannel(c, "active")),
                  moveButton(
                    main,
                    refresh,
                    "Disable",
                    `Disable channel ${c.name}`,
                    setChannel(c, "disabled"),
                    {
                      title: "Disable channel?",
                      detail: `Channel "${c.name}" stops serving for good; disabled is final.`,
                    },
                    true,
                  ),
                ),
          ]),
          "Channels",
        )
      : h("p", null, "No channels yet."),
    h("h2", null, "Knowledge releases"),
    releases.length
      ? table(
          ["Claim", "Version", "Channel", "Status", "Evidence", "Created", ""],
          releases.map((r) => [
            claimLink(r.claim_id, short(r.snapshot?.statement)),
            String(r.claim_version),
            channelName.get(r.channel_id) ?? r.channel_id,
            r.status,
            `${r.snapshot?.evidence?.length ?? 0} readable${r.hidden_source_count ? `, ${r.hidden_source_count} hidden` : ""}`,
            r.created_at,
            r.status === "revoked"
              ? ""
              : h(
                  "span",
                  { class: "inline" },
                  r.status === "draft"
                    ? moveButton(main, refresh, "Approve", `Approve release ${r.release_id}`, moveRelease(r, "approve"))
                    : null,
                  r.status === "approved"
                    ? moveButton(
                        main,
                        refresh,
                        "Activate",
                        `Activate release ${r.release_id}`,
                        moveRelease(r, "activate"),
                        {
                          title: "Publish this release?",
                          detail: `The snapshot of "${short(r.snapshot?.statement)}" becomes served in channel ${channelName.get(r.channel_id) ?? r.channel_id}.`,
                        },
                      )
                    : null,
                  moveButton(
                    main,
                    refresh,
                    "Revoke",
                    `Revoke release ${r.release_id}`,
                    moveRelease(r, "revoke"),
                    {
                      title: "Revoke release?",
                      detail: "The release stops being served; revoked is final (history stays).",
                    },
                    true,
                  ),
                ),
          ]),
          "Releases",
        )
      : h("p", null, "No releases yet."),
    h("h2", null, "Draft a release"),
    live.length ? newRelease : h("p", { class: "muted" }, "Create a channel first."),
    h("h2", null, "Create a channel"),
    newChannel,
  );
}
