// Command summarize rewrites the Summary section of BENCHMARKS.md from the figures its other
// sections already hold (the benchmarks rewrite it themselves whenever they update a section;
// this rewrites it without running any): go run ./internal/benchmd/summarize [FILE].
package main

import (
	"fmt"
	"os"

	"github.com/lockchaos/lockchaos/internal/benchmd"
)

func main() {
	path := "BENCHMARKS.md"
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "summarize: one argument at most, the markdown file (default BENCHMARKS.md)")
		os.Exit(254)
	}
	if len(os.Args) == 2 {
		path = os.Args[1]
	}
	if err := benchmd.Resummarize(path); err != nil {
		fmt.Fprintf(os.Stderr, "summarize: %v\n", err)
		os.Exit(255)
	}
}
