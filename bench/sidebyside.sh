#!/bin/sh
# Haven side by side with keepalived and Pacemaker/corosync, in one run
# (docs/benchmarks-archive.md, "Side by side"). Bench only: never
# run by CI or `make test`. Needs root (network namespaces, apt-get).
#
#   bench/sidebyside.sh                       # 5 crashes per system, 60 s idle window
#   bench/sidebyside.sh -crashes 3 -window 30s -systems keepalived,haven-1s
#
# It installs the peers from Debian's packages when they are missing
# (keepalived, corosync, pacemaker, pacemaker-cli-utils, resource-agents),
# with a policy-rc.d that keeps their packages from starting them on the
# host, then runs `clusterbench sidebyside` with the arguments given. The
# program builds one bed of network namespaces per system and removes
# every namespace, process and mount it made when it ends, also on
# SIGINT/SIGTERM (the Pacemaker nodes' mounts live in mount namespaces
# that end with their processes).
set -eu
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "sidebyside.sh: needs root (network namespaces, apt-get)" >&2; exit 2; }

tmp=$(mktemp -d)
policy_made=
cleanup() {
	[ -n "$policy_made" ] && rm -f /usr/sbin/policy-rc.d
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need=
for p in keepalived:keepalived corosync:corosync pacemakerd:pacemaker crm_mon:pacemaker-cli-utils; do
	command -v "${p%%:*}" >/dev/null 2>&1 || need="$need ${p#*:}"
done
[ -e /usr/lib/ocf/resource.d/heartbeat/IPaddr2 ] || need="$need resource-agents"
if [ -n "$need" ]; then
	echo "+ apt-get install$need"
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		policy_made=1
	fi
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need
fi
echo "+ keepalived $(keepalived --version 2>&1 | head -1 | awk '{print $2}'), corosync $(corosync -v | head -1 | sed "s/.*version '\(.*\)'/\1/"), $(pacemakerd --version | head -1)"

go build -o "$tmp/clusterbench" ./cmd/clusterbench
uptime
"$tmp/clusterbench" sidebyside "$@"
