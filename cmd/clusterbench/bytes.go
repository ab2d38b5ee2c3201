package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// byteCounter counts the IP bytes of the heartbeat traffic of a cluster on
// loopback with an nftables table of its own (counters only, no verdict):
// every UDP datagram to a heartbeat port, and every TCP segment to or from
// one (streams are dialed from ephemeral ports, so no segment matches
// twice). Each packet crosses the output hook once.
type byteCounter struct{ table string }

func newByteCounter(c *cluster) (*byteCounter, error) {
	var ports []string
	for _, b := range c.nodes {
		ports = append(ports, strconv.Itoa(b.port))
	}
	set := "{ " + strings.Join(ports, ", ") + " }"
	bc := &byteCounter{table: fmt.Sprintf("havenbench%d", os.Getpid())}
	script := fmt.Sprintf(`table inet %s {
	chain out {
		type filter hook output priority 0; policy accept;
		oifname "lo" udp dport %s counter
		oifname "lo" tcp dport %s counter
		oifname "lo" tcp sport %s counter
	}
}
`, bc.table, set, set, set)
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("nft: %v: %s", err, out)
	}
	return bc, nil
}

var counterRE = regexp.MustCompile(`counter packets \d+ bytes (\d+)`)

// read returns the bytes counted so far.
func (bc *byteCounter) read() (uint64, error) {
	if bc == nil {
		return 0, fmt.Errorf("no counter")
	}
	out, err := exec.Command("nft", "list", "table", "inet", bc.table).Output()
	if err != nil {
		return 0, fmt.Errorf("nft list: %w", err)
	}
	var sum uint64
	for _, m := range counterRE.FindAllStringSubmatch(string(out), -1) {
		v, _ := strconv.ParseUint(m[1], 10, 64)
		sum += v
	}
	return sum, nil
}

func (bc *byteCounter) close() {
	if bc != nil {
		exec.Command("nft", "delete", "table", "inet", bc.table).Run()
	}
}

// fetchProfile takes a CPU profile of the daemon serving pprof at addr.
func fetchProfile(addr string, d time.Duration, out string) error {
	cl := http.Client{Timeout: d + 30*time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds())))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
