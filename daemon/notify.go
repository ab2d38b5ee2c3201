package daemon

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"haven/api"

	"haven/node"
)

// The systemd side of the daemon (packaging/haven.service, Type=notify):
//
//   - READY=1 once the API answers and the first check of every service
//     has ended, so that `systemctl start haven` returns with a daemon that
//     knows what runs on its node;
//   - WATCHDOG=1 from the event loop at half WATCHDOG_USEC, so that a wedged
//     loop stops pinging and systemd kills and restarts the daemon;
//   - STOPPING=1 when a stop begins; STATUS= lines for `systemctl status`.
//
// The protocol is go-systemd's (sd_notify(3) over NOTIFY_SOCKET). All of it
// is inert when NOTIFY_SOCKET is unset (nodemgr daemon start, tests, demo).
// NOTIFY_SOCKET stays in the daemon's environment (go-systemd reads it on
// each message); the commands the daemon runs do not inherit it, nor
// WATCHDOG_* (resource.BaseEnv), and with the unit's NotifyAccess=main
// systemd would ignore anything they sent there anyway.

// startupBound is how long READY=1 waits for the start-up checks: past it
// the daemon says ready anyway (a check that never ends must not keep the
// unit activating until TimeoutStartSec kills it).
const startupBound = 60 * time.Second

// sdNotifier is the loop-owned state of the notify protocol.
type sdNotifier struct {
	on       bool          // NOTIFY_SOCKET is set
	wdPeriod time.Duration // watchdog ping period, 0 when no watchdog
	timer    <-chan time.Time
	pending  int  // start-up checks not yet ended
	launched bool // every start-up check was launched
	since    time.Time
	probing  bool
	ready    bool
	stopping bool
}

// watchdogPeriod is half the unit's WatchdogSec (WATCHDOG_USEC), or 0 when
// no watchdog is asked for this process (unset, junk, or WATCHDOG_PID
// naming another process).
func watchdogPeriod() time.Duration {
	d, err := sd.SdWatchdogEnabled(false)
	if err != nil || d <= 0 {
		return 0
	}
	return d / 2
}

// sdInit starts the notifier at the beginning of Run.
func (d *Daemon) sdInit() {
	d.sd = sdNotifier{on: os.Getenv("NOTIFY_SOCKET") != "", since: d.clk.Now()}
	if !d.sd.on {
		return
	}
	d.sd.wdPeriod = watchdogPeriod()
	d.sdArm()
	d.log.Info("systemd notify socket found", zap.Duration("watchdog_ping", d.sd.wdPeriod))
	d.sdSend("STATUS=starting: checking what runs on this node")
}

// sdArm sets the next tick of the notifier (a timer only the event loop
// reads): every watchdog period, or every second while waiting to be ready
// when there is no watchdog.
func (d *Daemon) sdArm() {
	switch {
	case d.sd.wdPeriod > 0:
		d.sd.timer = d.clk.After(d.sd.wdPeriod)
	case !d.sd.ready:
		d.sd.timer = d.clk.After(time.Second)
	default:
		d.sd.timer = nil
	}
}

// sdTick runs on the event loop when the notifier's timer fires: the
// watchdog ping proves that the loop turns.
func (d *Daemon) sdTick() {
	if d.sd.wdPeriod > 0 {
		d.sdSend(sd.SdNotifyWatchdog)
	}
	if !d.sd.ready && !d.sd.probing && !d.sd.stopping && d.sd.launched && d.clk.Now().Sub(d.sd.since) >= startupBound {
		d.log.Warn("start-up checks still running: telling systemd the daemon is ready anyway",
			zap.Int("pending", d.sd.pending), zap.Duration("bound", startupBound))
		d.sd.pending = 0
		d.sdMaybeReady()
	}
	d.sdArm()
}

// sdAwaitCheck counts inst's first check as a start-up check: called just
// before Run launches it.
func (d *Daemon) sdAwaitCheck(inst *instance) {
	if !d.sd.on || inst == nil {
		return
	}
	d.sd.pending++
	d.drv.Ask(node.CheckWait{Service: inst.name}, func(node.Answer) {
		if d.sd.pending > 0 {
			d.sd.pending--
		}
		d.sdMaybeReady()
	})
}

// sdLaunched is called once Run has launched every start-up check.
func (d *Daemon) sdLaunched() {
	d.sd.launched = true
	d.sdMaybeReady()
}

// sdMaybeReady checks that the API answers once the start-up checks have
// ended, then says READY=1 (from the loop, in sdReady).
func (d *Daemon) sdMaybeReady() {
	if !d.sd.on || !d.sd.launched || d.sd.pending > 0 || d.sd.ready || d.sd.probing || d.sd.stopping {
		return
	}
	d.sd.probing = true
	sock := d.p.Socket
	d.goWorker(func(ctx context.Context) {
		err := api.NewClient(sock).WaitReady(ctx, 30*time.Second)
		d.post(func() { d.sdReady(err) })
	})
}

func (d *Daemon) sdReady(probeErr error) {
	d.sd.probing = false
	if d.sd.stopping {
		return
	}
	if probeErr != nil {
		d.log.Error("the daemon's own API does not answer: not ready", zap.String("socket", d.p.Socket), zap.Error(probeErr))
		return
	}
	d.sd.ready = true
	n := len(d.services)
	plural := "s"
	if n == 1 {
		plural = ""
	}
	d.sdSend(fmt.Sprintf("%s\nSTATUS=running: node %s, %d service%s", sd.SdNotifyReady, d.node.Name, n, plural))
	d.log.Info("told systemd the daemon is ready", zap.String("reason", "the API answers and the start-up checks ended"))
}

// sdStopping says STOPPING=1 when a stop begins.
func (d *Daemon) sdStopping(mode string) {
	if !d.sd.on || d.sd.stopping {
		return
	}
	d.sd.stopping = true
	what := "maintenance: services keep running"
	if mode == "shutdown" {
		what = "shutdown: stopping the local services"
	}
	d.sdSend(sd.SdNotifyStopping + "\nSTATUS=stopping (" + what + ")")
}

func (d *Daemon) sdSend(state string) {
	if _, err := sd.SdNotify(false, state); err != nil {
		d.log.Warn("systemd notify", zap.String("state", strings.SplitN(state, "\n", 2)[0]), zap.Error(err))
	}
}

// stderrIsJournal reports whether stderr is connected to the journal: the
// daemon was started by systemd, which set JOURNAL_STREAM to the device and
// inode of that stream (systemd.exec(5)). A child whose stderr was
// redirected elsewhere (nodemgr daemon start) inherits the variable but not
// the stream, hence the comparison.
func stderrIsJournal() bool { return isJournalStream(os.Getenv("JOURNAL_STREAM"), os.Stderr) }

func isJournalStream(env string, f *os.File) bool {
	dev, ino, ok := strings.Cut(env, ":")
	if !ok {
		return false
	}
	wantDev, err1 := strconv.ParseUint(dev, 10, 64)
	wantIno, err2 := strconv.ParseUint(ino, 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return uint64(st.Dev) == wantDev && uint64(st.Ino) == wantIno
}

// journalEncoding is the log format for the journal: no timestamp (the
// journal adds its own) and the syslog priority as a "<N>" prefix, which
// journald turns into the entry's priority (journalctl -p warning -u haven).
func journalEncoding() zapcore.EncoderConfig {
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = ""
	enc.EncodeLevel = func(l zapcore.Level, pe zapcore.PrimitiveArrayEncoder) {
		prio := map[zapcore.Level]int{zapcore.DebugLevel: 7, zapcore.InfoLevel: 6, zapcore.WarnLevel: 4, zapcore.ErrorLevel: 3}[l]
		if l > zapcore.ErrorLevel {
			prio = 2
		}
		pe.AppendString(fmt.Sprintf("<%d>%s", prio, l.CapitalString()))
	}
	return enc
}
