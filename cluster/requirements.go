package cluster

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Requirement is one thing a backend needs on this machine, for lockchaos doctor.
type Requirement struct {
	Name   string // what is needed: "redis-server", "/usr/share/java/zookeeper.jar"
	OK     bool
	Detail string // the path and version found, or what is wrong
	Fix    string // how to get it, when !OK
}

// Requirements lists what backend ("local", "docker", "external") needs and whether this machine
// has it. For local: the servers of every topology; a missing one disables only its topologies. A
// backend of its own package (docker, external) lists its own, once the program imports it
// (external: none, the servers are someone else's).
func Requirements(backend string) []Requirement {
	switch backend {
	case Local, "":
		return allRequirements()
	}
	if rb, ok := backendRegistry[backend]; ok {
		return rb.requirements()
	}
	if pkg := backendPackages[backend]; pkg != "" {
		return []Requirement{{Name: "backend " + backend, Detail: notLinked(backend).Error(), Fix: "import _ \"" + pkg + "\" in the program (lockchaos does)"}}
	}
	return []Requirement{{Name: "backend " + backend, Detail: "unknown backend", Fix: "use local, docker or external"}}
}

func withVersion(r Requirement, version func(path string) string) Requirement {
	if r.OK {
		if v := version(r.Detail); v != "" {
			r.Detail += " (" + v + ")"
		}
	}
	return r
}

func output(bin string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out)
}

// redisVersion turns "Redis server v=7.0.15 sha=..." into "7.0.15".
func redisVersion(path string) string {
	for _, f := range strings.Fields(output(path, "--version")) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v
		}
	}
	return ""
}

// javaVersion returns the first line of java -version (on stderr).
func javaVersion(path string) string {
	first, _, _ := strings.Cut(output(path, "-version"), "\n")
	return strings.TrimSpace(first)
}

// jarVersion finds the version in a Debian jar's versioned alias (zookeeper-3.8.0.jar links to
// zookeeper.jar), which is cheaper than opening the jar.
func jarVersion(path string) string {
	stem := strings.TrimSuffix(path, ".jar")
	matches, _ := filepath.Glob(stem + "-[0-9]*.jar")
	for _, m := range matches {
		if t, err := filepath.EvalSymlinks(m); err == nil && t == path {
			return strings.TrimSuffix(strings.TrimPrefix(m, stem+"-"), ".jar")
		}
	}
	return ""
}
