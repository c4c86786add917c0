package faults

import "github.com/lockchaos/lockchaos/history"

// Meaner is a Kind that says what its occurrences do, for the history: what they act on
// (history.ActsOn*), whether what they did lasts the run, and the clients and nodes they target
// as resolved. The nemesis writes it on every start line of the kind, so the checker and the
// reports decide from it and never from the kind's name: a new kind that declares its meaning
// needs no change to them. Every built-in kind has one (TestEveryKindMeans).
type Meaner interface {
	Meaning(t Target) history.FaultMeaning
}

// on is the meaning of occurrence t of a kind that acts on what and lasts the run or not.
func (t Target) on(actsOn string, lasting bool) history.FaultMeaning {
	return history.FaultMeaning{ActsOn: actsOn, Lasting: lasting, TargetClients: t.Clients, TargetNodes: t.Nodes}
}

func (latency) Meaning(t Target) history.FaultMeaning   { return t.on(history.ActsOnNetwork, false) }
func (partition) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnNetwork, false) }
func (refuse) Meaning(t Target) history.FaultMeaning    { return t.on(history.ActsOnNetwork, false) }

// slow-release delays what the releasing client sends (latency on its links, or its request
// held on the wire).
func (slowRelease) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnNetwork, false) }

// A killed node stays dead for the rest of the run, whatever its (instant) end line says.
func (kill) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnServers, true) }

// A restart brings the node back (empty); one with For is a kill healed by the restart.
func (restart) Meaning(t Target) history.FaultMeaning     { return t.on(history.ActsOnServers, false) }
func (pauseServer) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnServers, false) }

// A failover kills the master, and the promoted replica (standby) takes over: the service goes on.
func (failover) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnServers, false) }

// A server clock jump (emulated on the keys' TTLs) acts on the server's state.
func (clockJump) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnServers, false) }

func (clockSkew) Meaning(t Target) history.FaultMeaning   { return t.on(history.ActsOnClock, false) }
func (clientPause) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnProcess, false) }
func (clientStall) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnProcess, false) }

// A crashed client never comes back.
func (clientCrash) Meaning(t Target) history.FaultMeaning { return t.on(history.ActsOnProcess, true) }

// meaning is what occurrence t of kind k does; a kind that does not say records only its targets.
func meaning(k Kind, t Target) history.FaultMeaning {
	if m, ok := k.(Meaner); ok {
		return m.Meaning(t)
	}
	return history.FaultMeaning{TargetClients: t.Clients, TargetNodes: t.Nodes}
}

// MeaningOf is what the occurrences of fault s do (what they act on, whether they last the run),
// before any is resolved against a run: the meta line's planned faults record it.
func MeaningOf(s Spec) history.FaultMeaning {
	k, ok := kinds[s.Kind]
	if !ok {
		return history.FaultMeaning{}
	}
	m := meaning(k, Target{Spec: s})
	m.TargetClients, m.TargetNodes = nil, nil
	return m
}
