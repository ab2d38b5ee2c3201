#!/bin/sh
# Reproduces every figure of docs/benchmarks.md, one after the other (never
# in parallel: they share the host's cores). Run from the module root:
#
#   bench/run.sh            # everything, about 25 minutes on 2 cores
#   bench/run.sh prop       # one figure: prop detect idle mem failover mass rollout step hb scale flex
#   bench/sidebyside.sh     # Haven against keepalived and Pacemaker (installs them; not run here)
#   bench/falsealarm.sh     # 30 minutes at the fast failover profile on a busy host (not run here)
#
# Output goes to stdout; the lines starting with RESULT are the summaries.
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cb=$tmp/clusterbench
go build -o "$cb" ./cmd/clusterbench
what=${1:-all}

run() { case $what in all|"$1") shift; echo "+ $*"; "$@" ;; esac; }

# 1. propagation of a status change (hb defaults 15s/5s, then 3s/1s)
run prop timeout 600 $cb propagation -nodes 3,16 -changes 50 -timeout 15s -interval 5s
run prop timeout 600 $cb propagation -nodes 16 -changes 150 -watch 3 -timeout 15s -interval 5s
run prop timeout 600 $cb propagation -nodes 3,16 -changes 50 -timeout 3s -interval 1s
run prop timeout 600 $cb propagation -nodes 16 -changes 150 -watch 3 -timeout 3s -interval 1s
# 2. detection of a crashed node
run detect timeout 600 $cb detection -nodes 2,3,16 -runs 5 -timeout 3s -interval 1s
run detect timeout 600 $cb detection -nodes 3 -runs 3 -timeout 15s -interval 5s
# 3. idle daemon with 50 services
run idle timeout 900 $cb idle -nodes 1,3 -services 50 -monitor=true
run idle timeout 900 $cb idle -nodes 1,3 -services 50 -monitor=false
# 3'. idle cost against the number of services (CPU and bytes/s)
for n in 0 50 500; do
  run idle timeout 900 $cb idle -nodes 3 -services $n -monitor=false -timeout 3s -interval 1s
done
run idle timeout 900 $cb idle -nodes 3 -services 500 -monitor=false -timeout 3s -interval 1s -check 1h
run idle timeout 900 $cb idle -nodes 3 -services 0 -monitor=false
run idle timeout 900 $cb idle -nodes 3 -services 500 -monitor=false -check 1h
# 3''. where an idle node's memory goes (the daemon and its guard)
run mem timeout 900 $cb mem -nodes 1,3 -services 0 -settle 45s
run mem timeout 900 $cb mem -nodes 1,3 -services 50 -settle 45s
run mem timeout 900 $cb mem -nodes 3 -services 50 -settle 45s -window 60s -memrate 512 -heap "$tmp/heap"
# 4. failover of one service after a crash
run failover timeout 600 $cb failover -nodes 3 -services 1 -runs 6 -timeout 3s -interval 1s -ready 2s
# 5. 50 services failing over together
run mass timeout 900 $cb failover -nodes 3 -services 50 -runs 3 -timeout 3s -interval 1s -ready 2s
# 11. a rollout of a flex service of 3 instances, update_* defaults
run rollout bench/rollout.sh 3
# 6. one decision pass over 2,000 services on 16 nodes
run step go test -run XXX -bench Step2000x16 -benchtime 100x -count 5 -benchmem ./monitor
run step go test -run XXX -bench 'Step(Flex)?2000x16$' -benchtime 20x -count 5 -benchmem ./monitor
# the heartbeat alone (the heartbeat owner's benchmark), for comparison
run hb timeout 600 go run ./cmd/hbbench -sizes 3,16 -detect 2,3,16 -timeout 3s -interval 1s
# Daemons in network namespaces (root only). 500 services
# (-services 500) do not converge on 16 daemons on this host and take GBs:
# see docs/benchmarks-archive.md, "Scale in network namespaces"; watch MemAvailable
run scale timeout 1500 $cb netns-scale -nodes 16 -services 100 -changes 30 -runs 3 -timeout 3s -interval 1s
run scale timeout 1500 $cb netns-scale -nodes 32 -services 10 -changes 30 -runs 3 -settle 30s -timeout 3s -interval 1s
# flex at scale: 16 daemons in namespaces, 500 services half flex (target 3),
# a node lost twice (root only; about 10 minutes, GBs of memory)
run flex timeout 1800 $cb flex-scale -nodes 16 -services 500 -target 3 -runs 2 -timeout 3s -interval 1s -ready 2s -settle 30s -window 120s
