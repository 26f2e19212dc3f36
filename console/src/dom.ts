// A tiny DOM builder: every text goes in as a text node (never HTML), so API data cannot inject markup.
type Child = Node | string | number | null | undefined | false | Child[];
type Props = Record<string, unknown> & { on?: Record<string, (e: any) => void> };

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (key === "on")
      for (const [ev, fn] of Object.entries(value as Record<string, (e: Event) => void>)) el.addEventListener(ev, fn);
    else if (value === false || value === null || value === undefined) continue;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (value === true) el.setAttribute(key, "");
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

let fieldSeq = 0;
/** A labelled input (the label wraps the control, so it is named for assistive technology). */
export function field(label: string, name: string, attrs: Record<string, unknown> = {}): HTMLLabelElement {
  return h("label", null, label, h("input", { name, id: `f-${name}-${++fieldSeq}`, ...attrs }));
}

export function select(
  label: string,
  name: string,
  options: readonly string[],
  attrs: Record<string, unknown> = {},
): HTMLLabelElement {
  return h(
    "label",
    null,
    label,
    h(
      "select",
      { name, ...attrs },
      options.map((o) => h("option", { value: o }, o || "(any)")),
    ),
  );
}

export function errorBox(message: string): HTMLElement {
  return h("div", { class: "error", role: "alert" }, message);
}

export const formValues = (form: HTMLFormElement): Record<string, string> =>
  Object.fromEntries([...new FormData(form).entries()].map(([k, v]) => [k, String(v)]));

let carryOver = false;
/** Shows and announces a status line; `beforeMove` keeps it across the navigation that follows. */
export function announce(text: string, beforeMove = false): void {
  document.getElementById("status")!.textContent = text;
  carryOver = beforeMove;
}
/** On navigation: the previous page's status line goes, unless it was said just before the move. */
export function clearStaleAnnouncement(): void {
  if (!carryOver) document.getElementById("status")!.textContent = "";
  carryOver = false;
}

/** A long text cut to `max` characters with the full value in its title (tables must fit a 1,280 px window). */
export function clip(text: string | null | undefined, max = 80): HTMLElement | string {
  if (!text) return "";
  return text.length > max
    ? h("span", { title: text, class: /\S{25}/.test(text) ? "long" : null }, text.slice(0, max - 1) + "…")
    : text;
}

/**
 * A table cell. Words wrap only between them, except one long unbroken token (an id, a URL), which may
 * break anywhere: a table of ids then still fits a 1,280 px window without splitting short words.
 */
export const cell = (c: Child): HTMLTableCellElement =>
  h("td", typeof c === "string" && /\S{25}/.test(c) ? { class: "long" } : null, c);

export function table(headers: string[], rows: Child[][], caption?: string): HTMLTableElement {
  return h(
    "table",
    null,
    caption ? h("caption", { class: "muted" }, caption) : null,
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        headers.map((t) => h("th", { scope: "col" }, t)),
      ),
    ),
    h(
      "tbody",
      null,
      rows.map((r) => h("tr", null, r.map(cell))),
    ),
  );
}

/** A native modal <dialog> asking to confirm; resolves true only on the confirm button. Keyboard: Esc cancels. */
export function confirmDialog(title: string, detail: string, confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = h(
      "dialog",
      { "aria-labelledby": "confirm-title" },
      h("h2", { id: "confirm-title" }, title),
      h("p", null, detail),
      h(
        "form",
        { method: "dialog", class: "inline" },
        h("button", { value: "cancel", class: "secondary", autofocus: true }, "Cancel"),
        h("button", { value: "confirm", class: "danger" }, confirmLabel),
      ),
    );
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "confirm");
      dialog.remove();
    });
    document.body.appendChild(dialog);
    dialog.showModal();
  });
}
