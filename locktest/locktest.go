// Package locktest tests a user's own distributed lock against lockchaos's catalogue of faults
// with one call in a Go test: [Run](t, factory) runs each scenario against real servers.
//
//	func TestMyLock(t *testing.T) {
//		locktest.Run(t, func(cfg algorithms.Config) (algorithms.Locker, error) {
//			return mylock.New(cfg.Addrs[0], cfg.Dial, cfg.TTL), nil // one Locker per client
//		},
//			locktest.WithScenarios("baseline", "slow-release", "client-pause", "restart"),
//			locktest.WithExpect("client-pause", "unsafe-client"), // no lease survives a paused holder
//			locktest.WithExpect("restart", "unsafe-service"),     // one Redis without fsync forgets locks
//		)
//	}
//
// For each scenario Run starts the servers (behind proxies when the scenario faults links), builds
// one Locker per client with the factory, drives the same workload as `lockchaos run` (acquire,
// read a shared counter, hold, check the lease by the client's clock, write, release), fires the
// scenario's faults, checks the recorded history for exclusion, linearizability and liveness
// violations, and writes an HTML report. Each scenario is a subtest that fails with the verdict,
// the violation's class, the time to the first violation, what was expected and the report's path.
// The example of [Run] is a whole small lock and its test.
//
// # What your lock implements
//
// Your lock is an [algorithms.Locker]: Acquire(ctx) blocks until it holds the lock and returns an
// [algorithms.Lease]; Release(ctx, lease) gives it back and must be safe with an expired lease.
// The lock sees lockchaos only through [algorithms.Config] and [algorithms.Lease]:
//
//   - Config.Addrs (or Config.Sentinel) are this client's own proxied addresses, and Config.Dial,
//     when set, must be used for every connection, so that a fault can cut one client off. On a
//     SQL topology Config.SQL is how to log in (user, password, database, application_name).
//   - Config.TTL is the lease to ask the server for (Config.SessionTimeout the ZooKeeper session
//     timeout); Config.Name the lock's name; Config.Clock is the client's clock (read time
//     through it and the clock-skew scenario can skew yours); Config.Rand is a seeded source.
//     Config.OpTimeout is how long to wait for one request: a scenario sizes it (latency: 2×TTL)
//     so that the reply it holds back still reaches your lock; a lock that gives up sooner on a
//     timeout of its own dodges the fault instead of facing it.
//   - Config.Point, called between the steps of Acquire and Release ("release:before-del", ...),
//     lets a fault stop the client there. Calling it is optional: the catalogue reaches a lock
//     that marks no point by what the harness owns — its own points around the critical section
//     (cs:before-acquire, cs:acquired, cs:before-read, cs:before-write, cs:before-release) and the
//     wire (docs/design.md#wire-points): the proxies parse Redis's and ZooKeeper's protocols, so slow-release
//     holds your release's first command (or its first reply) until another client holds the
//     lock, and latency holds the reply that wins your acquisition past the lease. A few of the
//     catalogue's faults are refinements at a built-in's own points (Redlock's
//     acquire:after-quorum, getset's acquire:before-getset): a lock that does not mark that point
//     runs its cell without that fault, never unknown for want of it.
//   - Lease.TTL is the expiry the server enforces (0 = none) and Lease.Validity how long the holder
//     may trust the lease from the moment Acquire was called (0 = until released). The checker
//     trusts both: a lease declared without a TTL never expires, so any overlapping grant is
//     charged to the lock service; the client writes only while its Validity lasts.
//   - An error whose outcome is unknown (a timeout after the command was sent) should be an
//     [*algorithms.UnknownError]; any other error means the operation did not take effect. Release
//     returns [algorithms.ErrNotHeld] when the lease had already expired.
//   - A Locker that implements [algorithms.Closer] is closed after each run; one that implements
//     [algorithms.Validator] is asked before each write whether it still holds its lease.
//   - A factory that cannot serve what Config asks for returns an error wrapping [ErrUnsupported],
//     and the scenario is skipped.
//
// docs/locktest.md in the repository says the same with a table of these names.
//
// # What a pass does not prove
//
// Run can give false negatives; a passing subtest means no violation was seen, not that the lock
// is correct:
//
//   - A run is finite: a couple of seconds of faults, a few hundred critical sections, one seed.
//     A bug that needs a rare interleaving may not show in that time (run again with other seeds:
//     WithSeed).
//   - Only the catalogue's faults, at the catalogue's moments: most are aimed at one holder at a
//     harness point or at one of its commands on the wire. A bug between two other commands of
//     your lock is hit only by a scenario aimed there: add one with WithScenario or
//     WithScenarioFile (a fault with wire: {before: DEL} or {after-reply: GET} needs no help
//     from your code; one at a Config.Point name needs you to call it). etcd's gRPC is not
//     parsed: on etcd, slow-release and latency are timed faults on the client's links.
//   - Timing: faults are sized in leases of your lock — the longest Lease.TTL it reported, else
//     Config.TTL, plus the renewal period WithRenewal gives — so a pause outlasts the lease your
//     lock really holds.
//     A lock that ignores Config.Dial, or retries for longer than the fault lasts, may dodge the
//     fault rather than survive it; a fault that could not be applied, or never made the moment it
//     aims at, leaves its scenario unknown, never safe.
//   - Servers are the Debian redis-server and ZooKeeper on one machine; a clock jump is emulated
//     by shifting key TTLs, not by moving a real clock.
package locktest

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/runner"
	"github.com/lockchaos/lockchaos/internal/testenv"
	"github.com/lockchaos/lockchaos/reports"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Factory builds one client's Locker from what lockchaos gives that client: its own proxied
// server addresses (or Sentinel), dialer, TTL, clock, named-point hook, random source and lock
// name (see the package doc). It is called once per client per scenario; the Locker must not
// share state with the other clients' Lockers beyond the servers, as separate processes would.
// It returns an error wrapping ErrUnsupported when it cannot run on what Config asks for (e.g.
// Config.Sentinel), and the scenario is skipped with that error.
type Factory func(cfg algorithms.Config) (algorithms.Locker, error)

// ErrUnsupported, wrapped by a Factory's error, skips the scenario instead of failing it.
var ErrUnsupported = errors.New("locktest: unsupported")

// seq makes each Run's lock name unique in the process (its reports' directory).
var seq atomic.Int64

// Run tests the lock the factory builds against the catalogue's scenarios (or those chosen with
// WithScenarios). With a *testing.T each scenario is a subtest, t.Run(scenario); they run one
// after another, since each starts its own servers and timing matters. With any other testing.TB
// the scenarios run in turn and report on t, each message prefixed with the scenario's name.
//
// Every scenario is expected "safe" unless WithExpect or WithExpectationsOf says otherwise, and a
// subtest fails when the verdict differs. So with the defaults even a textbook lease lock on one
// Redis fails client-pause, restart, clock-jump and node-kill, as it should: those faults break
// it (the catalogue expects token to be unsafe or stuck there). Accept them with
// WithExpectationsOf("token"), or scenario by scenario with WithExpect. A scenario that does not
// apply to the lock's topology — its servers cannot show it (no session to end, no pooler, no key
// expiry to shift), or the catalogue marks it n/a for the topology's reference algorithm (see
// WithTopology) — is skipped with the reason. The lock is handed down as a value and registered
// nowhere: it runs its topology's variants, never a built-in's, and no fault waits at a point of a
// built-in's own that the lock does not mark. A missing server binary skips, or fails when
// LOCKCHAOS_REQUIRE_SERVERS=1.
func Run(t testing.TB, factory Factory, opts ...Option) {
	t.Helper()
	c := defaults()
	for _, o := range opts {
		o.apply(&c)
	}
	lock := userLock(t, factory, c)
	plan, err := c.plan(lock)
	if err != nil {
		t.Fatalf("locktest: %v", err)
	}
	out := c.out
	if out == "" {
		out = t.TempDir()
	}
	m := runner.Matrix{Parallel: 1, Timeout: 3 * time.Minute}
	for _, it := range plan {
		if it.skip != "" {
			it.cell.NA = it.skip // not run: a subtest that skips with the reason
		}
		m.Cells = append(m.Cells, it.cell)
	}
	var missing string
	m.Around = func(cell scenarios.Cell, _ int, do func() (reports.Cell, error)) {
		if tt, ok := t.(*testing.T); ok {
			tt.Run(cell.Scenario, func(t *testing.T) {
				r := judge(cell, out, do)
				switch {
				case r.skip != "":
					t.Skip(r.skip)
				case r.fail != "":
					t.Error(r.fail)
				default:
					t.Log(r.pass)
				}
			})
			return
		}
		r := judge(cell, out, do)
		switch {
		case r.missing:
			missing = cell.Scenario + ": " + r.skip // skipped below: SkipNow only from t's own goroutine
		case r.skip != "":
			t.Logf("%s: skipped: %s", cell.Scenario, r.skip)
		case r.fail != "":
			t.Errorf("%s: %s", cell.Scenario, r.fail)
		default:
			t.Logf("%s: %s", cell.Scenario, r.pass)
		}
	}
	// Each cell's outcome is judged in Around; the matrix's own error repeats the first of them.
	_, _ = runner.RunMatrix(t.Context(), m, runner.Options{
		Out: out, Backend: c.backend, Seed: c.seed, Duration: c.duration, Clients: c.clients,
		TTL: c.ttl, Version: "locktest",
	})
	if missing != "" {
		t.Skip(missing)
	}
}

// item is one scenario of the plan: the user's lock's cell (expecting the user's verdict) or why
// it is skipped.
type item struct {
	cell scenarios.Cell
	skip string
}

// plan resolves the options against the catalogue for lock, the user's lock as a value.
func (c config) plan(lock algorithms.Info) ([]item, error) {
	if len(c.topologies) == 0 {
		return nil, errors.New("WithTopology needs at least one topology")
	}
	for _, name := range c.topologies {
		if _, err := cluster.LookupTopology(name); err != nil {
			return nil, fmt.Errorf("WithTopology: %w", err)
		}
	}
	ref, err := algorithms.Reference(c.topologies[0])
	if err != nil {
		return nil, fmt.Errorf("WithTopology(%q): %w", c.topologies[0], err)
	}
	if c.expectLike != "" {
		info, err := algorithms.Lookup(c.expectLike)
		if err != nil {
			return nil, fmt.Errorf("WithExpectationsOf: %w", err)
		}
		if !slices.Contains(info.Topologies, c.topologies[0]) {
			return nil, fmt.Errorf("WithExpectationsOf(%q): %s runs on %v, the lock on %s", c.expectLike, c.expectLike, info.Topologies, c.topologies[0])
		}
		ref = info
	}
	custom := slices.Clone(c.custom)
	for _, f := range c.files {
		ss, err := scenarios.LoadFile(f)
		if err != nil {
			return nil, fmt.Errorf("WithScenarioFile: %w", err)
		}
		custom = append(custom, ss...)
	}
	seen := map[string]bool{}
	for _, s := range custom {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("WithScenario(%q): %w", s.Name, err)
		}
		if _, err := scenarios.Lookup(s.Name); err == nil || seen[s.Name] {
			return nil, fmt.Errorf("WithScenario(%q): the name is taken (by the catalogue or another scenario of yours): give it another", s.Name)
		}
		seen[s.Name] = true
	}
	for scen, v := range c.expect {
		if _, err := scenarios.Lookup(scen); err != nil && !seen[scen] {
			return nil, fmt.Errorf("WithExpect: %w", err)
		}
		if _, ok := checker.ParseExpected(v); !ok {
			return nil, fmt.Errorf("WithExpect(%q, %q): want one of %s", scen, v, strings.Join(checker.ExpectedNames(), ", "))
		}
	}
	switch {
	case c.clients < 0:
		return nil, fmt.Errorf("WithClients(%d): want at least 1", c.clients)
	case c.duration < 0 || c.ttl < 0:
		return nil, errors.New("WithDuration and WithTTL want positive durations")
	case c.renews < 0:
		return nil, fmt.Errorf("WithRenewal(%v): want the lock's renewal period, e.g. 200ms", c.renews)
	}
	list := scenarios.All()
	if len(c.scenarios) > 0 || len(custom) > 0 {
		for _, n := range c.scenarios {
			if _, err := scenarios.Lookup(n); err != nil {
				return nil, fmt.Errorf("WithScenarios: %w", err)
			}
		}
		list = slices.DeleteFunc(list, func(s scenarios.Scenario) bool { return !slices.Contains(c.scenarios, s.Name) })
	}
	list = append(list, custom...)
	var plan []item
	for _, s := range list {
		// The lock's own cell: its topology's variants, the faults at the points it marks (none
		// unless it says so), n/a where its topology cannot show the scenario.
		cell, err := s.CellFor(lock, "")
		if err != nil {
			return nil, err
		}
		// A cell on the lock's own topology takes that topology's variants ("@redis-cluster":
		// node-kill's longer stuck limit; "@postgres-standby": failover's forced race), as the
		// reference's cell below does: without them the lock would run another scenario than
		// the one whose expectation it is held to.
		if cell.Topology == "" || cell.Topology == c.topologies[0] {
			if cell, err = s.CellFor(lock, c.topologies[0]); err != nil {
				return nil, err
			}
		}
		// The reference's cell on the same servers: its n/a reasons, and its expectation for
		// WithExpectationsOf.
		where := cmp.Or(cell.Topology, c.topologies[0])
		refCell, err := s.CellFor(ref, where)
		if err != nil {
			return nil, err
		}
		it := item{cell: cell}
		switch {
		case cell.Topology != "" && !slices.Contains(c.topologies, cell.Topology):
			it.skip = fmt.Sprintf("%s runs on %s and the lock is tested on %s; a factory that handles it says so with WithTopology(%q, %q)",
				s.Name, cell.Topology, strings.Join(c.topologies, ", "), c.topologies[0], cell.Topology)
		case cell.NA != "":
			it.skip = fmt.Sprintf("n/a on %s: %s", c.topologies[0], cell.NA)
		case refCell.NA != "":
			it.skip = fmt.Sprintf("n/a on %s: %s (the catalogue's reason for %s)", c.topologies[0], refCell.NA, ref.Name)
		}
		it.cell.Expected = "safe"
		if c.expectLike != "" && refCell.Expected != "" {
			it.cell.Expected = refCell.Expected
		}
		if v, ok := c.expect[s.Name]; ok {
			it.cell.Expected = v
		}
		plan = append(plan, it)
	}
	return plan, nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// userLock is the user's lock as a value: an Info whose New is the factory. It is registered
// nowhere, so it inherits no built-in's variants, and runs faults at named points only where it
// marks them (none: a Factory's lock marks no point locktest knows of).
func userLock(t testing.TB, factory Factory, c config) algorithms.Info {
	name := fmt.Sprintf("%s-%d", strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "-"), "-"), seq.Add(1))
	return algorithms.Info{
		Name:       name,
		Summary:    "a user's lock under locktest (" + t.Name() + ")",
		Source:     "locktest.Run",
		Topologies: slices.Clone(c.topologies),
		Renews:     c.renews, // WithRenewal: the faults that outlast its lease outlast a renewal too
		New: func(cfg algorithms.Config) (l algorithms.Locker, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("factory panicked: %v", p)
				}
			}()
			l, err = factory(cfg)
			if err == nil && l == nil {
				err = errors.New("factory returned a nil Locker and no error")
			}
			return l, err
		},
	}
}

// result is what one scenario came to: skipped (missing: for want of servers), failed, or passed.
type result struct {
	skip, fail, pass string
	missing          bool
}

// judge runs a cell through do and says what it came to.
func judge(cell scenarios.Cell, out string, do func() (reports.Cell, error)) result {
	rc, err := do()
	if cell.NA != "" {
		return result{skip: cell.NA}
	}
	switch {
	case errors.Is(err, cluster.ErrMissingBinary):
		if testenv.Required(testenv.RequireServers) {
			return result{fail: fmt.Sprintf("%s=1 but: %v", testenv.RequireServers, err)}
		}
		return result{skip: err.Error(), missing: true}
	case errors.Is(err, ErrUnsupported):
		return result{skip: err.Error()}
	case err != nil && (rc.Result == nil || rc.Result.Operations == 0):
		return result{fail: fmt.Sprintf("the run could not be carried out: %v", err)}
	}
	report, _ := filepath.Abs(filepath.Join(runner.Dir(out, cell, 0), "report.html"))
	msg := describe(rc.Result, cell.Expected, report)
	for _, fe := range rc.Result.FaultErrors {
		msg += "\n\tfault not applied (this run proves nothing about it): " + fe
	}
	switch {
	case err != nil:
		return result{fail: fmt.Sprintf("the run ended early: %v\n\t%s", err, msg)}
	case !checker.Matches(rc.Result, cell.Expected):
		return result{fail: msg}
	}
	return result{pass: msg}
}

// describe is the verdict, class, TTD, expectation, numbers and report path of a run.
func describe(r *checker.Result, expected, report string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict %s", r.Verdict)
	if r.ViolationClass != nil {
		fmt.Fprintf(&b, " (%s class", *r.ViolationClass)
		if len(r.ClassesSeen) > 1 {
			fmt.Fprintf(&b, "; classes seen %v", r.ClassesSeen)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", expected %s", expected)
	if r.DecidedBy != "" {
		fmt.Fprintf(&b, " — %s", r.DecidedBy)
	}
	if r.TTDMs != nil {
		fmt.Fprintf(&b, "; TTD %s", history.FormatMs(*r.TTDMs))
	}
	if v := r.FirstViolation; v != nil {
		fmt.Fprintf(&b, "\n\tfirst violation (%s) at %s: %s", v.Kind, history.FormatMs(v.AtMs), v.Explanation)
		if v.Cause != "" {
			fmt.Fprintf(&b, "\n\tcause: %s", v.Cause)
		}
	}
	if r.Verdict == checker.Unknown {
		b.WriteString("\n\tunknown is never safe: the run could not have failed (evidence: " + r.Evidence + "), or the checker timed out")
	}
	fmt.Fprintf(&b, "\n\t%d acquires ok, %d failed; %d exclusion violations, %d service violations, %d lost updates; longest stall %s; seed %d",
		r.AcquiresOk, r.AcquiresFailed, r.ExclusionViolations, r.ServiceViolations, r.LostUpdates, history.FormatMs(r.LongestStallMs), r.Seed)
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\n\twarning: %s", w)
	}
	fmt.Fprintf(&b, "\n\treport: %s", report)
	return b.String()
}

// Algorithm is the Factory of one of lockchaos's own algorithms or mutants by name (`lockchaos
// list --mutants`). Point Run at a mutant — a real algorithm with one safety mechanism removed
// (docs/design.md#mutants) — to see what a caught bug looks like before you test your own lock, or at a
// real algorithm as the reference yours should match.
func Algorithm(name string) Factory {
	return func(cfg algorithms.Config) (algorithms.Locker, error) {
		info, err := algorithms.Lookup(name)
		if err != nil {
			return nil, err
		}
		return info.New(cfg)
	}
}
