// The typed client of svc-memory: openapi-fetch over the types that openapi-typescript generates from
// docs/openapi.json (src/openapi.d.ts; `npm run generate` in this folder rewrites it, and
// scripts/test/client.test.mjs fails while it is stale).
import createFetchClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { paths } from "./openapi";

export type { components, operations, paths } from "./openapi";

/** The default base URL: the local server of `npm start` (docs/openapi.json's first server). */
export const LOCAL_BASE_URL = "http://localhost:8787";

export interface SvcClientOptions extends ClientOptions {
  /** An API key (`svc_sk_…`) or a dashboard session token, sent as `Authorization: Bearer` on every request. */
  apiKey: string;
}

/** A typed client of one deployment: `client.POST("/v1/observations", { body })` answers `{ data, error, response }`. */
export function createClient({ apiKey, baseUrl = LOCAL_BASE_URL, ...options }: SvcClientOptions): Client<paths> {
  const client = createFetchClient<paths>({ baseUrl, ...options });
  client.use({
    onRequest({ request }) {
      request.headers.set("authorization", `Bearer ${apiKey}`);
      return request;
    },
  });
  return client;
}
