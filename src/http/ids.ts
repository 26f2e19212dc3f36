// Record ids: prefix + 32 lowercase hex from crypto random (DESIGN "Other id prefixes"). Every prefix
// the service writes or checks is here, including those DESIGN's table does not name (fb_, dlv_, fxl_, prp_).

export const ID_PREFIX = {
  org: "org_",
  key: "key_",
  observation: "obs_",
  claim: "claim_",
  context: "ctx_",
  feedback: "fb_",
  event: "evt_",
  delivery: "dlv_",
  webhook: "whk_",
  project: "prj_",
  principal: "prn_",
  checkpoint: "chk_",
  lease: "lse_",
  handoff: "hnd_",
  audit: "aud_",
  request: "req_",
  session: "sess_",
  workspace: "wsp_",
  grant: "grt_",
  membership: "mbr_",
  policy: "pol_",
  approval: "apr_",
  channel: "chn_",
  release: "rel_",
  peer: "peer_",
  filter: "flt_",
  federationLog: "fxl_",
  hold: "hold_",
  mapping: "map_",
  account: "acct_",
  passkey: "pk_",
  proposal: "prp_",
} as const;

export function randomHex(bytes = 16): string {
  const buf = crypto.getRandomValues(new Uint8Array(bytes));
  let out = "";
  for (const b of buf) out += b.toString(16).padStart(2, "0");
  return out;
}

export function newId(prefix: string): string {
  return prefix + randomHex(16);
}

export function isId(prefix: string, value: string): boolean {
  return (
    value.length === prefix.length + 32 && value.startsWith(prefix) && /^[0-9a-f]{32}$/.test(value.slice(prefix.length))
  );
}
