// Login, temporary password replacement, the second factor (passkey or recovery code), log out,
// and the account's own security page (passkeys, recovery codes).
import { ApiFailure, api, session } from "./api";
import { announce, confirmDialog, errorBox, field, formValues, h, table } from "./dom";
import { createPasskey, passkeyAddressProblem, usePasskey } from "./webauthn";

export type Stage = "none" | "password_change" | "staged" | "full";
/** Held in memory only (never stored): lets the console log in again right after a password change. */
let knownUsername: string | null = null;

export const stageRoute = (stage: Stage): string =>
  stage === "password_change"
    ? "#/password"
    : stage === "staged"
      ? "#/second-factor"
      : stage === "full"
        ? "#/home"
        : "#/login";

/** GET /v1/principal: who the full session acts as. */
export interface Me {
  principal_id: string;
  org_id: string;
  username: string | null;
  role: string;
  scopes: string[] | "*";
  max_trust: string;
}
let me: Me | null = null;
/** The caller as the API answered it on this navigation (null before a full session). */
export const currentCaller = (): Me | null => me;

/** The stage of the stored token, as the API itself answers it (the stage is never stored). */
export async function currentStage(): Promise<Stage> {
  me = null;
  if (!session.token()) return "none";
  try {
    me = await api<Me>("GET", "/v1/principal");
    return "full";
  } catch (e) {
    if (e instanceof ApiFailure && e.status === 403) {
      if (/temporary password/i.test(e.message)) return "password_change";
      if (/second factor/i.test(e.message)) return "staged";
    }
    session.clear();
    return "none";
  }
}

/** Runs a form's action; the API's error.message is shown in the form and announced. */
export function guarded(
  form: HTMLFormElement,
  action: (values: Record<string, string>) => Promise<void>,
): HTMLFormElement {
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    form.querySelector(".error")?.remove();
    const button = form.querySelector<HTMLButtonElement>("button[type=submit], button:not([type])");
    if (button) button.disabled = true;
    try {
      await action(formValues(form));
    } catch (err) {
      const box = errorBox(err instanceof Error ? err.message : String(err));
      form.prepend(box);
    } finally {
      if (button) button.disabled = false;
    }
  });
  return form;
}

async function loggedIn(data: { session_token: string; stage: Stage }, go: (hash: string) => void): Promise<void> {
  session.set(data.session_token);
  go(stageRoute(data.stage));
}

/** A note shown where passkeys are offered, when this address cannot use them. */
const passkeyAddressNote = (): HTMLElement[] => {
  const problem = passkeyAddressProblem();
  return problem ? [h("p", { class: "notice", role: "note" }, problem)] : [];
};

export function loginPage(main: HTMLElement, go: (hash: string) => void): void {
  main.append(
    h("h1", null, "Log in"),
    ...passkeyAddressNote(),
    guarded(
      h(
        "form",
        { "aria-label": "Log in" },
        field("Username", "username", { autocomplete: "username", required: true, autofocus: true }),
        field("Password", "password", { type: "password", autocomplete: "current-password", required: true }),
        h("button", { type: "submit" }, "Log in"),
      ),
      async (v) => {
        const data = await api("POST", "/v1/dashboard-sessions", {
          auth: false,
          body: { username: v.username, password: v.password },
        });
        knownUsername = v.username;
        await loggedIn(data, go);
      },
    ),
  );
}

export function passwordPage(main: HTMLElement, go: (hash: string) => void): void {
  main.append(
    h("h1", null, "Replace the temporary password"),
    h("p", null, "This account still has a temporary password. Choose a new one (12 to 256 characters)."),
    guarded(
      h(
        "form",
        { "aria-label": "Replace password" },
        field("Current (temporary) password", "current_password", {
          type: "password",
          autocomplete: "current-password",
          required: true,
          autofocus: true,
        }),
        field("New password", "new_password", {
          type: "password",
          autocomplete: "new-password",
          required: true,
          minlength: 12,
          maxlength: 256,
        }),
        field("Repeat the new password", "repeat", { type: "password", autocomplete: "new-password", required: true }),
        h("button", { type: "submit" }, "Replace password"),
      ),
      async (v) => {
        if (v.new_password !== v.repeat) throw new Error("The two new passwords differ.");
        await api("PATCH", "/v1/operator-accounts/current/password", {
          body: { current_password: v.current_password, new_password: v.new_password },
        });
        // Every session of the account is now revoked: log in again with the new password.
        session.clear();
        if (!knownUsername) {
          announce("Password replaced. Log in with the new password.", true);
          return go("#/login");
        }
        const data = await api("POST", "/v1/dashboard-sessions", {
          auth: false,
          body: { username: knownUsername, password: v.new_password },
        });
        announce("Password replaced.", true);
        await loggedIn(data, go);
      },
    ),
  );
}

export function secondFactorPage(main: HTMLElement, go: (hash: string) => void): void {
  main.append(
    h("h1", null, "Second factor"),
    ...passkeyAddressNote(),
    h("p", null, "Your password is verified. Finish logging in with a passkey or one recovery code."),
    guarded(
      h("form", { "aria-label": "Use a passkey" }, h("button", { type: "submit", autofocus: true }, "Use a passkey")),
      async () => {
        const { options } = await api("POST", "/v1/dashboard-sessions/current/passkey-options");
        const response = await usePasskey(options);
        await loggedIn(await api("POST", "/v1/dashboard-sessions/current/passkey", { body: { response } }), go);
      },
    ),
    h("h2", null, "Or a recovery code"),
    guarded(
      h(
        "form",
        { "aria-label": "Use a recovery code" },
        field("Recovery code", "code", { autocomplete: "one-time-code", required: true, placeholder: "xxxxx-xxxxx" }),
        h("button", { type: "submit" }, "Use recovery code"),
      ),
      async (v) => {
        const data = await api("POST", "/v1/dashboard-sessions/current/recovery-code", { body: { code: v.code } });
        announce(`Logged in; ${data.recovery_codes_remaining} recovery codes remain.`, true);
        await loggedIn(data, go);
      },
    ),
  );
}

export async function logout(go: (hash: string) => void): Promise<void> {
  try {
    await api("DELETE", "/v1/dashboard-sessions/current");
  } catch {
    // An expired or revoked session is logged out already.
  }
  session.clear();
  knownUsername = null;
  announce("Logged out.", true);
  go("#/login");
}

function recoveryCodes(codes: string[]): HTMLElement {
  return h(
    "section",
    { class: "notice", "aria-label": "Recovery codes", tabindex: "-1", id: "recovery-codes" },
    h("h2", null, "Your eight recovery codes (shown once)"),
    h("p", null, "Store them somewhere safe now. Each works once, in place of a passkey."),
    h(
      "ol",
      { class: "codes" },
      codes.map((c) => h("li", null, c)),
    ),
  );
}

/** Recovery codes waiting to be shown once, across the page's re-render after an enrollment. */
let codesToShow: string[] | null = null;

export async function securityPage(main: HTMLElement, refresh: () => void): Promise<void> {
  const { passkeys } = await api("GET", "/v1/operator-accounts/current/passkeys");
  const shown = h("div");
  const showCodes = (codes: string[]) => {
    shown.replaceChildren(recoveryCodes(codes));
    shown.querySelector<HTMLElement>("#recovery-codes")!.focus();
  };
  if (codesToShow)
    queueMicrotask(
      (
        (codes) => () =>
          showCodes(codes)
      )(codesToShow),
    );
  codesToShow = null;
  main.append(
    h("h1", null, "Passkeys and recovery codes"),
    ...passkeyAddressNote(),
    shown,
    h("h2", null, "Passkeys"),
    passkeys.length
      ? table(
          ["Name", "Created", "Last used", ""],
          passkeys.map((p: any) => [
            p.name,
            p.created_at,
            p.last_used_at ?? "never",
            h(
              "button",
              {
                class: "danger",
                type: "button",
                "aria-label": `Remove passkey ${p.name}`,
                on: {
                  click: async () => {
                    const body = {
                      current_password:
                        main.querySelector<HTMLInputElement>("input[name=remove_password]")?.value ?? "",
                    };
                    if (
                      !(await confirmDialog("Remove passkey?", `The passkey "${p.name}" will stop working.`, "Remove"))
                    )
                      return;
                    try {
                      await api(
                        "DELETE",
                        `/v1/operator-accounts/current/passkeys/${encodeURIComponent(p.passkey_id)}`,
                        { body },
                      );
                      announce("Passkey removed.", true);
                      refresh();
                    } catch (e) {
                      main.prepend(errorBox((e as Error).message));
                    }
                  },
                },
              },
              "Remove",
            ),
          ]),
        )
      : h("p", null, "No passkey yet: logins use the password only."),
    ...(passkeys.length
      ? [
          field("Current password (needed to remove a passkey)", "remove_password", {
            type: "password",
            autocomplete: "current-password",
          }),
        ]
      : []),
    guarded(
      h(
        "form",
        { "aria-label": "Enroll a passkey", class: "inline" },
        field("Passkey name", "name", { maxlength: 100, placeholder: "Passkey" }),
        h("button", { type: "submit" }, "Enroll a passkey"),
      ),
      async (v) => {
        const { options } = await api("POST", "/v1/operator-accounts/current/passkeys/options");
        const response = await createPasskey(options);
        const added = await api("POST", "/v1/operator-accounts/current/passkeys", {
          body: { response, ...(v.name ? { name: v.name } : {}) },
        });
        announce(`Passkey "${added.name}" enrolled.`, true);
        codesToShow = added.recovery_codes ?? null;
        refresh();
      },
    ),
    h("h2", null, "Replace recovery codes"),
    h("p", { class: "muted" }, "A new set of eight replaces the old one, which stops working."),
    guarded(
      h(
        "form",
        { "aria-label": "Replace recovery codes", class: "inline" },
        field("Current password", "current_password", {
          type: "password",
          autocomplete: "current-password",
          required: true,
        }),
        h("button", { type: "submit" }, "Replace recovery codes"),
      ),
      async (v) => {
        const { recovery_codes } = await api("POST", "/v1/operator-accounts/current/recovery-codes", {
          body: { current_password: v.current_password },
        });
        showCodes(recovery_codes);
      },
    ),
  );
}
