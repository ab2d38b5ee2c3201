#!/usr/bin/env bash
# The package checks CI runs (as root, on a Debian-like machine): build the
# .deb, lint it, verify the unit, install it, run the unit's ExecStop line
# and the installed binaries, purge it. Leaves the machine as it found it
# (the directories postinst creates are removed when they were not there
# before and stayed empty).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ] || ! command -v dpkg >/dev/null 2>&1; then
  echo "package checks skipped: they need root and dpkg (a Debian-like machine)"
  exit 0
fi
if dpkg -s haven >/dev/null 2>&1; then
  echo "package checks skipped: a haven package is already installed here"
  exit 0
fi
need=()
command -v lintian >/dev/null 2>&1 || need+=(lintian)
command -v dpkg-architecture >/dev/null 2>&1 || need+=(dpkg-dev)
if ((${#need[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

step() { printf '== %s\n' "$*"; }

# execstop MODE: run the installed haven.service's ExecStop= command line
# the way systemd would, with `systemctl is-system-running` answering MODE
# ("running": a plain stop, "stopping": a host shutdown). The line is read
# by sh: refused when it holds what systemd reads otherwise (%, $, \).
execstop() {
  local unit=/lib/systemd/system/haven.service line fake rc=0
  line=$(sed -n 's/^ExecStop=[-@:+!]*//p' "$unit")
  if [ -z "$line" ] || [ "$(wc -l <<<"$line")" != 1 ]; then
    echo "$unit: want exactly one ExecStop= line"; return 1
  fi
  case "$line" in *[%\$\\]*)
    echo "$unit: ExecStop= holds %, \$ or a backslash: update execstop() in $0"; return 1 ;;
  esac
  fake=$(mktemp -d)
  printf '#!/bin/sh\necho %s\n' "$1" >"$fake/systemctl"
  chmod +x "$fake/systemctl"
  PATH="$fake:$PATH" sh -c "$line" || rc=$?
  rm -rf "$fake"
  return "$rc"
}

step "make deb"
make --no-print-directory deb >/dev/null
deb=$(ls -t bin/haven_*.deb | head -1)
echo "$deb"

step "lintian (errors fail, warnings are printed)"
lintian --fail-on error "$deb" 2> >(grep -v 'running with root privileges' >&2)

created=()
for d in /etc/haven/services /etc/haven /var/lib/haven /var/log/haven; do
  [ -e "$d" ] || created+=("$d")
done
keyed=no # postinst makes the node key: removed at the end when it did
[ -e /etc/haven/node.key ] || keyed=yes
smoke=no
# a daemon stop leaves the node guard running with the lease of a
# maintenance stop (docs/operations.md, "The node guard"): SIGTERM, and it
# exits without acting, rather than outlive the smoke test
stop_guard() {
  if [ -s /run/haven/guard.lock ]; then kill "$(cat /run/haven/guard.lock)" 2>/dev/null || true; fi
}
cleanup() {
  if [ "$keyed" = yes ]; then rm -f /etc/haven/node.key; fi
  if [ "$smoke" = yes ]; then
    /usr/bin/nodemgr daemon stop >/dev/null 2>&1 || true
    stop_guard
    rm -f /etc/haven/node.toml /etc/haven/cluster.toml /var/lib/haven/state.json
    rm -rf /var/log/haven/* /var/lib/haven/services
  fi
  dpkg -P haven >/dev/null 2>&1 || true
  for d in "${created[@]}"; do rmdir "$d" 2>/dev/null || true; done
}
trap cleanup EXIT

step "dpkg -i"
dpkg -i "$deb"
for d in /etc/haven/services /var/lib/haven /var/log/haven; do
  stat -c '%A %U:%G %n' "$d"
done
[ "$(stat -c %a /var/lib/haven)" = 700 ] || { echo "/var/lib/haven is not 0700"; exit 1; }
[ "$(stat -c '%a %U' /etc/haven/node.key)" = "600 root" ] || { echo "/etc/haven/node.key is not 0600 root's"; exit 1; }
/usr/bin/nodemgr key show
if command -v logrotate >/dev/null 2>&1; then
  logrotate -d /etc/logrotate.d/haven 2>&1 | grep -i error && exit 1
  echo "/etc/logrotate.d/haven parsed by logrotate -d"
fi
if [ -d /run/systemd/system ] && systemctl is-active --quiet haven; then
  echo "the package started the daemon without a cluster.toml"; exit 1
fi

step "the unit's ExecStop= (both branches) through the installed nodemgr"
# no daemon under this root: each branch parses its flags and answers
# "daemon not running"; a bad flag exits 2 (as "--time 4min" once did)
root=$(mktemp -d)
for mode in running stopping; do
  out=$(HAVEN_ROOT=$root execstop "$mode" 2>&1) || { echo "$out"; rm -rf "$root"; exit 1; }
  [ "$out" = "daemon not running" ] || { echo "ExecStop ($mode): $out"; rm -rf "$root"; exit 1; }
done
rm -rf "$root"
echo "ExecStop parses in both branches"

step "installed binaries"
/usr/bin/nodemgr --version
/usr/bin/haven-guard --version
/usr/bin/svcmgr --version
/usr/bin/svcmon --version
/usr/bin/svcmgr validate --config /usr/share/doc/haven/examples/services/web.toml
/usr/bin/svcmgr validate --config /usr/share/doc/haven/examples/services/pg.toml
/usr/bin/svcmgr validate --config /usr/share/doc/haven/examples/services/web-ocf.toml
/usr/bin/svcmgr validate --config /usr/share/doc/haven/examples/services/web-container.toml
for f in shop-db shop-app shop-logs; do /usr/bin/svcmgr validate --config /usr/share/doc/haven/examples/services/$f.toml; done
man -w nodemgr svcmgr svcmon haven-guard 2>/dev/null || ls /usr/share/man/man1/{nodemgr,svcmgr,svcmon,haven-guard}.1.gz

step "the installed paths the examples name exist"
for p in $(grep -ohE '/usr/share/doc/haven/[A-Za-z0-9_./-]*[A-Za-z0-9_]' /usr/share/doc/haven/examples/*.toml /usr/share/doc/haven/examples/services/*.toml | sort -u); do
  [ -e "$p" ] || { echo "$p is named by an example but not installed"; exit 1; }
done

if [[ " ${created[*]} " == *" /etc/haven "* ]]; then
  step "the installed daemon on the system paths (one node, from the examples)"
  smoke=yes
  secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  sed -e 's/^# name = "n1" /name = "n1"   /' /usr/share/doc/haven/examples/node.toml >/etc/haven/node.toml
  install -m 0600 /dev/null /etc/haven/cluster.toml
  sed -e "s/^secret = .*/secret = \"$secret\"/" -e '/^n[12] = /d' \
    /usr/share/doc/haven/examples/cluster.toml >/etc/haven/cluster.toml
  /usr/bin/nodemgr daemon start
  /usr/bin/nodemgr daemon status | head -3
  test -S /run/haven/daemon.sock
  grep -q "daemon started" /var/log/haven/node.log
  if grep -q "$secret" /var/log/haven/node.log; then echo "the secret is in node.log"; exit 1; fi
  # stopped by the unit's own ExecStop=: the host-shutdown branch, then
  # (started again) the plain stop
  out=$(execstop stopping 2>&1) || true
  echo "$out"
  [ "$out" = "daemon stopped (shutdown)" ] || { echo "ExecStop (stopping) did not shut the daemon down"; exit 1; }
  /usr/bin/nodemgr daemon start
  out=$(execstop running 2>&1) || true
  echo "$out"
  [ "$out" = "daemon stopped (stop)" ] || { echo "ExecStop (running) did not stop the daemon"; exit 1; }
  stop_guard
else
  echo "/etc/haven existed before: the installed daemon is not run"
fi

step "reinstall (the upgrade path of the maintainer scripts)"
dpkg -i "$deb" >/dev/null

step "systemd-analyze verify"
if command -v systemd-analyze >/dev/null 2>&1; then
  # the unit names man pages; man-db may be missing on a minimal machine
  man=yes
  command -v man >/dev/null 2>&1 || man=no
  # verify exits 0 on a line it ignores ("Failed to parse ..., ignoring"):
  # any message about the unit fails the check
  for unit in haven.service haven-arbitrator.service; do
    out=$(systemd-analyze verify --man="$man" /lib/systemd/system/$unit 2>&1) || { echo "$out"; exit 1; }
    if grep "$unit" <<<"$out"; then exit 1; fi
    [ -z "$out" ] || echo "$out"
    echo "$unit verified"
  done
else
  echo "systemd-analyze not found: the unit is not verified"
fi

step "dpkg -P haven"
dpkg -P haven
