package benchmd

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReplace(t *testing.T) {
	cases := []struct {
		name, doc, section, body, want string
	}{
		{"empty file", "", "Speed", "x\n", "# Benchmarks\n\n## Speed\n\nx\n"},
		{"append section", "# B\n\n## A\n\na\n", "Speed", "x", "# B\n\n## A\n\na\n\n## Speed\n\nx\n"},
		{"append to file without newline", "# B", "Speed", "x", "# B\n\n## Speed\n\nx\n"},
		{"replace middle", "# B\n\n## A\n\na\n\n## Speed\n\nold\nold\n\n## C\n\nc\n", "Speed", "new",
			"# B\n\n## A\n\na\n\n## Speed\n\nnew\n\n## C\n\nc\n"},
		{"replace last", "# B\n\n## Speed\n\nold\n", "Speed", "new\n\n\n", "# B\n\n## Speed\n\nnew\n"},
		{"subsection kept inside", "## Speed\n\nold\n### sub\n\nold\n## C\nc\n", "Speed", "new", "## Speed\n\nnew\n\n## C\nc\n"},
		{"prefix name is another section", "## Speed up\n\nu\n", "Speed", "x", "## Speed up\n\nu\n\n## Speed\n\nx\n"},
		{"heading in code fence ignored", "## Speed\n\n```\n## not a heading\n```\n\n## C\n", "Speed", "x", "## Speed\n\nx\n\n## C\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(Replace([]byte(c.doc), c.section, c.body)); got != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestUpdateFileConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	var wg sync.WaitGroup
	for _, s := range []string{"A", "B", "C", "D"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if err := Update(path, s, "body of "+s); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, s := range []string{"A", "B", "C", "D"} {
		if strings.Count(doc, "## "+s+"\n") != 1 || !strings.Contains(doc, "body of "+s) {
			t.Errorf("section %s missing or duplicated:\n%s", s, doc)
		}
	}
	if strings.Count(doc, "_Measured ") != 4 {
		t.Errorf("want one stamp per section:\n%s", doc)
	}
}

func TestStamp(t *testing.T) {
	s := Stamp(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
	if !strings.HasPrefix(s, "_Measured 2026-01-02 on ") || !strings.Contains(s, "CPUs") {
		t.Errorf("stamp %q", s)
	}
}

// TestWithSummary: the summary is built from a section's own table and goes first, under the
// title; rebuilding it changes nothing; a document without any headline figure is left as it is.
func TestWithSummary(t *testing.T) {
	doc := []byte("# Benchmarks\n\n## Check at scale\n\n_Measured._\n\n" +
		"| operations | read once (ref) | check end to end | ratio | goal |\n|---:|---:|---:|---:|---|\n" +
		"| 1005104 | 35ms | 1.61s | 46.6× | — |\n| 10050533 | 396ms | 9.7s | 24.5× | **met** |\n")
	got := string(WithSummary(doc))
	want := "# Benchmarks\n\n## Summary\n\n"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("summary not first:\n%s", got)
	}
	row := "| `lockchaos check` of 10 million operations | 9.7s | 396ms | 24.5× | < 20 s, < 1 GiB: met | [Check at scale](#check-at-scale) |"
	if !strings.Contains(got, row) {
		t.Errorf("no row %q in:\n%s", row, got)
	}
	if !strings.HasSuffix(got, string(doc[len("# Benchmarks\n\n"):])) {
		t.Errorf("the sections changed:\n%s", got)
	}
	if again := string(WithSummary([]byte(got))); again != got {
		t.Errorf("a second rebuild changed the document:\n%s", again)
	}
	plain := []byte("# Benchmarks\n\n## Other\n\nno table\n")
	if got := WithSummary(plain); string(got) != string(plain) {
		t.Errorf("a document without headline figures changed:\n%s", got)
	}
}
