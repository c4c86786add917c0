package doccheck_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/doccheck"
	"github.com/lockchaos/lockchaos/internal/testenv"
)

// root is the repository's top directory (the test runs in internal/doccheck).
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", r, err)
	}
	return r
}

// TestReferencesResolve: every relative link and anchor in the repository's Markdown, and every
// docs/… or NAME.md reference in its Go source, help text, manifests and docs, names a file and a
// section that exist; no reference names a numbered section ("§").
func TestReferencesResolve(t *testing.T) {
	r := root(t)
	files, err := doccheck.Files(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("read only %d files under %s: the walk is broken", len(files), r)
	}
	problems, err := doccheck.Check(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestCheckFindsBrokenReferences: on a small tree with one of each mistake, Check names each, and
// passes the references that resolve — so TestReferencesResolve's pass means something.
func TestCheckFindsBrokenReferences(t *testing.T) {
	dir := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/design.md", "# Design\n\n## Wire points\n\n## Faults sized to the lease\n\n```\n## not a heading\n```\n")
	write("README.md", strings.Join([]string{
		"[ok](docs/design.md#wire-points) [ok too](docs/design.md) [same file](#readme-heading)",
		"## README heading",
		"[gone](docs/missing.md) [bad anchor](docs/design.md#wire-point) [fenced](docs/design.md#not-a-heading)",
		"`[in code](nothing.md)` [web](https://example.com/x.md#y)",
	}, "\n"))
	write("docs/page.md", "[up](../README.md#readme-heading) [sibling](design.md#faults-sized-to-the-lease) [broken](design.md#faults)\n")
	write("pkg/a.go", strings.Join([]string{
		"// see docs/design.md#wire-points and BENCHMARKS.md and https://redis.io/docs/latest/x",
		"// see DESIGN.md §14 and docs/design.md#no-such-section and docs/gone.md",
		`const help = "the mutants (docs/design.md#mutants)"`,
	}, "\n"))
	problems, err := doccheck.Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.File+":"+strconv.Itoa(p.Line)+":"+p.Ref)
	}
	want := []string{
		"README.md:3:docs/missing.md",
		"README.md:3:docs/design.md#wire-point",
		"README.md:3:docs/design.md#not-a-heading",
		"docs/page.md:1:design.md#faults",
		"pkg/a.go:1:BENCHMARKS.md",
		"pkg/a.go:2:DESIGN.md §1",
		"pkg/a.go:2:DESIGN.md",
		"pkg/a.go:2:docs/design.md#no-such-section",
		"pkg/a.go:2:docs/gone.md",
		"pkg/a.go:3:docs/design.md#mutants",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSlug: GitHub's anchors for the kinds of headings the docs have.
func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Wire points":                            "wire-points",
		"The catalogue (`make run`)":             "the-catalogue-make-run",
		"redis-py PR #4258":                      "redis-py-pr-4258",
		"etcd PR #22115: an Unlock that never":   "etcd-pr-22115-an-unlock-that-never",
		"Teeth: what each scenario catches":      "teeth-what-each-scenario-catches",
		"token × client-pause":                   "token--client-pause",
		"[Linked](x.md) heading":                 "linked-heading",
		"One owner per trait; locks as values":   "one-owner-per-trait-locks-as-values",
		"Redis Cluster, and what WAIT buys":      "redis-cluster-and-what-wait-buys",
		"What `make deps` installs":              "what-make-deps-installs",
		"Soak: lockchaos soak":                   "soak-lockchaos-soak",
		"Two commands on a fresh machine":        "two-commands-on-a-fresh-machine",
		"Verdicts, evidence and exit codes":      "verdicts-evidence-and-exit-codes",
		"CURATOR-604":                            "curator-604",
		"clock_settime is not allowed":           "clock_settime-is-not-allowed",
		"Ünïcode heading":                        "ünïcode-heading",
		"Faults sized to the lease":              "faults-sized-to-the-lease",
		"go doc ./locktest":                      "go-doc-locktest",
		"A-B":                                    "a-b",
		"Published failures":                     "published-failures",
		"The libraries people deploy, under the": "the-libraries-people-deploy-under-the",
	} {
		if got := doccheck.Slug(text); got != want {
			t.Errorf("Slug(%q) = %q, want %q", text, got, want)
		}
	}
	a := doccheck.Anchors("# A\n## A\n## A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !a[want] {
			t.Errorf("duplicate headings: no anchor %q in %v", want, a)
		}
	}
}

// consoleExample is one command of a README console block and what the README says it prints.
type consoleExample struct {
	args []string
	line string // the command's first line of output
	exit int    // -1 when the README does not show it
}

// readmeExamples reads the README's ```console blocks: each "$ bin/lockchaos ..." command, the line
// it prints and the exit code a following "$ echo $?" shows.
func readmeExamples(t *testing.T, readme string) []consoleExample {
	t.Helper()
	var out []consoleExample
	in := false
	var cur *consoleExample
	wantExit := false
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(line, "```console"):
			in = true
		case in && strings.HasPrefix(line, "```"):
			in, cur = false, nil
		case !in:
		case line == "$ echo $?":
			wantExit = cur != nil
		case strings.HasPrefix(line, "$ bin/lockchaos "):
			if strings.ContainsAny(line[2:], `"'|;&<>$`+"`") {
				t.Fatalf("README console example %q: quotes and shell syntax are not supported here", line)
			}
			out = append(out, consoleExample{args: strings.Fields(line)[2:], exit: -1})
			cur = &out[len(out)-1]
		case strings.HasPrefix(line, "$ "):
			cur = nil
		case wantExit:
			n, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("README: %q after `echo $?` is not an exit code", line)
			}
			cur.exit, wantExit = n, false
		case cur != nil && cur.line == "":
			cur.line = line
		}
	}
	return out
}

var (
	number = regexp.MustCompile(`\d+(\.\d+)?`)
	plural = regexp.MustCompile(`\b(\w+?)s\b`)
)

// shape is a verdict line with its measured numbers and plurals taken out: what must stay the
// same from run to run.
func shape(line string) string {
	return plural.ReplaceAllString(number.ReplaceAllString(line, "N"), "$1")
}

// TestReadmeExample runs the README's console example as a user would (bin/lockchaos with its
// flags, from a fresh directory) and compares the verdict, the shape of the line and the exit code.
func TestReadmeExample(t *testing.T) {
	testenv.Servers(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.MissingServer(t, err)
	}
	r := root(t)
	readme, err := os.ReadFile(filepath.Join(r, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples := readmeExamples(t, string(readme))
	if len(examples) == 0 {
		t.Fatal("README.md has no ```console example running bin/lockchaos")
	}
	bin := testenv.BuildCLI(t)
	for _, ex := range examples {
		t.Run(strings.Join(ex.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, ex.args...)
			cmd.Dir = t.TempDir() // the default --out, out/, lands here, as in the README
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatalf("run: %v", err)
			}
			got, _, _ := strings.Cut(stdout.String(), "\n")
			t.Logf("README: %s\nnow:    %s", ex.line, got)
			verdict := func(s string) string { v, _, _ := strings.Cut(s, " at "); return v }
			if verdict(got) != verdict(ex.line) {
				t.Errorf("the verdict changed: README says %q, the command now says %q (stderr: %s)", verdict(ex.line), verdict(got), stderr.String())
			} else if shape(got) != shape(ex.line) {
				t.Errorf("the line's shape changed (numbers aside): update the README's example to what the command prints now:\n%s", got)
			}
			if ex.exit >= 0 && code != ex.exit {
				t.Errorf("exit code %d, the README shows %d", code, ex.exit)
			}
		})
	}
}
