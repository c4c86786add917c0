package benchmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SummarySection is the section WithSummary writes first in the file: one table of the headline
// figures the other sections measured, each beside the reference measured in the same run.
const SummarySection = "Summary"

// headline picks one figure out of a section's table: the row whose cells match where, its
// value and reference columns, and its ratio and target (a column, or a fixed text).
type headline struct {
	section string
	table   string            // a column name that identifies the table within the section
	where   map[string]string // column → cell the row must have
	figure  string
	value   string // column of the headline figure
	ref     string // column of its reference, measured in the same run ("" = none)
	ratio   string // column of the ratio ("" = value / ref, computed)
	target  string // column of the target and whether it was met
	goal    string // the target, when the table has no target column
	// refWhere, when set, is the row of the same table that holds the reference (in the value
	// column), named refLabel.
	refWhere map[string]string
	refLabel string
	// count, when set, makes the figure the number of the table's rows whose target column says
	// "met", of all its rows.
	count bool
}

// headlines are the figures the summary shows. Each names the section a benchmark writes and
// the columns that benchmark already prints, so the summary needs no figure of its own.
var headlines = []headline{
	{section: "Lock throughput", table: "CS/s harness", where: map[string]string{"algorithm": "token", "clients": "8", "proxy": "never"},
		figure: "token, 8 clients, direct: Redis commands/s", value: "Redis cmds/s", ref: "redis-benchmark SET/s", ratio: "harness / redis-benchmark", target: "target"},
	{section: "Lock throughput", table: "CS/s harness", where: map[string]string{"algorithm": "token", "clients": "8", "proxy": "always"},
		figure: "token, 8 clients, proxied: Redis commands/s", value: "Redis cmds/s", ref: "redis-benchmark SET/s", ratio: "harness / redis-benchmark", target: "target"},
	{section: "Lock throughput", table: "CS/s harness", where: map[string]string{"algorithm": "redlock", "clients": "8", "proxy": "always"},
		figure: "redlock, 8 clients, proxied: Redis commands/s", value: "Redis cmds/s", ref: "redis-benchmark SET/s", ratio: "harness / redis-benchmark", target: "target"},
	{section: "Lock throughput", table: "CS/s always+wire", where: map[string]string{"algorithm": "token", "clients": "8"},
		figure: "token, 8 clients, wire parsed: critical sections/s", value: "CS/s always+wire", ref: "CS/s always", ratio: "wire / always", target: "target"},
	{section: "Recording overhead", table: "CS/s recording on", where: map[string]string{"clients": "8"},
		figure: "history recorded, 8 clients: critical sections/s (ratio: throughput lost)", value: "CS/s recording on", ref: "CS/s recording off", ratio: "loss", target: "target", goal: "≤ 5% loss:"},
	{section: "Report load time", table: "time/op", where: map[string]string{"step": "load report.html in chromium"},
		figure: "a 100,000-operation report.html opened in Chromium", value: "time/op", goal: "< 3 s"},
	{section: "Check at scale", table: "check end to end", where: map[string]string{"operations": "10050533"},
		figure: "`lockchaos check` of 10 million operations", value: "check end to end", ref: "read once (ref)", ratio: "ratio", target: "goal", goal: "< 20 s, < 1 GiB:"},
	{section: "Process-client overhead", table: "CS/s", where: map[string]string{"lock": "mylock", "clients": "1"},
		figure: "Python process client (mylock.py): critical sections/s", value: "CS/s",
		refWhere: map[string]string{"lock": "token", "clients": "1"}, refLabel: "the same lock in Go"},
	{section: "Matrix parallelism", table: "speed-up", where: map[string]string{"--parallel": "6", "loops beside": "0"},
		figure: "default matrix, `--parallel 6`: wall time", value: "wall (median)", ratio: "speed-up", target: "clean repeats", goal: "every repeat clean:",
		refWhere: map[string]string{"--parallel": "4", "loops beside": "0"}, refLabel: "--parallel 4"},
	{section: "Detection speed", table: "caught (worst cell)", count: true, target: "target",
		figure: "mutants caught in ≥ 19 of 20 runs of every cell that must catch them", goal: "every mutant"},
	{section: "Soak: lockchaos soak", table: "RSS 10 s (ref)", where: map[string]string{"algorithm": "token"},
		figure: "token soaked 10 minutes: process RSS", value: "at 10m0s", ref: "RSS 10 s (ref)", goal: "flat memory"},
}

// WithSummary returns doc with its Summary section rebuilt from the headline figures the other
// sections hold, placed after the document's title. A doc without any of them is returned as it is.
func WithSummary(doc []byte) []byte {
	var rows []string
	for _, h := range headlines {
		if r, ok := h.row(doc); ok {
			rows = append(rows, r)
		}
	}
	doc = removeSection(doc, SummarySection)
	if len(rows) == 0 {
		return doc
	}
	var b strings.Builder
	b.WriteString("## " + SummarySection + "\n\n")
	b.WriteString("The headline figures of the sections below, each beside its reference measured in the same run " +
		"(the date and machine are in each section). Written by internal/benchmd from the sections' own tables each time a " +
		"benchmark rewrites one; `go run ./internal/benchmd/summarize` rewrites it alone.\n\n")
	b.WriteString("| figure | measured | reference (same run) | ratio | target | section |\n|---|---:|---:|---:|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("\n")
	// After the title line (and the blank line under it), before the first section.
	title := bytes.IndexByte(doc, '\n')
	if title < 0 || !bytes.HasPrefix(doc, []byte("# ")) {
		return append([]byte(b.String()), doc...)
	}
	rest := bytes.TrimLeft(doc[title+1:], "\n")
	out := append([]byte{}, doc[:title+1]...)
	out = append(out, '\n')
	out = append(out, b.String()...)
	return append(out, rest...)
}

// Resummarize rewrites the Summary section of the markdown file at path from its other sections,
// under the same lock as Update.
func Resummarize(path string) error {
	unlock, err := lock(lockPath(path))
	if err != nil {
		return fmt.Errorf("benchmd: %w", err)
	}
	defer unlock()
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("benchmd: %w", err)
	}
	return write(path, WithSummary(old))
}

func (h headline) row(doc []byte) (string, bool) {
	t := findTable(section(doc, h.section), h.table)
	if t == nil {
		return "", false
	}
	link := fmt.Sprintf("[%s](#%s)", h.section, anchor(h.section))
	if h.count {
		met := 0
		for _, r := range t {
			if strings.HasSuffix(r[h.target], "met") && !strings.Contains(r[h.target], "not met") {
				met++
			}
		}
		return fmt.Sprintf("| %s | %d of %d | — | — | %s | %s |", h.figure, met, len(t), h.goal, link), len(t) > 0
	}
	r := t.find(h.where)
	if r == nil {
		return "", false
	}
	value, ref, ratio := r[h.value], "—", "—"
	if h.ref != "" {
		ref = r[h.ref]
	} else if h.refWhere != nil {
		if rr := t.find(h.refWhere); rr != nil {
			ref = rr[h.value] + " (" + h.refLabel + ")"
		}
	}
	if h.ratio != "" {
		ratio = r[h.ratio]
	} else if v, err1 := strconv.ParseFloat(firstField(value), 64); err1 == nil {
		if f, err2 := strconv.ParseFloat(firstField(ref), 64); err2 == nil && f != 0 {
			ratio = fmt.Sprintf("%.0f%%", 100*v/f)
		}
	}
	target := h.goal
	if h.target != "" {
		target = strings.TrimSpace(strings.TrimSpace(h.goal + " " + r[h.target]))
	}
	if target == "" {
		target = "—"
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", h.figure, value, ref, ratio, target, link), value != ""
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// anchor is GitHub's anchor for a heading (lower case, punctuation dropped, spaces made hyphens).
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// section returns the body of "## name" in doc (without its heading), or "".
func section(doc []byte, name string) string {
	var body []string
	in, fence := false, false
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(l, "## ") {
			if in {
				break
			}
			in = strings.TrimSpace(l) == "## "+name
			continue
		}
		if in {
			body = append(body, l)
		}
	}
	return strings.Join(body, "\n")
}

// removeSection returns doc without the section "## name" (heading and body).
func removeSection(doc []byte, name string) []byte {
	lines := strings.SplitAfter(string(doc), "\n")
	var out strings.Builder
	skip, fence := false, false
	for _, l := range lines {
		t := strings.TrimRight(l, "\n")
		if strings.HasPrefix(t, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(t, "## ") {
			skip = strings.TrimSpace(t) == "## "+name
		}
		if !skip {
			out.WriteString(l)
		}
	}
	return []byte(out.String())
}

// table is a markdown table's rows, each a map from column name to cell (bold marks removed).
type table []map[string]string

func (t table) find(where map[string]string) map[string]string {
	for _, r := range t {
		ok := true
		for k, v := range where {
			if r[k] != v {
				ok = false
				break
			}
		}
		if ok {
			return r
		}
	}
	return nil
}

// findTable returns the first table in body whose header has the column col.
func findTable(body, col string) table {
	lines := strings.Split(body, "\n")
	for i := 0; i+1 < len(lines); i++ {
		head := cells(lines[i])
		sep := strings.TrimSpace(lines[i+1])
		if head == nil || !strings.HasPrefix(sep, "|") || !strings.Contains(sep, "---") {
			continue
		}
		has := false
		for _, h := range head {
			has = has || h == col
		}
		if !has {
			continue
		}
		var t table
		for _, l := range lines[i+2:] {
			c := cells(l)
			if c == nil {
				break
			}
			r := map[string]string{}
			for j, h := range head {
				if j < len(c) {
					r[h] = c[j]
				}
			}
			t = append(t, r)
		}
		return t
	}
	return nil
}

func cells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") {
		return nil
	}
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.TrimSpace(p), "**", "")
	}
	return parts
}

// write replaces the file at path with b, atomically.
func write(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".benchmd-*")
	if err != nil {
		return fmt.Errorf("benchmd: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("benchmd: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("benchmd: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("benchmd: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("benchmd: %w", err)
	}
	return nil
}
