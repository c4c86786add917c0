package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/reports"
)

// cmdMerge joins the outputs of a matrix's shards into one matrix (internal/runner.Merge). It
// exits like the matrix would have: 0 when every cell matched its expectation, 1 otherwise.
func cmdMerge(args []string, stdout io.Writer) (int, error) {
	var quiet bool
	fs := newCommand("merge")
	fs.BoolVar(&quiet, "quiet", false, "print nothing but errors")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) < 2 {
		return 0, usagef("merge needs an output directory and the shards' directories (lockchaos merge OUT DIR...)")
	}
	out, dirs := pos[0], pos[1:]
	m, err := runner.Merge(out, dirs, "lockchaos merge "+strings.Join(args, " "))
	if err != nil {
		return 0, err
	}
	if !quiet {
		fmt.Fprintf(stdout, "merged %d shards: %d runs (%d n/a), %s — %s\n", len(dirs),
			m.Ran, len(m.Cells)-m.Ran, summaryText(m.Summary), filepath.Join(out, reports.IndexFile))
	}
	if m.Mismatched > 0 {
		return exitInvalid, nil
	}
	return exitValid, nil
}

// summaryText is a matrix's count of runs as expected and not (reports.Summarize's).
func summaryText(s reports.Summary) string {
	t := fmt.Sprintf("%d as expected, %d not", s.Matched, s.Mismatched)
	if s.NoExpect > 0 {
		t += fmt.Sprintf(", %d without expectation", s.NoExpect)
	}
	return t
}
