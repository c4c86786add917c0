package wire

import (
	"errors"
	"strings"
)

// Pattern matches requests by command and flags. It is written as a command and then zero
// or more flags, separated by blanks:
//
//   - "SET NX" matches a SET one of whose arguments after the key is NX, in any case and any
//     position ("SET lock tok PX 500 NX"); it does not match SETNX, a command of its own.
//   - "EVALSHA", "DEL", "GET" match every request of that command.
//   - "*" matches every request that is not Control; "* NX" every such request with an NX
//     argument.
//   - ZooKeeper names ("create", "delete", "getChildren2", "connect") match the request of
//     that name exactly, in any case: "create" does not match create2, createTTL or
//     createContainer. ZooKeeper requests have no arguments, so a pattern with flags never
//     matches one.
//
// Commands are compared case-insensitively, so "set nx" is "SET NX" and "getchildren" is
// "getChildren". A command pattern matches Control requests too ("PING", "connect"); only
// "*" leaves them out. Flags are looked for among the arguments that Message keeps (the
// first MaxArgs, each cut to MaxArgLen bytes).
//
// Match is for requests: a reply has no Cmd, so no Pattern matches it, nor a push or a
// watch event. The zero Pattern matches nothing.
type Pattern struct {
	cmd   string
	flags []string // upper-cased
}

// ParsePattern parses a Pattern from its text (see Pattern). The error names the problem:
// the only one is a pattern without a command.
func ParsePattern(s string) (Pattern, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return Pattern{}, errors.New("wire: bad pattern " + `"` + s + `"` + ": empty command")
	}
	p := Pattern{cmd: f[0]}
	for _, fl := range f[1:] {
		p.flags = append(p.flags, strings.ToUpper(fl))
	}
	return p, nil
}

// Match reports whether the request m matches p.
func (p Pattern) Match(m Message) bool {
	if p.cmd == "" || m.Cmd == "" || m.Push {
		return false
	}
	if p.cmd == "*" {
		if m.Control {
			return false
		}
	} else if !strings.EqualFold(p.cmd, m.Cmd) {
		return false
	}
	if len(p.flags) == 0 {
		return true
	}
	args := m.Args
	if len(args) > 0 && len(m.Keys) > 0 && args[0] == m.Keys[0] {
		args = args[1:] // flags come after the key
	}
	for _, fl := range p.flags {
		found := false
		for _, a := range args {
			if strings.EqualFold(a, fl) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// String returns the pattern's text: the command as written and its flags upper-cased,
// separated by single spaces; "" for the zero Pattern.
func (p Pattern) String() string {
	if len(p.flags) == 0 {
		return p.cmd
	}
	return p.cmd + " " + strings.Join(p.flags, " ")
}
