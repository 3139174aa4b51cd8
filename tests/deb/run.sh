#!/usr/bin/env bash
# The Debian package (issue #32, item 4): builds it with cargo-deb, installs it with dpkg under
# a real systemd, checks the unit (systemd-analyze verify, the hardening exposure), runs a skill's
# script in the bubblewrap sandbox through the service started by the hardened unit, runs the
# installed binary's `xmemo admin doctor` as the service user, upgrades the package over itself
# keeping the data and the operator's settings, removes it and purges it.
#
# This machine has no systemd as PID 1, so the test boots one: systemd as PID 1 of its own PID
# and mount namespaces (a tmpfs /run of its own, SYSTEMD_UNIT_PATH naming a folder with a few
# empty targets and a link to the installed unit). dpkg runs inside that mount namespace, so the
# package's maintainer scripts see /run/systemd/system and start, restart and stop the service
# through that systemd, as on a real server; files land on the real filesystem.
#
# Needs root (dpkg -i). The build reuses tests/quickstart's cached target directory and its
# release-profile settings (no optimisation: this checks the package, not the optimiser).
# Prints `N passed, M failed` last.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/xmemo-deb.XXXXXX")"
chmod 755 "$WORK"
MARKER=/var/lib/xmemo/.xmemo-deb-test
CARGO_DEB_VERSION=3.8.0
SYSTEMD_PID=""
UNSHARE_PID=""
passed=0
failed=0

log() { printf 'deb: %s\n' "$*" >&2; }
ok() {
  echo "ok    $*"
  passed=$((passed + 1))
}
bad() {
  echo "FAIL  $*"
  failed=$((failed + 1))
}
check() { # check DESCRIPTION COMMAND...
  local what="$1"
  shift
  if "$@" >"$WORK/check.out" 2>&1; then ok "$what"; else
    bad "$what"
    sed 's/^/      /' "$WORK/check.out" | tail -30
  fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ] && [ "$passed" -gt 0 ]
  exit
}
abort() {
  bad "$*"
  finish
}
# Inside the private systemd's mount namespace (its /run), on the real filesystem.
in_ns() { nsenter -t "$SYSTEMD_PID" -m -p -- "$@"; }
sctl() { in_ns systemctl "$@"; }

cleanup() {
  if [ -n "$SYSTEMD_PID" ]; then kill -9 "$SYSTEMD_PID" 2>/dev/null; fi
  wait 2>/dev/null
  # Only what this test installed: the package, and the data directory it marked as its own.
  if [ -e "$MARKER" ]; then
    dpkg --purge xmemo >/dev/null 2>&1
    rm -rf /var/lib/xmemo
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || abort "the package test installs a package: it needs root"
for tool in dpkg dpkg-deb systemd-analyze nsenter unshare curl python3; do
  command -v "$tool" >/dev/null 2>&1 || abort "$tool is missing"
done
[ -x /lib/systemd/systemd ] || abort "systemd (/lib/systemd/systemd) is not installed"

# A package or data left by an earlier, interrupted run of this test is removed; anyone else's
# is never touched.
if [ -e "$MARKER" ]; then
  log "removing what an interrupted earlier run left"
  dpkg --purge xmemo >/dev/null 2>&1
  rm -rf /var/lib/xmemo
fi
if dpkg -s xmemo >/dev/null 2>&1 || [ -e /var/lib/xmemo ]; then
  abort "an xmemo package or /var/lib/xmemo is already on this machine; this test installs and purges its own (remove it first: dpkg --purge xmemo)"
fi

if [ "$(cargo deb --version 2>/dev/null | awk '{print $2}')" != "$CARGO_DEB_VERSION" ]; then
  log "installing cargo-deb $CARGO_DEB_VERSION"
  cargo install --locked cargo-deb --version "$CARGO_DEB_VERSION" >"$WORK/cargo-deb.log" 2>&1 ||
    { tail -20 "$WORK/cargo-deb.log" >&2; abort "cargo-deb could not be installed"; }
fi

build_deb() { # build_deb REVISION -> $WORK/xmemo-REVISION.deb
  (
    cd "$ROOT" &&
      CARGO_TARGET_DIR="${XMEMO_QUICKSTART_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/xmemo-quickstart-target}" \
        CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=false \
        CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 \
        CARGO_PROFILE_RELEASE_INCREMENTAL=true \
        cargo deb -p xmemo-cli --locked --fast --deb-revision "$1" --output "$WORK/xmemo-$1.deb"
  ) >"$WORK/build-$1.log" 2>&1 || {
    tail -30 "$WORK/build-$1.log" >&2
    return 1
  }
}

log "building the package (cargo deb)"
build_deb 1 || abort "cargo deb failed"
DEB1="$WORK/xmemo-1.deb"

# --- The package's contents -------------------------------------------------------------------
dpkg-deb -f "$DEB1" Package Version Depends >"$WORK/control"
dpkg-deb -c "$DEB1" >"$WORK/contents"
dpkg-deb -e "$DEB1" "$WORK/control.d"
package_holds() {
  grep -q '^Package: xmemo$' "$WORK/control" &&
    grep -q '^Version: 0\.1\.0-1$' "$WORK/control" &&
    grep -Eq '^Depends: .*\bbubblewrap\b' "$WORK/control" &&
    grep -Eq '^Depends: .*\badduser\b' "$WORK/control" &&
    grep -q ' \./usr/bin/xmemo$' "$WORK/contents" &&
    grep -Eq ' \./(usr/)?lib/systemd/system/xmemo\.service$' "$WORK/contents" &&
    grep -q ' \./etc/xmemo/xmemo\.toml$' "$WORK/contents" &&
    grep -q ' \./usr/share/doc/xmemo/deploy\.md$' "$WORK/contents" &&
    grep -qx '/etc/xmemo/xmemo.toml' "$WORK/control.d/conffiles" &&
    cat "$WORK/control" "$WORK/control.d/conffiles"
}
check "the package holds the binary, the unit, its settings as a conffile, the docs; depends on bubblewrap and adduser" package_holds

# --- A systemd of our own ---------------------------------------------------------------------
UNITS="$WORK/units"
mkdir -p "$UNITS/xmemo.service.d"
for target in sysinit basic multi-user network-online shutdown default; do
  printf '[Unit]\nDescription=%s (empty, for the package test)\n' "$target" >"$UNITS/$target.target"
done
printf '[Unit]\nDescription=system slice\n' >"$UNITS/system.slice"
for unit_dir in /lib/systemd/system /usr/lib/systemd/system; do
  ln -sf "$unit_dir/xmemo.service" "$UNITS/xmemo.service" && break
done
# The service's output, for this test to read (there is no journald in the private systemd).
printf '[Service]\nStandardOutput=append:%s\nStandardError=append:%s\n' \
  "$WORK/service.log" "$WORK/service.log" >"$UNITS/xmemo.service.d/test-log.conf"
: >"$WORK/service.log"

log "starting systemd in its own PID and mount namespaces"
# The machine's own enabled units stay out of it: /etc/systemd/system (where the package's
# scripts enable the unit) is a folder of the test's, empty to begin with.
mkdir -p "$WORK/etc-systemd"
# A container image's /usr/sbin/policy-rc.d (exit 101) forbids maintainer scripts to start
# services; a server has none, so inside the namespace one that allows everything stands in.
printf '#!/bin/sh\nexit 0\n' >"$WORK/policy-rc.d"
chmod 755 "$WORK/policy-rc.d"
unshare --pid --fork --mount --mount-proc --propagation private -- bash -c '
  mount -t tmpfs -o mode=755 tmpfs /run &&
  { [ ! -e /usr/sbin/policy-rc.d ] || mount --bind "$2" /usr/sbin/policy-rc.d; } &&
  mount --bind "$3" /etc/systemd/system &&
  exec env SYSTEMD_UNIT_PATH="/etc/systemd/system:$1" /lib/systemd/systemd --system --unit=default.target \
    --log-target=console --show-status=false' _ "$UNITS" "$WORK/policy-rc.d" "$WORK/etc-systemd" >"$WORK/systemd.log" 2>&1 &
UNSHARE_PID=$!
for _ in $(seq 1 100); do
  SYSTEMD_PID="$(pgrep -P "$UNSHARE_PID" -x systemd 2>/dev/null | head -1)"
  [ -n "$SYSTEMD_PID" ] && in_ns test -S /run/systemd/private 2>/dev/null && break
  sleep 0.1
done
[ -n "$SYSTEMD_PID" ] && in_ns test -d /run/systemd/system ||
  { cat "$WORK/systemd.log" >&2; abort "systemd did not boot in its namespaces"; }
for _ in $(seq 1 100); do
  state="$(sctl is-system-running 2>/dev/null)"
  case "$state" in running | degraded) break ;; esac
  sleep 0.1
done

wait_ready() { # wait_ready PORT: the service answers /readyz
  for _ in $(seq 1 150); do
    curl -sf "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "the service did not become ready on 127.0.0.1:$1"
  sctl status xmemo --no-pager
  tail -20 "$WORK/service.log"
  return 1
}

# --- Install --------------------------------------------------------------------------------
log "dpkg -i (revision 1)"
in_ns env DEBIAN_FRONTEND=noninteractive dpkg -i "$DEB1" >"$WORK/install-1.log" 2>&1 ||
  { cat "$WORK/install-1.log" >&2; abort "dpkg -i failed"; }
touch "$MARKER"
check "dpkg -i installs it" dpkg -s xmemo
started_on_install() {
  local state pid
  state="$(sctl is-active xmemo)"
  pid="$(sctl show xmemo -p MainPID --value)"
  echo "xmemo.service: $state, MainPID $pid"
  [ "$state" = active ] && [ "$pid" != 0 ]
}
check "the package's scripts enable and start the service" started_on_install

installed_as_a_service() {
  local user home mode owner conf
  user="$(getent passwd xmemo)" || { echo "no xmemo user"; return 1; }
  [ "$(id -u xmemo)" -lt 1000 ] || { echo "xmemo is not a system user: $user"; return 1; }
  home="$(cut -d: -f6 <<<"$user")"
  [ "$home" = /var/lib/xmemo ] || { echo "home is $home"; return 1; }
  mode="$(stat -c '%a %U:%G' /var/lib/xmemo)"
  [ "$mode" = "700 xmemo:xmemo" ] || { echo "/var/lib/xmemo is $mode"; return 1; }
  conf="$(stat -c '%a %U:%G' /etc/xmemo/xmemo.toml)"
  [ "$conf" = "640 root:xmemo" ] || { echo "/etc/xmemo/xmemo.toml is $conf"; return 1; }
  [ "$(sctl is-enabled xmemo)" = enabled ] || { echo "the unit is not enabled: $(sctl is-enabled xmemo)"; return 1; }
  echo "$user; /var/lib/xmemo $mode; settings $conf; enabled"
}
check "its own system user, a 0700 data directory, settings readable by root and the service only, the unit enabled" installed_as_a_service

unit_file="$(readlink -f "$UNITS/xmemo.service")"
verify_unit() {
  # Other units of this machine may draw warnings; none may concern xmemo's unit.
  systemd-analyze verify "$unit_file" >"$WORK/verify.log" 2>&1
  local status=$?
  cat "$WORK/verify.log"
  [ "$status" = 0 ] && ! grep -q 'xmemo' "$WORK/verify.log"
}
check "systemd-analyze verify finds nothing wrong with the unit" verify_unit

exposure() {
  systemd-analyze security --offline=yes "$unit_file" >"$WORK/security.log" 2>&1
  local score
  score="$(grep -Eo 'Overall exposure level for [^:]*: [0-9.]+' "$WORK/security.log" | grep -Eo '[0-9.]+$')"
  echo "exposure ${score:-?} (systemd-analyze security; 0 safest, 10 unprotected)"
  grep -E '^✗' "$WORK/security.log" | head -20
  # What the sandbox needs open keeps it above the 0–2 band; anything above 4 means a hardening
  # setting was lost.
  [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 4.0) }'
}
check "the unit's hardening (systemd-analyze security exposure ≤ 4.0)" exposure
grep -E 'Overall exposure' "$WORK/security.log" | sed 's/^/      /'

# The packaged settings name port 8420; the operator moves it (a local change the upgrade must
# keep), to a port free on this machine.
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
sed -i "s/^listen = .*/listen = \"127.0.0.1:$PORT\"/" /etc/xmemo/xmemo.toml
sctl restart xmemo
check "the unit starts the service (User=xmemo) with the operator's settings" wait_ready "$PORT"

runs_as_xmemo() {
  local pid user
  pid="$(sctl show xmemo -p MainPID --value)"
  user="$(in_ns ps -o user= -p "$pid")"
  echo "MainPID $pid runs as $user"
  [ "$user" = xmemo ]
}
check "the service runs as the xmemo user" runs_as_xmemo

XMEMO_URL="http://127.0.0.1:$PORT"
admin_key() { cat /var/lib/xmemo/admin.key; }
as_admin() { env XMEMO_URL="$XMEMO_URL" XMEMO_KEY="$(admin_key)" HOME="$WORK" /usr/bin/xmemo "$@"; }

# A skill with a script, run in the sandbox of the service the hardened unit started.
mkdir -p "$WORK/skill"
printf '# Sandbox probe\n\nRun scripts/probe.sh.\n' >"$WORK/skill/body.md"
cat >"$WORK/skill/probe.sh" <<'EOF'
#!/bin/sh
echo "inside uid=$(id -u) pid=$$ net=$(cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' | tr '\n' ,)"
echo "cgroupns=$(readlink /proc/self/ns/cgroup)"
test -e /var/lib/xmemo/admin.key && echo "LEAK: the data directory is visible"
exit 0
EOF
# What a JIT (Node.js, LuaJIT, PyPy) does first: map memory writable and executable.
cat >"$WORK/skill/jit.py" <<'EOF'
import mmap
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(b"\xc3")
print("writable+executable memory: mapped")
EOF
PROBE_REVISION=""
run_in_sandbox() {
  local saved run
  saved="$(cd "$WORK/skill" && as_admin save sandbox-probe --name "Sandbox probe" \
    --description "Runs a script in the sandbox" --body-file body.md \
    --component script:scripts/probe.sh=probe.sh --component script:scripts/jit.py=jit.py \
    --publish --json)" || { echo "$saved"; return 1; }
  PROBE_REVISION="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["revision_id"])' <<<"$saved")" ||
    { echo "$saved"; return 1; }
  run="$(as_admin execute sandbox-probe --revision "$PROBE_REVISION" --script scripts/probe.sh --json)"
  echo "$run"
  python3 - "$run" <<'EOF'
import json, sys
data = json.loads(sys.argv[1])["data"]
assert data["status"] == "success", data
assert "inside uid=" in data["stdout"], data["stdout"]
# A sandbox of its own: a new PID namespace (the script is a low pid) and no network but lo.
assert " pid=" in data["stdout"] and int(data["stdout"].split(" pid=")[1].split()[0]) < 10, data["stdout"]
assert "net=lo," in data["stdout"], data["stdout"]
assert "LEAK" not in data["stdout"], data["stdout"]
print("limits:", json.dumps(data.get("limits")))
EOF
  # Its own cgroup namespace, not the service's.
  service_cgroupns="$(in_ns readlink "/proc/$(sctl show xmemo -p MainPID --value)/ns/cgroup")"
  echo "service: $service_cgroupns"
  grep -q "cgroupns=cgroup:" <<<"$run" && ! grep -q "cgroupns=$service_cgroupns" <<<"$run" || return 1
  run="$(as_admin execute sandbox-probe --revision "$PROBE_REVISION" --script scripts/jit.py --json)"
  echo "$run" | grep -E '"(status|stdout)"'
  grep -q '"status": "success"' <<<"$run" && grep -q 'memory: mapped' <<<"$run"
}
check "a skill's scripts run in the bubblewrap sandbox under the hardened unit (own namespaces; a JIT's writable+executable memory)" run_in_sandbox

# Each hardening setting the unit leaves out (docs/deploy.md says why) must really break the
# sandbox; one that does not belongs in the unit. (A drop-in's RestrictNamespaces= list is ORed
# with the unit's; a `~` list is ANDed: `~cgroup` takes one namespace type away.)
sandbox_refused_with() { # sandbox_refused_with SETTING SCRIPT: the setting added by a drop-in
  printf '[Service]\n%s\n' "$1" >"$UNITS/xmemo.service.d/try.conf"
  sctl daemon-reload && sctl restart xmemo && wait_ready "$PORT" >/dev/null || return 2
  local run
  run="$(as_admin execute sandbox-probe --revision "$PROBE_REVISION" --script "$2" --json 2>&1)"
  rm -f "$UNITS/xmemo.service.d/try.conf"
  local service_cgroupns
  service_cgroupns="$(in_ns readlink "/proc/$(sctl show xmemo -p MainPID --value)/ns/cgroup")"
  if grep -q "cgroupns=$service_cgroupns" <<<"$run"; then
    echo "the script shares the service's cgroup namespace"
    return 0
  fi
  grep -q '"status": "success"' <<<"$run" && return 1
  grep -Eo 'SANDBOX_UNAVAILABLE|system_error|runtime_error|bwrap: [^"]*|"signal": [0-9]+' <<<"$run" | head -3 | tr '\n' ' '
  return 0
}
left_out_settings_break_the_sandbox() {
  local setting script why all=0
  for setting in ProtectKernelTunables=yes ProcSubset=pid ProtectHostname=yes \
    "SystemCallFilter=~sethostname" RestrictNamespaces=yes \
    RestrictNamespaces=~cgroup RestrictNamespaces=~ipc RestrictNamespaces=~uts \
    "SystemCallFilter=~@mount" \
    MemoryDenyWriteExecute=yes; do
    script=scripts/probe.sh
    [ "$setting" = MemoryDenyWriteExecute=yes ] && script=scripts/jit.py
    if why="$(sandbox_refused_with "$setting" "$script")"; then
      echo "$setting: the sandbox fails ($why)"
    else
      echo "$setting: the sandbox still works, or the service did not start with it ($?)"
      all=1
    fi
  done
  rm -f "$UNITS/xmemo.service.d/try.conf"
  sctl daemon-reload && sctl restart xmemo && wait_ready "$PORT" >/dev/null && return "$all"
}
check "every hardening setting the unit leaves out breaks the sandbox (so none is left out needlessly)" left_out_settings_break_the_sandbox
sed 's/^/      /' "$WORK/check.out"

doctor() {
  runuser -u xmemo -- env HOME=/var/lib/xmemo XMEMO_CONFIG=/etc/xmemo/xmemo.toml /usr/bin/xmemo admin doctor
}
check "the installed binary's xmemo admin doctor, as the service user, on the packaged settings" doctor

# Data that the upgrade must keep: an account, a memory, the admin key.
before_upgrade() {
  runuser -u xmemo -- env HOME=/var/lib/xmemo XMEMO_CONFIG=/etc/xmemo/xmemo.toml \
    /usr/bin/xmemo admin account create kept-across-upgrades &&
    as_admin remember "The package upgrade keeps this memory" --kind fact --tag deb
}
check "an account and a memory saved before the upgrade" before_upgrade
key_before="$(admin_key)"
pid_before="$(sctl show xmemo -p MainPID --value)"

# --- Upgrade over itself ----------------------------------------------------------------------
log "building revision 2 and upgrading"
build_deb 2 || abort "cargo deb (revision 2) failed"
in_ns env DEBIAN_FRONTEND=noninteractive dpkg -i "$WORK/xmemo-2.deb" >"$WORK/install-2.log" 2>&1 ||
  { cat "$WORK/install-2.log" >&2; abort "the upgrade (dpkg -i revision 2) failed"; }
upgraded() {
  local version pid
  version="$(dpkg-query -W -f '${Version}' xmemo)"
  pid="$(sctl show xmemo -p MainPID --value)"
  echo "version $version, MainPID $pid_before -> $pid"
  [ "$version" = 0.1.0-2 ] && [ "$pid" != "$pid_before" ] && [ "$pid" != 0 ] &&
    grep -q "^listen = \"127.0.0.1:$PORT\"" /etc/xmemo/xmemo.toml
}
check "the upgrade installs revision 2, keeps the operator's settings and restarts the service" upgraded
check "the upgraded service answers" wait_ready "$PORT"
kept() {
  [ "$(admin_key)" = "$key_before" ] || { echo "the admin key changed"; return 1; }
  as_admin memories "package upgrade" >"$WORK/memories.out" 2>&1
  cat "$WORK/memories.out"
  grep -q "The package upgrade keeps this memory" "$WORK/memories.out" &&
    runuser -u xmemo -- env HOME=/var/lib/xmemo XMEMO_CONFIG=/etc/xmemo/xmemo.toml \
      /usr/bin/xmemo admin account list | grep -q kept-across-upgrades
}
check "the data survives the upgrade: the memory, the account, the admin key" kept
check "the audit chain is intact after the upgrade (xmemo admin verify)" \
  runuser -u xmemo -- env HOME=/var/lib/xmemo XMEMO_CONFIG=/etc/xmemo/xmemo.toml /usr/bin/xmemo admin verify

# --- Remove, then purge -----------------------------------------------------------------------
log "dpkg -r, then dpkg -P"
active_before_remove="$(sctl is-active xmemo 2>&1)"
in_ns env DEBIAN_FRONTEND=noninteractive dpkg -r xmemo >"$WORK/remove.log" 2>&1 ||
  { cat "$WORK/remove.log" >&2; bad "dpkg -r failed"; }
removed() {
  local state
  state="$(dpkg-query -W -f '${db:Status-Abbrev}' xmemo 2>/dev/null)"
  echo "dpkg status: $state; service before: $active_before_remove, after: $(sctl is-active xmemo 2>&1)"
  [ "$active_before_remove" = active ] && [ "${state:0:2}" = rc ] && [ ! -e /usr/bin/xmemo ] && [ ! -e "$unit_file" ] &&
    ! sctl is-active --quiet xmemo && ! curl -sf "$XMEMO_URL/healthz" >/dev/null 2>&1 &&
    [ -f /etc/xmemo/xmemo.toml ] && [ -f /var/lib/xmemo/xmemo.db ]
}
check "dpkg -r stops the service and removes the program, keeping settings and data" removed
in_ns env DEBIAN_FRONTEND=noninteractive dpkg -P xmemo >"$WORK/purge.log" 2>&1 ||
  { cat "$WORK/purge.log" >&2; bad "dpkg -P failed"; }
purged() {
  echo "dpkg status: $(dpkg-query -W -f '${db:Status-Abbrev}' xmemo 2>&1)"
  ! dpkg -s xmemo >/dev/null 2>&1 && [ ! -e /etc/xmemo ] &&
    ! in_ns test -e /etc/systemd/system/multi-user.target.wants/xmemo.service &&
    [ -f /var/lib/xmemo/xmemo.db ]
}
check "dpkg -P removes the settings and the unit's enablement, and leaves the team's data in /var/lib/xmemo" purged

finish
