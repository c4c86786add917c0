// Package runner is the pipeline of one cell: harness.Run records a history, checker.CheckHistory
// judges it, reports.WriteRun writes the pages. The CLI, the matrix and locktest share it.
package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Options apply to every cell of a run or matrix. Zero fields keep the scenario's values.
type Options struct {
	Out      string // output directory (default "out")
	Backend  string
	Proxies  string
	Seed     int64
	Duration time.Duration
	Clients  int
	TTL      time.Duration
	// Runs repeats each cell; with Runs > 1 each run gets its own directory and seed+run.
	Runs    int
	Version string
	Log     io.Writer
	// CheckTimeout bounds each porcupine check (default: the checker's).
	CheckTimeout time.Duration
	// ClusterFile is the external backend's cluster file.
	ClusterFile string
	// RedisImage, ZooKeeperImage, PostgresImage, MariaDBImage and EtcdImage are the docker
	// backend's images.
	RedisImage, ZooKeeperImage, PostgresImage, MariaDBImage, EtcdImage string
	// Full runs every cell for its scenario's full time. By default a cell stops once a
	// violation is found (its history's stop line says so): the verdict can no longer change.
	Full bool
	// ScenarioFile is the scenario file the cells' scenarios come from, when not the catalogue
	// (the re-run command names it).
	ScenarioFile string
}

// Dir returns the run directory of a cell: OUT/<scenario>/<algorithm>[@<topology>][/<run>], the
// topology when one was chosen (scenarios.CellOn).
func Dir(out string, c scenarios.Cell, run int) string {
	alg := c.Algorithm
	if c.On != "" {
		alg += "@" + c.On
	}
	d := filepath.Join(out, c.Scenario, alg)
	if run > 0 {
		d = filepath.Join(d, strconv.Itoa(run))
	}
	return d
}

// Config builds the harness configuration of a cell.
func Config(c scenarios.Cell, o Options, run int) harness.Config {
	w := c.Workload
	cfg := harness.Config{
		Lock: c.Lock, Algorithm: c.Algorithm, Scenario: c.Scenario, Expected: c.Expected,
		Topology: c.Topology, Nodes: c.Nodes, Backend: o.Backend, Proxies: o.Proxies,
		Workload: harness.Workload{
			Clients: w.Clients, TTL: w.TTL.D(), Hold: w.Hold.D(), Think: w.Think.D(),
			AcquireTimeout: w.AcquireTimeout.D(), ReleaseTimeout: w.ReleaseTimeout.D(), SessionTimeout: w.SessionTimeout.D(),
			OpTimeout: w.OpTimeout.D(), Fencing: w.Fencing,
			NoHold: w.ZeroHold, NoThink: w.ZeroThink, LockPerClient: w.LockPerClient,
			ServerIdleTimeout: w.ServerIdleTimeout.D(),
		},
		Faults: c.Faults, Duration: w.Duration.D(), StuckAfter: w.StuckAfter.D(), Tail: w.Tail.D(),
		Seed: o.Seed + int64(max(run, 1)-1), Dir: Dir(o.out(), c, run), Version: o.Version,
		Log: o.Log, ClusterFile: o.ClusterFile,
		RedisImage: o.RedisImage, ZooKeeperImage: o.ZooKeeperImage, PostgresImage: o.PostgresImage, MariaDBImage: o.MariaDBImage, EtcdImage: o.EtcdImage,
	}
	if info := c.Lock; info.Fenced && !info.FenceUnchecked {
		// A fenced algorithm is run as it is meant to be used: the resource checks its fences
		// (except the fence-unchecked mutant's, whose point is that nobody checks them).
		cfg.Fencing = true
	}
	if !o.Full {
		cfg.Decide = decided
	}
	if o.Duration > 0 {
		cfg.Duration = o.Duration
	}
	if o.Clients > 0 {
		cfg.Clients = o.Clients
	}
	if o.TTL > 0 {
		cfg.TTL = o.TTL
	}
	cfg.Command = Command(c, o, cfg.Seed)
	return cfg
}

func (o Options) out() string {
	if o.Out == "" {
		return "out"
	}
	return o.Out
}

// Command is the command line that re-runs cell c with options o and the given seed: the one
// builder of it, which the history's meta, the reports, soak and explore all take.
func Command(c scenarios.Cell, o Options, seed int64) string {
	args := []string{"lockchaos", "run", "--algorithm", c.Algorithm}
	if o.ScenarioFile != "" {
		args = append(args, "--scenario-file", o.ScenarioFile)
	}
	args = append(args, "--scenario", c.Scenario, "--seed", strconv.FormatInt(seed, 10))
	if c.On != "" {
		args = append(args, "--topology", c.On)
	}
	if o.Backend != "" && o.Backend != "local" {
		args = append(args, "--backend", o.Backend)
	}
	if o.Proxies != "" && o.Proxies != harness.ProxyAuto {
		args = append(args, "--proxy", o.Proxies)
	}
	if o.ClusterFile != "" {
		args = append(args, "--cluster", o.ClusterFile)
	}
	if o.RedisImage != "" {
		args = append(args, "--redis-image", o.RedisImage)
	}
	if o.PostgresImage != "" {
		args = append(args, "--postgres-image", o.PostgresImage)
	}
	if o.MariaDBImage != "" {
		args = append(args, "--mariadb-image", o.MariaDBImage)
	}
	if o.EtcdImage != "" {
		args = append(args, "--etcd-image", o.EtcdImage)
	}
	if o.ZooKeeperImage != "" {
		args = append(args, "--zookeeper-image", o.ZooKeeperImage)
	}
	if o.Duration > 0 {
		args = append(args, "--duration", o.Duration.String())
	}
	if o.Clients > 0 {
		args = append(args, "--clients", strconv.Itoa(o.Clients))
	}
	if o.TTL > 0 {
		args = append(args, "--ttl", o.TTL.String())
	}
	if o.Full {
		args = append(args, "--full")
	}
	return strings.Join(args, " ")
}

// decideTimeout bounds each porcupine check of a history so far: the fault phase waits for it.
const decideTimeout = 500 * time.Millisecond

// decided is a run's harness.Config.Decide: the checker's judgement of the history so far.
func decided(h *history.History) (verdict, why string) {
	v, why := checker.Decided(h, checker.Options{Timeout: decideTimeout})
	return string(v), why
}

// RunCell runs, checks and reports one cell. The error is a harness error (the run could not be
// carried out); what the lock did is in the returned cell's Result.
func RunCell(ctx context.Context, c scenarios.Cell, o Options, run int) (reports.Cell, *checker.Outcome, error) {
	rc := reports.Cell{Scenario: c.Scenario, Algorithm: c.Algorithm, Run: run, NA: c.NA, Expected: c.Expected}
	rel, _ := filepath.Rel(o.out(), Dir(o.out(), c, run))
	rc.Dir = filepath.ToSlash(rel)
	if c.NA != "" {
		return rc, nil, nil
	}
	cfg := Config(c, o, run)
	res, err := harness.Run(ctx, cfg)
	if err != nil {
		rc.Err = err.Error()
		if res == nil {
			return rc, nil, err
		}
		// The run failed part-way: what it recorded is still checked and reported.
	}
	// A run a broken client ended early says so in its history (its abort line), so this check
	// and any later lockchaos check of the directory decide alike.
	out, cerr := CheckDir(res.Dir, CheckOptions{Timeout: o.CheckTimeout, Write: true})
	if cerr != nil {
		return rc, nil, fmt.Errorf("check %s: %w", res.Dir, cerr)
	}
	rc.Result = &out.Result
	return rc, out, err
}

// Check re-checks the history in dir and rewrites its result.json and reports.
func Check(dir string, timeout time.Duration) (*checker.Outcome, error) {
	return CheckDir(dir, CheckOptions{Timeout: timeout, Write: true})
}

// CheckHistory re-checks the history in dir and writes nothing.
func CheckHistory(dir string, timeout time.Duration) (*checker.Outcome, error) {
	return CheckDir(dir, CheckOptions{Timeout: timeout})
}

// CheckOptions says how CheckDir re-checks a run.
type CheckOptions struct {
	Timeout time.Duration // each porcupine check's; 0 = the checker's default
	Write   bool          // rewrite result.json and the reports
	// Progress, if set, hears how far the check is: stage "read" with the bytes of the history
	// read so far and its size (every few MB), then "check", then "report" when Write is set.
	Progress func(stage string, done, total int64)
}

// CheckDir re-checks the history in dir.
func CheckDir(dir string, o CheckOptions) (*checker.Outcome, error) {
	progress := o.Progress
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	h, out, err := check(dir, o.Timeout, progress)
	if err != nil {
		return nil, err
	}
	if !o.Write {
		return out, nil
	}
	progress("report", 0, 0)
	if err := reports.WriteRun(dir, h, out); err != nil {
		return out, fmt.Errorf("write report: %w", err)
	}
	return out, nil
}

func check(dir string, timeout time.Duration, progress func(string, int64, int64)) (*history.Run, *checker.Outcome, error) {
	f, err := os.Open(filepath.Join(dir, harness.HistoryFile))
	if err != nil {
		return nil, nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	// A long history is checked as it is read (checker.CheckReader), so the bar of the bytes
	// read is the check's progress too.
	h, out, err := checker.CheckReader(&progressReader{r: f, size: size, report: progress}, size, checker.Options{Timeout: timeout})
	if err != nil {
		return nil, nil, err
	}
	progress("read", size, size)
	progress("check", 0, 0)
	return h, out, nil
}

// progressReader reports the bytes read every few MB.
type progressReader struct {
	r          io.ReadSeeker
	read, next int64
	size       int64
	report     func(string, int64, int64)
}

// Seek rewinds the bar with the file, for a history the checker reads a second time.
func (p *progressReader) Seek(offset int64, whence int) (int64, error) {
	n, err := p.r.Seek(offset, whence)
	p.read, p.next = n, n
	return n, err
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	if p.read >= p.next {
		p.report("read", p.read, p.size)
		p.next = p.read + 4<<20
	}
	return n, err
}
