#!/bin/bash
# bench/guardidle.sh GUARD N: one node (node.guard = GUARD, true or false)
# with N ha services of one sleep each; once idle, the CPU time of the
# daemon (all its threads, /proc/PID/task/*/schedstat) and of its guard
# over 60 s. As root, from the top of the tree after make build
# (HAVEN_BIN: another directory of the binaries). docs/benchmarks.md
set -e
B=${HAVEN_BIN:-bin}
R=$(mktemp -d /tmp/haven-guardidle.XXXXXX)
mkdir -p $R/etc
printf '[node]\nname = "n1"\nguard = %s\n' "$1" > $R/etc/node.toml
export HAVEN_ROOT=$R
$B/nodemgr daemon start >/dev/null
for i in $(seq 1 $2); do
cat > $R/s$i.toml <<TOML
[DEFAULT]
orchestrate = "ha"

[app.main]
start = "sh -c 'sleep 100000 >/dev/null 2>&1 & echo \$! > {var}/main.pid'"
stop  = "sh -c 'kill \$(cat {var}/main.pid) 2>/dev/null; rm -f {var}/main.pid'"
check = "sh -c 'test -f {var}/main.pid && kill -0 \$(cat {var}/main.pid) 2>/dev/null'"
TOML
$B/svcmgr -s s$i create --config $R/s$i.toml >/dev/null
done
sleep 40
pid=$(cat $R/run/daemon.pid)
gpid=$(cat $R/run/guard.lock 2>/dev/null || echo 0)
cpu() { cat /proc/$1/task/*/schedstat 2>/dev/null | awk '{s+=$1} END {printf "%d", s/1000000}'; }
a=$(cpu $pid); ga=0; [ "$gpid" != 0 ] && ga=$(cpu $gpid)
sleep 60
b=$(cpu $pid); gb=0; [ "$gpid" != 0 ] && gb=$(cpu $gpid)
echo "guard=$1 services=$2: daemon $((b-a)) ms CPU in 60 s, guard $((gb-ga)) ms"
$B/nodemgr daemon shutdown >/dev/null 2>&1 || true
sleep 1
[ "$gpid" != 0 ] && kill $gpid 2>/dev/null || true
for f in $R/var/services/*/main.pid; do [ -s $f ] && kill $(cat $f) 2>/dev/null || true; done
rm -rf $R
