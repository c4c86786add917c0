package process

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/internal/lcerr"
	"gopkg.in/yaml.v3"
)

// Manifest registers a process client (docs/process-clients.md):
//
//	name: redis-py
//	summary: redis-py's redis.lock.Lock, as its docs say to use it
//	source: https://redis-py.readthedocs.io/en/stable/lock.html
//	command: [/usr/bin/python3, redis_py.py]   # relative paths: against this file's directory
//	topology: redis-single
//	supports: {valid: true, lost: false}
//	requires: [{check: [/usr/bin/python3, -c, "import redis"], fix: "apt-get install python3-redis"}]
//	expect:
//	  baseline: {verdict: S, source: "..."}
type Manifest struct {
	Name     string   `yaml:"name"`
	Summary  string   `yaml:"summary"`
	Source   string   `yaml:"source"`
	Command  []string `yaml:"command"`
	Topology string   `yaml:"topology"`
	// AlsoOn lists more topologies the client runs on with the same login (postgres-pgbouncer
	// beside postgres): a scenario whose variant runs there takes it.
	AlsoOn []string `yaml:"also_on"`
	// Family picks the catalogue's variants (redis, zookeeper, redlock, etcd); default from the
	// topology.
	Family   string `yaml:"family"`
	Supports struct {
		Valid bool `yaml:"valid"`
		Lost  bool `yaml:"lost"`
	} `yaml:"supports"`
	// InitTimeout bounds the wait for init_ok (default 30s).
	InitTimeout time.Duration `yaml:"init_timeout"`
	// Renews is the period at which the library renews its lease in the background (a heartbeat
	// thread, a watchdog, a ZooKeeper session's pings), at the catalogue's TTL; 0 (absent) when it
	// renews nothing (algorithms.Info.Renews).
	Renews time.Duration `yaml:"renews"`
	// Clock is how a clock fault reaches the client: "faketime" (the default: libfaketime
	// preloaded, for runtimes that read the clock through libc, as Python and the JVM do) or
	// "none" (a static binary, a Go program: clock-skew is n/a for it).
	Clock string `yaml:"clock"`
	// Env is added to the client's environment (KEY=VALUE).
	Env      []string               `yaml:"env"`
	Requires []Requirement          `yaml:"requires"`
	Expect   map[string]Expectation `yaml:"expect"`
	// ExpectOn is the expected verdicts on each of the AlsoOn topologies, where they differ
	// from the topology's own column or were measured there (postgres-standby's failover): a
	// cell run there (--topology) expects only what this says (scenarios.ExpectOn).
	ExpectOn map[string]map[string]Expectation `yaml:"expect_on"`

	// Path is the manifest file; Dir its directory.
	Path string `yaml:"-"`
	Dir  string `yaml:"-"`
}

// Requirement is a command that must succeed before the client can run, and the fix if not.
type Requirement struct {
	Check []string `yaml:"check"`
	Fix   string   `yaml:"fix"`
}

// Expectation is the expected verdict of one scenario, with where it comes from.
type Expectation struct {
	// Verdict is a catalogue code: S, Us, Uc, U, Ul, X, or - (n/a; Note says why).
	Verdict string `yaml:"verdict"`
	Note    string `yaml:"note"`
	// Source is the published issue or documentation claim the verdict confirms or contradicts.
	Source string `yaml:"source"`
}

// Code is the expectation in the catalogue's notation ("Uc: note (source)").
func (e Expectation) Code() string {
	s := e.Verdict
	var rest []string
	if e.Note != "" {
		rest = append(rest, e.Note)
	}
	if e.Source != "" {
		rest = append(rest, "("+e.Source+")")
	}
	if len(rest) > 0 {
		s += ": " + strings.Join(rest, " ")
	}
	return s
}

// ErrBadManifest is wrapped by every manifest error.
var ErrBadManifest = lcerr.New("bad process-client manifest")

// LoadManifest reads and checks a manifest. Errors name the file and the line.
func LoadManifest(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("empty file (want name, command, topology)")
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			err = errors.New(strings.Join(te.Errors, "; "))
		}
		return nil, fmt.Errorf("%w %s: %w", ErrBadManifest, path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	m.Path, m.Dir = abs, filepath.Dir(abs)
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrBadManifest, path, err)
	}
	return &m, nil
}

var verdicts = map[string]bool{"S": true, "Us": true, "Uc": true, "U": true, "Ul": true, "X": true, "-": true}

func (m *Manifest) check() error {
	switch {
	case m.Name == "" || strings.ContainsAny(m.Name, " ,/\t"):
		return fmt.Errorf("name %q: want one word without spaces, commas or slashes", m.Name)
	case len(m.Command) == 0:
		return errors.New("no command (want e.g. command: [/usr/bin/python3, mylock.py])")
	case m.Topology == "":
		return errors.New("no topology (want one of those `lockchaos list` shows, e.g. topology: redis-single)")
	}
	if m.Renews < 0 {
		return fmt.Errorf("renews %v: want the renewal period (e.g. 500ms), or no renews when the library renews nothing", m.Renews)
	}
	if m.Clock != "" && m.Clock != ClockFaketime && m.Clock != ClockNone {
		return fmt.Errorf("clock %q: want faketime (the default) or none", m.Clock)
	}
	if err := checkExpect("expect", m.Expect); err != nil {
		return err
	}
	for topo, es := range m.ExpectOn {
		if !slices.Contains(m.AlsoOn, topo) {
			return fmt.Errorf("expect_on.%s: not one of also_on %v (add it there)", topo, m.AlsoOn)
		}
		if err := checkExpect("expect_on."+topo, es); err != nil {
			return err
		}
	}
	return nil
}

func checkExpect(where string, es map[string]Expectation) error {
	for scen, e := range es {
		if !verdicts[e.Verdict] {
			return fmt.Errorf("%s.%s.verdict %q: want S, Us, Uc, U, Ul, X or - (n/a)", where, scen, e.Verdict)
		}
		if e.Verdict == "-" && e.Note == "" {
			return fmt.Errorf("%s.%s: verdict - (n/a) needs a note saying why", where, scen)
		}
	}
	return nil
}

// Spec is how to start the manifest's client.
func (m *Manifest) Spec() Spec {
	argv := append([]string(nil), m.Command...)
	for i, a := range argv {
		if i == 0 && !strings.Contains(a, "/") {
			continue // a name on PATH
		}
		if !filepath.IsAbs(a) && !strings.HasPrefix(a, "-") {
			if _, err := os.Stat(filepath.Join(m.Dir, a)); err == nil {
				argv[i] = filepath.Join(m.Dir, a)
			}
		}
	}
	return Spec{Name: m.Name, Command: argv, Dir: m.Dir, Topology: m.Topology, Valid: m.Supports.Valid,
		Env: m.Env, InitTimeout: m.InitTimeout, NoClock: m.Clock == ClockNone}
}

// The manifest's clock values.
const (
	ClockFaketime = "faketime"
	ClockNone     = "none"
)

// ClockNA says why a clock fault cannot reach the manifest's client here ("" when it can): its
// manifest says clock: none, or libfaketime is not installed.
func (m *Manifest) ClockNA() string {
	switch {
	case m.Clock == ClockNone:
		return "its manifest says clock: none (a runtime that libfaketime cannot move; docs/process-clients.md, clock-skew)"
	case FaketimeLib() == "":
		return "libfaketime, which moves a process client's clock, is not installed (make deps; docs/process-clients.md, clock-skew)"
	}
	return ""
}

// ErrMissing is wrapped by CheckRequires' errors: something the client needs is not installed.
var ErrMissing = lcerr.New("process client cannot run here")

// CheckRequires runs the manifest's checks; the first that fails is returned with its fix.
func (m *Manifest) CheckRequires() error {
	for _, r := range m.Requires {
		if len(r.Check) == 0 {
			continue
		}
		cmd := exec.Command(r.Check[0], r.Check[1:]...)
		cmd.Dir = m.Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s: `%s` failed (%v: %s); fix: %s", ErrMissing, m.Name,
				strings.Join(r.Check, " "), err, clip(strings.TrimSpace(string(out)), 200), r.Fix)
		}
	}
	return nil
}

// New starts one client of the manifest (after its requires checks): a locktest.Factory, so
// `locktest.Run(t, m.New, locktest.WithTopology(m.Topology))` tests a process client from Go.
func (m *Manifest) New(cfg algorithms.Config) (algorithms.Locker, error) {
	if err := m.CheckRequires(); err != nil {
		return nil, err
	}
	return New(m.Spec(), cfg)
}
