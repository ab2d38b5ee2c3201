#!/usr/bin/env bash
# make demo: a local 3-node Haven cluster on loopback with an example
# failover service; shows the cluster, crashes the node running the
# service, shows the failover, then cleans up. Everything lives below a
# temporary directory, one --root per node.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# HAVEN_BIN: where the binaries are (the e2e test passes its own build)
bin=$(cd "${HAVEN_BIN:-$here/../../bin}" && pwd)
top=$(mktemp -d /tmp/haven-demo.XXXXXX)
nodes=(n1 n2 n3)

# cleanup stops the daemons (they leave their services running, and their
# guards), then ends what the services' starts left behind: each action
# runs in a process group of its own, found from the pid its service
# recorded below $top, and each guard in a session of its own, its pid in
# run/guard.lock. Never by a name pattern: a service's command line does
# not name $top.
cleanup() {
  local n f pid pgid mine
  for n in "${nodes[@]}"; do
    "$bin/nodemgr" --root "$top/$n" daemon stop >/dev/null 2>&1 || true
  done
  mine=$(ps -o pgid= -p $$ | tr -d ' ')
  for f in "$top"/*/var/services/*/*.pid "$top"/*/run/daemon.pid "$top"/*/run/guard.lock; do
    [ -s "$f" ] || continue
    pid=$(cat "$f")
    pgid=$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ') || continue
    if [ -n "$pgid" ] && [ "$pgid" != "$mine" ]; then
      kill -TERM -- "-$pgid" 2>/dev/null || true
    fi
  done
  # the nodes' cgroups (docs/resources.md): empty once their processes are gone
  cg=$(findmnt -n -t cgroup2 -o TARGET 2>/dev/null | head -1)
  for n in "${nodes[@]}"; do
    h=$(printf %s "$top/$n" | sha256sum | cut -c1-8)
    [ -n "$cg" ] && [ -d "$cg/haven/$n-$h" ] && find "$cg/haven/$n-$h" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  rm -rf "$top"
}
trap cleanup EXIT

# bold and dim only on a terminal, and never with NO_COLOR set (as svcmon)
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  b=$'\033[1m' d=$'\033[2m' z=$'\033[0m'
else
  b= d= z=
fi
say()  { printf '\n%s# %s%s\n' "$b" "$*" "$z"; }
show() { printf '%s$ %s%s\n' "$d" "${*#$bin/}" "$z"; "$@"; }
on()   { local n=$1; shift; show "$bin/$1" --root "$top/$n" "${@:2}"; }

# ports free for TCP and UDP on loopback, chosen by the kernel
mapfile -t free < <(cd "$here/../.." && go run ./cmd/freeport ${#nodes[@]})
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
declare -A ports
members=""
i=0
for n in "${nodes[@]}"; do
  ports[$n]=${free[$i]}; i=$((i + 1))
  members+="$n = \"127.0.0.1:${ports[$n]}\""$'\n'
done
for n in "${nodes[@]}"; do
  mkdir -p "$top/$n/etc"
  # the secret stays readable by its owner only: the daemon refuses more
  install -m 600 /dev/null "$top/$n/etc/cluster.toml"
  cat > "$top/$n/etc/cluster.toml" <<TOML
[cluster]
name = "demo"
secret = "$secret"

[nodes]
$members
TOML
  chmod 600 "$top/$n/etc/cluster.toml" # it holds the secret
  cat > "$top/$n/etc/node.toml" <<TOML
[node]
name = "$n"
ready_period = "2s"
monitor_interval = "1s"
rejoin_grace_period = "10s"

[hb]
addr = "127.0.0.1"
port = ${ports[$n]}
timeout = "3s"
interval = "1s"
TOML
done

# wait_for DESC CMD...: poll until CMD succeeds (at most 30s)
wait_for() {
  local what=$1; shift
  for _ in $(seq 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "timed out waiting for $what" >&2; return 1
}
up_on() { "$bin/svcmgr" --root "$top/$2" -s web print status --format json | grep -A2 "\"$1\": {" | grep -q '"avail": "up"'; }

say "three daemons on loopback, encrypted heartbeats (hb.timeout 3s, ready_period 2s)"
for n in "${nodes[@]}"; do on "$n" nodemgr daemon start; done
wait_for "the cluster to form" sh -c "'$bin/svcmon' --root '$top/n3' --format json | grep -c '\"status\": \"up\"' | grep -q 3"

say "a failover service, created on n2: the config reaches every node"
on n2 svcmgr -s web create --config "$here/web.toml"
say "n1 is the placement leader: it announces ready, waits the 2s contest window, starts web"
wait_for "web to start on n1" up_on n1 n3
on n3 svcmon

say "n1 crashes: kill -9 of its daemon and of the service it ran"
kill -9 "$(cat "$top/n1/run/daemon.pid")" "$(cat "$top/n1/var/services/web/web.pid")"
t0=$(date +%s.%N)
wait_for "the failover to n2" up_on n2 n3
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "web is up on n2 %.1fs after the crash (hb.timeout 3s + ready_period 2s)\n", b - a }' 
on n3 svcmon
on n2 svcmgr -s web print status
say "what n2 decided, and why (nodemgr events / the node log)"
grep -E 'peer n1 up -> down|(idle -> ready|ready -> starting|starting -> idle)' "$top/n2/log/node.log" | sed -E 's/^[^ ]+T([0-9:.]+)Z/\1/' | cut -c1-160

say "n1 comes back: it rejoins, sees web running on n2, and leaves it there"
on n1 nodemgr daemon start
# n1 is a candidate again once its rejoin has ended (it heard every member):
# until then the placement leader is n2, and a giveback would leave web there.
# n1's own view says when (a peer may show n1's data of before the crash
# for a moment after it came back)
idle_on() { "$bin/svcmon" --root "$top/$2" --format json | tr -d ' \n' | grep -q "\"$1\":{\"status\":\"up\",\"monitor\":\"idle\""; }
wait_for "n1 to end its rejoin" idle_on n1 n1
on n1 svcmon
say "giveback: move web back to its placement leader, n1, and wait for it"
on n1 svcmgr -s web giveback --wait --time 30s
wait_for "web back on n1" up_on n1 n3
on n3 svcmon
echo "web is back on n1"
echo
echo "demo done: every daemon stopped, $top removed"
