// Command freeport prints N ports that are free for both TCP and UDP on
// 127.0.0.1, one a line (for the demo's heartbeats). They are drawn below
// the kernel's ephemeral range (32768+), so that no outgoing connection can
// take one between here and the daemon's bind.
package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
)

func main() {
	n := 1
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	var held []net.Listener
	tries := 0
	for len(held) < n {
		if tries++; tries > 1000 {
			fmt.Fprintln(os.Stderr, "freeport: no free port found")
			os.Exit(1)
		}
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			l.Close()
			continue
		}
		u.Close()
		held = append(held, l) // keep it until all are chosen: no duplicates
		fmt.Println(port)
	}
	for _, l := range held {
		l.Close()
	}
}
