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
