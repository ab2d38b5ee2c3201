package testbed

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	usedMu    sync.Mutex
	usedPorts = map[int]bool{} // handed out by this process
)

// FreePort returns a port free for both TCP and UDP on 127.0.0.1, never the
// same twice in one process. It is drawn below the kernel's ephemeral range
// (ip_local_port_range, 32768+ by default), so that no outgoing connection
// of a daemon started earlier can take it between here and the bind.
func FreePort() (int, error) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				lo = n
			}
		}
	}
	base := max(1024, lo-12000)
	for range 200 {
		port := base + mrand.IntN(lo-base)
		usedMu.Lock()
		taken := usedPorts[port]
		usedPorts[port] = true
		usedMu.Unlock()
		if taken {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, errors.New("testbed: no free port below the ephemeral range")
}
