#!/bin/sh
# No false failover on a busy host, at the fast failover profile
# (docs/operations.md, "Fast failover"; docs/benchmarks.md, "False alarms
# on a busy host"). Bench only: never run by CI or `make test`. Needs root
# (network namespaces).
#
#   bench/falsealarm.sh                          # 30 minutes, hb.timeout 1s, fast-ack
#   bench/falsealarm.sh -duration 5m -timeout 600ms
#
# It builds the programs (make build) and runs `chaos falsealarm` with the
# arguments given: the chaos suite's cluster (3 daemons in network
# namespaces, a failover service per node and a flex one, each writing the
# external journal), quorum off, the profile's hb.timeout, hb.interval
# (a third of it), ready_period 16s and ready_fast_ack; then 2 CPU hogs a
# processor and an I/O hog beside the daemons, nothing faulted. It counts
# every peer_down in the daemons' logs, every node's view of a member not
# up (polled each second), every start or stop in the journal after the
# cluster settled, every overlap; exit 1 when any. The load average is
# sampled every 10 s.
set -eu
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "falsealarm.sh: needs root (network namespaces)" >&2; exit 2; }
make build >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/chaos" ./cmd/chaos
uptime
"$tmp/chaos" falsealarm -bin bin "$@"
