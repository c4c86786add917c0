// Package doccheck keeps the repository's documentation true: every relative link and anchor in a
// Markdown file resolves, and every reference to a repository file ("docs/design.md#wire-points",
// "BENCHMARKS.md") in Go source, help text, manifests and docs names a file and a section that
// exist. Its test runs in `make test`, and also runs the README's console example.
package doccheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Problem is one reference that does not resolve.
type Problem struct {
	File string // repository-relative path of the file holding the reference
	Line int    // 1-based
	Ref  string // the reference as written
	Why  string // what is missing
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Ref, p.Why)
}

// skipDirs are not the project's text: vendored code, build output, run output, test corpora.
var skipDirs = map[string]bool{".git": true, "third_party": true, "bin": true, "out": true, "testdata": true, "node_modules": true}

// scanned are the files whose references are checked, by extension (and the Makefile).
var scanned = map[string]bool{".md": true, ".go": true, ".yaml": true, ".yml": true, ".py": true, ".java": true, ".sh": true}

// self reports whether dir is this package's own, whose tests write broken references on purpose.
func self(root, dir string) bool {
	rel, err := filepath.Rel(root, dir)
	return err == nil && filepath.ToSlash(rel) == "internal/doccheck"
}

// Files lists the repository-relative paths of the files Check reads, sorted.
func Files(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".") || self(root, path)) {
				return filepath.SkipDir
			}
			return nil
		}
		if scanned[filepath.Ext(path)] || d.Name() == "Makefile" {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// Check reads every file Files lists under root and returns each reference that does not resolve.
func Check(root string) ([]Problem, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	c := &checker{root: root, anchors: map[string]map[string]bool{}}
	var problems []Problem
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		problems = append(problems, c.file(f, string(b))...)
	}
	return problems, nil
}

type checker struct {
	root    string
	anchors map[string]map[string]bool // by repository-relative .md path
}

var (
	// mdLink is an inline link or image: [text](target) or ![alt](target), target without spaces.
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// repoRef is a reference to a repository file written as text: docs/… or a top-level NAME.md,
	// not part of a longer path or a URL (the character before it is checked apart).
	repoRef = regexp.MustCompile(`(docs/[A-Za-z0-9_./*-]*|[A-Z][A-Z0-9_]*\.md)(#[\p{L}\p{N}_-]+)?`)
	// sectionSign is a reference to a numbered section of a file: "FILE.md §3", "DESIGN §3". Sections
	// are referred to by their anchors (docs/design.md#faults); numbers do not survive an edit.
	sectionSign = regexp.MustCompile(`([A-Za-z0-9_./-]+\.md|DESIGN)\s*§\s*[0-9]`)
	codeSpan    = regexp.MustCompile("`[^`\n]*`")
)

func (c *checker) file(path, text string) []Problem {
	var out []Problem
	seen := map[string]bool{} // a link's target is also a reference in the text: report it once
	add := func(line int, ref, why string) {
		if k := fmt.Sprint(line, ref); !seen[k] {
			seen[k] = true
			out = append(out, Problem{File: path, Line: line, Ref: ref, Why: why})
		}
	}
	isMD := strings.HasSuffix(path, ".md")
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		for _, m := range sectionSign.FindAllString(line, -1) {
			add(n, m, "a numbered section: refer to the section by its anchor (docs/design.md#…)")
		}
		for _, m := range repoRef.FindAllStringSubmatchIndex(line, -1) {
			if m[0] > 0 && strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-", rune(line[m[0]-1])) {
				continue // part of a longer path or a URL
			}
			ref := strings.TrimRight(line[m[2]:m[3]], ".")
			anchor := ""
			if m[4] >= 0 {
				anchor = line[m[4]+1 : m[5]]
			}
			if why := c.resolve(ref, anchor); why != "" {
				add(n, line[m[0]:m[1]], why)
			}
		}
		if !isMD {
			continue
		}
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			rel := path
			if file != "" {
				rel = filepath.ToSlash(filepath.Join(filepath.Dir(path), file))
			}
			if why := c.resolve(rel, anchor); why != "" {
				add(n, target, why)
			}
		}
	}
	return out
}

// resolve says what is missing for a repository-relative path (a glob is allowed) and an optional
// anchor in it, or "" when both exist.
func (c *checker) resolve(rel, anchor string) string {
	if strings.HasPrefix(rel, "../") || rel == ".." {
		return "points outside the repository"
	}
	full := filepath.Join(c.root, filepath.FromSlash(rel))
	if strings.Contains(rel, "*") {
		if m, _ := filepath.Glob(full); len(m) == 0 {
			return "no file matches"
		}
		return ""
	}
	if _, err := os.Stat(full); err != nil {
		return "no such file"
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(rel, ".md") {
		return "an anchor in a file that is not Markdown"
	}
	a, ok := c.anchors[rel]
	if !ok {
		b, err := os.ReadFile(full)
		if err != nil {
			return err.Error()
		}
		a = Anchors(string(b))
		c.anchors[rel] = a
	}
	if !a[anchor] {
		return fmt.Sprintf("no section #%s in %s", anchor, rel)
	}
	return ""
}

var (
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	headLink   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	explicitID = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// Anchors returns the anchors GitHub gives a Markdown document's headings (and explicit
// <a name> / <a id> tags), with GitHub's numbering of duplicates (-1, -2, ...).
func Anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		for _, m := range explicitID.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[2])
		if k := seen[slug]; k > 0 {
			seen[slug] = k + 1
			slug = fmt.Sprintf("%s-%d", slug, k)
		} else {
			seen[slug] = 1
		}
		out[slug] = true
	}
	return out
}

// Slug is GitHub's anchor for a heading's text: the rendered text (links and code marks gone)
// in lower case, every character but letters, marks, digits, '_', '-' and spaces dropped, and
// each space made a hyphen.
func Slug(text string) string {
	text = headLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
