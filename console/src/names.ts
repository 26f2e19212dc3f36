// Names for principal ids. The principals list (GET /v1/principals, owner or admin) is read at most once
// per page view and cached for it; without that role only the caller itself is named. Whatever is shown,
// the id stays one hover away (the title).
import { ApiFailure, api } from "./api";
import { currentCaller } from "./auth";
import { h } from "./dom";

export type Directory = ReadonlyMap<string, string>;
let pending: Promise<Directory> | null = null;

/** The router forgets the directory on every navigation, so each page view reads it once. */
export function forgetDirectory(): void {
  pending = null;
}

/** principal_id -> display name (a person's username, an agent key's label). */
export function principalDirectory(): Promise<Directory> {
  pending ??= readDirectory();
  return pending;
}

/** At most five pages of 200: a larger directory leaves the rest shown by id. */
async function readDirectory(): Promise<Directory> {
  const names = new Map<string, string>();
  const me = currentCaller();
  if (me?.username) names.set(me.principal_id, me.username);
  let after: string | undefined;
  try {
    for (let i = 0; i < 5; i++) {
      const page = await api("GET", "/v1/principals", { query: { limit: 200, after } });
      for (const p of page.principals) names.set(p.principal_id, p.display_name || p.principal_id);
      if (!page.has_more) break;
      after = page.next_cursor;
    }
  } catch (e) {
    // Members and readers may not list principals (403): they see ids, and their own name.
    if (!(e instanceof ApiFailure && e.status === 403)) console.warn("principal directory:", (e as Error).message);
  }
  return names;
}

/**
 * A principal as a name (its id in the title; a name over 40 characters cut, in full in aria-label), or
 * its bare id when the directory does not know it.
 */
export function principalName(directory: Directory, id: string | null | undefined): HTMLElement | string {
  if (!id) return "";
  const name = directory.get(id);
  if (!name) return h("span", { class: "id", title: id }, id);
  const cut = name.length > 40;
  return h(
    "span",
    { class: /\S{25}/.test(name) ? "named long" : "named", title: id, "data-id": id, "aria-label": cut ? name : null },
    cut ? name.slice(0, 39) + "…" : name,
  );
}
