#!/usr/bin/env bash
# The memory loop with curl: append evidence, consolidate a claim, compile context, give feedback,
# hand off to a second agent, export. Needs curl and jq.
#   KEY=svc_sk_… examples/quickstart.sh          (BASE defaults to http://127.0.0.1:8787, npm start)
set -euo pipefail
BASE=${BASE:-http://127.0.0.1:8787}
: "${KEY:?set KEY to the owner API key npm start printed (or: KEY=\$(npm run -s bootstrap -- --json | jq -r .api_key))}"
api() { # api METHOD PATH [JSON]: the answer's data, or the error and exit 1
  local out
  if ! out=$(curl -sS -X "$1" "$BASE$2" -H "authorization: Bearer $KEY" -H 'content-type: application/json' ${3:+--data "$3"} 2>&1); then
    echo "$1 $2: could not reach $BASE ($out). Is the service running (npm start)? Set BASE to its address." >&2; exit 1
  fi
  if ! jq -e . >/dev/null 2>&1 <<<"$out"; then echo "$1 $2: $BASE answered something that is not JSON: ${out:0:200}" >&2; exit 1; fi
  if jq -e '.error' >/dev/null 2>&1 <<<"$out"; then echo "$1 $2: $(jq -c .error <<<"$out")" >&2; exit 1; fi
  jq -c '.data' <<<"$out"
}

obs=$(api POST /v1/observations '{"subject_id":"user-42","kind":"message","content":"I prefer tea in the morning.","source":{"type":"chat"}}' | jq -r .observation_id)
echo "1 appended     $obs"
claim=$(api POST /v1/consolidations '{"subject_id":"user-42","claims":[{"kind":"preference","statement":"Prefers tea in the morning","sources":[{"observation_id":"'"$obs"'","relation":"supports"}]}]}' | jq -r '.claims[0].claim_id')
echo "2 consolidated $claim"
ctx=$(api POST /v1/context/compile '{"query":"what does user-42 drink in the morning","subject_id":"user-42","token_budget":200}')
echo "3 compiled     $(jq -r '.context_id' <<<"$ctx"): $(jq -r '.items[0].statement' <<<"$ctx")"
ctx_id=$(jq -r .context_id <<<"$ctx")
echo "4 feedback     $(api POST "/v1/context/$ctx_id/feedback" '{"outcome":"useful"}' | jq -r '.feedback_id + " " + .outcome')"
helper=$(api POST /v1/keys '{"label":"quickstart helper agent","scopes":["handoffs:read","handoffs:write"]}' | jq -r .principal_id)
echo "5 handed off   $(api POST /v1/handoffs '{"to_principal_id":"'"$helper"'","context_id":"'"$ctx_id"'","note":"Plan the morning order"}' | jq -r '.handoff_id + " " + .status')"
lines=$(curl -sS "$BASE/v1/export" -H "authorization: Bearer $KEY" | wc -l)
echo "6 exported     $lines NDJSON lines"
