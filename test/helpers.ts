// Test helpers: call the front Worker exactly as a client would, and create organizations.
import { env, runInDurableObject, SELF } from "cloudflare:test";
import type { OrgStore } from "../src/org/OrgStore";
import { expect } from "vitest";
import { bootstrapOrganization } from "../src/operator";

export interface CallResult {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export async function call(
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let body: string | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await SELF.fetch(`http://svc.test${path}`, { method, headers, body });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export const newOrg = () => bootstrapOrganization(env);

export function expectError(r: CallResult, status: number, code: string) {
  expect(r.status, r.text).toBe(status);
  expect(r.json?.error?.code, r.text).toBe(code);
  expect(typeof r.json?.error?.message).toBe("string");
  expect(r.json?.meta?.request_id).toMatch(/^req_[0-9a-f]{32}$/);
}

export async function mintKey(ownerKey: string, body: Record<string, unknown>) {
  const r = await call("POST", "/v1/keys", { key: ownerKey, body: { label: "test", ...body } });
  expect(r.status, r.text).toBe(201);
  return r.json.data as { key: string; key_id: string; principal_id: string };
}

export const obs = (subject: string, content: string, extra: Record<string, unknown> = {}) => ({
  subject_id: subject, kind: "note", content, source: { type: "test", ref: "r1" }, ...extra,
});

export async function append(key: string, body: Record<string, unknown>, headers?: Record<string, string>) {
  return call("POST", "/v1/observations", { key, body, headers });
}

export async function appendOk(key: string, body: Record<string, unknown>): Promise<string> {
  const r = await append(key, body);
  expect(r.status, r.text).toBe(201);
  return r.json.data.observation_id;
}

export async function consolidateOk(key: string, subject: string, claims: Record<string, unknown>[]): Promise<string[]> {
  const r = await call("POST", "/v1/consolidations", { key, body: { subject_id: subject, claims } });
  expect(r.status, r.text).toBe(201);
  return r.json.data.claims.map((c: { claim_id: string }) => c.claim_id);
}

export const supports = (observation_id: string) => [{ observation_id, relation: "supports" }];

/** Run `fn` inside the organization's Durable Object (direct SQL checks, alarms). */
export function orgStub(orgId: string): DurableObjectStub<OrgStore> {
  return env.ORG.get(env.ORG.idFromName(orgId)) as unknown as DurableObjectStub<OrgStore>;
}
export const inOrg = <R>(orgId: string, fn: (o: OrgStore) => R | Promise<R>): Promise<R> =>
  runInDurableObject(orgStub(orgId) as unknown as DurableObjectStub, (o) => fn(o as unknown as OrgStore));

/**
 * The audit chain's formula written out from the README ("Audit"), independent of the product code:
 * entry_hash = sha256_hex(prev_hash + canonical_json([id, action, actor_id, key_id, resource_type,
 * resource_id, request_id, JSON.stringify(metadata), created_at])). The array holds only strings and
 * nulls, so its canonical JSON is plain JSON.stringify.
 */
export async function readmeAuditHash(prevHash: string, e: {
  id: string; action: string; actor_id: string; key_id: string | null; resource_type: string;
  resource_id: string | null; request_id: string | null; metadataJson: string; created_at: string;
}): Promise<string> {
  const text = prevHash + JSON.stringify([e.id, e.action, e.actor_id, e.key_id, e.resource_type, e.resource_id, e.request_id, e.metadataJson, e.created_at]);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A public route's request with no body, no credential and no waiting (health and readiness probes). */
export const bareRequest = { bodyText: null, authorization: null, wait: async () => {} };
