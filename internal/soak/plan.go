package soak

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/algorithms"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/faults"
	"github.com/lockchaos/lockchaos/harness"
	"github.com/lockchaos/lockchaos/scenarios"
)

// A faultTemplate is one kind of fault a soak mixes in: its name on the command line (--faults), the
// topologies it applies to, and how one occurrence is drawn, sized from the lease.
type faultTemplate struct {
	name string
	// kind is the fault kind it draws; wire, that it aims at a command on the wire; needs, the
	// traits a topology must have beyond what the kind asks (a quorum to cut in part). Where it
	// applies is theirs to say (unavailable): the plan keeps no list of topologies.
	kind  string
	wire  bool
	needs []cluster.Trait
	// draw makes one occurrence at at, from rng; lease is the TTL or the session, whichever is
	// longer; clients is the run's.
	draw func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec
	// worksOn: an occurrence at a grant (cs:acquired) comes, one time in two, with the holder
	// working on for a while at that grant — a critical section of 0.3 to 2 leases (client-stall,
	// its links and threads running) — so that what the fault does to the lock meets a holder
	// still at work, as the catalogue's restart, clock-jump and partition need; the standard
	// workload's 10 ms holds are over before a takeover. Its name in the plan is longHold.
	worksOn bool
	// atGrant, for a fault that may strike at a client's grant (cs:acquired), draws one that does:
	// the grant of any client (Skip from 0 to 2) when the fault comes alone; the plan sets Client
	// and Skip 0 when it follows another fault onto that fault's victim (see NewPlan).
	atGrant func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec
	// onNode: the fault strikes one of the servers (Nodes), not the client's links or session.
	onNode bool
	// settle, for a fault on a server, is how long after it healed the next server fault waits:
	// a server being restarted cannot also be paused (the fault would fail to inject, and a run
	// whose planned fault failed proves nothing with it), and a restarted ensemble needs its
	// election. Zero for the faults on clients and links, which overlap freely.
	settle time.Duration
}

// sizes are what a draw scales its fault by.
type sizes struct {
	ttl, lease time.Duration
	clients    int
	points     []string // the points a client-pause may stop at: every lock's and the holder's
}

// between draws a duration in [lo, hi)·unit.
func between(rng *rand.Rand, lo, hi float64, unit time.Duration) faults.Size {
	return faults.Fixed(time.Duration((lo + rng.Float64()*(hi-lo)) * float64(unit)))
}

// client draws one client's number, as a selector.
func client(rng *rand.Rand, n int) string { return strconv.Itoa(1 + rng.IntN(n)) }

// unavailable says why the template does not apply to topology t ("" when it does), as the
// catalogue, explore and locktest would: it asks the fault kind (faults.Unavailable) and the
// topology's traits.
func (ft faultTemplate) unavailable(t cluster.Topology) string {
	probe := faults.Spec{Kind: ft.kind}
	if ft.wire {
		probe.Wire = &faults.Wire{Before: "*"}
	}
	if why := faults.Unavailable(probe, t); why != "" {
		return why
	}
	return t.Lacks(ft.needs...)
}

// templates are the faults a soak draws from, in --faults order. Faults that last the run (kill,
// client-crash) are not among them: a soak of minutes would spend them in its first seconds and
// test a dead cluster after. Every occurrence heals.
var templates = []faultTemplate{
	{name: "client-pause", kind: "client-pause", draw: func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
		// A GC pause of the holder (or of a waiter) at one of its steps, past the lease or not.
		return faults.Spec{Kind: "client-pause", At: faults.Duration(at), Point: p.points[rng.IntN(len(p.points))],
			Skip: rng.IntN(3), For: between(rng, 0.5, 3, p.lease)}
	}},
	{name: "partition", kind: "partition", draw: func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
		// One client cut off from every node, at a moment or right after it acquired.
		if rng.IntN(2) == 0 {
			return partitionAtGrant(rng, at, p)
		}
		return faults.Spec{Kind: "partition", At: faults.Duration(at), Clients: client(rng, p.clients), For: between(rng, 0.5, 3, p.lease)}
	}, atGrant: partitionAtGrant, worksOn: true},
	{name: "partition-minority", kind: "partition", needs: []cluster.Trait{cluster.TraitQuorum}, draw: func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
		// A partial partition: one client cut off from a minority of the nodes, still reaching a
		// majority — a quorum lock it takes meanwhile rests on a bare majority, as in Kleppmann's
		// Redlock restart. Half of them refuse its connections (a firewall's reject, a host
		// down: its requests there fail at once) rather than hold its bytes: a Redlock client
		// waits out a held request (the workload's 2×TTL) and wins no lock with its validity
		// spent, so only the refused minority leaves it a bare majority to hold on.
		kind := "partition"
		if rng.IntN(2) == 0 {
			kind = "refuse"
		}
		return faults.Spec{Kind: kind, At: faults.Duration(at), Clients: client(rng, p.clients), Nodes: "minority",
			For: between(rng, 1, 4, p.lease)}
	}},
	{name: "latency", kind: "latency", draw: func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
		// A slow network for one client, every request and reply.
		return faults.Spec{Kind: "latency", At: faults.Duration(at), Clients: client(rng, p.clients),
			Amount: between(rng, 0.1, 1, p.ttl), Jitter: faults.Duration(p.ttl / 10), For: between(rng, 1, 3, p.lease)}
	}},
	{name: "late-release", kind: "latency", wire: true, draw: func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
		// A release that reaches the server late (docs/design.md#wire-points): the request, or the reply a
		// two-step release acts on, held until another client holds the lock.
		w := &faults.Wire{Before: "*", Until: "cs:before-read"}
		if rng.IntN(2) == 0 {
			w = &faults.Wire{AfterReply: "*", Until: "cs:before-read"}
		}
		return faults.Spec{Kind: "latency", At: faults.Duration(at), Point: "cs:before-release", Skip: rng.IntN(3),
			Amount: between(rng, 1, 3, p.ttl), Wire: w}
	}},
	{name: "slow-grant", kind: "latency", wire: true, draw: func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
		// The reply that wins an acquisition held until another client holds: a lease counted
		// from the reply has run out meanwhile.
		ok := true
		return faults.Spec{Kind: "latency", At: faults.Duration(at), Point: "cs:before-acquire", Skip: rng.IntN(3),
			Amount: between(rng, 1, 2, p.ttl), Wire: &faults.Wire{AfterReply: "*", OK: &ok, Until: "cs:before-read", Each: true}}
	}},
	{name: "restart", kind: "restart", draw: func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
		// A node killed and started again empty where it keeps nothing on disk: after a while, or
		// at once while a client holds the lock (at its grant; the holder works on when the node
		// is back, as the catalogue's restart does), the moment a restart is dangerous.
		if rng.IntN(2) == 0 {
			return restartAtGrant(rng, at, p)
		}
		return faults.Spec{Kind: "restart", At: faults.Duration(at), Nodes: "random", For: between(rng, 0.2, 2, p.lease)}
	}, atGrant: restartAtGrant, onNode: true, worksOn: true, settle: 5 * time.Second},
	{name: "pause-server", kind: "pause-server", draw: func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
		// A node stopped (SIGSTOP: a VM or GC stall), then resumed.
		return faults.Spec{Kind: "pause-server", At: faults.Duration(at), Nodes: "random", For: between(rng, 0.3, 2, p.lease)}
	}, onNode: true, settle: time.Second},
	{name: "clock-skew", kind: "clock-skew", draw: func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
		// One client's clock off by up to 3 TTLs, either way, for a while.
		amount := between(rng, 0.5, 3, p.ttl)
		if rng.IntN(2) == 0 {
			amount = faults.Fixed(-amount.D())
		}
		return faults.Spec{Kind: "clock-skew", At: faults.Duration(at), Clients: client(rng, p.clients), Amount: amount,
			For: between(rng, 1, 4, p.lease)}
	}},
	{name: "clock-jump", kind: "clock-jump",
		draw: func(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
			// A node's wall clock jumps forward: its keys expire early. At a moment, or right
			// after a client acquired (the moment its key's early expiry does harm).
			if rng.IntN(2) == 0 {
				return clockJumpAtGrant(rng, at, p)
			}
			return faults.Spec{Kind: "clock-jump", At: faults.Duration(at), Nodes: "random", Amount: between(rng, 0.3, 1.5, p.ttl)}
		}, atGrant: clockJumpAtGrant, onNode: true, worksOn: true, settle: time.Second},
	{name: "session-kill", kind: "session-kill",
		// The server ends the holder's session (an admin's kill, an idle timeout).
		draw: sessionKillAtGrant, atGrant: sessionKillAtGrant, worksOn: true},
}

// The faults that may strike at a client's grant, drawn there.

func partitionAtGrant(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
	return faults.Spec{Kind: "partition", At: faults.Duration(at), Point: "cs:acquired", Skip: rng.IntN(3), Clients: "trigger",
		For: between(rng, 0.5, 3, p.lease)}
}

func restartAtGrant(rng *rand.Rand, at time.Duration, _ sizes) faults.Spec {
	return faults.Spec{Kind: "restart", At: faults.Duration(at), Point: "cs:acquired", Skip: rng.IntN(3), Nodes: "random"}
}

func clockJumpAtGrant(rng *rand.Rand, at time.Duration, p sizes) faults.Spec {
	return faults.Spec{Kind: "clock-jump", At: faults.Duration(at), Point: "cs:acquired", Skip: rng.IntN(3), Nodes: "random",
		Amount: between(rng, 0.3, 1.5, p.ttl)}
}

func sessionKillAtGrant(rng *rand.Rand, at time.Duration, _ sizes) faults.Spec {
	return faults.Spec{Kind: "session-kill", At: faults.Duration(at), Point: "cs:acquired", Skip: rng.IntN(3)}
}

// victimOf is the one client a timed fault acts on (a partition, a partial one, latency, clock
// skew of client 3: 3), or 0.
func victimOf(f faults.Spec) int {
	if f.Point != "" || f.Wire != nil {
		return 0
	}
	c, err := strconv.Atoi(f.Clients)
	if err != nil {
		return 0
	}
	return c
}

// longHold names, in a plan, the holder's work a worksOn occurrence comes with.
const longHold = "long-hold"

// holdOn is the holder's work at f's grant: a client-stall at the same point and skip, so the same
// client's same grant triggers both (the nemesis fires a point's faults in the plan's order: f
// first, then the stall holds the holder).
func holdOn(rng *rand.Rand, f faults.Spec, p sizes) faults.Spec {
	return faults.Spec{Kind: "client-stall", At: f.At, Point: f.Point, Client: f.Client, Skip: f.Skip, For: between(rng, 0.3, 2, p.lease)}
}

// TemplateNames lists the fault names --faults takes.
func TemplateNames() []string {
	out := make([]string, len(templates))
	for i, t := range templates {
		out[i] = t.name
	}
	return out
}

func lookupTemplate(name string) (faultTemplate, bool) {
	i := slices.IndexFunc(templates, func(t faultTemplate) bool { return t.name == name })
	if i < 0 {
		return faultTemplate{}, false
	}
	return templates[i], true
}

// Plan is a soak's fault schedule and workload, decided from its seed before any server starts:
// a scenario named "soak", so `lockchaos run --scenario-file plan.yaml` runs it too.
type Plan struct {
	Seed  int64           `json:"seed"`
	Time  faults.Duration `json:"time"`
	Rate  float64         `json:"rate"`  // faults per minute
	Kinds []string        `json:"kinds"` // the templates drawn from
	// Drawn names the template of each of the scenario's faults, in order.
	Drawn []string `json:"drawn"`
	scenarios.Scenario
}

// workload is the catalogue's standard one (5 clients, TTL 500 ms, 1 s ZooKeeper sessions) over
// the soak's time, with a request timeout of 2×TTL, as the catalogue's wire scenarios
// (slow-release, latency) have one longer than the lease. The late-release and slow-grant faults
// hold a reply until another client holds the lock, a lease later; a client whose request timed
// out first (the standard TTL/4) closed its connection and never acted on the late reply — a
// GET-then-DEL release never sent its DEL, a slow grant was never used — so those faults could
// not do the harm they stand for (10-minute soaks of getset and setnx-px never found the
// catalogue's slow-release and latency failures). The price: a request that meets a partition
// waits up to 2×TTL before it fails, as it does with a client library's default timeouts (go-redis
// reads for 3 s).
func workload(d time.Duration, clients int, ttl time.Duration) scenarios.Workload {
	w := scenarios.Workload{Clients: 5, TTL: scenarios.Duration(500 * time.Millisecond), Hold: scenarios.Duration(10 * time.Millisecond),
		SessionTimeout: scenarios.Duration(time.Second)}
	if clients > 0 {
		w.Clients = clients
	}
	if ttl > 0 {
		w.TTL, w.SessionTimeout = scenarios.Duration(ttl), scenarios.Duration(max(ttl, time.Second))
	}
	w.OpTimeout = 2 * w.TTL
	w.ReleaseTimeout = scenarios.Duration(max(3*time.Second, 2*w.OpTimeout.D()))
	w.Duration = scenarios.Duration(d)
	return w
}

// kindsFor checks the asked kinds against every topology, or picks every template that applies to
// all of them: one plan serves every algorithm of a comparison.
func kindsFor(asked []string, topologies []cluster.Topology) ([]string, error) {
	if len(asked) == 0 {
		var out []string
		for _, t := range templates {
			if !slices.ContainsFunc(topologies, func(top cluster.Topology) bool { return t.unavailable(top) != "" }) {
				out = append(out, t.name)
			}
		}
		if len(out) == 0 {
			names := make([]string, len(topologies))
			for i, t := range topologies {
				names[i] = t.Name
			}
			return nil, fmt.Errorf("%w: no fault applies to every one of the topologies %s (soak them one at a time)", ErrBadOptions, strings.Join(names, ", "))
		}
		return out, nil
	}
	for _, k := range asked {
		t, ok := lookupTemplate(k)
		if !ok {
			return nil, fmt.Errorf("%w: --faults: unknown fault %q (soak mixes %s)", ErrBadOptions, k, strings.Join(TemplateNames(), ", "))
		}
		for _, top := range topologies {
			if why := t.unavailable(top); why != "" {
				return nil, fmt.Errorf("%w: --faults: %s does not apply to topology %s: %s (leave it out)", ErrBadOptions, k, top.Name, why)
			}
		}
	}
	return asked, nil
}

// points are the steps a client-pause may stop a client at: the holder's, and the steps every one
// of the algorithms marks (a point only some mark would never fire in the others).
func points(infos []algorithms.Info) []string {
	out := slices.Clone(harness.HolderSteps)
	if len(infos) == 0 {
		return out
	}
	for _, p := range infos[0].Points {
		if !slices.ContainsFunc(infos[1:], func(i algorithms.Info) bool { return !slices.Contains(i.Points, p) }) {
			out = append(out, p)
		}
	}
	return out
}

// NewPlan draws a soak's schedule from its seed: faults arrive as a Poisson process of rate
// faults per minute over the time, each of a kind drawn uniformly from kinds, sized and aimed by
// the same seed. The same arguments give the same plan.
func NewPlan(seed int64, d time.Duration, rate float64, kinds []string, infos []algorithms.Info, clients int, ttl time.Duration) Plan {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x736f616b))
	w := workload(d, clients, ttl)
	p := sizes{ttl: w.TTL.D(), lease: max(w.TTL.D(), w.SessionTimeout.D()), clients: w.Clients, points: points(infos)}
	pl := Plan{Seed: seed, Time: faults.Duration(d), Rate: rate, Kinds: kinds}
	pl.Name = "soak"
	pl.Summary = fmt.Sprintf("lockchaos soak: %s of random faults (%s), %.3g a minute, seed %d", d, strings.Join(kinds, ", "), rate, seed)
	pl.Workload = w
	// The first fault comes after a second of calm: the clients connect and contend first.
	mean := time.Duration(float64(time.Minute) / rate)
	// The last comes 2 s before the end, so that a fault at a point still finds its point.
	last := d - 2*time.Second
	var serverFree time.Duration // when the next server fault may start
	type drawn struct {
		spec faults.Spec
		name string
	}
	var all []drawn
	// add puts f in the plan unless it is a server fault that cannot start before by: server
	// faults one at a time, one that would overlap the last waits for it.
	add := func(t faultTemplate, f *faults.Spec, by time.Duration) bool {
		if t.settle > 0 {
			if f.At.D() < serverFree {
				f.At = faults.Duration(serverFree)
			}
			if f.At.D() >= by {
				return false
			}
			serverFree = f.At.D() + f.For.D() + t.settle
		}
		all = append(all, drawn{*f, t.name})
		return true
	}
	// The kinds that may follow another fault onto its victim's grant, and those of them that
	// strike a node.
	var atGrant, onNode []faultTemplate
	for _, k := range kinds {
		if t, _ := lookupTemplate(k); t.atGrant != nil {
			atGrant = append(atGrant, t)
			if t.onNode {
				onNode = append(onNode, t)
			}
		}
	}
	for at := time.Second + time.Duration(rng.ExpFloat64()*float64(mean)); at < last; at += time.Duration(rng.ExpFloat64() * float64(mean)) {
		t, _ := lookupTemplate(kinds[rng.IntN(len(kinds))])
		f := t.draw(rng, at.Round(time.Millisecond), p)
		if !add(t, &f, last) {
			continue
		}
		if t.worksOn && f.Point == "cs:acquired" && rng.IntN(2) == 0 {
			all = append(all, drawn{holdOn(rng, f, p), longHold})
		}
		// Two faults at once: a fault on one client (a partition, latency, clock skew) is, one
		// time in two, followed by one at that client's first grant from then on — while the
		// first lasts, or just after it healed — with the holder working on. A partial partition
		// always is, by a fault on a node the client still reaches: alone it harms no quorum lock
		// (the client takes a bare majority, or none), but a grant on a bare majority loses its
		// majority to one node restarted empty or whose clock jumps — Kleppmann's Redlock
		// failures — where a full majority's would not.
		c := victimOf(f)
		followers := atGrant
		if f.Nodes == "minority" {
			followers = onNode
		} else if rng.IntN(2) != 0 {
			continue
		}
		if c == 0 || len(followers) == 0 {
			continue
		}
		ft := followers[rng.IntN(len(followers))]
		g := ft.atGrant(rng, f.At.D()+time.Millisecond, p)
		g.Client, g.Skip = c, 0
		if f.Nodes == "minority" {
			g.Nodes = "random-majority"
		}
		if add(ft, &g, min(f.At.D()+f.For.D(), last)) {
			all = append(all, drawn{holdOn(rng, g, p), longHold})
		}
	}
	slices.SortStableFunc(all, func(a, b drawn) int { return cmp.Compare(a.spec.At, b.spec.At) })
	for _, x := range all {
		pl.Faults = append(pl.Faults, x.spec)
		pl.Drawn = append(pl.Drawn, x.name)
	}
	return pl
}
