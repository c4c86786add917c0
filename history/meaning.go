package history

import (
	"regexp"
	"strconv"
	"strings"
)

// What a fault acts on (FaultMeaning.ActsOn). The checker and the reports decide from these,
// never from a fault's name, so a new fault kind needs no change to them.
const (
	// ActsOnServers: the lock service's servers or their state (a node killed, restarted,
	// paused, failed over; a server's clock).
	ActsOnServers = "servers"
	// ActsOnClock: a client's clock (skewed, jumping).
	ActsOnClock = "clock"
	// ActsOnNetwork: the links between clients and servers (delay, partition, refused
	// connections, a message held on the wire).
	ActsOnNetwork = "network"
	// ActsOnProcess: a client's process (paused, kept busy, crashed).
	ActsOnProcess = "process"
	// ActsOnHarness: the harness itself (it was not scheduled): not a fault of the scenario, and
	// nothing attacked the lock.
	ActsOnHarness = "harness"
)

// FaultMeaning is what a fault occurrence does, as its start line records it (docs/design.md#faults, §5).
// A fault kind declares it (faults.Meaner); the nemesis writes it with the resolved targets.
type FaultMeaning struct {
	// ActsOn is one of the ActsOn constants; "" when the line does not say.
	ActsOn string `json:"acts_on,omitempty"`
	// Lasting is true when what the fault did lasts the run whatever its end line says (a node
	// killed for good, a client crashed): its danger does not end when it does.
	Lasting bool `json:"lasting,omitempty"`
	// Arm is true on the line of a fault's arming, the step that prepares the cluster before any
	// client runs (failover cuts the replication link): it is not an occurrence of the fault.
	Arm bool `json:"arm,omitempty"`
	// TargetClients and TargetNodes are the clients and nodes the occurrence acted on, as
	// resolved when it fired (Event.Target says the same in words).
	TargetClients []int    `json:"target_clients,omitempty"`
	TargetNodes   []string `json:"target_nodes,omitempty"`
}

// KillsClients reports whether the occurrence ends its target clients' processes for the rest of
// the run (a crash): a dead client does nothing more, and a server may end its sessions.
func (m FaultMeaning) KillsClients() bool { return m.Lasting && m.ActsOn == ActsOnProcess }

// Meaning returns what the fault line e records: its own fields, or, for a line written before
// fault lines carried them (no acts_on), what they were for its name and target. It is the one
// place a fault's name decides anything.
func (e *Event) Meaning() FaultMeaning {
	if e.ActsOn != "" {
		return e.FaultMeaning
	}
	m := legacyMeaning(e.Name)
	m.TargetClients, m.TargetNodes = e.TargetClients, e.TargetNodes
	if m.TargetClients == nil {
		m.TargetClients = legacyClients(e.Target)
	}
	if m.TargetNodes == nil && !m.Arm && m.ActsOn != ActsOnHarness {
		m.TargetNodes = legacyNodes(e.Target)
	}
	return m
}

// Meaning returns what the planned fault p does: its own fields, or, for a meta line written
// before planned faults carried them, what they were for its kind.
func (p PlannedFault) Meaning() FaultMeaning {
	if p.ActsOn != "" {
		return FaultMeaning{ActsOn: p.ActsOn, Lasting: p.Lasting}
	}
	return legacyMeaning(p.Kind)
}

// KindMeaning is what the fault kind (or fault line name) kind meant before histories recorded
// it: for records written without the fields (results.json of older runs).
func KindMeaning(kind string) FaultMeaning { return legacyMeaning(kind) }

// legacyMeaning is what the fault names of the histories written before fault lines carried
// their meaning stood for. It only reads old records: the fault kinds declare their meaning now,
// and a kind added since is not (and need not be) here.
func legacyMeaning(name string) FaultMeaning {
	var m FaultMeaning
	if base, ok := strings.CutSuffix(name, ":arm"); ok {
		name, m.Arm = base, true
	}
	switch name {
	case "restart", "kill", "failover", "clock-jump", "pause-server":
		m.ActsOn = ActsOnServers
	case "clock-skew":
		m.ActsOn = ActsOnClock
	case "latency", "partition", "partition-oneway", "partition-reset", "refuse", "slow-release":
		m.ActsOn = ActsOnNetwork
	case "client-pause", "client-crash", "client-stall":
		m.ActsOn = ActsOnProcess
	case "harness-stall":
		m.ActsOn = ActsOnHarness
	}
	m.Lasting = !m.Arm && (name == "kill" || name == "client-crash")
	return m
}

var legacyClientRE = regexp.MustCompile(`client-(\d+)`)

// legacyClients parses the clients an old fault line's target names ("client-3,client-4 →
// redis-1").
func legacyClients(target string) []int {
	var out []int
	for _, m := range legacyClientRE.FindAllStringSubmatch(target, -1) {
		if c, err := strconv.Atoi(m[1]); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// legacyNodes parses the nodes an old fault line's target names: what follows the clients'
// arrow, or the whole target when it names no client.
func legacyNodes(target string) []string {
	if _, nodes, ok := strings.Cut(target, " → "); ok {
		target = nodes
	} else if legacyClientRE.MatchString(target) {
		return nil
	}
	var out []string
	for _, n := range strings.Split(target, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
