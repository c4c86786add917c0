package scenarios

import "strings"

// The point-free locks (algorithms/user_*.go): a token lock, a renewing token lock, Redlock and a
// ZooKeeper recipe, each written as a user writes one with go-redis or go-zookeeper — no named
// point in their code — and their mutants, one classic bug each (docs/design.md#mutants: teeth must reach a
// lock that marks nothing). The correct ones are expected what the built-in of the same algorithm
// is expected, scenario by scenario: the catalogue reaches them by the harness's points and the
// wire, as it reaches any user's lock. Each mutant is caught by the scenario whose row in
// docs/catalogue.md's "what each scenario catches" table names its bug.
func init() {
	for alg, ref := range map[string]string{
		"user-token": "token", "user-token-renew": "token+watchdog",
		"user-redlock": "redlock", "user-zookeeper": "zookeeper",
	} {
		Expect(alg, expectationsOf(ref))
	}
	// user-zookeeper treats a lost connection as a lost lock (Valid is false from the moment it
	// is disconnected, as Curator's docs advise for SUSPENDED), where the built-in believes its
	// lock until it is told the session expired: the holder cut off by the partition skips its
	// write, and the session-expiry caveat the built-in shows does not happen to it.
	Expect("user-zookeeper", map[string]string{"partition": "S: it gives the lock up when its connection is lost"})

	catch("slow-release", "user-token-get-del", "Us: the GET's reply comes after the takeover, and the DEL it leads to removes the new holder's key")
	catch("latency", "user-token-no-validity", "Uc: it trusts the lease until release; its winning reply came after the lease ran out")
	catch("latency", "user-token-validity-from-reply", "Uc: it counts the TTL from the late reply")
	catch("latency", "user-redlock-no-validity", "Uc: antirez's check removed; the slow majority's lease had run")
	catch("partition", "user-token-no-validity", "Uc: it trusts the lease until release and writes after its key expired")
	catch("partition", "user-token-blind-renew", "Uc: its renewals cannot get through, and it keeps believing")
	catch("node-kill", "user-token-error-grant", "Uc: its SET meets the killed server (an EOF, a refused dial) and it takes the error for a grant: no reply backs it")
	catch("partition", "user-redlock-error-vote", "Us: the cut-off client counts its nodes' timeouts as votes and holds with nothing")
	catch("client-crash", "user-zookeeper-persistent", "X: the crashed holder's persistent node is never removed")
}

// expectationsOf returns an algorithm's expectation in every scenario that has one: the
// catalogue's for a seed algorithm, else those its file added (Expect). Call it from init, after
// the reference's own file (files run their init in name order).
func expectationsOf(ref string) map[string]string {
	out := map[string]string{}
	for name, s := range catalogue {
		code, ok := s.Expect[ref]
		if !ok {
			code, ok = extraExpect[name][ref]
		}
		if !ok {
			continue
		}
		if head, reason, na := strings.Cut(code, ":"); na && strings.TrimSpace(head) != "-" {
			code = head + ": as " + ref + " —" + reason
		} else if !na {
			code += ": as " + ref
		}
		out[name] = code
	}
	return out
}
