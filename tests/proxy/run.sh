#!/usr/bin/env bash
# xmemo behind the reverse proxies of docs/deploy.md (issue #32, item 2):
#   - nginx: the configuration in docs/deploy.md, taken from the document itself, passes
#     `nginx -t` (with a throwaway certificate in place of the Let's Encrypt paths);
#   - Caddy: the Caddyfile in docs/deploy.md, taken from the document itself, runs in front of a
#     real xmemo with Caddy's internal CA, and check.py checks over https what docs/deploy.md
#     promises (https metadata, Secure cookies, budgets per real client, the official Python MCP
#     SDK through the proxy, the console's OAuth-ready badges, a forged X-Forwarded-For ignored).
#
# Installs Debian's caddy and nginx when missing (root + apt-get). Uses the Python venv of the
# interoperability suite (tests/interop/run.sh makes it: the official MCP SDK and httpx2).
# Environment: XMEMO_BIN (the binary; default: build it), XMEMO_INTEROP_CACHE (that venv's
# cache, default ~/.cache/xmemo-interop). Prints `N passed, M failed` last.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${XMEMO_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xmemo-interop}"
VENV="$CACHE/venv"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/xmemo-proxy.XXXXXX")"
PASSED=0
FAILED=0
XMEMO_PID=""
CADDY_PID=""

log() { printf 'proxy: %s\n' "$*" >&2; }
cleanup() {
  [ -n "$CADDY_PID" ] && kill "$CADDY_PID" 2>/dev/null
  [ -n "$XMEMO_PID" ] && kill "$XMEMO_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
setup_failed() {
  log "set-up failed: $*"
  echo "0 passed, 1 failed"
  exit 1
}
check() {
  local name="$1"
  shift
  if "$@" >"$WORK/check.log" 2>&1; then
    echo "ok    $name"
    PASSED=$((PASSED + 1))
  else
    echo "FAIL  $name"
    sed 's/^/      /' "$WORK/check.log"
    FAILED=$((FAILED + 1))
  fi
}
free_port() { "$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# The fenced block of docs/deploy.md whose info string is $1.
doc_block() {
  awk -v lang="$1" '
    $0 == "```" lang { inside = 1; next }
    inside && $0 == "```" { exit }
    inside { print }
  ' "$ROOT/docs/deploy.md"
}

missing=()
command -v caddy >/dev/null 2>&1 || missing+=(caddy)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing ${missing[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >&2 ||
      setup_failed "installing ${missing[*]} failed"
  else
    setup_failed "missing ${missing[*]} (apt-get install caddy nginx-light)"
  fi
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
[ -x "$VENV/bin/python" ] || setup_failed "no Python venv at $VENV (run tests/interop/run.sh first: it makes it)"

BIN="${XMEMO_BIN:-}"
if [ -z "$BIN" ]; then
  (cd "$ROOT" && cargo build -p xmemo-cli --quiet) || setup_failed "cargo build failed"
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/xmemo"
fi

# ---- nginx: the document's configuration passes nginx -t ----------------------------------
nginx_config_is_valid() {
  local site="$WORK/nginx/site.conf"
  mkdir -p "$WORK/nginx"
  doc_block nginx >"$site"
  [ -s "$site" ] || { echo "no nginx block in docs/deploy.md"; return 1; }
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=memory.example.com" \
    -keyout "$WORK/nginx/privkey.pem" -out "$WORK/nginx/fullchain.pem" 2>/dev/null || return 1
  sed -i "s#/etc/letsencrypt/live/memory.example.com/#$WORK/nginx/#g" "$site"
  cat >"$WORK/nginx/nginx.conf" <<EOF
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log;
events {}
http {
  access_log off;
  client_body_temp_path $WORK/nginx/body;
  proxy_temp_path $WORK/nginx/proxy;
  include $site;
}
EOF
  "$NGINX" -t -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" 2>&1
}
check "nginx -t accepts docs/deploy.md's configuration" nginx_config_is_valid

# ---- Caddy in front of xmemo ---------------------------------------------------------------
XPORT="$(free_port)"
CPORT="$(free_port)"
HTTP_PORT="$(free_port)"
PUBLIC="https://127.0.0.1:$CPORT"
mkdir -p "$WORK/data" "$WORK/caddy"
(
  cd "$WORK" &&
    exec env -u XMEMO_CONFIG -u XMEMO_DATABASE_URL -u XMEMO_TRUSTED_PROXIES XMEMO_LOG="warn,xmemo::access=info" \
      XMEMO_MODELS_DIR=/nonexistent "$BIN" serve --listen "127.0.0.1:$XPORT" --data-dir "$WORK/data" \
      --public-url "$PUBLIC" --trusted-proxies 127.0.0.1 --auth-failure-limit 3 --log-format json
) >"$WORK/xmemo.log" 2>&1 &
XMEMO_PID=$!
{
  cat <<EOF
{
	admin off
	local_certs
	skip_install_trust
	http_port $HTTP_PORT
	https_port $CPORT
	storage file_system $WORK/caddy/storage
}
EOF
  doc_block caddyfile
} >"$WORK/caddy/Caddyfile"
grep -q reverse_proxy "$WORK/caddy/Caddyfile" || setup_failed "no caddyfile block in docs/deploy.md"
(
  cd "$WORK/caddy" &&
    exec env XMEMO_SITE="127.0.0.1:$CPORT" XMEMO_UPSTREAM="127.0.0.1:$XPORT" \
      HOME="$WORK/caddy" XDG_DATA_HOME="$WORK/caddy/data" XDG_CONFIG_HOME="$WORK/caddy/config" \
      caddy run --config "$WORK/caddy/Caddyfile" --adapter caddyfile
) >"$WORK/caddy.log" 2>&1 &
CADDY_PID=$!

CA="$WORK/caddy/storage/pki/authorities/local/root.crt"
for _ in $(seq 1 100); do
  [ -f "$CA" ] && curl -sf --cacert "$CA" "$PUBLIC/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -sf --cacert "$CA" "$PUBLIC/healthz" >/dev/null 2>&1 || {
  tail -20 "$WORK/caddy.log" >&2
  tail -20 "$WORK/xmemo.log" >&2
  setup_failed "xmemo did not answer through Caddy at $PUBLIC"
}
log "xmemo at 127.0.0.1:$XPORT behind Caddy $(caddy version | cut -d' ' -f1) at $PUBLIC"

check "through Caddy: https metadata, Secure cookies, budgets per client, MCP SDK, badges, forged X-Forwarded-For" \
  timeout 180 "$VENV/bin/python" "$HERE/check.py" --public "$PUBLIC" --direct "http://127.0.0.1:$XPORT" \
  --ca "$CA" --key-file "$WORK/data/admin.key" --password-file "$WORK/data/admin.password" \
  --log "$WORK/xmemo.log"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
