// Package benchmd keeps benchmark results in a markdown file: each benchmark owns one "## " section
// and rewrites it in place, so BENCHMARKS.md always shows the latest numbers of every benchmark.
package benchmd

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Update replaces the body of the section "## <section>" in the markdown file at path, up to the
// next "## " heading (or the end of the file), with a stamp line saying when and on what machine
// the numbers were measured, followed by body. A missing file or section is created; the section
// goes at the end. Other sections are left byte for byte. Concurrent updates from benchmark
// processes of different packages are serialized with a lock file beside path.
func Update(path, section, body string) error {
	return update(path, section, Stamp(time.Now())+"\n\n"+strings.TrimRight(body, "\n")+"\n")
}

func update(path, section, body string) error {
	unlock, err := lock(lockPath(path))
	if err != nil {
		return fmt.Errorf("benchmd: %w", err)
	}
	defer unlock()
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("benchmd: %w", err)
	}
	out := Replace(old, section, body)
	if section != SummarySection {
		out = WithSummary(out)
	}
	return write(path, out)
}

// lockPath is the lock file for path: in the temp dir, named after path's absolute form, so no
// stray lock file lands beside the markdown in the repository.
func lockPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	h := fnv.New64a()
	h.Write([]byte(abs))
	return filepath.Join(os.TempDir(), fmt.Sprintf("benchmd-%x.lock", h.Sum64()))
}

// Replace returns doc with the body of section "## <section>" replaced by body, or the section
// appended when doc has none. A heading inside a fenced code block is not a heading.
func Replace(doc []byte, section, body string) []byte {
	heading := "## " + section
	lines := bytes.SplitAfter(doc, []byte("\n"))
	start, end := -1, len(lines)
	fence := false
	for i, l := range lines {
		t := strings.TrimRight(string(l), "\r\n")
		if strings.HasPrefix(t, "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(t, "## ") {
			continue
		}
		if start < 0 && strings.TrimSpace(t) == heading {
			start = i
		} else if start >= 0 {
			end = i
			break
		}
	}
	block := heading + "\n\n" + strings.TrimRight(body, "\n") + "\n"
	var out bytes.Buffer
	if start < 0 {
		out.Write(doc)
		if len(doc) == 0 {
			out.WriteString("# Benchmarks\n")
		}
		if !bytes.HasSuffix(doc, []byte("\n")) && len(doc) > 0 {
			out.WriteByte('\n')
		}
		out.WriteString("\n" + block)
		return out.Bytes()
	}
	for _, l := range lines[:start] {
		out.Write(l)
	}
	out.WriteString(block)
	if end < len(lines) {
		out.WriteByte('\n')
		for _, l := range lines[end:] {
			out.Write(l)
		}
	}
	return out.Bytes()
}

// Stamp is the line that opens every section: the date and the machine the numbers come from,
// since benchmark numbers mean nothing without them.
func Stamp(now time.Time) string {
	return fmt.Sprintf("_Measured %s on %s, %d CPUs, %s/%s, %s._", now.Format("2006-01-02"), cpuModel(),
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
