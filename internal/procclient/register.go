// Package procclient registers process clients (algorithms/process) with the algorithm registry
// and their expectations with the catalogue, so the CLI, the matrix and locktest treat a manifest
// like a built-in algorithm.
package procclient

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/algorithms/process"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/scenarios"
)

// clockSkew is the scenario a process client is put through by libfaketime (process.Locker's
// SetClock); where that cannot reach it (Manifest.ClockNA), the cell is n/a unless its manifest
// says what it measured there.
const clockSkew = "clock-skew"

// clockRate is the fault kind that cannot reach a process client (Info.Unreached).
const clockRate = "clock-rate"

var (
	mu         sync.Mutex
	registered = map[string]string{} // name → manifest path
)

// Register adds the manifest's client as an algorithm named m.Name. Registering the same manifest
// twice is a no-op; another manifest or a built-in with the same name is an error.
func Register(m *process.Manifest) error {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := registered[m.Name]; ok {
		if p == m.Path {
			return nil
		}
		return fmt.Errorf("%w %s: name %s is already used by %s", process.ErrBadManifest, m.Path, m.Name, p)
	}
	for _, t := range append([]string{m.Topology}, m.AlsoOn...) {
		if _, err := cluster.LookupTopology(t); err != nil {
			return fmt.Errorf("%w %s: topology %q is not one lockchaos runs (one of %s)", process.ErrBadManifest, m.Path, t, strings.Join(cluster.Topologies, ", "))
		}
	}
	if _, err := algorithms.Lookup(m.Name); err == nil {
		return fmt.Errorf("%w %s: name %s is a built-in algorithm; choose another", process.ErrBadManifest, m.Path, m.Name)
	}
	codes, err := expectCodes(m, "expect", m.Expect)
	if err != nil {
		return err
	}
	codesOn := map[string]map[string]string{}
	for topo, es := range m.ExpectOn {
		if codesOn[topo], err = expectCodes(m, "expect_on."+topo, es); err != nil {
			return err
		}
	}
	// A clock the skew cannot move is the lock's to say (Info.Unreached), unless the manifest
	// says what it measured there.
	// libfaketime counts a rate from the process's start: a process client's clock cannot be set
	// running fast or slow from a point of the run.
	unreached := map[string]string{clockRate: "libfaketime counts a rate from the process's start, so a process client's clock cannot be set running fast or slow from a point of the run"}
	if _, ok := codes[clockSkew]; !ok {
		if why := m.ClockNA(); why != "" {
			unreached[clockSkew] = "the skew cannot reach this process client's clock: " + why
		}
	}
	spec := m.Spec()
	var once sync.Once
	var reqErr error
	summary := m.Summary
	if summary == "" {
		summary = "process client: " + strings.Join(m.Command, " ")
	}
	algorithms.Register(algorithms.Info{
		Name: m.Name, Summary: summary, Source: m.Source, Topologies: append([]string{m.Topology}, m.AlsoOn...),
		Family: m.Family, Process: true, Renews: m.Renews, Unreached: unreached,
		New: func(cfg algorithms.Config) (algorithms.Locker, error) {
			once.Do(func() { reqErr = m.CheckRequires() })
			if reqErr != nil {
				return nil, reqErr
			}
			return process.Start(spec, cfg) // the harness waits for Ready: clients start side by side
		},
	})
	// A manifest's expectations are the user's input: one the topology cannot show is an error
	// naming it, never a panic, and the client is not left registered.
	if err := scenarios.AddExpect(m.Name, codes); err != nil {
		algorithms.Unregister(m.Name)
		return fmt.Errorf("%w %s: expect: %w", process.ErrBadManifest, m.Path, err)
	}
	for _, topo := range slices.Sorted(maps.Keys(codesOn)) {
		if err := scenarios.AddExpectOn(m.Name, topo, codesOn[topo]); err != nil {
			algorithms.Unregister(m.Name)
			return fmt.Errorf("%w %s: expect_on.%s: %w", process.ErrBadManifest, m.Path, topo, err)
		}
	}
	registered[m.Name] = m.Path
	return nil
}

// expectCodes is a manifest's expectations in the catalogue's notation, each scenario checked.
func expectCodes(m *process.Manifest, where string, es map[string]process.Expectation) (map[string]string, error) {
	codes := map[string]string{}
	for scen, e := range es {
		if _, err := scenarios.Lookup(scen); err != nil {
			return nil, fmt.Errorf("%w %s: %s.%s: %w", process.ErrBadManifest, m.Path, where, scen, err)
		}
		codes[scen] = e.Code()
	}
	return codes, nil
}

// RegisterFile loads and registers the manifest at path and returns the algorithm's name.
func RegisterFile(path string) (string, error) {
	m, err := process.LoadManifest(path)
	if err != nil {
		return "", err
	}
	if err := Register(m); err != nil {
		return "", err
	}
	return m.Name, nil
}

// RegisterDir registers every *.yaml manifest in dir (the shipped clients/); a missing dir is
// not an error.
func RegisterDir(dir string) error {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	sort.Strings(paths)
	for _, p := range paths {
		if _, err := RegisterFile(p); err != nil {
			return err
		}
	}
	return nil
}

// RegisterCommand registers a client given only by its command line (run --client-cmd), under
// the name "client-cmd", with no expectations.
func RegisterCommand(command, topology string) (string, error) {
	argv := strings.Fields(command)
	if len(argv) == 0 {
		return "", fmt.Errorf("%w: --client-cmd is empty", process.ErrBadManifest)
	}
	if topology == "" {
		return "", fmt.Errorf("%w: --client-cmd needs --topology (one of %s)", process.ErrBadManifest, strings.Join(cluster.Topologies, ", "))
	}
	wd, _ := os.Getwd()
	mu.Lock()
	if p, ok := registered["client-cmd"]; ok && p != "--client-cmd "+command {
		// Another command given before in this process (tests): the latest one wins.
		algorithms.Unregister("client-cmd")
		delete(registered, "client-cmd")
	}
	mu.Unlock()
	m := &process.Manifest{Name: "client-cmd", Command: argv, Topology: topology, Dir: wd,
		Path: "--client-cmd " + command, Summary: "process client: " + command}
	m.Supports.Valid = true
	if err := Register(m); err != nil {
		return "", err
	}
	return m.Name, nil
}

// ShippedDir finds the repository's clients/ directory: under the working directory or one of
// its parents, or beside the executable's directory (bin/../clients). "" if none.
func ShippedDir() string {
	if d := os.Getenv("LOCKCHAOS_CLIENTS"); d != "" {
		return d
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if isShipped(filepath.Join(d, "clients")) {
				return filepath.Join(d, "clients")
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		d := filepath.Join(filepath.Dir(filepath.Dir(exe)), "clients")
		if isShipped(d) {
			return d
		}
	}
	return ""
}

// isShipped is true for a clients/ directory beside a go.mod of lockchaos.
func isShipped(dir string) bool {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "go.mod"))
	if err != nil || !strings.Contains(string(b), "module github.com/lockchaos/lockchaos") {
		return false
	}
	st, err := os.Stat(dir)
	return err == nil && st.IsDir()
}
