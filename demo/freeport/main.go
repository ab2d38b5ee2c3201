// Command freeport prints N ports that are free for both TCP and UDP on
// 127.0.0.1, one a line (for the demo's heartbeats).
package main

import (
	"fmt"
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
	for len(held) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		port := l.Addr().(*net.TCPAddr).Port
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
