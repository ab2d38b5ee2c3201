// Command gendoc writes the keyword reference generated from the config
// keyword table: go run ./cmd/gendoc docs/keywords.md
package main

import (
	"fmt"
	"os"

	"haven/config"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendoc FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], []byte(config.KeywordsMarkdown()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
