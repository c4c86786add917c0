// Package faults holds every fault kind lockchaos injects (the nemesis) and the schedule that fires
// them, timed or triggered by a client reaching a named point. Faults act; they never check.
package faults

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Spec is one fault of a scenario: what to break, when, and for how long. It is plain data, so
// scenarios can be written in Go or loaded from YAML.
type Spec struct {
	// Kind names the fault (see Kinds), e.g. "client-pause".
	Kind string `yaml:"kind" json:"kind"`

	// Point makes the fault event-triggered: it fires when a client reaches this named point
	// (docs/design.md#the-lock-interface), e.g. "cs:before-write". Empty means timed (At, Every).
	Point string `yaml:"point,omitempty" json:"point,omitempty"`
	// Client restricts which client's point triggers the fault: 0 any client, else its number.
	Client int `yaml:"client,omitempty" json:"client,omitempty"`
	// Skip ignores the first Skip occurrences of the trigger.
	Skip int `yaml:"skip,omitempty" json:"skip,omitempty"`
	// At is when a timed fault first fires, from the run's start. A fault at a point or a wire
	// point watches for it only from At on (Skip counts the occurrences from then): a soak's
	// random schedule aims a point fault at a moment of the run.
	At Duration `yaml:"at,omitempty" json:"at,omitempty"`
	// Every repeats a timed fault (0 = once).
	Every Duration `yaml:"every,omitempty" json:"every,omitempty"`
	// Times bounds how often the fault fires (default 1; -1 = no bound).
	Times int `yaml:"times,omitempty" json:"times,omitempty"`
	// For is how long each occurrence lasts before it heals (0 = until the end of the fault
	// phase for lasting faults, or instant for one-shot faults like kill).
	// In leases of the lock under test or absolute (Size).
	For Size `yaml:"for,omitempty" json:"for,omitzero"`

	// Clients selects target clients: "trigger" (the client at the point; the default for
	// client faults), "others" (all but the trigger), "all", or a list "1,3" or range "2-5".
	Clients string `yaml:"clients,omitempty" json:"clients,omitempty"`
	// Nodes selects target nodes: "all", "master", "leader", "replication" (the replica's link
	// to the master), "minority" (the first ⌊(n−1)/2⌋ data nodes), "random" (one data node),
	// "random-majority" (one of the data nodes "minority" leaves out: those a client cut off
	// from the minority still reaches), or names "redis-1,redis-2".
	Nodes string `yaml:"nodes,omitempty" json:"nodes,omitempty"`

	// Amount is the fault's size: latency, clock offset or clock jump (Size: in leases or absolute).
	Amount Size `yaml:"amount,omitempty" json:"amount,omitzero"`
	// Rate is clock-rate's factor: the target clients' clocks run at Rate× real time (0.5: half
	// speed, a lease seems to last twice as long; 2: double).
	Rate float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	// Jitter is added to latency faults; RandomFor adds up to this much to For, from the seed.
	Jitter Duration `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	// Stream is "both" (default), "upstream" (client→server) or "downstream" for link faults.
	Stream string `yaml:"stream,omitempty" json:"stream,omitempty"`
	// Until ends a fault at a point early, when a client other than its trigger reaches this
	// harness point ("cs:before-read": until another client holds the lock): a fault that holds
	// its client at its point (client-stall, client-pause), or a network fault (partition,
	// latency, refuse), which heals then and delivers what it held to a lock another client now
	// holds — the moment a late command does harm, whatever the lock's retry timing. For still
	// bounds it; AtLeast delays it.
	Until string `yaml:"until,omitempty" json:"until,omitempty"`
	// AtLeast, with Until, is how long the fault lasts before an until point counts: a
	// partition of at least 1.3 s that then heals when another client holds the lock, so the
	// cut-off client's next attempts meet it too and what it held lands on a grant, not in a gap
	// between two holds. For, when set, still bounds it and must be longer.
	AtLeast Size `yaml:"at-least,omitempty" json:"at-least,omitzero"`
	// Wire aims the fault at one of the lock's own commands on the client's links (docs/design.md#wire-points):
	// it fires when the proxy sees that request or reply (after Point, when set).
	Wire *Wire `yaml:"wire,omitempty" json:"wire,omitempty"`
	// Refinement marks a fault that only some cells can aim: at a named point that only some locks
	// mark (a built-in's own step, e.g. acquire:after-quorum), or at a command on the wire that only
	// some topologies' links show (lockchaos parses RESP and ZooKeeper's framing). A cell whose lock
	// does not list that point, or whose topology cannot show that command, runs without it, rather
	// than wait for what it never reaches (docs/design.md#mutants, docs/design.md#wire-points); its
	// other faults still aim at what every lock reaches.
	Refinement bool `yaml:"refinement,omitempty" json:"refinement,omitempty"`
	// Setup marks a fault that shapes the run rather than attacks it (a partition in force from
	// the start that decides which nodes each client reaches): it must still fire, but it opens
	// no danger window of its own (docs/design.md#evidence).
	Setup bool `yaml:"setup,omitempty" json:"setup,omitempty"`
}

// Duration is a time.Duration that reads and writes as a Go duration string ("1.5s").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the duration as "1.5s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("bad duration %q (write it like 500ms, 1.5s or 2m)", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("bad duration %s (write it as a string like \"500ms\")", b)
	}
	return d.UnmarshalText([]byte(s))
}

// Validate reports the first problem with s, naming the field.
func (s Spec) Validate() error {
	k, ok := kinds[s.Kind]
	if !ok {
		return fmt.Errorf("fault kind %q is unknown (known: %s)", s.Kind, strings.Join(KindNames(), ", "))
	}
	if s.Point == "" && s.Wire == nil && s.Client != 0 {
		return fmt.Errorf("fault %s: client is only meaningful with point or wire", s.Kind)
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"at", s.At}, {"every", s.Every}, {"jitter", s.Jitter}} {
		if d.v < 0 {
			return fmt.Errorf("fault %s: %s is negative (%s)", s.Kind, d.name, d.v)
		}
	}
	for _, z := range []struct {
		name string
		v    Size
	}{{"for", s.For}, {"amount", s.Amount}, {"at-least", s.AtLeast}} {
		if z.v.negative() && !(z.name == "amount" && s.Kind == "clock-skew") {
			return fmt.Errorf("fault %s: %s is negative (%s)", s.Kind, z.name, z.v)
		}
	}
	if s.Client < 0 {
		return fmt.Errorf("fault %s: client is %d (0 = any client, else a client's number)", s.Kind, s.Client)
	}
	if err := checkClients(s.Clients, 0); err != nil {
		return fmt.Errorf("fault %s: %w", s.Kind, err)
	}
	if (s.Clients == "trigger" || s.Clients == "others") && s.Point == "" && s.Wire == nil {
		return fmt.Errorf("fault %s: clients %q needs point (it is relative to the client at the point)", s.Kind, s.Clients)
	}
	if s.Skip < 0 || s.Times < -1 {
		return fmt.Errorf("fault %s: skip must be ≥ 0 and times ≥ -1", s.Kind)
	}
	switch s.Stream {
	case "", "both", "upstream", "downstream":
	default:
		return fmt.Errorf("fault %s: stream %q must be both, upstream or downstream", s.Kind, s.Stream)
	}
	if _, ok := k.(pointOnly); ok && s.Point == "" && s.Wire == nil {
		return fmt.Errorf("fault %s needs a point (e.g. point: cs:before-write) or a wire point: it stops a client at a step", s.Kind)
	}
	if s.Wire != nil {
		if err := s.Wire.validate(s); err != nil {
			return err
		}
	}
	if err := s.validateUntil(k); err != nil {
		return err
	}
	if v, ok := k.(validator); ok {
		return v.validate(s)
	}
	return nil
}

// validateUntil checks Until and AtLeast against the kind: Until for a fault that holds its
// client at its point, or for a network fault at a point.
func (s Spec) validateUntil(k Kind) error {
	if s.Until == "" {
		if !s.AtLeast.IsZero() {
			return fmt.Errorf("fault %s: at-least needs until (the point another client reaches once %s have passed)", s.Kind, s.AtLeast)
		}
		return nil
	}
	b, blocks := k.(Blocker)
	holds := blocks && b.Blocks()
	if _, forever := k.(Forever); forever {
		holds = false
	}
	_, onLinks := k.(linkFault)
	switch {
	case s.Wire != nil:
		return fmt.Errorf("fault %s: until goes in wire (wire: {until: ...}) for a fault at a wire point", s.Kind)
	case !holds && !onLinks:
		return fmt.Errorf("fault %s: until is only for faults that hold a client at its point (client-stall, client-pause) and network faults at a point (partition, latency, refuse)", s.Kind)
	case onLinks && s.Point == "":
		return fmt.Errorf("fault %s: until needs point (it heals when a client other than the one at the point reaches %s)", s.Kind, s.Until)
	case !strings.HasPrefix(s.Until, "cs:"):
		return fmt.Errorf("fault %s: until %q must be a harness point (cs:acquired, cs:before-read, ...)", s.Kind, s.Until)
	case !s.For.IsZero() && s.For.noLonger(s.AtLeast):
		return fmt.Errorf("fault %s: at-least (%s) must be shorter than for (%s), which bounds the fault", s.Kind, s.AtLeast, s.For)
	}
	return nil
}

func (s Spec) times() int {
	if s.Times == 0 {
		return 1
	}
	return s.Times
}
