#!/usr/bin/env bash
# make demo: a local Haven node on loopback with an example service.
# Everything lives below a temporary --root and is cleaned up at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../bin
root=$(mktemp -d /tmp/haven-demo.XXXXXX)
export HAVEN_ROOT=$root/n1

cleanup() {
  "$bin/nodemgr" daemon stop >/dev/null 2>&1 || true
  pkill -f "sleep 100000" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

mkdir -p "$HAVEN_ROOT/etc"
cat > "$HAVEN_ROOT/etc/node.toml" <<TOML
[node]
name = "n1"
monitor_interval = "1s"
TOML

step "$bin/nodemgr" daemon start
step "$bin/svcmgr" -s web create --config "$here/web.toml"
step "$bin/svcmgr" -s web start --local
step "$bin/svcmon"
step "$bin/svcmgr" -s web print status
echo; echo "# kill the web process behind the daemon's back: the next check sees it down"
kill "$(cat "$HAVEN_ROOT/var/services/web/web.pid")"
for _ in $(seq 50); do
  "$bin/svcmgr" -s web print status --format json | grep -q '"avail": "down"' && break
  sleep 0.1
done
step "$bin/svcmgr" -s web print status
step "$bin/svcmgr" -s web logs --lines 6
step "$bin/nodemgr" daemon stop
echo; echo "demo done (root $root removed)"
