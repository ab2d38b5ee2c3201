// Command freeport prints N ports that are free for both TCP and UDP on
// 127.0.0.1, one a line (for the demo's heartbeats), from the project's one
// free-port finder (testbed.FreePort: below the kernel's ephemeral range, so
// that no outgoing connection can take one between here and the daemon's
// bind, and never the same port twice).
package main

import (
	"fmt"
	"os"
	"strconv"

	"haven/test/testbed"
)

func main() {
	n := 1
	if len(os.Args) > 1 {
		var err error
		if n, err = strconv.Atoi(os.Args[1]); err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "usage: freeport [N]")
			os.Exit(2)
		}
	}
	for range n {
		port, err := testbed.FreePort()
		if err != nil {
			fmt.Fprintln(os.Stderr, "freeport:", err)
			os.Exit(1)
		}
		fmt.Println(port)
	}
}
