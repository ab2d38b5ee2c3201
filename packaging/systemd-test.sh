#!/usr/bin/env bash
# The package under a real systemd (CI runs it after packaging/check.sh):
# debootstrap a minimal Debian 12, boot it with systemd-nspawn, install the
# .deb of `make deb` inside, a single-node cluster with one app service (a
# sleep), and check what haven.service promises:
#   - systemctl start: Type=notify, active once READY=1 was sent
#   - kill -9 of the daemon: systemd restarts it (RestartSec=2s) within the
#     node guard's lease, the failover service survives (same pid), the
#     guard (/usr/bin/haven-guard) is the same process and never acted;
#     the daemon runs in the unit's leaf "daemon", the services in cgroups
#     below the unit
#   - a SIGSTOPped daemon: killed by the watchdog (SIGABRT), restarted, the
#     service's process adopted (same pid, not started again); the guard
#     ended the failover service during the pause (guard_fired)
#   - systemctl restart: a new daemon, the same service process
#   - systemctl stop: a clean result, the node in maintenance, the service
#     still running (a daemon stop never stops the services)
#   - systemctl poweroff: ExecStop's shutdown branch stops the service
#     cleanly before the container ends
# Skipped (exit 0, with a message) when not root or when debootstrap or
# systemd-nspawn cannot run here; any failure after the container booted
# fails, with the unit's journal. About 1.5 minutes (40 s less with the
# rootfs cache).
#
#   packaging/systemd-test.sh [DEB]     (default: a new `make deb`)
#
# Environment:
#   HAVEN_DEBIAN_MIRROR  the mirror for debootstrap (default: the first
#                        Debian mirror of apt's sources, else deb.debian.org)
#   HAVEN_ROOTFS_CACHE   a tarball of the debootstrapped rootfs, reused for a
#                        week (default /var/cache/haven-ci/bookworm-systemd.tar;
#                        empty: no cache)
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
	echo "real-systemd test SKIPPED: $*"
	exit 0
}
[ "$(id -u)" = 0 ] || skip "it needs root"
for c in debootstrap systemd-nspawn nsenter pgrep journalctl; do
	command -v "$c" >/dev/null 2>&1 || skip "$c not found (apt-get install debootstrap systemd-container procps)"
done

step() { printf '== %s\n' "$*"; }
fail() {
	echo "FAIL: $*"
	exit 1
}

deb=${1:-}
if [ -z "$deb" ]; then
	step "make deb"
	make --no-print-directory deb >/dev/null
	deb=$(ls -t bin/haven_*.deb | head -1)
fi
[ -f "$deb" ] || fail "$deb: no such package"
echo "$deb"

work=$(mktemp -d -p /var/tmp haven-systemd-test.XXXXXX)
dir=$work/root
machine=haven-test-${work##*.}
nspawn=
leader=

# inside CMD...: run CMD inside the booted container (every namespace of its
# PID 1; without systemd-machined, machinectl and systemd-run -M are out)
inside() { nsenter -t "$leader" -a -- "$@"; }
# inkill ARGS: kill inside the container (minbase has no /bin/kill: sh's)
inkill() { inside sh -c 'kill "$@"' sh "$@"; }

diagnose() {
	[ -n "$leader" ] && kill -0 "$leader" 2>/dev/null || return 0
	echo "--- systemctl status haven"
	inside systemctl status haven --no-pager -n 0 || true
	echo "--- journalctl -u haven (last 60 lines)"
	inside journalctl -u haven --no-pager -n 60 -o short-precise || true
}

cleanup() {
	rc=$?
	trap - EXIT
	[ "$rc" = 0 ] || diagnose
	if [ -n "$nspawn" ] && kill -0 "$nspawn" 2>/dev/null; then
		# SIGTERM asks the container's systemd to power off; SIGKILL after 20 s
		kill -TERM "$nspawn" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$nspawn" 2>/dev/null || true
		wait "$nspawn" 2>/dev/null || true
	fi
	if [ "$rc" != 0 ] && [ -s "$work/console.log" ]; then
		echo "--- container console (last 20 lines)"
		tail -20 "$work/console.log" | sed 's/\x1b\[[0-9;]*m//g'
	fi
	# nspawn's mounts live in its own namespace: none should remain here
	if grep -q " $work" /proc/self/mountinfo; then
		echo "mounts remain under $work: not removed"
	else
		rm -rf --one-file-system "$work"
	fi
	rm -rf "/run/systemd/nspawn/propagate/$machine" 2>/dev/null || true
	exit "$rc"
}
trap cleanup EXIT

# wait_for SECONDS WHAT CMD...: poll CMD every 0.2 s until it succeeds
wait_for() {
	local secs=$1 what=$2 end
	shift 2
	end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$end" ] || fail "$what: not within ${secs}s"
		sleep 0.2
	done
}

prop() { inside systemctl show haven -p "$1" --value; }
journal() { inside journalctl -u haven --no-pager -o cat; }
# mark; ...; newlog: the unit's journal lines since the mark
mark() { marked=$(journal | wc -l); }
newlog() { journal | tail -n "+$((marked + 1))"; }
has_line() { newlog | grep -qxF "$1"; }
ended() { has_line "$1" || newlog | grep -q 'Control process exited'; }
# execstop_ok WHAT: since the mark, ExecStop= ran, printed MESSAGE and
# exited 0 (when it fails, systemd SIGTERMs the daemon: a stop in
# maintenance, even at a host shutdown)
execstop_ok() {
	wait_for 10 "$1: ExecStop's end" ended "$2"
	if newlog | grep -B1 'Control process exited'; then
		fail "$1: ExecStop failed (the daemon was stopped by systemd's SIGTERM instead)"
	fi
	has_line "$2" || fail "$1: ExecStop did not print '$2'"
}

step "a minimal Debian 12 (debootstrap, or the cached tarball)"
# the packages the rootfs holds besides minbase: the unit's systemd, and
# the package's Depends (the cache's name follows the list)
include=systemd,systemd-sysv,dbus,iproute2
cache=${HAVEN_ROOTFS_CACHE-/var/cache/haven-ci/bookworm-$(echo "$include" | tr , -).tar}
mkdir -p "$dir"
if [ -n "$cache" ] && [ -n "$(find "$cache" -mtime -7 2>/dev/null)" ]; then
	tar -C "$dir" -xpf "$cache"
	echo "from $cache"
else
	mirror=${HAVEN_DEBIAN_MIRROR:-}
	if [ -z "$mirror" ]; then
		# the mirror apt uses (one-line and deb822 sources), not a security one
		mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
			sed -n -e 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/p' -e 's/^URIs: *\([^ ]*\).*/\1/p' |
			grep -E '^https?://[^ ]*/debian/?$' | head -1 || true)
		mirror=${mirror:-http://deb.debian.org/debian}
	fi
	# and apt's proxy, if any (debootstrap reads only http_proxy)
	if [ -z "${http_proxy:-}" ]; then
		eval "$(apt-config shell http_proxy Acquire::http::Proxy 2>/dev/null || true)"
		[ -z "${http_proxy:-}" ] || export http_proxy
	fi
	echo "debootstrap from $mirror"
	if ! debootstrap --variant=minbase --include="$include" bookworm "$dir" "$mirror" >"$work/debootstrap.log" 2>&1; then
		tail -5 "$work/debootstrap.log"
		skip "debootstrap failed (the mirror $mirror unreachable?)"
	fi
	if [ -n "$cache" ]; then
		mkdir -p "$(dirname "$cache")"
		tar -C "$dir" -cpf "$cache.tmp" . && mv "$cache.tmp" "$cache"
	fi
fi
# a persistent journal: read from here once the container has powered off
mkdir -p "$dir/var/log/journal"
cp "$deb" "$dir/root/haven.deb"

step "boot it: systemd-nspawn -b"
# --register=no --keep-unit: no systemd-machined nor system bus on the host
# needed; --private-network: the heartbeat port is the container's own
systemd-nspawn -q --register=no --keep-unit --private-network --console=read-only \
	-M "$machine" -b -D "$dir" >"$work/console.log" 2>&1 &
nspawn=$!
end=$((SECONDS + 30))
while [ -z "$leader" ]; do
	kill -0 "$nspawn" 2>/dev/null || { tail -5 "$work/console.log"; skip "systemd-nspawn cannot run here"; }
	[ "$SECONDS" -lt "$end" ] || skip "systemd-nspawn started no container within 30s"
	leader=$(pgrep -P "$nspawn" -x systemd || true)
	sleep 0.2
done
booted() { case $(inside systemctl is-system-running 2>/dev/null) in running | degraded) return 0 ;; esac; return 1; }
end=$((SECONDS + 90))
until booted; do
	kill -0 "$nspawn" 2>/dev/null || skip "the container stopped while booting"
	[ "$SECONDS" -lt "$end" ] || skip "the container did not boot within 90s"
	sleep 0.3
done
echo "booted: $(inside systemctl is-system-running || true), $(inside systemctl --version | head -1)"

step "dpkg -i (under the running systemd), a single-node cluster, systemctl start"
inside dpkg -i /root/haven.deb >/dev/null
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
sed -e 's/^# name = "n1" /name = "n1"   /' "$dir/usr/share/doc/haven/examples/node.toml" >"$dir/etc/haven/node.toml"
install -m 0600 /dev/null "$dir/etc/haven/cluster.toml"
sed -e "s/^secret = .*/secret = \"$secret\"/" -e '/^n[12] = /d' \
	"$dir/usr/share/doc/haven/examples/cluster.toml" >"$dir/etc/haven/cluster.toml"
cat >"$dir/root/web.toml" <<'TOML'
[DEFAULT]
orchestrate = "no"

[app.web]
start = "sh -c 'sleep 100000 >/dev/null 2>&1 & echo $! > {var}/web.pid'"
stop  = "sh -c 'kill $(cat {var}/web.pid); rm -f {var}/web.pid'"
check = "sh -c 'test -f {var}/web.pid && kill -0 $(cat {var}/web.pid)'"
monitor = true
TOML
# ha1: the same app in a failover service (the guard's kill set); web is
# orchestrate = no, which the guard leaves alone
sed -e 's/^orchestrate = "no"/orchestrate = "ha"/' -e 's/web/ha1/g' "$dir/root/web.toml" >"$dir/root/ha1.toml"
pidfile=$dir/var/lib/haven/services/web/web.pid
# Type=notify: systemctl start returns once READY=1 arrived
inside systemctl start haven
[ "$(prop ActiveState)/$(prop SubState)" = active/running ] || fail "haven is $(prop ActiveState)/$(prop SubState) after systemctl start"
inside journalctl -u haven --no-pager | grep -q 'told systemd the daemon is ready' || fail "no READY=1 in the journal"
echo "active: $(prop StatusText)"
inside svcmgr -s web create --config /root/web.toml
inside svcmgr -s web start --local
app=$(cat "$pidfile")
echo "the service's process: pid $app"

# adopted PID STARTS: the service's process is still the same, the daemon
# (PID) sees it up, and no daemon started it again (STARTS start actions)
adopted() {
	local main=$1 starts=$2
	[ "$(cat "$pidfile" 2>/dev/null)" = "$app" ] || fail "web.pid changed: $(cat "$pidfile" 2>/dev/null)"
	inkill -0 "$app" || fail "the service's process $app is gone"
	inside svcmgr -s web print status --format json | tr -d ' \n' | grep -q '"avail":"up"' ||
		fail "the daemon does not see web up"
	[ "$(starts)" = "$starts" ] || fail "web was started again"
	echo "daemon pid $main: web's process $app adopted"
}
# how many start actions the daemons ran
starts() { inside journalctl -u haven --no-pager -o cat | grep '"event": "action_begin", "action": "start"' | grep -c '"svc": "web"' || true; }
nstarts=$(starts)
[ "$nstarts" = 1 ] || fail "$nstarts start actions in the journal, want 1"

# newmain: a new daemon runs (MainPID changed from $main), the unit active
newmain() { local m; m=$(prop MainPID); [ "$m" != 0 ] && [ "$m" != "$main" ] && [ "$(prop ActiveState)" = active ]; }

step "kill -9 of the daemon: systemd restarts it within the guard's lease, the failover service survives"
inside svcmgr -s ha1 create --config /root/ha1.toml
ha1pid=$dir/var/lib/haven/services/ha1/ha1.pid
wait_for 30 "ha1 up (a single-node failover service starts at once)" test -s "$ha1pid"
ha1=$(cat "$ha1pid")
guard() { inside nodemgr guard status --format json | tr -d ' \n'; }
wait_for 10 "the guard armed with ha1 in its kill set" sh -c "nsenter -t $leader -a -- nodemgr guard status | grep -q 'armed: .* 1 failover instances'"
gpid=$(guard | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
main=$(prop MainPID)
inside cat "/proc/$main/cgroup" | grep -q '^0::/system.slice/haven.service/daemon$' || fail "the daemon is not in the unit's leaf: $(inside cat /proc/$main/cgroup)"
inside cat "/proc/$ha1/cgroup" | grep -q '^0::/system.slice/haven.service/n1-[0-9a-f]*/services/ha1/app#ha1$' || fail "ha1's process is not in its cgroup: $(inside cat /proc/$ha1/cgroup)"
inside cat "/proc/$gpid/cgroup" | grep -q '/guard$' || fail "the guard is not in its cgroup: $(inside cat /proc/$gpid/cgroup)"
gexe=$(inside readlink "/proc/$gpid/exe")
[ "$gexe" = /usr/bin/haven-guard ] || fail "the guard runs $gexe, not the package's /usr/bin/haven-guard"
inkill -KILL "$main"
wait_for 30 "systemd's restart after kill -9" newmain
sleep 8 # longer than the guard's lease (7s): a lease not renewed would have run out
[ "$(cat "$ha1pid")" = "$ha1" ] && inkill -0 "$ha1" || fail "ha1's process $ha1 did not survive the daemon's kill -9 and restart"
[ "$(guard | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')" = "$gpid" ] || fail "the guard is not the same process"
guard | grep -q '"armed":true' || fail "the guard is not armed: $(guard)"
if guard | grep -q '"fired"'; then fail "the guard acted: $(guard)"; fi
echo "daemon restarted by systemd ($(prop NRestarts) restart): ha1's process $ha1 still running, guard pid $gpid armed, never fired"

step "the watchdog: SIGSTOP the daemon, WatchdogSec later it is killed and restarted"
main=$(prop MainPID)
inkill -STOP "$main"
wd=$(prop WatchdogUSec)
echo "daemon pid $main stopped; WatchdogSec=$wd"
wait_for 75 "a watchdog restart" newmain
inside journalctl -u haven --no-pager -o cat | grep -E 'Watchdog timeout|status=6/ABRT' || fail "no watchdog kill in the journal"
[ "$(prop NRestarts)" = 2 ] || fail "NRestarts=$(prop NRestarts)"
adopted "$(prop MainPID)" "$nstarts"
# the pause outlasted the guard's lease: it ended ha1 (web, orchestrate =
# no, is not its business), and the restarted daemon said so
if inkill -0 "$ha1" 2>/dev/null; then fail "ha1's process $ha1 outlived the paused daemon's lease"; fi
wait_for 10 "guard_fired in the journal" sh -c "nsenter -t $leader -a -- journalctl -u haven --no-pager -o cat | grep -q 'guard_fired'"
echo "the guard ended ha1 during the pause: $(guard | grep -o '"fired":{[^}]*')"

step "systemctl restart haven"
main=$(prop MainPID)
mark
inside systemctl restart haven
newmain || fail "systemctl restart: MainPID $(prop MainPID), $(prop ActiveState)"
execstop_ok "systemctl restart" "daemon stopped (stop)"
adopted "$(prop MainPID)" "$nstarts"

step "systemctl stop haven: maintenance, a clean result, the service keeps running"
mark
inside systemctl stop haven
res=$(prop Result)
newlog
[ "$res" = success ] || fail "systemctl stop ended with result '$res' (ExecStop: $(prop ExecStop))"
execstop_ok "systemctl stop" "daemon stopped (stop)"
newlog | grep -q 'idle -> maintenance: daemon stop requested' || fail "the daemon did not go to maintenance"
inkill -0 "$app" || fail "systemctl stop killed the service's process"
echo "stopped: result $res, web's process $app still running"

step "systemctl start again, then poweroff: ExecStop's shutdown branch stops the service"
inside systemctl start haven
adopted "$(prop MainPID)" "$nstarts"
inside systemctl poweroff || true
end=$((SECONDS + 120))
while kill -0 "$nspawn" 2>/dev/null; do
	[ "$SECONDS" -lt "$end" ] || fail "the container did not power off within 120s"
	sleep 0.2
done
rc=0
wait "$nspawn" || rc=$?
nspawn=
leader=
[ "$rc" = 0 ] || fail "systemd-nspawn exited $rc"
# the unit's journal since its last start
log=$(journalctl -D "$dir/var/log/journal" --no-pager -o cat -u haven | awk '/^Started haven.service/ { n = "" } { n = n $0 "\n" } END { printf "%s", n }')
tail -14 <<<"$log"
grep -qx 'daemon stopped (shutdown)' <<<"$log" || fail "no 'daemon stopped (shutdown)' from ExecStop at poweroff"
grep -q 'idle -> shutting: daemon shutdown requested' <<<"$log" || fail "the node did not announce shutting"
grep -q 'stop: daemon shutdown.*"action": "stop".*"svc": "web"' <<<"$log" || fail "the daemon did not stop web"
if grep "Failed with result" <<<"$log"; then fail "haven.service failed at poweroff"; fi
[ ! -e "$pidfile" ] || fail "web.pid is still there: the service was not stopped by its stop command"
echo "powered off: the daemon shut down and stopped web first"
echo "real-systemd test passed"
