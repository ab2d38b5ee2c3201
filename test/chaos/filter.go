package chaos

import (
	"fmt"
	"os/exec"
	"strings"
)

// Filtering faults: iptables rules in the chaos chain of the receiving
// host's namespace (INPUT jumps to it). Loss uses the statistic match,
// which works inside a namespace with Debian's iptables (nf_tables
// backend); the kernel here has no netem qdisc, so delay is a queue to a
// program of the bed (NFQUEUE, see delay.go).

// IptablesUnavailable says why iptables faults cannot be made ("" when they can).
func IptablesUnavailable() string {
	if _, err := exec.LookPath("iptables"); err != nil {
		return "iptables not found in PATH (apt-get install iptables): the partition and loss faults need it"
	}
	return ""
}

func (b *Bed) iptables(n string, args ...string) error {
	out, err := b.Command(n, "iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s in %s: %w: %s", strings.Join(args, " "), b.NS[n], err, strings.TrimSpace(string(out)))
	}
	return nil
}

// chain makes n's chaos chain (once) and the jump to it from INPUT.
func (b *Bed) chain(n string) error {
	if b.ipt[n] {
		return nil
	}
	if err := b.iptables(n, "-N", chainName); err != nil {
		return err
	}
	if err := b.iptables(n, "-I", "INPUT", "-j", chainName); err != nil {
		return err
	}
	b.ipt[n] = true
	return nil
}

// drop adds a rule to n's chaos chain: drop what matches args.
func (b *Bed) drop(n string, args ...string) error {
	if err := b.chain(n); err != nil {
		return err
	}
	return b.iptables(n, append(append([]string{"-A", chainName}, args...), "-j", "DROP")...)
}

// OneWay drops every packet from `from` arriving at `to`: to hears nothing
// of from, while from still hears to.
func (b *Bed) OneWay(from, to string) error {
	if err := b.drop(to, "-s", b.Addr[from]); err != nil {
		return err
	}
	if a := b.Addr2[from]; a != "" {
		return b.drop(to, "-s", a) // and on the second link
	}
	return nil
}

// Partition splits the hosts into groups that hear only their own group
// (a host in no group hears nobody). The links stay up.
func (b *Bed) Partition(groups ...[]string) error {
	group := map[string]int{}
	for i, g := range groups {
		for _, n := range g {
			group[n] = i + 1
		}
	}
	for _, to := range b.Names() {
		for _, from := range b.Names() {
			if from == to || (group[from] != 0 && group[from] == group[to]) {
				continue
			}
			if err := b.OneWay(from, to); err != nil {
				return err
			}
		}
	}
	return nil
}

// Loss drops pct % of the packets arriving at n, at random.
func (b *Bed) Loss(n string, pct int) error {
	return b.drop(n, "-m", "statistic", "--mode", "random", "--probability", fmt.Sprintf("%.2f", float64(pct)/100))
}

// Dropped is the number of packets n's chaos chain dropped so far.
func (b *Bed) Dropped(n string) int {
	if !b.ipt[n] {
		return 0
	}
	out, err := b.Command(n, "iptables", "-w", "-L", chainName, "-v", "-x", "-n").Output()
	if err != nil {
		return 0
	}
	total := 0
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && f[2] == "DROP" {
			var p int
			fmt.Sscan(f[0], &p)
			total += p
		}
	}
	return total
}

// Heal removes every filtering fault and delay and sets every link up
// again.
func (b *Bed) Heal() error {
	if err := b.noDelay(b.Names()); err != nil {
		return err
	}
	if err := b.noOnPath(b.Names()); err != nil {
		return err
	}
	for _, n := range b.Names() {
		if b.ipt[n] {
			if err := b.iptables(n, "-F", chainName); err != nil {
				return err
			}
		}
		if err := b.Restore(n); err != nil {
			return err
		}
	}
	return nil
}
