#!/usr/bin/env bash
# End-to-end tests of the Memory Console (/console) in a real headless Chromium (Debian's
# /usr/bin/chromium driven by Python Playwright; never `playwright install`), against a real
# `xmemo serve` on a free port with a temporary data directory. Screenshots of the main pages
# go to target/console-screenshots/ (artefacts for a person to look at; not committed).
#
# Sets itself up on a fresh machine: the Python venv of tests/interop (same cache dir, same
# requirements), apt-get install chromium when it is missing. Prints `N passed, M failed`
# last; exits non-zero on any failure, and fails (never skips) when Chromium is missing.
#
# Environment: XMEMO_BIN (use this binary instead of building), XMEMO_INTEROP_CACHE (cache
# dir, default ~/.cache/xmemo-interop), PYTHON (default python3), CARGO_TARGET_DIR (honoured).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${XMEMO_INTEROP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xmemo-interop}"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/xmemo-console.XXXXXX")"
SERVER_PID=""

log() { printf 'console: %s\n' "$*" >&2; }
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
die() { log "$*"; echo "0 passed, 1 failed"; exit 1; }

if [ ! -x /usr/bin/chromium ]; then
  log "installing Chromium (apt-get install chromium)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >&2 ||
    true
fi
[ -x /usr/bin/chromium ] || die "Chromium (/usr/bin/chromium) is missing and could not be installed: the console E2E tests need a real browser"

if [ -n "${XMEMO_BIN:-}" ]; then
  BIN="$XMEMO_BIN"
else
  log "building xmemo (cargo build -p xmemo-cli)"
  (cd "$ROOT" && cargo build --quiet -p xmemo-cli --bin xmemo) || die "cargo build failed"
  TARGET="$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps |
    "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')" ||
    die "cargo metadata failed"
  BIN="$TARGET/debug/xmemo"
fi
SHOTS="${XMEMO_CONSOLE_SHOTS:-$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps |
  "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/console-screenshots}"

VENV="$CACHE/venv"
if [ ! -x "$VENV/bin/python" ]; then
  log "creating the Python venv in $VENV"
  mkdir -p "$CACHE"
  "$PYTHON" -m venv "$VENV" || die "python venv failed"
fi
if ! "$VENV/bin/python" -c 'import playwright' 2>/dev/null; then
  log "installing Playwright (pip install -r tests/interop/python/requirements.txt)"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$ROOT/tests/interop/python/requirements.txt" ||
    die "pip install playwright failed"
fi

PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
DATA="$WORK/data"
log "starting xmemo serve on 127.0.0.1:$PORT"
XMEMO_LISTEN="127.0.0.1:$PORT" "$BIN" serve --data-dir "$DATA" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
  [ -s "$DATA/admin.password" ] && curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
[ -s "$DATA/admin.password" ] || { cat "$WORK/server.log" >&2; die "the server did not start"; }

# Two more people: bob (a team member) and carol (a viewer). Passwords go in on stdin.
for who in bob carol; do
  "$BIN" admin --data-dir "$DATA" account create "$who" >/dev/null || die "account create $who"
  printf '%s\n' "$who-password-1" | "$BIN" admin --data-dir "$DATA" account set-password "$who" >/dev/null ||
    die "set-password $who"
done

mkdir -p "$SHOTS"
XMEMO_URL="http://127.0.0.1:$PORT" XMEMO_BIN="$BIN" XMEMO_ADMIN_PASSWORD="$(cat "$DATA/admin.password")" \
  XMEMO_CONSOLE_SHOTS="$SHOTS" XMEMO_WORK="$WORK" \
  "$VENV/bin/python" "$HERE/console_e2e.py"
status=$?
if [ "$status" -ne 0 ]; then
  log "server log (last 40 lines):"
  tail -n 40 "$WORK/server.log" >&2
fi
exit "$status"
