// The console's only channel to the service: the public API, with the dashboard session token as the
// Bearer credential. The token is the one thing kept in the browser (sessionStorage, this tab only).
const TOKEN_KEY = "svc-console-session";

export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (token: string) => sessionStorage.setItem(TOKEN_KEY, token),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** An API error answer; `message` is the API's own `error.message`. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Query = Record<string, string | number | undefined | null>;

export async function api<T = any>(
  method: string,
  path: string,
  opts: { body?: unknown; query?: Query; auth?: boolean } = {},
): Promise<T> {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(opts.query ?? {}))
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  const headers: Record<string, string> = {};
  const token = session.token();
  if (opts.auth !== false && token) headers.authorization = `Bearer ${token}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      credentials: "omit",
    });
  } catch {
    throw new ApiFailure(0, "NETWORK", "The service could not be reached.");
  }
  const envelope = await res.json().catch(() => null);
  if (!res.ok) {
    const err = envelope?.error;
    throw new ApiFailure(
      res.status,
      err?.code ?? "HTTP_" + res.status,
      err?.message ?? `The service answered ${res.status}.`,
    );
  }
  return envelope?.data as T;
}
